// Ethernet II / IPv4 / UDP framing: encode/decode, IPv4 header checksum,
// in-place ECN marking, and every rejection decode_udp_frame promises.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "metaroce/wire/bytes.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::wire {
namespace {

constexpr size_t kIp = kEthHeaderBytes;             // offset of the IPv4 header
constexpr size_t kUdp = kEthHeaderBytes + kIpv4HeaderBytes;  // offset of the UDP header

UdpFlow test_flow() {
  UdpFlow f;
  f.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  f.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  f.src_ip = 0x0A000001;  // 10.0.0.1
  f.dst_ip = 0x0A000102;  // 10.0.1.2
  f.src_port = 49152;
  f.dst_port = 4794;
  return f;
}

std::vector<uint8_t> make_frame(const UdpFlow& flow, Ecn ecn, uint8_t dscp, size_t payload_len) {
  std::vector<uint8_t> frame(kUdpFrameHeaderBytes + payload_len);
  const size_t n = encode_udp_headers(frame, flow, ecn, dscp, payload_len);
  EXPECT_EQ(n, kUdpFrameHeaderBytes);
  for (size_t i = 0; i < payload_len; ++i) frame[kUdpFrameHeaderBytes + i] = static_cast<uint8_t>(i * 7 + 3);
  return frame;
}

// Recomputes the IPv4 header checksum after a test edits the header on purpose,
// so that the edit, not the checksum, is what decode_udp_frame has to reject.
void fix_ip_checksum(std::vector<uint8_t>& frame) {
  store_be16(&frame[kIp + 10], 0);
  store_be16(&frame[kIp + 10], ipv4_checksum(&frame[kIp], kIpv4HeaderBytes));
}

bool ip_checksum_valid(const std::vector<uint8_t>& frame) {
  return ipv4_checksum(&frame[kIp], kIpv4HeaderBytes) == 0;
}

void expect_same_flow(const UdpFlow& a, const UdpFlow& b) {
  EXPECT_EQ(a.src_mac, b.src_mac);
  EXPECT_EQ(a.dst_mac, b.dst_mac);
  EXPECT_EQ(a.src_ip, b.src_ip);
  EXPECT_EQ(a.dst_ip, b.dst_ip);
  EXPECT_EQ(a.src_port, b.src_port);
  EXPECT_EQ(a.dst_port, b.dst_port);
}

constexpr Ecn kAllEcn[] = {Ecn::kNotEct, Ecn::kEct1, Ecn::kEct0, Ecn::kCe};

TEST(WireUdpFrame, RoundTripFlowEcnDscp) {
  std::mt19937_64 rng(2024);
  for (Ecn ecn : kAllEcn) {
    for (uint8_t dscp : {0, 1, 26, 46, 48, 63}) {
      UdpFlow f;
      for (auto& b : f.src_mac) b = static_cast<uint8_t>(rng());
      for (auto& b : f.dst_mac) b = static_cast<uint8_t>(rng());
      f.src_ip = static_cast<uint32_t>(rng());
      f.dst_ip = static_cast<uint32_t>(rng());
      f.src_port = static_cast<uint16_t>(rng());
      f.dst_port = static_cast<uint16_t>(rng());
      const size_t len = rng() % 1500;
      auto frame = make_frame(f, ecn, dscp, len);
      auto v = decode_udp_frame(frame);
      ASSERT_TRUE(v.has_value());
      expect_same_flow(v->flow, f);
      EXPECT_EQ(v->ecn, ecn);
      EXPECT_EQ(v->dscp, dscp);
      EXPECT_EQ(v->ttl, 64);
      EXPECT_EQ(v->payload.data(), frame.data() + kUdpFrameHeaderBytes);
      EXPECT_EQ(v->payload.size(), len);
      EXPECT_EQ(frame_ecn(frame), ecn);
    }
  }
}

TEST(WireUdpFrame, EncodedHeaderLayout) {
  const UdpFlow f = test_flow();
  auto frame = make_frame(f, Ecn::kEct0, 26, 100);
  // Ethernet: destination first, then source, then ethertype.
  EXPECT_EQ(0, std::memcmp(&frame[0], f.dst_mac.data(), 6));
  EXPECT_EQ(0, std::memcmp(&frame[6], f.src_mac.data(), 6));
  EXPECT_EQ(load_be16(&frame[12]), kEtherTypeIpv4);
  // IPv4.
  EXPECT_EQ(frame[kIp + 0], 0x45);
  EXPECT_EQ(frame[kIp + 1], (26 << 2) | 2);
  EXPECT_EQ(load_be16(&frame[kIp + 2]), 20 + 8 + 100);
  EXPECT_EQ(load_be16(&frame[kIp + 6]), 0x4000);  // DF, offset 0
  EXPECT_EQ(frame[kIp + 8], 64);
  EXPECT_EQ(frame[kIp + 9], kIpProtoUdp);
  EXPECT_EQ(load_be32(&frame[kIp + 12]), f.src_ip);
  EXPECT_EQ(load_be32(&frame[kIp + 16]), f.dst_ip);
  EXPECT_TRUE(ip_checksum_valid(frame));
  // UDP.
  EXPECT_EQ(load_be16(&frame[kUdp + 0]), f.src_port);
  EXPECT_EQ(load_be16(&frame[kUdp + 2]), f.dst_port);
  EXPECT_EQ(load_be16(&frame[kUdp + 4]), 8 + 100);
  EXPECT_EQ(load_be16(&frame[kUdp + 6]), 0);  // checksum not used
}

TEST(WireUdpFrame, Ipv4ChecksumKnownHeader) {
  // The classic example header (192.168.0.1 -> 192.168.0.199, UDP, total length 0x73).
  uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                   0x00, 0x00, 0xC0, 0xA8, 0x00, 0x01, 0xC0, 0xA8, 0x00, 0xC7};
  EXPECT_EQ(ipv4_checksum(h, 20), 0xB861);
  store_be16(h + 10, 0xB861);
  EXPECT_EQ(ipv4_checksum(h, 20), 0);
}

