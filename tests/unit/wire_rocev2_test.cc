// RoCEv2 baseline framing: BTH/RETH/ImmDt/AETH layout, pad count, ICRC
// coverage (which header fields are masked and which are protected), and
// decode over complete Eth/IPv4/UDP frames built with encode_udp_headers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "metaroce/wire/bytes.h"
#include "metaroce/wire/crc.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::wire::rocev2 {
namespace {

constexpr size_t kIp = kEthHeaderBytes;
constexpr size_t kUdp = kEthHeaderBytes + kIpv4HeaderBytes;
constexpr size_t kBth = kUdpFrameHeaderBytes;

UdpFlow roce_flow() {
  UdpFlow f;
  f.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0A};
  f.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0B};
  f.src_ip = 0x0A000001;
  f.dst_ip = 0x0A000002;
  f.src_port = 0xC123;  // flow entropy
  f.dst_port = kUdpPort;
  return f;
}

std::vector<uint8_t> make_payload(size_t n) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(0xA0 + i * 3);
  return p;
}

struct Headers {
  std::optional<Reth> reth;
  std::optional<uint32_t> imm;
  std::optional<Aeth> aeth;
};

Reth make_reth(uint64_t va, uint32_t rkey, uint32_t len) {
  Reth r{};
  r.va.set(va);
  r.rkey.set(rkey);
  r.dma_len.set(len);
  return r;
}

Aeth make_aeth(uint8_t syndrome, uint32_t msn) {
  Aeth a{};
  a.syndrome = syndrome;
  store_be24(a.msn, msn);
  return a;
}

// A complete, sealed frame: Eth/IPv4/UDP(dst 4791) + RoCEv2 + ICRC.
std::vector<uint8_t> build(Opcode op, uint32_t qp, uint32_t psn, bool ack_req, const Headers& h,
                           std::span<const uint8_t> payload, Ecn ecn = Ecn::kEct0) {
  const size_t udp_len = payload_bytes(op, payload.size());
  std::vector<uint8_t> frame(kUdpFrameHeaderBytes + udp_len, 0xEE);
  EXPECT_EQ(encode_udp_headers(frame, roce_flow(), ecn, 26, udp_len), kUdpFrameHeaderBytes);
  const size_t n = encode(std::span(frame).subspan(kUdpFrameHeaderBytes), op, qp, psn, ack_req,
                          h.reth ? &*h.reth : nullptr, h.imm ? &*h.imm : nullptr, h.aeth ? &*h.aeth : nullptr,
                          payload);
  EXPECT_EQ(n, udp_len);
  seal_icrc(frame);
  return frame;
}

// Outer decode then RoCEv2 decode, as a receiver does.
bool decode_frame(const std::vector<uint8_t>& frame, PacketView& out) {
  const auto udp = decode_udp_frame(frame);
  if (!udp) return false;
  if (udp->flow.dst_port != kUdpPort) return false;
  return decode(frame, udp->payload, out);
}

void fix_ip_checksum(std::vector<uint8_t>& frame) {
  store_be16(&frame[kIp + 10], 0);
  store_be16(&frame[kIp + 10], ipv4_checksum(&frame[kIp], kIpv4HeaderBytes));
}

uint32_t stored_icrc(const std::vector<uint8_t>& frame) {
  const uint8_t* s = frame.data() + frame.size() - 4;
  return s[0] | (s[1] << 8) | (s[2] << 16) | (static_cast<uint32_t>(s[3]) << 24);
}

// ICRC recomputed here from the IBA Annex A17 rules, independent of compute_icrc.
uint32_t reference_icrc(const std::vector<uint8_t>& frame) {
  std::vector<uint8_t> m(8, 0xFF);
  m.insert(m.end(), frame.begin() + kIp, frame.end() - 4);
  uint8_t* ip = m.data() + 8;
  ip[1] = 0xFF;             // TOS
  ip[8] = 0xFF;             // TTL
  ip[10] = ip[11] = 0xFF;   // header checksum
  ip[20 + 6] = ip[20 + 7] = 0xFF;  // UDP checksum
  ip[28 + 4] = 0xFF;        // BTH resv8a
  return crc32(m);
}

