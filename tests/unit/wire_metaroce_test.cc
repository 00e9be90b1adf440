// MetaRoCE v1 packets (docs/spec/metaroce-wire-v1.md): layout, round trip of
// every opcode, the in-place encoder, and the specific DecodeError of every
// malformed input the decoder promises to catch.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "metaroce/wire/bytes.h"
#include "metaroce/wire/crc.h"
#include "metaroce/wire/metaroce.h"

namespace metaroce::wire {
namespace {

constexpr size_t kHdr = sizeof(CommonHeader);

// ---------------------------------------------------------------------------
// Helpers

CommonHeader make_common(Opcode op, size_t payload_len) {
  CommonHeader c{};
  c.version = kVersion << 4;
  c.opcode = static_cast<uint8_t>(op);
  c.flags = kFlagAckReq | kFlagFirst;
  c.path_id = 5;
  c.dst_conn_id.set(0x01020304);
  c.src_conn_id.set(0xA1A2A3A4);
  c.stream_id.set(0x0B0C);
  c.payload_len.set(static_cast<uint16_t>(payload_len));
  c.path_seq.set(0x11121314);
  c.path_floor.set(0x11121300);
  c.msg_seq.set(0x21222324);
  c.msg_offset.set(payload_len ? 4096 : 0);
  c.msg_len.set(payload_len ? static_cast<uint32_t>(4096 + payload_len + 100) : 0);
  c.tx_ts.set(0x31323334);
  if (op == Opcode::kAck || op == Opcode::kNak) c.path_seq.set(0), c.path_floor.set(0);
  return c;
}

std::vector<uint8_t> make_payload(size_t n, uint8_t salt = 0) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 13 + salt);
  return p;
}

AckBlock make_block(uint8_t path, uint32_t cum) {
  AckBlock b{};
  b.path_id = path;
  b.flags = (path & 1) ? kAckFlagEce : 0;
  b.ecn_count.set(static_cast<uint16_t>((path & 1) ? 3 * path + 1 : 0));
  b.cum_seq.set(cum);
  b.echo_ts.set(0x40000000u + path);
  for (size_t i = 0; i < kSackBits; i += (path + 2)) sack_set(b.sack, i);
  return b;
}

std::vector<uint8_t> encode(const CommonHeader& c, const void* ext, size_t ext_len,
                            std::span<const uint8_t> payload, std::span<const AckBlock> blocks = {}) {
  std::vector<uint8_t> out(kHdr + ext_len + blocks.size() * sizeof(AckBlock) + payload.size() + kCrcBytes);
  const size_t n = encode_packet(out, c, ext, ext_len, payload, blocks);
  EXPECT_EQ(n, out.size());
  return out;
}

// Recomputes the CRC trailer after a deliberate edit, so the edit itself is
// what the decoder has to catch.
void reseal(std::vector<uint8_t>& pkt) {
  ASSERT_GE(pkt.size(), kCrcBytes);
  const size_t covered = pkt.size() - kCrcBytes;
  store_be32(pkt.data() + covered, crc32c(std::span(pkt).first(covered)));
}

DecodeError decode(const std::vector<uint8_t>& pkt) {
  PacketView v;
  return decode_packet(pkt, v);
}

// Field-accurate builders used by both the round-trip and the mutation tests.
WriteExt write_ext(uint32_t imm) {
  WriteExt e{};
  e.remote_addr.set(0x1122334455667788ull);
  e.rkey.set(0x99AABBCC);
  e.imm.set(imm);
  return e;
}
SendExt send_ext(uint32_t imm) {
  SendExt e{};
  e.recv_seq.set(0x00000007);
  e.imm.set(imm);
  return e;
}
ReadReqExt read_req_ext(uint32_t length) {
  ReadReqExt e{};
  e.remote_addr.set(0x7FFF000012340000ull);
  e.rkey.set(0x0BADF00D);
  e.length.set(length);
  return e;
}
AtomicExt atomic_ext(bool cas) {
  AtomicExt e{};
  e.remote_addr.set(0x00007F0000001000ull);
  e.rkey.set(0x13579BDF);
  e.operand.set(0x0102030405060708ull);
  e.compare.set(cas ? 0xF0E0D0C0B0A09080ull : 0);
  return e;
}
AtomicRespExt atomic_resp_ext() {
  AtomicRespExt e{};
  e.original.set(0xCAFEBABEDEADBEEFull);
  return e;
}
AckExt ack_ext(uint8_t n) {
  AckExt e{};
  e.rate_hint_kbps.set(25'000'000);  // 25 Gbit/s
  e.num_blocks = n;
  return e;
}
NakExt nak_ext() {
  NakExt e{};
  e.code = static_cast<uint8_t>(NakCode::kRnr);
  e.stream_id.set(0x0B0C);
  e.msg_seq.set(0x21222324);
  e.msg_offset.set(8192);
  return e;
}

// A valid packet for every opcode (ACK with 1 and with 8 blocks).
struct Built {
  const char* name;
  Opcode op;
  std::vector<uint8_t> bytes;
  size_t ext_len;
  size_t blocks;
  size_t payload_len;
};

std::vector<Built> all_valid_packets() {
  std::vector<Built> v;
  auto add = [&](const char* name, Opcode op, const void* ext, size_t ext_len, size_t payload_len,
                 std::vector<AckBlock> blocks = {}) {
    const auto payload = make_payload(payload_len, static_cast<uint8_t>(op));
    const auto c = make_common(op, payload_len);
    v.push_back({name, op, encode(c, ext, ext_len, payload, blocks), ext_len, blocks.size(), payload_len});
  };
  const auto w = write_ext(0), wi = write_ext(0xDEADBEEF);
  const auto s = send_ext(0), si = send_ext(0x0A0B0C0D);
  const auto rr = read_req_ext(65536);
  const auto fa = atomic_ext(false), cs = atomic_ext(true);
  const auto ar = atomic_resp_ext();
  const auto a1 = ack_ext(1), a8 = ack_ext(8);
  const auto nk = nak_ext();
  add("WRITE", Opcode::kWrite, &w, sizeof w, 100);
  add("WRITE_IMM", Opcode::kWriteImm, &wi, sizeof wi, 33);
  add("SEND", Opcode::kSend, &s, sizeof s, 64);
  add("SEND_IMM", Opcode::kSendImm, &si, sizeof si, 1);
  add("READ_REQ", Opcode::kReadReq, &rr, sizeof rr, 0);
  add("READ_RESP", Opcode::kReadResp, nullptr, 0, 77);
  add("FETCH_ADD", Opcode::kFetchAdd, &fa, sizeof fa, 0);
  add("CMP_SWAP", Opcode::kCmpSwap, &cs, sizeof cs, 0);
  add("ATOMIC_RESP", Opcode::kAtomicResp, &ar, sizeof ar, 0);
  add("PROBE", Opcode::kProbe, nullptr, 0, 0);
  add("ACK1", Opcode::kAck, &a1, sizeof a1, 0, {make_block(3, 1000)});
  std::vector<AckBlock> eight;
  for (uint8_t p = 0; p < 8; ++p) eight.push_back(make_block(p, 100u * p + 7));
  add("ACK8", Opcode::kAck, &a8, sizeof a8, 0, eight);
  add("NAK", Opcode::kNak, &nk, sizeof nk, 0);
  return v;
}

