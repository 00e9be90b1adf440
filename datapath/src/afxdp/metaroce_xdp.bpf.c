// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// XDP program of the AF_XDP port: steers frames of the transports to the
// port's AF_XDP sockets and leaves everything else to the kernel.
//
// - Bridge mode (mr_config.bridge != 0, a fabric node): every frame goes to
//   the AF_XDP socket of the queue it arrived on.
// - Otherwise: only untagged Ethernet / IPv4 (no options, no fragment) / UDP
//   frames whose destination port is a key of mr_ports are redirected (what
//   wire/udp_frame.cc decodes); ARP, ICMP, IPv6, TCP, IPv4 with options and
//   other UDP traffic pass to the kernel stack.
// In both modes a queue with no socket in mr_xsks falls back to XDP_PASS
// (the flags argument of bpf_redirect_map), so nothing is dropped here.
//
// Compiled by datapath/afxdp.cmake with `clang -O2 -g -target bpf` and
// embedded into libmetaroce_datapath (see xdp_program.cc). The program and
// map names are how the port recognises its own program on an interface; the
// userspace side (xdp_program.cc) uses the same names and struct layout.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// One entry (key 0). Written by userspace before attach, read-only here.
struct mr_config_value {
  __u32 bridge;       // non-zero: redirect every frame
  __u32 owner_pid;    // process that attached the program (stale detection)
  __u64 owner_start;  // that process's start time (/proc/<pid>/stat field 22)
};

// rx queue index -> AF_XDP socket; one slot per device queue.
struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 256);
  __type(key, __u32);
  __type(value, __u32);
} mr_xsks SEC(".maps");

// UDP destination port (host order) -> 1: the ports redirected to the sockets.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16);
  __type(key, __u16);
  __type(value, __u8);
} mr_ports SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct mr_config_value);
} mr_config SEC(".maps");

#define MR_IP_FRAGMENT_MASK 0x3fff  // MF flag + fragment offset

SEC("xdp")
int metaroce_xdp(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* data_end = (void*)(long)ctx->data_end;

  __u32 key = 0;
  const struct mr_config_value* cfg = bpf_map_lookup_elem(&mr_config, &key);
  if (cfg && cfg->bridge) return bpf_redirect_map(&mr_xsks, ctx->rx_queue_index, XDP_PASS);

  const struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) return XDP_PASS;
  if (eth->h_proto != bpf_htons(ETH_P_IP)) return XDP_PASS;

  const struct iphdr* ip = (const void*)(eth + 1);
  if ((void*)(ip + 1) > data_end) return XDP_PASS;
  // Without options, as the userspace decoder takes them: the UDP header is then at a
  // constant offset. (A variable one, ip->ihl * 4, is packet pointer arithmetic the
  // verifier accepts only from a loader with CAP_PERFMON, which bypasses its Spectre v1
  // hardening; deploy/k8s grants the daemons CAP_BPF and CAP_NET_ADMIN, not that.)
  if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP) return XDP_PASS;
  // Fragments (first or later) belong to the kernel's reassembly, not to us.
  if (ip->frag_off & bpf_htons(MR_IP_FRAGMENT_MASK)) return XDP_PASS;

  const struct udphdr* udp = (const void*)(ip + 1);
  if ((void*)(udp + 1) > data_end) return XDP_PASS;

  const __u16 dport = bpf_ntohs(udp->dest);
  if (!bpf_map_lookup_elem(&mr_ports, &dport)) return XDP_PASS;
  return bpf_redirect_map(&mr_xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