TEST(WireUdpFrame, IpChecksumValidForManyHeaders) {
  std::mt19937_64 rng(77);
  for (int i = 0; i < 2000; ++i) {
    UdpFlow f = test_flow();
    f.src_ip = static_cast<uint32_t>(rng());
    f.dst_ip = static_cast<uint32_t>(rng());
    auto frame = make_frame(f, kAllEcn[rng() % 4], static_cast<uint8_t>(rng() % 64), rng() % 64);
    ASSERT_TRUE(ip_checksum_valid(frame)) << i;
  }
}

TEST(WireUdpFrame, EncodeRefusesSmallBufferAndOversizePayload) {
  const UdpFlow f = test_flow();
  std::vector<uint8_t> frame(kUdpFrameHeaderBytes + 10);
  EXPECT_EQ(encode_udp_headers(std::span(frame).first(kUdpFrameHeaderBytes + 9), f, Ecn::kNotEct, 0, 10), 0u);
  EXPECT_EQ(encode_udp_headers(std::span(frame).first(kUdpFrameHeaderBytes - 1), f, Ecn::kNotEct, 0, 0), 0u);
  EXPECT_EQ(encode_udp_headers(frame, f, Ecn::kNotEct, 0, 10), kUdpFrameHeaderBytes);
  // IPv4 total length is 16 bits: at most 65535 - 20 - 8 payload bytes.
  std::vector<uint8_t> big(kUdpFrameHeaderBytes + 65535);
  EXPECT_EQ(encode_udp_headers(big, f, Ecn::kNotEct, 0, 65535 - 28), kUdpFrameHeaderBytes);
  EXPECT_EQ(load_be16(&big[kIp + 2]), 65535);
  EXPECT_EQ(encode_udp_headers(big, f, Ecn::kNotEct, 0, 65535 - 27), 0u);
}

TEST(WireUdpFrame, SetFrameEcnKeepsChecksumValid) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    UdpFlow f = test_flow();
    f.src_ip = static_cast<uint32_t>(rng());
    f.dst_ip = static_cast<uint32_t>(rng());
    const uint8_t dscp = static_cast<uint8_t>(rng() % 64);
    for (Ecn from : kAllEcn) {
      for (Ecn to : kAllEcn) {
        auto frame = make_frame(f, from, dscp, rng() % 100);
        set_frame_ecn(frame, to);
        EXPECT_EQ(frame_ecn(frame), to);
        ASSERT_TRUE(ip_checksum_valid(frame)) << "from " << int(from) << " to " << int(to);
        // The incremental update gives exactly what a full recomputation gives.
        auto full = frame;
        fix_ip_checksum(full);
        EXPECT_EQ(load_be16(&frame[kIp + 10]), load_be16(&full[kIp + 10]));
        auto v = decode_udp_frame(frame);
        ASSERT_TRUE(v.has_value());
        EXPECT_EQ(v->ecn, to);
        EXPECT_EQ(v->dscp, dscp);
        expect_same_flow(v->flow, f);
      }
    }
  }
}