void expect_common_eq(const CommonHeader& got, const CommonHeader& want) {
  EXPECT_EQ(got.version, want.version);
  EXPECT_EQ(got.opcode, want.opcode);
  EXPECT_EQ(got.flags, want.flags);
  EXPECT_EQ(got.path_id, want.path_id);
  EXPECT_EQ(got.dst_conn_id.get(), want.dst_conn_id.get());
  EXPECT_EQ(got.src_conn_id.get(), want.src_conn_id.get());
  EXPECT_EQ(got.stream_id.get(), want.stream_id.get());
  EXPECT_EQ(got.payload_len.get(), want.payload_len.get());
  EXPECT_EQ(got.path_seq.get(), want.path_seq.get());
  EXPECT_EQ(got.path_floor.get(), want.path_floor.get());
  EXPECT_EQ(got.msg_seq.get(), want.msg_seq.get());
  EXPECT_EQ(got.msg_offset.get(), want.msg_offset.get());
  EXPECT_EQ(got.msg_len.get(), want.msg_len.get());
  EXPECT_EQ(got.tx_ts.get(), want.tx_ts.get());
}

// Decodes pkt, expects success, checks the common header and payload, and
// returns the view for opcode-specific checks.
PacketView decode_ok(const std::vector<uint8_t>& pkt, const CommonHeader& want,
                     std::span<const uint8_t> payload, size_t ext_len, size_t blocks = 0) {
  PacketView v;
  const DecodeError e = decode_packet(pkt, v);
  EXPECT_EQ(e, DecodeError::kNone) << decode_error_name(e);
  expect_common_eq(v.common, want);
  EXPECT_EQ(static_cast<uint8_t>(v.opcode), want.opcode);
  EXPECT_EQ(v.payload.size(), payload.size());
  EXPECT_EQ(v.payload.data(), pkt.data() + kHdr + ext_len + blocks * sizeof(AckBlock));
  EXPECT_TRUE(std::equal(v.payload.begin(), v.payload.end(), payload.begin(), payload.end()));
  EXPECT_EQ(v.ack_blocks.size(), blocks);
  // The trailer is CRC32C of everything before it, big-endian.
  EXPECT_EQ(load_be32(pkt.data() + pkt.size() - 4), crc32c(std::span(pkt).first(pkt.size() - 4)));
  return v;
}

// ---------------------------------------------------------------------------
// Layout: these offsets are the tables in docs/spec/metaroce-wire-v1.md.

TEST(WireMetaroceLayout, StructSizesAndOffsets) {
  EXPECT_EQ(sizeof(CommonHeader), 40u);
  EXPECT_EQ(offsetof(CommonHeader, version), 0u);
  EXPECT_EQ(offsetof(CommonHeader, opcode), 1u);
  EXPECT_EQ(offsetof(CommonHeader, flags), 2u);
  EXPECT_EQ(offsetof(CommonHeader, path_id), 3u);
  EXPECT_EQ(offsetof(CommonHeader, dst_conn_id), 4u);
  EXPECT_EQ(offsetof(CommonHeader, src_conn_id), 8u);
  EXPECT_EQ(offsetof(CommonHeader, stream_id), 12u);
  EXPECT_EQ(offsetof(CommonHeader, payload_len), 14u);
  EXPECT_EQ(offsetof(CommonHeader, path_seq), 16u);
  EXPECT_EQ(offsetof(CommonHeader, path_floor), 20u);
  EXPECT_EQ(offsetof(CommonHeader, msg_seq), 24u);
  EXPECT_EQ(offsetof(CommonHeader, msg_offset), 28u);
  EXPECT_EQ(offsetof(CommonHeader, msg_len), 32u);
  EXPECT_EQ(offsetof(CommonHeader, tx_ts), 36u);

  EXPECT_EQ(offsetof(WriteExt, remote_addr), 0u);
  EXPECT_EQ(offsetof(WriteExt, rkey), 8u);
  EXPECT_EQ(offsetof(WriteExt, imm), 12u);
  EXPECT_EQ(offsetof(SendExt, recv_seq), 0u);
  EXPECT_EQ(offsetof(SendExt, imm), 4u);
  EXPECT_EQ(offsetof(ReadReqExt, remote_addr), 0u);
  EXPECT_EQ(offsetof(ReadReqExt, rkey), 8u);
  EXPECT_EQ(offsetof(ReadReqExt, length), 12u);
  EXPECT_EQ(offsetof(AtomicExt, remote_addr), 0u);
  EXPECT_EQ(offsetof(AtomicExt, rkey), 8u);
  EXPECT_EQ(offsetof(AtomicExt, reserved), 12u);
  EXPECT_EQ(offsetof(AtomicExt, operand), 16u);
  EXPECT_EQ(offsetof(AtomicExt, compare), 24u);
  EXPECT_EQ(offsetof(AtomicRespExt, original), 0u);
  EXPECT_EQ(offsetof(AckExt, rate_hint_kbps), 0u);
  EXPECT_EQ(offsetof(AckExt, num_blocks), 4u);
  EXPECT_EQ(offsetof(AckExt, reserved), 5u);
  EXPECT_EQ(offsetof(AckBlock, path_id), 0u);
  EXPECT_EQ(offsetof(AckBlock, flags), 1u);
  EXPECT_EQ(offsetof(AckBlock, ecn_count), 2u);
  EXPECT_EQ(offsetof(AckBlock, cum_seq), 4u);
  EXPECT_EQ(offsetof(AckBlock, echo_ts), 8u);
  EXPECT_EQ(offsetof(AckBlock, sack), 12u);
  EXPECT_EQ(offsetof(NakExt, code), 0u);
  EXPECT_EQ(offsetof(NakExt, reserved), 1u);
  EXPECT_EQ(offsetof(NakExt, stream_id), 2u);
  EXPECT_EQ(offsetof(NakExt, msg_seq), 4u);
  EXPECT_EQ(offsetof(NakExt, msg_offset), 8u);
  EXPECT_EQ(alignof(AckBlock), 1u);  // ack_blocks may point anywhere in a buffer
}