void resealed_decode_fails(std::vector<uint8_t> frame, const char* what) {
  seal_icrc(frame);
  PacketView v;
  EXPECT_FALSE(decode_frame(frame, v)) << what;
}

// ---------------------------------------------------------------------------

TEST(WireRocev2, OpcodeValuesAndHeaderPresence) {
  EXPECT_EQ(kUdpPort, 4791);
  EXPECT_EQ(static_cast<int>(Opcode::kWriteFirst), 0x06);
  EXPECT_EQ(static_cast<int>(Opcode::kWriteMiddle), 0x07);
  EXPECT_EQ(static_cast<int>(Opcode::kWriteLast), 0x08);
  EXPECT_EQ(static_cast<int>(Opcode::kWriteOnly), 0x0A);
  EXPECT_EQ(static_cast<int>(Opcode::kWriteOnlyImm), 0x0B);
  EXPECT_EQ(static_cast<int>(Opcode::kSendOnlyImm), 0x05);
  EXPECT_EQ(static_cast<int>(Opcode::kReadRequest), 0x0C);
  EXPECT_EQ(static_cast<int>(Opcode::kAcknowledge), 0x11);
  EXPECT_TRUE(has_reth(Opcode::kWriteFirst));
  EXPECT_FALSE(has_reth(Opcode::kWriteMiddle));
  EXPECT_FALSE(has_reth(Opcode::kWriteLast));
  EXPECT_TRUE(has_reth(Opcode::kWriteOnly));
  EXPECT_TRUE(has_reth(Opcode::kWriteOnlyImm));
  EXPECT_TRUE(has_reth(Opcode::kReadRequest));
  EXPECT_FALSE(has_reth(Opcode::kSendOnlyImm));
  EXPECT_TRUE(has_imm(Opcode::kWriteOnlyImm));
  EXPECT_TRUE(has_imm(Opcode::kWriteLastImm));
  EXPECT_TRUE(has_imm(Opcode::kSendOnlyImm));
  EXPECT_TRUE(has_imm(Opcode::kSendLastImm));
  EXPECT_FALSE(has_imm(Opcode::kWriteOnly));
  EXPECT_TRUE(has_aeth(Opcode::kAcknowledge));
  EXPECT_FALSE(has_aeth(Opcode::kReadRequest));
  EXPECT_TRUE(is_write(Opcode::kWriteMiddle));
  EXPECT_FALSE(is_write(Opcode::kSendOnly));
  EXPECT_TRUE(is_send(Opcode::kSendFirst));
  EXPECT_FALSE(is_send(Opcode::kWriteFirst));
  EXPECT_TRUE(is_last_or_only(Opcode::kWriteLast));
  EXPECT_TRUE(is_last_or_only(Opcode::kSendOnlyImm));
  EXPECT_FALSE(is_last_or_only(Opcode::kWriteFirst));
  EXPECT_FALSE(is_last_or_only(Opcode::kWriteMiddle));
  EXPECT_FALSE(is_last_or_only(Opcode::kReadRequest));
  EXPECT_FALSE(is_last_or_only(Opcode::kAcknowledge));
}

TEST(WireRocev2, BthLayout) {
  const auto payload = make_payload(8);
  Headers h;
  h.reth = make_reth(0x1000, 0x2000, 8);
  const auto frame = build(Opcode::kWriteOnly, 0xABCDEF, 0x123456, true, h, payload);
  const uint8_t* b = frame.data() + kBth;
  EXPECT_EQ(b[0], 0x0A);              // opcode
  EXPECT_EQ(b[1], 0x00);              // SE 0, M 0, pad 0, TVer 0
  EXPECT_EQ(load_be16(b + 2), 0xFFFF);  // default P_Key
  EXPECT_EQ(b[4], 0x00);              // resv8a
  EXPECT_EQ(load_be24(b + 5), 0xABCDEFu);
  EXPECT_EQ(b[8], 0x80);              // AckReq
  EXPECT_EQ(load_be24(b + 9), 0x123456u);
  // RETH right after the BTH, big-endian.
  EXPECT_EQ(load_be64(b + 12), 0x1000u);
  EXPECT_EQ(load_be32(b + 20), 0x2000u);
  EXPECT_EQ(load_be32(b + 24), 8u);
  EXPECT_EQ(0, std::memcmp(b + 28, payload.data(), 8));
  EXPECT_EQ(frame.size(), kBth + 12 + 16 + 8 + 4);
  EXPECT_EQ(load_be16(frame.data() + kUdp + 2), kUdpPort);
}

