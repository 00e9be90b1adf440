// Test and diagnostic hooks for the two software ports, "memory" and "udp".
// Production code opens them through open_port() (port.h) like any other
// backend; this header only adds what tests need to look inside or to make
// the channel misbehave on purpose.
//
// Memory port (PortConfig::kind "memory")
// ---------------------------------------
// Two ports opened with the same PortConfig::ifname are joined back to back:
// the ifname is the channel name. The first open takes end 0 of the channel,
// the second end 1; a third open while both ends are held is an error naming
// `ifname`. Each end owns a bounded receive ring (ring_size slots of
// frame_size bytes, allocated at open); the peer's tx_burst() copies frames
// straight into it (one copy), in order. tx_ready() is false while the peer's
// ring is full or the peer is not open (no carrier). A frame larger than the
// receiving end's frame_size is lost on the channel and counted as
// rx_truncated at the receiver.
//
// The ring is single-producer/single-consumer and lock-free, so the two ends
// may be driven from different threads (each end by one thread). Frames are
// published at the end of every tx_burst(); flush() has nothing left to do.
// wait_fd() is an eventfd the peer signals (at most once per idle period: the
// receiver arms it when an rx_burst() comes back empty).
//
// When one end closes, the other keeps its ring; a new open of the channel
// takes the free end if its ring_size/frame_size match the ones the end was
// first opened with (the ring memory lives as long as the channel) and starts
// with an empty ring. The channel disappears when both ends are closed.
//
// Fault injection (after Seastar's loopback_error_injector): a direction of a
// channel is named by the end that transmits on it. Faults apply to frames
// the ring accepted, in this order: drop every Nth, drop with a seeded
// probability, corrupt one bit every Nth / with a seeded probability. A
// dropped frame still counts as transmitted (tx_frames): the wire lost it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metaroce/datapath/port.h"

namespace metaroce::datapath {

struct MemoryFaults {
  // Drop frames number n, 2n, 3n, ... of this direction (counting every frame
  // the ring accepted since the faults were set, from 1). 0 = off.
  uint32_t drop_every_nth = 0;
  // Drop each frame independently with this probability, in [0, 1].
  double drop_probability = 0;
  // Flip one bit of frames number n, 2n, ... (same count as drop_every_nth,
  // only frames that were not dropped are corrupted). 0 = off.
  uint32_t corrupt_every_nth = 0;
  // Flip one bit of each surviving frame with this probability, in [0, 1].
  double corrupt_probability = 0;
  // Which bit to flip, counted from the first byte's most significant bit;
  // negative = a random bit (from the seeded generator). A bit beyond the
  // frame's end wraps around (modulo the frame's length in bits).
  int64_t corrupt_bit = -1;
  // Seed of the direction's generator (splitmix64); recorded so a run replays.
  uint64_t seed = 1;
};

struct MemoryFaultCounters {
  uint64_t frames = 0;          // frames the ring accepted in this direction since the faults were last set
  uint64_t dropped_nth = 0;     // dropped by drop_every_nth
  uint64_t dropped_random = 0;  // dropped by drop_probability
  uint64_t corrupted = 0;       // delivered with one bit flipped
};

// Installs `faults` on the direction of channel `channel` carrying frames
// transmitted by end `from_end` (0 or 1), replacing what was there and
// restarting its counters and generator. Safe while the ends are in use on
// other threads (the transmitting end picks the change up at its next
// tx_burst()). Returns false and sets *error ("channel: no open memory channel
// 'x'", "drop_probability: must be in [0, 1] (got 2)") on failure.
bool set_memory_faults(const std::string& channel, int from_end, const MemoryFaults& faults,
                       std::string* error);
inline bool clear_memory_faults(const std::string& channel, int from_end, std::string* error) {
  return set_memory_faults(channel, from_end, MemoryFaults{}, error);
}

// Counters of that direction; nullopt when there is no such open channel.
std::optional<MemoryFaultCounters> memory_fault_counters(const std::string& channel, int from_end);

// Which end of its channel a memory port holds (0 or 1); -1 when `port` is
// not a memory port.
int memory_port_end(const Port& port);

// UDP socket port (PortConfig::kind "udp")
// ----------------------------------------
// Received frames carry the real IPs, ports and DSCP/ECN, TTL 64 and
// synthesised MACs 02:00:<the four bytes of that side's IPv4 address>.
// Below: backend-specific counters PortStats has no field for, and the port
// the main socket is bound to (useful with PortConfig::local_port = 0, which
// lets the kernel pick one, as hermetic tests do).
inline constexpr uint32_t kUdpMaxSourcePorts = 256;  // entropy sockets per port, besides the main one

struct UdpPortInfo {
  uint16_t local_port = 0;        // the main socket's bound port
  uint32_t source_sockets = 0;    // entropy sockets open (source ports other than local_port and udp_ports)
  uint64_t tx_not_udp = 0;        // frames tx_burst() took that were not Eth/IPv4/UDP: dropped
  uint64_t tx_oversize = 0;       // frames tx_burst() took that were larger than frame_size: dropped
  uint64_t tx_entropy_fallback = 0;  // frames sent from the main socket: their source port had no socket of
                                     // its own (cap reached, bind failed); the path's entropy is lost, not the frame
  uint64_t tx_send_errors = 0;    // frames dropped: sendmmsg failed with something other than EAGAIN
  uint64_t tx_would_block = 0;    // flushes that stopped because a socket buffer was full (frames stay queued)
  uint64_t rx_not_ipv4 = 0;       // datagrams without IP_PKTINFO or with a non-IPv4 source: dropped
};

// Nullopt when `port` is not a UDP port.
std::optional<UdpPortInfo> udp_port_info(const Port& port);

}  // namespace metaroce::datapath