TEST(WireMetaroceLayout, ConstantsAndOpcodeValues) {
  EXPECT_EQ(kDefaultUdpPort, 4794);
  EXPECT_EQ(kVersion, 1);
  EXPECT_EQ(kSackBits, 256u);
  EXPECT_EQ(sizeof(AckBlock::sack) * 8, kSackBits);
  EXPECT_EQ(kMaxAckBlocks, 8u);
  EXPECT_EQ(kCrcBytes, 4u);
  EXPECT_EQ(static_cast<int>(Opcode::kWrite), 0x01);
  EXPECT_EQ(static_cast<int>(Opcode::kWriteImm), 0x02);
  EXPECT_EQ(static_cast<int>(Opcode::kSend), 0x03);
  EXPECT_EQ(static_cast<int>(Opcode::kSendImm), 0x04);
  EXPECT_EQ(static_cast<int>(Opcode::kReadReq), 0x05);
  EXPECT_EQ(static_cast<int>(Opcode::kReadResp), 0x06);
  EXPECT_EQ(static_cast<int>(Opcode::kFetchAdd), 0x07);
  EXPECT_EQ(static_cast<int>(Opcode::kCmpSwap), 0x08);
  EXPECT_EQ(static_cast<int>(Opcode::kAtomicResp), 0x09);
  EXPECT_EQ(static_cast<int>(Opcode::kProbe), 0x0A);
  EXPECT_EQ(static_cast<int>(Opcode::kAck), 0x10);
  EXPECT_EQ(static_cast<int>(Opcode::kNak), 0x11);
  EXPECT_EQ(kFlagAckReq, 0x01);
  EXPECT_EQ(kFlagFirst, 0x02);
  EXPECT_EQ(kFlagLast, 0x04);
  EXPECT_EQ(kFlagRetx, 0x08);
  EXPECT_EQ(kAckFlagEce, 0x01);
  EXPECT_EQ(static_cast<int>(NakCode::kRnr), 0x01);
  EXPECT_EQ(static_cast<int>(NakCode::kBadKey), 0x02);
  EXPECT_EQ(static_cast<int>(NakCode::kOutOfBounds), 0x03);
  EXPECT_EQ(static_cast<int>(NakCode::kAccessViolation), 0x04);
  EXPECT_EQ(static_cast<int>(NakCode::kUnknownConnection), 0x05);
  EXPECT_EQ(static_cast<int>(NakCode::kInvalidRequest), 0x06);
}

TEST(WireMetaroceLayout, ExtHeaderBytesAndNames) {
  struct Row {
    Opcode op;
    size_t ext;
    const char* name;
    bool data;
  };
  const Row rows[] = {
      {Opcode::kWrite, 16, "WRITE", true},         {Opcode::kWriteImm, 16, "WRITE_IMM", true},
      {Opcode::kSend, 8, "SEND", true},            {Opcode::kSendImm, 8, "SEND_IMM", true},
      {Opcode::kReadReq, 16, "READ_REQ", true},    {Opcode::kReadResp, 0, "READ_RESP", true},
      {Opcode::kFetchAdd, 32, "FETCH_ADD", true},  {Opcode::kCmpSwap, 32, "CMP_SWAP", true},
      {Opcode::kAtomicResp, 8, "ATOMIC_RESP", true}, {Opcode::kProbe, 0, "PROBE", true},
      {Opcode::kAck, 8, "ACK", false},             {Opcode::kNak, 12, "NAK", false},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(ext_header_bytes(r.op), r.ext) << r.name;
    EXPECT_EQ(opcode_name(r.op), r.name);
    EXPECT_EQ(is_data_opcode(r.op), r.data) << r.name;
    EXPECT_EQ(packet_bytes(r.op, 10), 40 + r.ext + 10 + 4) << r.name;
  }
  EXPECT_EQ(packet_bytes(Opcode::kAck, 0, 3), 40u + 8 + 3 * 44 + 4);
  EXPECT_EQ(ext_header_bytes(static_cast<Opcode>(0x42)), 0u);
  EXPECT_EQ(opcode_name(static_cast<Opcode>(0x42)), "UNKNOWN");
  EXPECT_EQ(nak_code_name(NakCode::kRnr), "RNR");
  EXPECT_EQ(nak_code_name(NakCode::kInvalidRequest), "INVALID_REQUEST");
  EXPECT_EQ(nak_code_name(static_cast<NakCode>(0)), "UNKNOWN");
  EXPECT_EQ(decode_error_name(DecodeError::kNone), "none");
  EXPECT_EQ(decode_error_name(DecodeError::kBadChecksum), "bad_checksum");
}

TEST(WireMetaroceLayout, WireBytesAreBigEndianAtSpecOffsets) {
  const auto payload = make_payload(4);
  const auto c = make_common(Opcode::kWrite, payload.size());
  const auto e = write_ext(0x55667788);
  const auto pkt = encode(c, &e, sizeof e, payload);
  ASSERT_EQ(pkt.size(), 40u + 16 + 4 + 4);
  const uint8_t expect_hdr[40] = {
      0x10, 0x01, 0x03, 0x05,                          // version 1, WRITE, ACK_REQ|FIRST, path 5
      0x01, 0x02, 0x03, 0x04, 0xA1, 0xA2, 0xA3, 0xA4,  // dst, src conn id
      0x0B, 0x0C, 0x00, 0x04,                          // stream, payload_len
      0x11, 0x12, 0x13, 0x14, 0x11, 0x12, 0x13, 0x00,  // path_seq, path_floor
      0x21, 0x22, 0x23, 0x24, 0x00, 0x00, 0x10, 0x00,  // msg_seq, msg_offset 4096
      0x00, 0x00, 0x10, 0x68, 0x31, 0x32, 0x33, 0x34,  // msg_len 4200, tx_ts
  };
  EXPECT_EQ(0, std::memcmp(pkt.data(), expect_hdr, 40));
  const uint8_t expect_ext[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                                  0x99, 0xAA, 0xBB, 0xCC, 0x55, 0x66, 0x77, 0x88};
  EXPECT_EQ(0, std::memcmp(pkt.data() + 40, expect_ext, 16));
  EXPECT_EQ(0, std::memcmp(pkt.data() + 56, payload.data(), 4));
  const uint32_t crc = crc32c(std::span(pkt).first(60));
  EXPECT_EQ(pkt[60], crc >> 24);
  EXPECT_EQ(pkt[63], crc & 0xFF);
}