TEST(WireRocev2, QpAndPsnAreMaskedTo24Bits) {
  const auto payload = make_payload(4);
  const auto frame = build(Opcode::kWriteMiddle, 0x7F123456, 0xFF654321, false, {}, payload);
  PacketView v;
  ASSERT_TRUE(decode_frame(frame, v));
  EXPECT_EQ(v.dest_qp, 0x123456u);
  EXPECT_EQ(v.psn, 0x654321u);
  EXPECT_FALSE(v.ack_req);
}

struct RoundTripCase {
  const char* name;
  Opcode op;
  Headers h;
  size_t payload;
};

TEST(WireRocev2, RoundTrip) {
  std::vector<RoundTripCase> cases;
  {
    Headers h;
    h.reth = make_reth(0x00007F0012345000ull, 0xCAFE0001, 3 * 1024 + 5);
    cases.push_back({"WRITE_FIRST", Opcode::kWriteFirst, h, 1024});
  }
  cases.push_back({"WRITE_MIDDLE", Opcode::kWriteMiddle, {}, 1024});
  cases.push_back({"WRITE_LAST", Opcode::kWriteLast, {}, 1029});
  {
    Headers h;
    h.reth = make_reth(0x1122334455667788ull, 0x99AABBCC, 100);
    cases.push_back({"WRITE_ONLY", Opcode::kWriteOnly, h, 100});
  }
  {
    Headers h;
    h.reth = make_reth(0xFFFFFFFFFFFFFFF0ull, 0x01020304, 7);
    h.imm = 0xDEADBEEF;
    cases.push_back({"WRITE_ONLY_IMM", Opcode::kWriteOnlyImm, h, 7});
  }
  {
    Headers h;
    h.imm = 0x0A0B0C0D;
    cases.push_back({"SEND_ONLY_IMM", Opcode::kSendOnlyImm, h, 33});
  }
  {
    Headers h;
    h.reth = make_reth(0x2000, 0x3000, 65536);
    cases.push_back({"READ_REQUEST", Opcode::kReadRequest, h, 0});
  }
  {
    Headers h;
    h.aeth = make_aeth(kSyndromeAck | 0x1F, 0xABCDEF);  // ACK with credit field
    cases.push_back({"ACKNOWLEDGE", Opcode::kAcknowledge, h, 0});
  }
  {
    Headers h;
    h.aeth = make_aeth(kSyndromeNakPsnSeqError, 42);
    cases.push_back({"ACKNOWLEDGE_NAK", Opcode::kAcknowledge, h, 0});
  }
  uint32_t psn = 0xFFFFFE;  // crosses the 24-bit wrap
  for (const auto& k : cases) {
    const auto payload = make_payload(k.payload);
    const bool ack_req = is_last_or_only(k.op);
    const auto frame = build(k.op, 0x000011, psn, ack_req, k.h, payload);
    PacketView v;
    ASSERT_TRUE(decode_frame(frame, v)) << k.name;
    EXPECT_EQ(v.opcode, k.op) << k.name;
    EXPECT_EQ(v.dest_qp, 0x000011u) << k.name;
    EXPECT_EQ(v.psn, psn & kPsnMask) << k.name;
    EXPECT_EQ(v.ack_req, ack_req) << k.name;
    EXPECT_EQ(v.pad, (4 - k.payload % 4) % 4) << k.name;
    ASSERT_EQ(v.reth.has_value(), k.h.reth.has_value()) << k.name;
    if (v.reth) {
      EXPECT_EQ(v.reth->va.get(), k.h.reth->va.get()) << k.name;
      EXPECT_EQ(v.reth->rkey.get(), k.h.reth->rkey.get()) << k.name;
      EXPECT_EQ(v.reth->dma_len.get(), k.h.reth->dma_len.get()) << k.name;
    }
    EXPECT_EQ(v.imm, k.h.imm) << k.name;
    ASSERT_EQ(v.aeth.has_value(), k.h.aeth.has_value()) << k.name;
    if (v.aeth) {
      EXPECT_EQ(v.aeth->syndrome, k.h.aeth->syndrome) << k.name;
      EXPECT_EQ(load_be24(v.aeth->msn), load_be24(k.h.aeth->msn)) << k.name;
    }
    ASSERT_EQ(v.payload.size(), payload.size()) << k.name;
    EXPECT_TRUE(std::equal(v.payload.begin(), v.payload.end(), payload.begin())) << k.name;
    EXPECT_EQ(stored_icrc(frame), compute_icrc(frame)) << k.name;
    EXPECT_EQ(stored_icrc(frame), reference_icrc(frame)) << k.name;
    psn = (psn + 1) & kPsnMask;
  }
}

