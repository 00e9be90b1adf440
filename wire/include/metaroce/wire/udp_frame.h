// Ethernet II / IPv4 / UDP encapsulation shared by MetaRoCE and RoCEv2.
//
// Both transports ride in plain UDP/IPv4 frames without options or VLAN tags:
//
//   Ethernet  14 B  dst MAC(6) src MAC(6) ethertype 0x0800
//   IPv4      20 B  ver/IHL 0x45, DSCP(6)|ECN(2), total length, id, flags/frag
//                   (DF set), TTL 64, proto 17, header checksum, src, dst
//   UDP        8 B  src port (path entropy), dst port, length, checksum 0
//
// UDP checksum is zero (allowed for IPv4): both transports carry their own
// end-to-end integrity check over the payload, as RoCEv2 does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace metaroce::wire {

inline constexpr size_t kEthHeaderBytes = 14;
inline constexpr size_t kIpv4HeaderBytes = 20;
inline constexpr size_t kUdpHeaderBytes = 8;
inline constexpr size_t kUdpFrameHeaderBytes = kEthHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint8_t kIpProtoUdp = 17;
// Largest frame any component builds or accepts (jumbo 9000 B MTU + Ethernet header).
inline constexpr size_t kMaxFrameBytes = 9018;

using MacAddr = std::array<uint8_t, 6>;

// IPv4 ECN codepoints (RFC 3168), the low two bits of the TOS byte.
enum class Ecn : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

// The 5-tuple plus link-layer addresses of one UDP/IPv4 flow. Addresses and
// ports are host order here and converted on encode/decode.
struct UdpFlow {
  MacAddr src_mac{};
  MacAddr dst_mac{};
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
};

struct UdpFrameView {
  UdpFlow flow;
  Ecn ecn = Ecn::kNotEct;
  uint8_t dscp = 0;
  uint8_t ttl = 0;
  std::span<const uint8_t> payload;  // the UDP payload, inside the frame buffer
};

// Writes Eth/IPv4/UDP headers for a payload of payload_len bytes into frame
// (which must hold kUdpFrameHeaderBytes + payload_len). Returns header bytes
// written, or 0 when the frame is too small or the payload too large for IPv4.
size_t encode_udp_headers(std::span<uint8_t> frame, const UdpFlow& flow, Ecn ecn, uint8_t dscp,
                          size_t payload_len);

// Parses an Ethernet frame carrying UDP/IPv4. Rejects (nullopt) anything that
// is not exactly that, with IPv4 options, fragments, a bad IP checksum, or
// lengths that disagree with the buffer. Trailing Ethernet padding is allowed.
std::optional<UdpFrameView> decode_udp_frame(std::span<const uint8_t> frame);

// ECN on an encoded frame: read it, or set it and fix the IPv4 checksum
// incrementally (RFC 1624) so forwarding elements can mark without a full re-encode.
Ecn frame_ecn(std::span<const uint8_t> frame);
void set_frame_ecn(std::span<uint8_t> frame, Ecn ecn);

uint16_t ipv4_checksum(const uint8_t* header, size_t len);

// "10.0.0.1" <-> host-order address; parse returns nullopt on malformed text.
std::optional<uint32_t> parse_ipv4(const char* text);
std::optional<MacAddr> parse_mac(const char* text);

}  // namespace metaroce::wire