// The worked example in docs/spec/metaroce-wire-v1.md ("Worked example"), byte for byte.
TEST(WireMetaroceLayout, SpecWorkedExampleWrite) {
  CommonHeader c{};
  c.version = 0x10;
  c.opcode = static_cast<uint8_t>(Opcode::kWrite);
  c.flags = kFlagFirst | kFlagLast | kFlagAckReq;
  c.path_id = 2;
  c.dst_conn_id.set(0x102);
  c.src_conn_id.set(0x201);
  c.stream_id.set(3);
  c.payload_len.set(4);
  c.path_seq.set(1000);
  c.path_floor.set(998);
  c.msg_seq.set(7);
  c.msg_offset.set(0);
  c.msg_len.set(4);
  c.tx_ts.set(0x12345678);
  WriteExt w{};
  w.remote_addr.set(0x00007F0000001000ull);
  w.rkey.set(0x42);
  const std::vector<uint8_t> payload = {0xDE, 0xAD, 0xBE, 0xEF};
  const auto pkt = encode(c, &w, sizeof w, payload);
  const std::vector<uint8_t> expect = {
      0x10, 0x01, 0x07, 0x02, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x02, 0x01, 0x00, 0x03, 0x00, 0x04,
      0x00, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x03, 0xE6, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x04, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x7F, 0x00, 0x00, 0x00, 0x10, 0x00,
      0x00, 0x00, 0x00, 0x42, 0x00, 0x00, 0x00, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 0x4D, 0x35, 0xEB, 0x13,
  };
  EXPECT_EQ(pkt, expect);
  EXPECT_EQ(decode(pkt), DecodeError::kNone);
}

// The ACK of the worked example: path 2, cum_seq 1001 (1000 received, 1001
// missing), SACK bit 0 = 1002 received, one CE mark, 100 Gbit/s rate hint.
TEST(WireMetaroceLayout, SpecWorkedExampleAck) {
  CommonHeader c{};
  c.version = 0x10;
  c.opcode = static_cast<uint8_t>(Opcode::kAck);
  c.path_id = 2;
  c.dst_conn_id.set(0x201);
  c.src_conn_id.set(0x102);
  c.stream_id.set(3);
  c.msg_seq.set(8);
  c.tx_ts.set(0x12350000);
  AckExt e{};
  e.rate_hint_kbps.set(100'000'000);
  e.num_blocks = 1;
  AckBlock b{};
  b.path_id = 2;
  b.flags = kAckFlagEce;
  b.ecn_count.set(1);
  b.cum_seq.set(1001);
  b.echo_ts.set(0x12345678);
  sack_set(b.sack, 0);
  const std::vector<AckBlock> blocks = {b};
  const auto pkt = encode(c, &e, sizeof e, {}, blocks);
  ASSERT_EQ(pkt.size(), 96u);
  const uint8_t head[64] = {
      0x10, 0x10, 0x00, 0x02, 0x00, 0x00, 0x02, 0x01, 0x00, 0x00, 0x01, 0x02, 0x00, 0x03, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x12, 0x35, 0x00, 0x00, 0x05, 0xF5, 0xE1, 0x00, 0x01, 0x00, 0x00, 0x00,
      0x02, 0x01, 0x00, 0x01, 0x00, 0x00, 0x03, 0xE9, 0x12, 0x34, 0x56, 0x78, 0x01, 0x00, 0x00, 0x00,
  };
  EXPECT_EQ(0, std::memcmp(pkt.data(), head, sizeof head));
  for (size_t i = 64; i < 92; ++i) EXPECT_EQ(pkt[i], 0) << i;
  EXPECT_EQ(load_be32(pkt.data() + 92), 0x8C6926CBu);
  EXPECT_EQ(decode(pkt), DecodeError::kNone);
}

TEST(WireMetaroceLayout, SackBitNumbering) {
  uint8_t sack[32] = {};
  sack_set(sack, 0);
  sack_set(sack, 9);
  sack_set(sack, 255);
  EXPECT_EQ(sack[0], 0x01);  // bit 0 -> byte 0, LSB
  EXPECT_EQ(sack[1], 0x02);  // bit 9 -> byte 1, bit 1
  EXPECT_EQ(sack[31], 0x80);
  EXPECT_TRUE(sack_test(sack, 0));
  EXPECT_TRUE(sack_test(sack, 9));
  EXPECT_TRUE(sack_test(sack, 255));
  for (size_t i = 1; i < 255; ++i) {
    if (i != 9) {
      EXPECT_FALSE(sack_test(sack, i)) << i;
    }
  }
}

// ---------------------------------------------------------------------------
// Round trips, one per opcode, every field checked.

TEST(WireMetaroceRoundTrip, Write) {
  const auto payload = make_payload(100);
  const auto c = make_common(Opcode::kWrite, payload.size());
  const auto e = write_ext(0);
  const auto pkt = encode(c, &e, sizeof e, payload);
  const auto v = decode_ok(pkt, c, payload, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kWrite);
  EXPECT_EQ(v.ext.write.remote_addr.get(), 0x1122334455667788ull);
  EXPECT_EQ(v.ext.write.rkey.get(), 0x99AABBCCu);
  EXPECT_EQ(v.ext.write.imm.get(), 0u);
}