TEST(WireRocev2, DecodeResetsOptionalHeaders) {
  Headers h;
  h.reth = make_reth(1, 2, 3);
  h.imm = 4;
  const auto p3 = make_payload(3);
  const auto with = build(Opcode::kWriteOnlyImm, 1, 1, true, h, p3);
  const auto without = build(Opcode::kWriteMiddle, 1, 2, false, {}, p3);
  PacketView v;
  ASSERT_TRUE(decode_frame(with, v));
  ASSERT_TRUE(decode_frame(without, v));
  EXPECT_FALSE(v.reth.has_value());
  EXPECT_FALSE(v.imm.has_value());
  EXPECT_FALSE(v.aeth.has_value());
}

TEST(WireRocev2, PadCount) {
  for (size_t len = 0; len <= 8; ++len) {
    const auto payload = make_payload(len);
    const size_t pad = (4 - len % 4) % 4;
    EXPECT_EQ(payload_bytes(Opcode::kWriteMiddle, len), 12 + len + pad + 4) << len;
    EXPECT_EQ(payload_bytes(Opcode::kWriteOnlyImm, len), 12 + 16 + 4 + len + pad + 4) << len;
    EXPECT_EQ(payload_bytes(Opcode::kSendOnlyImm, len), 12 + 4 + len + pad + 4) << len;
    const auto frame = build(Opcode::kWriteMiddle, 7, 9, false, {}, payload);
    EXPECT_EQ((frame[kBth + 1] >> 4) & 3, static_cast<int>(pad)) << len;
    EXPECT_EQ((len + pad) % 4, 0u);
    // Pad bytes are zero and sit between payload and ICRC.
    for (size_t i = 0; i < pad; ++i) EXPECT_EQ(frame[kBth + 12 + len + i], 0) << len;
    PacketView v;
    ASSERT_TRUE(decode_frame(frame, v)) << len;
    EXPECT_EQ(v.pad, pad) << len;
    EXPECT_EQ(v.payload.size(), len) << len;
  }
  const uint8_t expect_pad[] = {0, 3, 2, 1, 0, 3, 2, 1};
  for (size_t len = 1; len <= 7; ++len) {
    const auto frame = build(Opcode::kSendOnlyImm, 1, 1, true, Headers{std::nullopt, 5u, std::nullopt},
                             make_payload(len));
    PacketView v;
    ASSERT_TRUE(decode_frame(frame, v)) << len;
    EXPECT_EQ(v.pad, expect_pad[len]) << len;
  }
}

TEST(WireRocev2, EncodeRefusesMismatchedHeadersAndSmallBuffers) {
  std::vector<uint8_t> udp(256);
  const Reth r = make_reth(1, 2, 3);
  const uint32_t imm = 9;
  const Aeth a = make_aeth(0, 0);
  const auto p = make_payload(8);
  EXPECT_EQ(encode(udp, Opcode::kWriteFirst, 1, 1, false, nullptr, nullptr, nullptr, p), 0u);
  EXPECT_EQ(encode(udp, Opcode::kWriteMiddle, 1, 1, false, &r, nullptr, nullptr, p), 0u);
  EXPECT_EQ(encode(udp, Opcode::kWriteOnly, 1, 1, false, &r, &imm, nullptr, p), 0u);
  EXPECT_EQ(encode(udp, Opcode::kWriteOnlyImm, 1, 1, false, &r, nullptr, nullptr, p), 0u);
  EXPECT_EQ(encode(udp, Opcode::kAcknowledge, 1, 1, false, nullptr, nullptr, nullptr, {}), 0u);
  EXPECT_EQ(encode(udp, Opcode::kSendOnly, 1, 1, false, nullptr, nullptr, &a, p), 0u);
  const size_t need = payload_bytes(Opcode::kWriteOnly, p.size());
  EXPECT_EQ(encode(std::span(udp).first(need - 1), Opcode::kWriteOnly, 1, 1, false, &r, nullptr, nullptr, p), 0u);
  EXPECT_EQ(encode(std::span(udp).first(need), Opcode::kWriteOnly, 1, 1, false, &r, nullptr, nullptr, p), need);
}