TEST(WireUdpFrame, SetFrameEcnRepeatedMarking) {
  auto frame = make_frame(test_flow(), Ecn::kEct0, 10, 32);
  for (int i = 0; i < 64; ++i) {
    set_frame_ecn(frame, kAllEcn[i % 4]);
    ASSERT_TRUE(ip_checksum_valid(frame));
    ASSERT_TRUE(decode_udp_frame(frame).has_value());
  }
}

TEST(WireUdpFrame, EcnHelpersIgnoreNonIpv4AndShortFrames) {
  std::vector<uint8_t> small(kEthHeaderBytes + kIpv4HeaderBytes - 1, 0xAB);
  EXPECT_EQ(frame_ecn(small), Ecn::kNotEct);
  set_frame_ecn(small, Ecn::kCe);  // must not write
  for (uint8_t b : small) EXPECT_EQ(b, 0xAB);

  auto frame = make_frame(test_flow(), Ecn::kEct0, 0, 8);
  store_be16(&frame[12], 0x86DD);
  auto before = frame;
  EXPECT_EQ(frame_ecn(frame), Ecn::kNotEct);
  set_frame_ecn(frame, Ecn::kCe);
  EXPECT_EQ(frame, before);
}

TEST(WireUdpFrame, RejectsTruncatedAtEveryLength) {
  const auto frame = make_frame(test_flow(), Ecn::kEct0, 0, 60);
  ASSERT_TRUE(decode_udp_frame(frame).has_value());
  for (size_t len = 0; len < frame.size(); ++len) {
    std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_FALSE(decode_udp_frame(cut).has_value()) << "len " << len;
  }
}

TEST(WireUdpFrame, RejectsNonIpv4Ethertype) {
  for (uint16_t et : {0x86DD, 0x8100, 0x0806, 0x88CC, 0x0000, 0x0801}) {
    auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
    store_be16(&frame[12], et);
    EXPECT_FALSE(decode_udp_frame(frame).has_value()) << std::hex << et;
  }
}

TEST(WireUdpFrame, RejectsIpOptionsAndOtherVersions) {
  for (uint8_t vihl : {0x46, 0x4F, 0x44, 0x40, 0x65, 0x55, 0x05}) {
    auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
    frame[kIp] = vihl;
    fix_ip_checksum(frame);
    EXPECT_FALSE(decode_udp_frame(frame).has_value()) << std::hex << int(vihl);
  }
}

TEST(WireUdpFrame, RejectsFragments) {
  // MF set, or a nonzero fragment offset, with or without DF.
  for (uint16_t ff : {0x2000, 0x6000, 0x0001, 0x4001, 0x1FFF, 0x0100}) {
    auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
    store_be16(&frame[kIp + 6], ff);
    fix_ip_checksum(frame);
    EXPECT_FALSE(decode_udp_frame(frame).has_value()) << std::hex << ff;
  }
  // DF clear and no fragmentation is still a whole datagram.
  auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
  store_be16(&frame[kIp + 6], 0x0000);
  fix_ip_checksum(frame);
  EXPECT_TRUE(decode_udp_frame(frame).has_value());
}

TEST(WireUdpFrame, RejectsWrongProtocol) {
  for (uint8_t proto : {6, 1, 0, 132, 255, 16, 18}) {
    auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
    frame[kIp + 9] = proto;
    fix_ip_checksum(frame);
    EXPECT_FALSE(decode_udp_frame(frame).has_value()) << int(proto);
  }
}

TEST(WireUdpFrame, RejectsBadChecksum) {
  auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
  frame[kIp + 11] ^= 0x01;
  EXPECT_FALSE(decode_udp_frame(frame).has_value());
}