TEST(WireMetaroceRoundTrip, WriteImm) {
  const auto payload = make_payload(33);
  auto c = make_common(Opcode::kWriteImm, payload.size());
  c.flags = kFlagLast | kFlagRetx;
  const auto e = write_ext(0xDEADBEEF);
  const auto pkt = encode(c, &e, sizeof e, payload);
  const auto v = decode_ok(pkt, c, payload, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kWriteImm);
  EXPECT_EQ(v.ext.write.remote_addr.get(), 0x1122334455667788ull);
  EXPECT_EQ(v.ext.write.rkey.get(), 0x99AABBCCu);
  EXPECT_EQ(v.ext.write.imm.get(), 0xDEADBEEFu);
  EXPECT_EQ(v.common.flags, kFlagLast | kFlagRetx);
}

TEST(WireMetaroceRoundTrip, Send) {
  const auto payload = make_payload(64);
  auto c = make_common(Opcode::kSend, payload.size());
  c.flags = kFlagFirst | kFlagLast;
  c.msg_offset.set(0);
  c.msg_len.set(64);  // exactly fills the message
  const auto e = send_ext(0);
  const auto pkt = encode(c, &e, sizeof e, payload);
  const auto v = decode_ok(pkt, c, payload, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kSend);
  EXPECT_EQ(v.ext.send.recv_seq.get(), 7u);
  EXPECT_EQ(v.ext.send.imm.get(), 0u);
}

TEST(WireMetaroceRoundTrip, SendImm) {
  const auto payload = make_payload(1);
  const auto c = make_common(Opcode::kSendImm, payload.size());
  const auto e = send_ext(0x0A0B0C0D);
  const auto pkt = encode(c, &e, sizeof e, payload);
  const auto v = decode_ok(pkt, c, payload, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kSendImm);
  EXPECT_EQ(v.ext.send.recv_seq.get(), 7u);
  EXPECT_EQ(v.ext.send.imm.get(), 0x0A0B0C0Du);
}

TEST(WireMetaroceRoundTrip, ZeroLengthSend) {
  // A zero-byte SEND (pure completion with immediate) is a valid message.
  auto c = make_common(Opcode::kSendImm, 0);
  c.flags = kFlagFirst | kFlagLast;
  const auto e = send_ext(1);
  const auto pkt = encode(c, &e, sizeof e, {});
  const auto v = decode_ok(pkt, c, {}, sizeof e);
  EXPECT_EQ(v.ext.send.imm.get(), 1u);
}

TEST(WireMetaroceRoundTrip, ReadReq) {
  const auto c = make_common(Opcode::kReadReq, 0);
  const auto e = read_req_ext(65536);
  const auto pkt = encode(c, &e, sizeof e, {});
  const auto v = decode_ok(pkt, c, {}, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kReadReq);
  EXPECT_EQ(v.ext.read_req.remote_addr.get(), 0x7FFF000012340000ull);
  EXPECT_EQ(v.ext.read_req.rkey.get(), 0x0BADF00Du);
  EXPECT_EQ(v.ext.read_req.length.get(), 65536u);
}

TEST(WireMetaroceRoundTrip, ReadResp) {
  const auto payload = make_payload(77);
  const auto c = make_common(Opcode::kReadResp, payload.size());
  const auto pkt = encode(c, nullptr, 0, payload);
  const auto v = decode_ok(pkt, c, payload, 0);
  EXPECT_EQ(v.opcode, Opcode::kReadResp);
}

TEST(WireMetaroceRoundTrip, FetchAdd) {
  const auto c = make_common(Opcode::kFetchAdd, 0);
  const auto e = atomic_ext(false);
  const auto pkt = encode(c, &e, sizeof e, {});
  const auto v = decode_ok(pkt, c, {}, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kFetchAdd);
  EXPECT_EQ(v.ext.atomic.remote_addr.get(), 0x00007F0000001000ull);
  EXPECT_EQ(v.ext.atomic.rkey.get(), 0x13579BDFu);
  EXPECT_EQ(v.ext.atomic.reserved.get(), 0u);
  EXPECT_EQ(v.ext.atomic.operand.get(), 0x0102030405060708ull);
  EXPECT_EQ(v.ext.atomic.compare.get(), 0u);
}

TEST(WireMetaroceRoundTrip, CmpSwap) {
  const auto c = make_common(Opcode::kCmpSwap, 0);
  const auto e = atomic_ext(true);
  const auto pkt = encode(c, &e, sizeof e, {});
  const auto v = decode_ok(pkt, c, {}, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kCmpSwap);
  EXPECT_EQ(v.ext.atomic.remote_addr.get(), 0x00007F0000001000ull);
  EXPECT_EQ(v.ext.atomic.rkey.get(), 0x13579BDFu);
  EXPECT_EQ(v.ext.atomic.operand.get(), 0x0102030405060708ull);
  EXPECT_EQ(v.ext.atomic.compare.get(), 0xF0E0D0C0B0A09080ull);
}

TEST(WireMetaroceRoundTrip, AtomicResp) {
  const auto c = make_common(Opcode::kAtomicResp, 0);
  const auto e = atomic_resp_ext();
  const auto pkt = encode(c, &e, sizeof e, {});
  const auto v = decode_ok(pkt, c, {}, sizeof e);
  EXPECT_EQ(v.opcode, Opcode::kAtomicResp);
  EXPECT_EQ(v.ext.atomic_resp.original.get(), 0xCAFEBABEDEADBEEFull);
}

TEST(WireMetaroceRoundTrip, Probe) {
  const auto c = make_common(Opcode::kProbe, 0);
  const auto pkt = encode(c, nullptr, 0, {});
  ASSERT_EQ(pkt.size(), 44u);
  const auto v = decode_ok(pkt, c, {}, 0);
  EXPECT_EQ(v.opcode, Opcode::kProbe);
}

void check_block(const AckBlock& got, const AckBlock& want) {
  EXPECT_EQ(got.path_id, want.path_id);
  EXPECT_EQ(got.flags, want.flags);
  EXPECT_EQ(got.ecn_count.get(), want.ecn_count.get());
  EXPECT_EQ(got.cum_seq.get(), want.cum_seq.get());
  EXPECT_EQ(got.echo_ts.get(), want.echo_ts.get());
  EXPECT_EQ(0, std::memcmp(got.sack, want.sack, sizeof got.sack));
  for (size_t i = 0; i < kSackBits; ++i) EXPECT_EQ(sack_test(got.sack, i), sack_test(want.sack, i));
}