// ---------------------------------------------------------------------------
// ICRC coverage.

std::vector<uint8_t> icrc_sample() {
  Headers h;
  h.reth = make_reth(0xABCD0000, 0x1234, 40);
  return build(Opcode::kWriteOnly, 0x42, 0x1000, true, h, make_payload(40), Ecn::kEct0);
}

TEST(WireRocev2Icrc, StoredLittleEndian) {
  const auto frame = icrc_sample();
  const uint32_t icrc = compute_icrc(frame);
  const uint8_t* s = frame.data() + frame.size() - 4;
  EXPECT_EQ(s[0], icrc & 0xFF);
  EXPECT_EQ(s[3], icrc >> 24);
}

TEST(WireRocev2Icrc, UnchangedByEcnMarking) {
  for (Ecn ecn : {Ecn::kNotEct, Ecn::kEct1, Ecn::kEct0, Ecn::kCe}) {
    auto frame = icrc_sample();
    const uint32_t before = compute_icrc(frame);
    set_frame_ecn(frame, ecn);
    EXPECT_EQ(compute_icrc(frame), before);
    PacketView v;
    EXPECT_TRUE(decode_frame(frame, v)) << "ECN " << int(ecn);
  }
}

TEST(WireRocev2Icrc, UnchangedByTosTtlAndIpChecksum) {
  auto frame = icrc_sample();
  const uint32_t before = compute_icrc(frame);
  frame[kIp + 1] = static_cast<uint8_t>((46 << 2) | 3);  // DSCP EF + CE
  fix_ip_checksum(frame);
  EXPECT_EQ(compute_icrc(frame), before);
  frame[kIp + 8] = 1;  // TTL after many hops
  fix_ip_checksum(frame);
  EXPECT_EQ(compute_icrc(frame), before);
  PacketView v;
  EXPECT_TRUE(decode_frame(frame, v));
  // The checksum field itself is masked (even when wrong).
  frame[kIp + 10] ^= 0x5A;
  frame[kIp + 11] ^= 0xA5;
  EXPECT_EQ(compute_icrc(frame), before);
}

TEST(WireRocev2Icrc, UnchangedByUdpChecksumAndResv8a) {
  auto frame = icrc_sample();
  const uint32_t before = compute_icrc(frame);
  store_be16(&frame[kUdp + 6], 0xBEEF);
  EXPECT_EQ(compute_icrc(frame), before);
  frame[kBth + 4] = 0xC0;  // FECN/BECN-style bits
  EXPECT_EQ(compute_icrc(frame), before);
  PacketView v;
  EXPECT_TRUE(decode_frame(frame, v));
}

TEST(WireRocev2Icrc, ChangesWithPayloadPsnAndProtectedHeaders) {
  const auto base = icrc_sample();
  const uint32_t before = compute_icrc(base);
  auto changed = [&](auto edit) {
    auto f = base;
    edit(f);
    return compute_icrc(f) != before;
  };
  EXPECT_TRUE(changed([](auto& f) { f[kBth + 12 + 16 + 5] ^= 1; })) << "payload";
  EXPECT_TRUE(changed([](auto& f) { store_be24(&f[kBth + 9], 0x1001); })) << "PSN";
  EXPECT_TRUE(changed([](auto& f) { store_be24(&f[kBth + 5], 0x43); })) << "dest QP";
  EXPECT_TRUE(changed([](auto& f) { f[kBth + 0] = 0x08; })) << "opcode";
  EXPECT_TRUE(changed([](auto& f) { f[kBth + 12] ^= 0x80; })) << "RETH";
  EXPECT_TRUE(changed([](auto& f) { f[kIp + 15] ^= 1; })) << "source IP";
  EXPECT_TRUE(changed([](auto& f) { f[kIp + 19] ^= 1; })) << "destination IP";
  EXPECT_TRUE(changed([](auto& f) { f[kUdp + 0] ^= 1; })) << "UDP source port";
  EXPECT_TRUE(changed([](auto& f) { f[kUdp + 5] ^= 1; })) << "UDP length";
  EXPECT_TRUE(changed([](auto& f) { f[kIp + 3] ^= 1; })) << "IP total length";
  // The Ethernet header is not part of the ICRC (it is rewritten per hop).
  EXPECT_FALSE(changed([](auto& f) { f[0] ^= 0xFF; f[6] ^= 0xFF; })) << "MACs";
}

