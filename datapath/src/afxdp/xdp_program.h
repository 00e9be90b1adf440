// Control plane of the AF_XDP port: the XDP program that steers frames to the
// port's sockets (metaroce_xdp.bpf.c, embedded in the library), loaded,
// configured, attached to one interface and detached again.
//
// Attach path: plain netlink attach (libbpf bpf_xdp_attach / bpf_xdp_detach),
// not libxdp's multiprog dispatcher. It needs no bpffs mount and leaves
// exactly one program on the interface; the price is that the interface must
// have no other XDP program (a foreign one is reported, never replaced).
// Netlink-attached programs outlive their process, so a crashed run leaves
// its program behind: clear_stale() removes one of ours whose owner process
// is gone (owner pid + start time are stored in the program's mr_config map)
// and refuses to touch a foreign program or one whose owner is alive.
//
// Everything here runs at open/close time; nothing is on the hot path.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

struct bpf_object;

namespace metaroce::datapath::afxdp {

// Names shared with metaroce_xdp.bpf.c; how we recognise our own program.
inline constexpr const char* kProgramName = "metaroce_xdp";
inline constexpr uint32_t kXsksMapEntries = 256;  // max_entries of mr_xsks (queue ids)
inline constexpr size_t kMaxUdpPorts = 16;        // max_entries of mr_ports

class XdpProgram {
 public:
  // Loads the embedded object into the kernel and fills its maps: bridge mode
  // or the UDP destination ports to redirect, and this process as the owner.
  static std::unique_ptr<XdpProgram> load(bool bridge_mode, std::span<const uint16_t> udp_ports, std::string* error);

  // Detaches an XDP program of ours left on ifindex (in the calling thread's
  // network namespace) by a process that no longer exists. Returns false with
  // *error when a foreign program, or ours with a live owner, is attached.
  static bool clear_stale(int ifindex, const std::string& ifname, std::string* error);

  ~XdpProgram();  // detach(), then unloads
  XdpProgram(const XdpProgram&) = delete;
  XdpProgram& operator=(const XdpProgram&) = delete;

  int xsks_map_fd() const { return xsks_map_fd_; }

  // Attaches to ifindex in the calling thread's namespace. mode: "native",
  // "skb" or "auto" (native, then skb). Fails if any XDP program is attached.
  bool attach(int ifindex, const std::string& ifname, const std::string& mode, std::string* error);
  // Removes our program (only ours: the detach names the expected program),
  // entering the namespace it was attached in if the caller is elsewhere.
  void detach();
  // "native" or "skb" once attached, else "".
  const char* attached_mode() const;

 private:
  XdpProgram() = default;

  bpf_object* obj_ = nullptr;
  int prog_fd_ = -1;
  int xsks_map_fd_ = -1;
  int ifindex_ = 0;
  uint32_t attach_flags_ = 0;  // XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE while attached
  int netns_fd_ = -1;          // namespace of ifindex_, for detach from another namespace
};

}  // namespace metaroce::datapath::afxdp