TEST(WireMetaroceRoundTrip, AckOneBlock) {
  const auto c = make_common(Opcode::kAck, 0);
  const auto e = ack_ext(1);
  const std::vector<AckBlock> blocks = {make_block(3, 1000)};
  const auto pkt = encode(c, &e, sizeof e, {}, blocks);
  ASSERT_EQ(pkt.size(), 40u + 8 + 44 + 4);
  const auto v = decode_ok(pkt, c, {}, sizeof e, 1);
  EXPECT_EQ(v.opcode, Opcode::kAck);
  EXPECT_EQ(v.ext.ack.rate_hint_kbps.get(), 25'000'000u);
  EXPECT_EQ(v.ext.ack.num_blocks, 1);
  ASSERT_EQ(v.ack_blocks.size(), 1u);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(v.ack_blocks.data()), pkt.data() + 48);
  check_block(v.ack_blocks[0], blocks[0]);
  EXPECT_EQ(v.ack_blocks[0].flags & kAckFlagEce, kAckFlagEce);
  EXPECT_EQ(v.ack_blocks[0].ecn_count.get(), 10);
}

TEST(WireMetaroceRoundTrip, AckEightBlocks) {
  const auto c = make_common(Opcode::kAck, 0);
  const auto e = ack_ext(8);
  std::vector<AckBlock> blocks;
  for (uint8_t p = 0; p < 8; ++p) blocks.push_back(make_block(p, 100u * p + 7));
  blocks[7].ecn_count.set(65535);
  blocks[7].cum_seq.set(0xFFFFFFFF);
  const auto pkt = encode(c, &e, sizeof e, {}, blocks);
  ASSERT_EQ(pkt.size(), 40u + 8 + 8 * 44 + 4);
  const auto v = decode_ok(pkt, c, {}, sizeof e, 8);
  EXPECT_EQ(v.ext.ack.num_blocks, 8);
  ASSERT_EQ(v.ack_blocks.size(), 8u);
  for (size_t i = 0; i < 8; ++i) check_block(v.ack_blocks[i], blocks[i]);
}

TEST(WireMetaroceRoundTrip, AckZeroRateHintMeansNoLimit) {
  const auto c = make_common(Opcode::kAck, 0);
  auto e = ack_ext(1);
  e.rate_hint_kbps.set(0);
  const std::vector<AckBlock> blocks = {make_block(0, 0)};
  const auto pkt = encode(c, &e, sizeof e, {}, blocks);
  const auto v = decode_ok(pkt, c, {}, sizeof e, 1);
  EXPECT_EQ(v.ext.ack.rate_hint_kbps.get(), 0u);
}

TEST(WireMetaroceRoundTrip, Nak) {
  const auto c = make_common(Opcode::kNak, 0);
  for (NakCode code : {NakCode::kRnr, NakCode::kBadKey, NakCode::kOutOfBounds, NakCode::kAccessViolation,
                       NakCode::kUnknownConnection, NakCode::kInvalidRequest}) {
    auto e = nak_ext();
    e.code = static_cast<uint8_t>(code);
    const auto pkt = encode(c, &e, sizeof e, {});
    const auto v = decode_ok(pkt, c, {}, sizeof e);
    EXPECT_EQ(v.opcode, Opcode::kNak);
    EXPECT_EQ(v.ext.nak.code, static_cast<uint8_t>(code));
    EXPECT_EQ(v.ext.nak.reserved, 0);
    EXPECT_EQ(v.ext.nak.stream_id.get(), 0x0B0C);
    EXPECT_EQ(v.ext.nak.msg_seq.get(), 0x21222324u);
    EXPECT_EQ(v.ext.nak.msg_offset.get(), 8192u);
  }
}

TEST(WireMetaroceRoundTrip, PacketBytesMatchesEncoder) {
  for (const auto& b : all_valid_packets())
    EXPECT_EQ(packet_bytes(b.op, b.payload_len, b.blocks), b.bytes.size()) << b.name;
}

TEST(WireMetaroceRoundTrip, BoundaryFieldValues) {
  // msg_offset + payload_len == msg_len exactly, at the top of the 32-bit range.
  const auto payload = make_payload(16);
  auto c = make_common(Opcode::kWrite, payload.size());
  c.msg_len.set(0xFFFFFFFF);
  c.msg_offset.set(0xFFFFFFFF - 16);
  c.path_seq.set(0xFFFFFFFF);
  c.path_floor.set(0xFFFFFFFF);
  c.msg_seq.set(0xFFFFFFFF);
  c.tx_ts.set(0xFFFFFFFF);
  c.stream_id.set(0xFFFF);
  c.path_id = 0xFF;
  c.flags = kFlagAckReq | kFlagFirst | kFlagLast | kFlagRetx;
  const auto e = write_ext(0);
  const auto pkt = encode(c, &e, sizeof e, payload);
  decode_ok(pkt, c, payload, sizeof e);
}

// ---------------------------------------------------------------------------
// begin_packet / finish_packet (in-place data path) vs encode_packet.

TEST(WireMetaroceEncode, BeginFinishMatchesEncodePacket) {
  struct Case {
    Opcode op;
    std::vector<uint8_t> ext;
    size_t payload;
  };
  auto raw = [](const auto& e) {
    std::vector<uint8_t> v(sizeof e);
    std::memcpy(v.data(), &e, sizeof e);
    return v;
  };
  const Case cases[] = {
      {Opcode::kWrite, raw(write_ext(0)), 1024},     {Opcode::kWriteImm, raw(write_ext(9)), 3},
      {Opcode::kSend, raw(send_ext(0)), 512},        {Opcode::kSendImm, raw(send_ext(5)), 0},
      {Opcode::kReadReq, raw(read_req_ext(8)), 0},   {Opcode::kReadResp, {}, 4000},
      {Opcode::kFetchAdd, raw(atomic_ext(false)), 0}, {Opcode::kCmpSwap, raw(atomic_ext(true)), 0},
      {Opcode::kAtomicResp, raw(atomic_resp_ext()), 0}, {Opcode::kProbe, {}, 0},
      {Opcode::kNak, raw(nak_ext()), 0},
  };
  for (const auto& k : cases) {
    const auto payload = make_payload(k.payload, 0x5A);
    const auto c = make_common(k.op, payload.size());
    const auto reference = encode(c, k.ext.data(), k.ext.size(), payload);

    std::vector<uint8_t> buf(reference.size() + 16, 0xCC);  // larger than needed
    uint8_t* room = begin_packet(buf, c, k.ext.data(), k.ext.size());
    ASSERT_NE(room, nullptr) << opcode_name(k.op);
    EXPECT_EQ(room, buf.data() + kHdr + k.ext.size());
    if (!payload.empty()) std::memcpy(room, payload.data(), payload.size());
    const size_t n = finish_packet(buf, k.ext.size(), payload.size());
    ASSERT_EQ(n, reference.size()) << opcode_name(k.op);
    EXPECT_TRUE(std::equal(reference.begin(), reference.end(), buf.begin())) << opcode_name(k.op);
    EXPECT_EQ(buf[n], 0xCC);  // nothing written past the packet
    EXPECT_EQ(decode(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n))),
              DecodeError::kNone);
  }
}

