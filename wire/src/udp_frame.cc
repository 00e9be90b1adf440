#include "metaroce/wire/udp_frame.h"

#include <arpa/inet.h>

#include <cstring>

#include "metaroce/wire/bytes.h"

namespace metaroce::wire {

uint16_t ipv4_checksum(const uint8_t* h, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += load_be16(h + i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

size_t encode_udp_headers(std::span<uint8_t> frame, const UdpFlow& flow, Ecn ecn, uint8_t dscp,
                          size_t payload_len) {
  if (payload_len > 0xFFFF - kIpv4HeaderBytes - kUdpHeaderBytes) return 0;
  if (frame.size() < kUdpFrameHeaderBytes + payload_len) return 0;
  uint8_t* p = frame.data();
  std::memcpy(p, flow.dst_mac.data(), 6);
  std::memcpy(p + 6, flow.src_mac.data(), 6);
  store_be16(p + 12, kEtherTypeIpv4);
  uint8_t* ip = p + kEthHeaderBytes;
  ip[0] = 0x45;
  ip[1] = static_cast<uint8_t>((dscp << 2) | static_cast<uint8_t>(ecn));
  store_be16(ip + 2, static_cast<uint16_t>(kIpv4HeaderBytes + kUdpHeaderBytes + payload_len));
  store_be16(ip + 4, 0);       // identification: DF set, never fragmented
  store_be16(ip + 6, 0x4000);  // flags: DF
  ip[8] = 64;
  ip[9] = kIpProtoUdp;
  store_be16(ip + 10, 0);
  store_be32(ip + 12, flow.src_ip);
  store_be32(ip + 16, flow.dst_ip);
  store_be16(ip + 10, ipv4_checksum(ip, kIpv4HeaderBytes));
  uint8_t* udp = ip + kIpv4HeaderBytes;
  store_be16(udp, flow.src_port);
  store_be16(udp + 2, flow.dst_port);
  store_be16(udp + 4, static_cast<uint16_t>(kUdpHeaderBytes + payload_len));
  store_be16(udp + 6, 0);
  return kUdpFrameHeaderBytes;
}

std::optional<UdpFrameView> decode_udp_frame(std::span<const uint8_t> frame) {
  if (frame.size() < kUdpFrameHeaderBytes) return std::nullopt;
  const uint8_t* p = frame.data();
  if (load_be16(p + 12) != kEtherTypeIpv4) return std::nullopt;
  const uint8_t* ip = p + kEthHeaderBytes;
  if (ip[0] != 0x45) return std::nullopt;  // IPv4 without options only
  if (ip[9] != kIpProtoUdp) return std::nullopt;
  if ((load_be16(ip + 6) & 0x3FFF) != 0) return std::nullopt;  // MF or fragment offset
  if (ipv4_checksum(ip, kIpv4HeaderBytes) != 0) return std::nullopt;
  const size_t ip_total = load_be16(ip + 2);
  if (ip_total < kIpv4HeaderBytes + kUdpHeaderBytes) return std::nullopt;
  if (ip_total > frame.size() - kEthHeaderBytes) return std::nullopt;
  const uint8_t* udp = ip + kIpv4HeaderBytes;
  const size_t udp_len = load_be16(udp + 4);
  if (udp_len != ip_total - kIpv4HeaderBytes) return std::nullopt;
  UdpFrameView v;
  std::memcpy(v.flow.dst_mac.data(), p, 6);
  std::memcpy(v.flow.src_mac.data(), p + 6, 6);
  v.dscp = ip[1] >> 2;
  v.ecn = static_cast<Ecn>(ip[1] & 3);
  v.ttl = ip[8];
  v.flow.src_ip = load_be32(ip + 12);
  v.flow.dst_ip = load_be32(ip + 16);
  v.flow.src_port = load_be16(udp);
  v.flow.dst_port = load_be16(udp + 2);
  v.payload = frame.subspan(kUdpFrameHeaderBytes, udp_len - kUdpHeaderBytes);
  return v;
}

Ecn frame_ecn(std::span<const uint8_t> frame) {
  if (frame.size() < kEthHeaderBytes + kIpv4HeaderBytes) return Ecn::kNotEct;
  if (load_be16(frame.data() + 12) != kEtherTypeIpv4) return Ecn::kNotEct;
  return static_cast<Ecn>(frame[kEthHeaderBytes + 1] & 3);
}

void set_frame_ecn(std::span<uint8_t> frame, Ecn ecn) {
  if (frame.size() < kEthHeaderBytes + kIpv4HeaderBytes) return;
  if (load_be16(frame.data() + 12) != kEtherTypeIpv4) return;
  uint8_t* ip = frame.data() + kEthHeaderBytes;
  const uint16_t old_word = load_be16(ip);
  ip[1] = static_cast<uint8_t>((ip[1] & ~3) | static_cast<uint8_t>(ecn));
  const uint16_t new_word = load_be16(ip);
  // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')
  uint32_t sum = static_cast<uint16_t>(~load_be16(ip + 10));
  sum += static_cast<uint16_t>(~old_word);
  sum += new_word;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  store_be16(ip + 10, static_cast<uint16_t>(~sum));
}

std::optional<uint32_t> parse_ipv4(const char* text) {
  in_addr a{};
  if (text == nullptr || inet_pton(AF_INET, text, &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

std::optional<MacAddr> parse_mac(const char* text) {
  if (text == nullptr || std::strlen(text) != 17) return std::nullopt;
  // Exactly six pairs of hex digits separated by ':' (sscanf's %x would take signs and spaces).
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  MacAddr m{};
  for (int i = 0; i < 6; ++i) {
    const char* p = text + 3 * i;
    const int hi = hex(p[0]), lo = hex(p[1]);
    if (hi < 0 || lo < 0 || (i < 5 && p[2] != ':')) return std::nullopt;
    m[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return m;
}

}  // namespace metaroce::wire