TEST(WireRocev2Icrc, DecodeFailsOnFlippedPayloadBit) {
  const auto base = icrc_sample();
  const size_t payload_at = kBth + 12 + 16;
  for (size_t i = 0; i < 40; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto f = base;
      f[payload_at + i] ^= static_cast<uint8_t>(1u << bit);
      PacketView v;
      EXPECT_FALSE(decode_frame(f, v)) << "payload byte " << i << " bit " << bit;
    }
  }
}

TEST(WireRocev2Icrc, EveryBitOfTheUdpPayloadIsProtectedExceptResv8a) {
  const auto base = icrc_sample();
  for (size_t i = kBth; i < base.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto f = base;
      f[i] ^= static_cast<uint8_t>(1u << bit);
      PacketView v;
      const bool ok = decode_frame(f, v);
      if (i == kBth + 4)
        EXPECT_TRUE(ok) << "resv8a bit " << bit;
      else
        EXPECT_FALSE(ok) << "byte " << i - kBth << " bit " << bit;
    }
  }
}

// ---------------------------------------------------------------------------
// Decode rejections with a correct ICRC.

TEST(WireRocev2Decode, AcceptsEthernetPadding) {
  Headers h;
  h.aeth = make_aeth(kSyndromeAck, 1);
  auto frame = build(Opcode::kAcknowledge, 3, 5, false, h, {});
  ASSERT_EQ(frame.size(), 42u + 12 + 4 + 4);
  frame.resize(frame.size() + 10, 0xAA);  // trailing bytes beyond the IP datagram
  PacketView v;
  EXPECT_TRUE(decode_frame(frame, v));
}

TEST(WireRocev2Decode, RejectsShortAndUnknown) {
  const auto base = icrc_sample();
  const auto udp = decode_udp_frame(base);
  ASSERT_TRUE(udp.has_value());
  PacketView v;
  // UDP payload shorter than BTH + ICRC.
  for (size_t n = 0; n < 16; ++n) EXPECT_FALSE(decode(base, udp->payload.first(n), v)) << n;
  // Frame too short to contain the UDP payload it is paired with.
  EXPECT_FALSE(decode(std::span(base).first(base.size() - 1), udp->payload, v));

  for (uint8_t op : {0x0D, 0x0E, 0x10, 0x12, 0x13, 0x64, 0x81, 0xFF}) {
    auto f = base;
    f[kBth] = op;
    resealed_decode_fails(f, "unknown opcode");
  }
  for (uint8_t tver : {1, 2, 8, 15}) {
    auto f = base;
    f[kBth + 1] = static_cast<uint8_t>((f[kBth + 1] & 0xF0) | tver);
    resealed_decode_fails(f, "TVer");
  }
}

TEST(WireRocev2Decode, RejectsHeadersThatDoNotFit) {
  // A WRITE_ONLY whose UDP payload is too short for its RETH.
  const auto p = make_payload(0);
  auto f = build(Opcode::kWriteMiddle, 1, 1, false, {}, make_payload(8));
  f[kBth] = static_cast<uint8_t>(Opcode::kWriteOnlyImm);  // needs 20 more header bytes than are there
  resealed_decode_fails(f, "RETH+ImmDt do not fit");
  // Pad count larger than the body.
  auto g = build(Opcode::kWriteMiddle, 1, 1, false, {}, make_payload(0));
  g[kBth + 1] = 0x30;
  resealed_decode_fails(g, "pad > body");
}