TEST(WireUdpFrame, RejectsEverySingleBitFlipInIpHeader) {
  const auto good = make_frame(test_flow(), Ecn::kEct0, 12, 16);
  for (size_t byte = 0; byte < kIpv4HeaderBytes; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto frame = good;
      frame[kIp + byte] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_FALSE(decode_udp_frame(frame).has_value()) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(WireUdpFrame, RejectsUdpLengthDisagreeingWithIpLength) {
  for (int delta : {-1, 1, -8, 100}) {
    auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
    store_be16(&frame[kUdp + 4], static_cast<uint16_t>(8 + 16 + delta));
    EXPECT_FALSE(decode_udp_frame(frame).has_value()) << delta;
  }
  for (uint16_t bad : {0, 7}) {
    auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
    store_be16(&frame[kUdp + 4], bad);
    EXPECT_FALSE(decode_udp_frame(frame).has_value()) << bad;
  }
}

TEST(WireUdpFrame, RejectsIpTotalLengthLargerThanBuffer) {
  auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
  // Grow both lengths consistently so only the buffer bound is violated.
  store_be16(&frame[kIp + 2], static_cast<uint16_t>(20 + 8 + 17));
  store_be16(&frame[kUdp + 4], static_cast<uint16_t>(8 + 17));
  fix_ip_checksum(frame);
  EXPECT_FALSE(decode_udp_frame(frame).has_value());
  frame.push_back(0);  // now the buffer holds the claimed datagram
  EXPECT_TRUE(decode_udp_frame(frame).has_value());
}

TEST(WireUdpFrame, RejectsIpTotalLengthTooSmallForUdp) {
  for (uint16_t total : {0, 20, 27}) {
    auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 16);
    store_be16(&frame[kIp + 2], total);
    store_be16(&frame[kUdp + 4], static_cast<uint16_t>(total >= 20 ? total - 20 : 0));
    fix_ip_checksum(frame);
    EXPECT_FALSE(decode_udp_frame(frame).has_value()) << total;
  }
}

TEST(WireUdpFrame, AcceptsTrailingEthernetPadding) {
  // A 4-byte payload makes a 46-byte frame; Ethernet pads it to the 60-byte minimum.
  auto frame = make_frame(test_flow(), Ecn::kEct1, 3, 4);
  ASSERT_EQ(frame.size(), 46u);
  frame.resize(60, 0x00);
  auto v = decode_udp_frame(frame);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->payload.size(), 4u);
  EXPECT_EQ(v->payload.data(), frame.data() + kUdpFrameHeaderBytes);
  // Padding content is not inspected.
  for (size_t i = 46; i < 60; ++i) frame[i] = 0xEE;
  v = decode_udp_frame(frame);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->payload.size(), 4u);
}

TEST(WireUdpFrame, EmptyPayloadDatagram) {
  auto frame = make_frame(test_flow(), Ecn::kNotEct, 0, 0);
  auto v = decode_udp_frame(frame);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->payload.empty());
}

TEST(WireParse, Ipv4Good) {
  EXPECT_EQ(parse_ipv4("10.0.0.1"), 0x0A000001u);
  EXPECT_EQ(parse_ipv4("0.0.0.0"), 0u);
  EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xFFFFFFFFu);
  EXPECT_EQ(parse_ipv4("192.168.1.254"), 0xC0A801FEu);
  EXPECT_EQ(parse_ipv4("127.0.0.1"), 0x7F000001u);
}

TEST(WireParse, Ipv4Bad) {
  for (const char* s : {"", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.256", "a.b.c.d", "1.2.3.4 ",
                        " 1.2.3.4", "1..2.3", "1.2.3.", "-1.2.3.4", "0x1.2.3.4", "1.2.3.4/24",
                        "::1", "localhost"}) {
    EXPECT_FALSE(parse_ipv4(s).has_value()) << '"' << s << '"';
  }
  EXPECT_FALSE(parse_ipv4(nullptr).has_value());
}

TEST(WireParse, MacGood) {
  EXPECT_EQ(parse_mac("00:11:22:33:44:55"), (MacAddr{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}));
  EXPECT_EQ(parse_mac("AA:bb:Cc:dD:eE:Ff"), (MacAddr{0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}));
  EXPECT_EQ(parse_mac("ff:ff:ff:ff:ff:ff"), (MacAddr{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(parse_mac("02:00:00:00:00:01"), (MacAddr{0x02, 0, 0, 0, 0, 0x01}));
}

TEST(WireParse, MacBad) {
  for (const char* s : {"", "00:11:22:33:44", "00:11:22:33:44:55:66", "00-11-22-33-44-55",
                        "0011.2233.4455", "gg:11:22:33:44:55", "00:11:22:33:44:5",
                        "00:11:22:33:44:555", "00:11:22:33:44:55 ", "00:11:22:33:44:5g",
                        "001122334455", "00:11:22:33:44:55\n"}) {
    EXPECT_FALSE(parse_mac(s).has_value()) << '"' << s << '"';
  }
  EXPECT_FALSE(parse_mac(nullptr).has_value());
}

// Each octet must be exactly two hex digits. sscanf("%2x") also takes a sign,
// leading white space and a "0x" prefix, so these 17-character strings must be
// refused too.
TEST(WireParse, MacRejectsSignsWhitespaceAndHexPrefix) {
  for (const char* s : {"-1:02:03:04:05:06", "+a:bb:cc:dd:ee:ff", " a:bb:cc:dd:ee:ff",
                        "0x:bb:cc:dd:ee:ff", "aa:bb:cc:dd:ee:-f", "aa:bb:cc:dd:ee: f"}) {
    EXPECT_FALSE(parse_mac(s).has_value()) << '"' << s << '"';
  }
}

}  // namespace
}  // namespace metaroce::wire