TEST(WireMetaroceEncode, RefusesSmallBuffers) {
  const auto payload = make_payload(50);
  const auto c = make_common(Opcode::kWrite, payload.size());
  const auto e = write_ext(0);
  const size_t total = packet_bytes(Opcode::kWrite, payload.size());
  for (size_t sz = 0; sz < total; ++sz) {
    std::vector<uint8_t> buf(sz);
    EXPECT_EQ(encode_packet(buf, c, &e, sizeof e, payload), 0u) << sz;
    EXPECT_EQ(begin_packet(buf, c, &e, sizeof e), nullptr) << sz;
    EXPECT_EQ(finish_packet(buf, sizeof e, payload.size()), 0u) << sz;
  }
  std::vector<uint8_t> buf(total);
  EXPECT_EQ(encode_packet(buf, c, &e, sizeof e, payload), total);
}

TEST(WireMetaroceEncode, RefusesPayloadLenMismatch) {
  const auto payload = make_payload(50);
  auto c = make_common(Opcode::kWrite, 49);
  const auto e = write_ext(0);
  std::vector<uint8_t> buf(200);
  EXPECT_EQ(encode_packet(buf, c, &e, sizeof e, payload), 0u);
  c.payload_len.set(51);
  EXPECT_EQ(encode_packet(buf, c, &e, sizeof e, payload), 0u);
}

// ---------------------------------------------------------------------------
// Malformed input: each yields its specific DecodeError.

TEST(WireMetaroceDecode, TooShort) {
  for (size_t n = 0; n < 44; ++n) {
    std::vector<uint8_t> buf(n, 0);
    if (n > 0) buf[0] = 0x10;
    if (n > 1) buf[1] = 0x0A;
    EXPECT_EQ(decode(buf), DecodeError::kTooShort) << n;
  }
  // Room for the common header and CRC but not for the extension header.
  const auto c = make_common(Opcode::kWrite, 0);
  const auto e = write_ext(0);
  auto pkt = encode(c, &e, sizeof e, {});
  ASSERT_EQ(pkt.size(), 60u);
  for (size_t n = 44; n < 60; ++n) {
    std::vector<uint8_t> cut(pkt.begin(), pkt.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_EQ(decode(cut), DecodeError::kTooShort) << n;
  }
}

TEST(WireMetaroceDecode, BadVersion) {
  for (uint8_t ver : {0x00, 0x20, 0x30, 0xF0, 0x01}) {
    auto pkt = all_valid_packets()[0].bytes;
    pkt[0] = ver;
    reseal(pkt);
    EXPECT_EQ(decode(pkt), DecodeError::kBadVersion) << std::hex << int(ver);
  }
}

TEST(WireMetaroceDecode, NonzeroLowVersionNibble) {
  for (uint8_t ver : {0x11, 0x12, 0x18, 0x1F}) {
    auto pkt = all_valid_packets()[0].bytes;
    pkt[0] = ver;
    reseal(pkt);
    EXPECT_EQ(decode(pkt), DecodeError::kBadVersion) << std::hex << int(ver);
  }
}

TEST(WireMetaroceDecode, UnknownOpcode) {
  std::set<int> known = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x10, 0x11};
  for (int op = 0; op < 256; ++op) {
    if (known.count(op)) continue;
    auto pkt = all_valid_packets()[9].bytes;  // PROBE, 44 bytes
    pkt[1] = static_cast<uint8_t>(op);
    reseal(pkt);
    EXPECT_EQ(decode(pkt), DecodeError::kBadOpcode) << std::hex << op;
  }
}

TEST(WireMetaroceDecode, PayloadLenLargerOrSmallerThanBuffer) {
  for (const auto& b : all_valid_packets()) {
    for (int delta : {-1, 1, 100}) {
      auto pkt = b.bytes;
      const int len = load_be16(pkt.data() + 14) + delta;
      if (len < 0) continue;
      store_be16(pkt.data() + 14, static_cast<uint16_t>(len));
      reseal(pkt);
      EXPECT_EQ(decode(pkt), DecodeError::kBadLength) << b.name << " delta " << delta;
    }
    // Buffer one byte longer / shorter than the header says.
    auto longer = b.bytes;
    longer.push_back(0);
    reseal(longer);
    EXPECT_EQ(decode(longer), DecodeError::kBadLength) << b.name;
    auto shorter = b.bytes;
    shorter.pop_back();
    const size_t min = kHdr + b.ext_len + kCrcBytes;
    EXPECT_EQ(decode(shorter), shorter.size() < min ? DecodeError::kTooShort : DecodeError::kBadLength)
        << b.name;
  }
}

TEST(WireMetaroceDecode, AckBlockCount) {
  const auto c = make_common(Opcode::kAck, 0);
  // Zero blocks.
  {
    const auto e = ack_ext(0);
    const auto pkt = encode(c, &e, sizeof e, {});
    EXPECT_EQ(decode(pkt), DecodeError::kBadField);
  }
  // Nine blocks, all present in the buffer and correctly sealed.
  {
    const auto e = ack_ext(9);
    std::vector<AckBlock> blocks;
    for (uint8_t p = 0; p < 9; ++p) blocks.push_back(make_block(p, p));
    const auto pkt = encode(c, &e, sizeof e, {}, blocks);
    EXPECT_EQ(decode(pkt), DecodeError::kBadField);
  }
  // 255 blocks claimed.
  {
    const auto e = ack_ext(255);
    const std::vector<AckBlock> blocks = {make_block(0, 0)};
    const auto pkt = encode(c, &e, sizeof e, {}, blocks);
    EXPECT_EQ(decode(pkt), DecodeError::kBadField);
  }
  // num_blocks disagreeing with the blocks present.
  {
    const auto e = ack_ext(2);
    const std::vector<AckBlock> blocks = {make_block(0, 0)};
    const auto pkt = encode(c, &e, sizeof e, {}, blocks);
    EXPECT_EQ(decode(pkt), DecodeError::kBadLength);
  }
}

