// One port interface for every datapath backend: AF_XDP, DPDK, kernel UDP
// socket, in-memory. Calls are per burst (a virtual call per burst, never per
// frame), chosen at run time by PortConfig::kind.
//
// Contract (all backends):
// - rx_burst() fills `out` with up to out.size() received Ethernet frames. The
//   frames stay valid until the next rx_burst() on this port; the port
//   recycles their buffers then. Returns how many.
// - tx_burst() copies each frame into the port's own transmit buffers and
//   queues it; returns how many were accepted (fewer when the ring is full: a
//   normal result, not an error). flush() pushes queued frames to the device
//   (kicks the kernel only when the driver asks for a wakeup).
// - tx_ready() is the back-pressure the transport engine sees per plane.
// - wait_fd() is a file descriptor that becomes readable when frames arrive
//   (-1 if the backend has none), for adaptive polling when idle.
// - No call allocates or locks after open; a port is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace metaroce::datapath {

struct RxFrame {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
};

struct PortStats {
  uint64_t rx_frames = 0, rx_bytes = 0;
  uint64_t tx_frames = 0, tx_bytes = 0;
  uint64_t tx_ring_full = 0;     // frames refused by tx_burst (back-pressure)
  uint64_t rx_dropped = 0;       // dropped by the backend (ring overrun, no buffer)
  uint64_t rx_truncated = 0;     // larger than the port's frame size
  uint64_t wakeups = 0;          // kernel kicks (AF_XDP needs_wakeup, sendto)
};

struct PortConfig {
  std::string kind;              // "afxdp" | "dpdk" | "udp" | "memory"
  std::string name;              // human name for logs and counters ("plane0")
  // afxdp / dpdk (net_af_xdp, net_af_packet, net_tap vdevs or a PCI device)
  std::string ifname;            // kernel interface (afxdp, dpdk vdevs)
  uint32_t queue = 0;            // device queue id
  uint32_t queues = 1;           // afxdp: number of queues (one socket each)
  bool zero_copy = false;        // afxdp: request XDP_ZEROCOPY (falls back to copy only if !require_zero_copy)
  bool require_zero_copy = false;
  bool bridge_mode = false;      // afxdp: redirect every frame (fabric node); else only udp_ports
  // afxdp: UDP destination ports redirected to us; the rest goes to the kernel.
  // udp: further ports bound on local_ip and read besides local_port (RoCEv2's
  // 4791: peers send RoCEv2 to it whatever the endpoint's own port).
  std::vector<uint16_t> udp_ports;
  std::string xdp_mode = "auto"; // afxdp: "auto" | "native" | "skb"
  std::vector<std::string> eal_args;  // dpdk: EAL arguments (e.g. --no-huge -m 256 --vdev=net_af_packet0,iface=v0)
  std::string dpdk_device;       // dpdk: port name (e.g. "net_af_packet0") or PCI address
  // udp
  std::string local_ip;          // udp: local address to bind
  uint16_t local_port = 0;       // udp: the transport's port to listen on
  // all
  uint32_t frame_size = 4096 + 256;  // largest frame handled
  uint32_t ring_size = 2048;     // descriptors per ring
  uint32_t burst = 32;
};

class Port {
 public:
  virtual ~Port() = default;
  virtual const char* kind() const = 0;
  virtual const std::string& name() const = 0;
  virtual size_t rx_burst(std::span<RxFrame> out) = 0;
  virtual size_t tx_burst(std::span<const std::span<const uint8_t>> frames) = 0;
  virtual void flush() {}
  virtual bool tx_ready() const = 0;
  virtual int wait_fd() const { return -1; }
  virtual PortStats stats() const = 0;
};

// Opens a port of config.kind. On failure returns nullptr and sets *error to
// one line naming the field and the problem (e.g. "ifname: no such interface
// 'veth9'", "kind: 'dpdk' support was not built (libdpdk-dev missing)").
std::unique_ptr<Port> open_port(const PortConfig& config, std::string* error);
// The start of open_port's error when a udp port could not bind one of
// config.udp_ports (the rest: the address and the reason), so that a caller
// that chose those ports itself can say what they were for.
inline constexpr std::string_view kUdpPortsError = "udp_ports: ";

// Which kinds this build supports, e.g. {"memory", "udp", "afxdp", "dpdk"}.
std::vector<std::string> supported_port_kinds();

}  // namespace metaroce::datapath