// IBA: PadCnt pads the payload to a 4-byte boundary, so payload + pad (and with
// it the whole BTH..ICRC span, all of whose headers are multiples of 4) is a
// multiple of 4. A packet that disagrees has a wrong pad count and must be
// refused; otherwise the receiver delivers a payload length the sender never sent.
TEST(WireRocev2Decode, RejectsBodyNotMultipleOfFour) {
  for (size_t len : {1, 2, 3, 5, 6, 7}) {
    // Encode len bytes (pad = 4 - len % 4), then claim pad 0 and drop the pad bytes.
    auto f = build(Opcode::kWriteMiddle, 1, 1, false, {}, make_payload(len));
    const size_t pad = (4 - len % 4) % 4;
    f[kBth + 1] = 0x00;
    f.erase(f.end() - 4 - static_cast<ptrdiff_t>(pad), f.end() - 4);
    store_be16(&f[kIp + 2], static_cast<uint16_t>(f.size() - kEthHeaderBytes));
    store_be16(&f[kUdp + 4], static_cast<uint16_t>(f.size() - kUdp));
    fix_ip_checksum(f);
    seal_icrc(f);
    ASSERT_TRUE(decode_udp_frame(f).has_value()) << len;
    PacketView v;
    EXPECT_FALSE(decode_frame(f, v)) << "payload " << len << " with pad 0 (body not 4-aligned)";
  }
}

TEST(WireRocev2Decode, RejectsBodyOnAckAndReadRequest) {
  {
    // ACKNOWLEDGE followed by 4 bytes that are not allowed there.
    auto f = build(Opcode::kWriteMiddle, 1, 1, false, {}, make_payload(8));
    f[kBth] = static_cast<uint8_t>(Opcode::kAcknowledge);  // AETH (4) + 4 stray bytes
    resealed_decode_fails(f, "ACK with body");
  }
  {
    Headers h;
    h.reth = make_reth(1, 2, 3);
    auto f = build(Opcode::kWriteOnly, 1, 1, false, h, make_payload(4));
    f[kBth] = static_cast<uint8_t>(Opcode::kReadRequest);
    resealed_decode_fails(f, "READ_REQUEST with payload");
  }
}

}  // namespace
}  // namespace metaroce::wire::rocev2

namespace metaroce::wire::rocev2 {
namespace {

// Why a frame was refused, so a receiver counts each cause under its own name
// (an unsupported TVer or opcode is not corruption).
TEST(WireRocev2Decode, RefusalsNameTheirCause) {
  const auto payload = make_payload(64);
  const auto good = build(Opcode::kWriteMiddle, 9, 9, false, {}, payload);
  const auto udp_of = [](const std::vector<uint8_t>& f) { return decode_udp_frame(f)->payload; };
  PacketView v;
  DecodeError why = DecodeError::kBadField;
  EXPECT_TRUE(decode(good, udp_of(good), v, &why));
  EXPECT_EQ(why, DecodeError::kNone);

  auto version = good;
  version[kUdpFrameHeaderBytes + 1] |= 0x01;  // BTH flags: TVer 1
  seal_icrc(version);
  EXPECT_FALSE(decode(version, udp_of(version), v, &why));
  EXPECT_EQ(why, DecodeError::kBadVersion);

  auto opcode = good;
  opcode[kUdpFrameHeaderBytes] = 0x64;  // UD SEND_ONLY: not part of the baseline
  seal_icrc(opcode);
  EXPECT_FALSE(decode(opcode, udp_of(opcode), v, &why));
  EXPECT_EQ(why, DecodeError::kBadOpcode);

  auto corrupt = good;
  corrupt[kUdpFrameHeaderBytes + 12 + 5] ^= 0x10;  // a payload bit, ICRC not resealed
  EXPECT_FALSE(decode(corrupt, udp_of(corrupt), v, &why));
  EXPECT_EQ(why, DecodeError::kBadChecksum);

  EXPECT_FALSE(decode(good, udp_of(good).first(8), v, &why));
  EXPECT_EQ(why, DecodeError::kTooShort);
}

}  // namespace
}  // namespace metaroce::wire::rocev2