// Which error a one-bit flip at `byte` must give. Bytes that shape the parse
// (version, opcode, payload_len, ACK num_blocks) fail on their own check; every
// other bit is caught by the CRC.
void expect_flip_error(const Built& b, size_t byte, int bit, DecodeError e) {
  ASSERT_NE(e, DecodeError::kNone) << b.name << " byte " << byte << " bit " << bit;
  if (byte == 0) {
    EXPECT_EQ(e, DecodeError::kBadVersion) << b.name << " bit " << bit;
  } else if (byte == 1) {
    // Another opcode: a different extension length, unknown, or (same length) the CRC.
  } else if (byte == 14 || byte == 15) {
    EXPECT_EQ(e, DecodeError::kBadLength) << b.name << " byte " << byte << " bit " << bit;
  } else if (b.op == Opcode::kAck && byte == kHdr + offsetof(AckExt, num_blocks)) {
    EXPECT_TRUE(e == DecodeError::kBadField || e == DecodeError::kBadLength) << b.name << " bit " << bit;
  } else {
    EXPECT_EQ(e, DecodeError::kBadChecksum) << b.name << " byte " << byte << " bit " << bit;
  }
}

TEST(WireMetaroceDecode, EverySingleBitFlipIsRejected) {
  for (const auto& b : all_valid_packets()) {
    ASSERT_EQ(decode(b.bytes), DecodeError::kNone) << b.name;
    for (size_t byte = 0; byte < b.bytes.size(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        auto pkt = b.bytes;
        pkt[byte] ^= static_cast<uint8_t>(1u << bit);
        expect_flip_error(b, byte, bit, decode(pkt));
      }
    }
  }
}

TEST(WireMetaroceDecode, MsgOffsetPlusPayloadBeyondMsgLen) {
  for (Opcode op : {Opcode::kWrite, Opcode::kWriteImm, Opcode::kSend, Opcode::kSendImm, Opcode::kReadResp}) {
    const auto payload = make_payload(100);
    auto c = make_common(op, payload.size());
    c.msg_offset.set(1000);
    c.msg_len.set(1099);
    std::vector<uint8_t> ext(ext_header_bytes(op), 0);
    auto pkt = encode(c, ext.data(), ext.size(), payload);
    EXPECT_EQ(decode(pkt), DecodeError::kBadField) << opcode_name(op);
    c.msg_len.set(1100);
    pkt = encode(c, ext.data(), ext.size(), payload);
    EXPECT_EQ(decode(pkt), DecodeError::kNone) << opcode_name(op);
  }
  // The sum is computed without 32-bit wrap-around.
  const auto payload = make_payload(10);
  auto c = make_common(Opcode::kWrite, payload.size());
  c.msg_offset.set(0xFFFFFFFF);
  c.msg_len.set(0xFFFFFFFF);
  const auto e = write_ext(0);
  EXPECT_EQ(decode(encode(c, &e, sizeof e, payload)), DecodeError::kBadField);
  c.msg_offset.set(0xFFFFFFF8);
  c.msg_len.set(4);
  EXPECT_EQ(decode(encode(c, &e, sizeof e, payload)), DecodeError::kBadField);
}

TEST(WireMetaroceDecode, ReadReqLengthZero) {
  const auto c = make_common(Opcode::kReadReq, 0);
  const auto e = read_req_ext(0);
  EXPECT_EQ(decode(encode(c, &e, sizeof e, {})), DecodeError::kBadField);
  const auto one = read_req_ext(1);
  EXPECT_EQ(decode(encode(c, &one, sizeof one, {})), DecodeError::kNone);
}

TEST(WireMetaroceDecode, DstConnIdZeroOnData) {
  for (const auto& b : all_valid_packets()) {
    if (b.op == Opcode::kProbe || b.op == Opcode::kAck || b.op == Opcode::kNak) continue;
    auto pkt = b.bytes;
    store_be32(pkt.data() + 4, 0);
    reseal(pkt);
    EXPECT_EQ(decode(pkt), DecodeError::kBadField) << b.name;
  }
}

TEST(WireMetaroceDecode, UndefinedFlagBits) {
  for (uint8_t bit : {0x10, 0x20, 0x40, 0x80}) {
    auto pkt = all_valid_packets()[0].bytes;
    pkt[2] |= bit;
    reseal(pkt);
    EXPECT_EQ(decode(pkt), DecodeError::kBadField) << std::hex << int(bit);
  }
}

TEST(WireMetaroceDecode, PayloadOnOpcodeWithoutPayload) {
  for (const auto& b : all_valid_packets()) {
    if (b.payload_len != 0) continue;  // carries payload already
    // Build the same packet with 4 payload bytes, correctly sized and sealed.
    PacketView v;
    ASSERT_EQ(decode_packet(b.bytes, v), DecodeError::kNone);
    CommonHeader c = v.common;
    c.payload_len.set(4);
    const auto payload = make_payload(4);
    std::vector<uint8_t> ext(b.bytes.begin() + kHdr, b.bytes.begin() + static_cast<ptrdiff_t>(kHdr + b.ext_len));
    const auto pkt = encode(c, ext.data(), ext.size(), payload, v.ack_blocks);
    EXPECT_EQ(decode(pkt), DecodeError::kBadLength) << b.name;
  }
}

TEST(WireMetaroceDecode, BadChecksumOnCorruptTrailer) {
  for (const auto& b : all_valid_packets()) {
    auto pkt = b.bytes;
    pkt.back() ^= 0xFF;
    EXPECT_EQ(decode(pkt), DecodeError::kBadChecksum) << b.name;
    std::memset(pkt.data() + pkt.size() - 4, 0, 4);
    EXPECT_EQ(decode(pkt), DecodeError::kBadChecksum) << b.name;
  }
}

}  // namespace
}  // namespace metaroce::wire
