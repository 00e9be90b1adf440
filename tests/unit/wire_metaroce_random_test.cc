// Randomised robustness of decode_packet, with a fixed seed so every run is
// the same: 100k random buffers and 100k random mutations of valid packets.
// Properties: the decoder never reads out of bounds (run under ASan/UBSan),
// never accepts a buffer whose CRC32C trailer does not match, and whatever it
// accepts re-encodes to exactly the same bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "metaroce/wire/bytes.h"
#include "metaroce/wire/crc.h"
#include "metaroce/wire/metaroce.h"

namespace metaroce::wire {
namespace {

constexpr uint64_t kSeed = 0x4D455441524F4345ull;  // "METAROCE"
constexpr int kRandomBuffers = 100'000;
constexpr int kMutations = 100'000;

constexpr Opcode kOpcodes[] = {Opcode::kWrite,    Opcode::kWriteImm, Opcode::kSend,      Opcode::kSendImm,
                               Opcode::kReadReq,  Opcode::kReadResp, Opcode::kFetchAdd,  Opcode::kCmpSwap,
                               Opcode::kAtomicResp, Opcode::kProbe,  Opcode::kAck,       Opcode::kNak};

bool carries_payload(Opcode op) {
  return op == Opcode::kWrite || op == Opcode::kWriteImm || op == Opcode::kSend || op == Opcode::kSendImm ||
         op == Opcode::kReadResp;
}

bool crc_matches(const std::vector<uint8_t>& b) {
  if (b.size() < kCrcBytes) return false;
  const size_t covered = b.size() - kCrcBytes;
  return crc32c(std::span(b).first(covered)) == load_be32(b.data() + covered);
}

void reseal(std::vector<uint8_t>& b) {
  if (b.size() < kCrcBytes) return;
  const size_t covered = b.size() - kCrcBytes;
  store_be32(b.data() + covered, crc32c(std::span(b).first(covered)));
}

// Checks everything a successful decode promises about its view.
void check_accepted(const std::vector<uint8_t>& buf, const PacketView& v) {
  ASSERT_TRUE(crc_matches(buf));
  const size_t blocks = v.ack_blocks.size();
  const size_t ext_len = ext_header_bytes(v.opcode);
  ASSERT_EQ(buf.size(), packet_bytes(v.opcode, v.payload.size(), blocks));
  ASSERT_EQ(v.payload.size(), v.common.payload_len.get());
  ASSERT_EQ(static_cast<uint8_t>(v.opcode), v.common.opcode);
  ASSERT_EQ(v.common.version, 0x10);
  ASSERT_EQ(v.common.flags & 0xF0, 0);
  const uint8_t* lo = buf.data();
  const uint8_t* hi = buf.data() + buf.size() - kCrcBytes;
  ASSERT_GE(v.payload.data(), lo);
  ASSERT_LE(v.payload.data() + v.payload.size(), hi);
  if (v.opcode == Opcode::kAck) {
    ASSERT_GE(blocks, 1u);
    ASSERT_LE(blocks, kMaxAckBlocks);
    ASSERT_EQ(blocks, v.ext.ack.num_blocks);
  } else {
    ASSERT_EQ(blocks, 0u);
  }
  if (carries_payload(v.opcode)) {
    ASSERT_LE(uint64_t{v.common.msg_offset.get()} + v.payload.size(), v.common.msg_len.get());
  } else {
    ASSERT_TRUE(v.payload.empty());
  }
  // Re-encoding the view reproduces the input byte for byte.
  std::vector<uint8_t> again(buf.size());
  ASSERT_EQ(encode_packet(again, v.common, &v.ext, ext_len, v.payload, v.ack_blocks), buf.size());
  ASSERT_EQ(again, buf);
}

// A random but valid packet of a random opcode.
std::vector<uint8_t> random_valid_packet(std::mt19937_64& rng) {
  const Opcode op = kOpcodes[rng() % std::size(kOpcodes)];
  const size_t payload_len = carries_payload(op) ? rng() % 300 : 0;
  CommonHeader c{};
  c.version = 0x10;
  c.opcode = static_cast<uint8_t>(op);
  c.flags = static_cast<uint8_t>(rng() & 0x0F);
  c.path_id = static_cast<uint8_t>(rng());
  c.dst_conn_id.set(static_cast<uint32_t>(rng() | 1));
  c.src_conn_id.set(static_cast<uint32_t>(rng() | 1));
  c.stream_id.set(static_cast<uint16_t>(rng()));
  c.payload_len.set(static_cast<uint16_t>(payload_len));
  c.path_seq.set(static_cast<uint32_t>(rng()));
  c.path_floor.set(static_cast<uint32_t>(rng()));
  c.msg_seq.set(static_cast<uint32_t>(rng()));
  const uint32_t off = static_cast<uint32_t>(rng() % 1'000'000);
  c.msg_offset.set(carries_payload(op) ? off : 0);
  c.msg_len.set(carries_payload(op) ? static_cast<uint32_t>(off + payload_len + rng() % 5000) : 0);
  c.tx_ts.set(static_cast<uint32_t>(rng()));

  uint8_t ext[32];
  const size_t ext_len = ext_header_bytes(op);
  for (auto& b : ext) b = static_cast<uint8_t>(rng());
  std::vector<AckBlock> blocks;
  if (op == Opcode::kAck) {
    const uint8_t n = static_cast<uint8_t>(1 + rng() % kMaxAckBlocks);
    ext[offsetof(AckExt, num_blocks)] = n;
    blocks.resize(n);
    for (auto& blk : blocks) {
      auto* p = reinterpret_cast<uint8_t*>(&blk);
      for (size_t i = 0; i < sizeof blk; ++i) p[i] = static_cast<uint8_t>(rng());
    }
  }
  if (op == Opcode::kReadReq) store_be32(ext + offsetof(ReadReqExt, length), static_cast<uint32_t>(1 + rng() % 65536));
  std::vector<uint8_t> payload(payload_len);
  for (auto& b : payload) b = static_cast<uint8_t>(rng());

  std::vector<uint8_t> out(packet_bytes(op, payload_len, blocks.size()));
  EXPECT_EQ(encode_packet(out, c, ext, ext_len, payload, blocks), out.size());
  return out;
}

TEST(WireMetaroceRandom, RandomBuffersNeverCrashAndNeverPassWithoutCrc) {
  std::mt19937_64 rng(kSeed);
  int accepted = 0, crc_ok = 0;
  for (int i = 0; i < kRandomBuffers; ++i) {
    const size_t len = (rng() % 8 == 0) ? rng() % 1200 : rng() % 160;
    std::vector<uint8_t> buf(len);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    // Steer most buffers past the early checks so later ones are exercised too.
    const unsigned mode = rng() % 4;
    if (mode >= 1 && len >= 2) {
      buf[0] = 0x10;
      buf[1] = static_cast<uint8_t>(kOpcodes[rng() % std::size(kOpcodes)]);
      if (len >= 3) buf[2] &= 0x1F;
    }
    if (mode >= 2 && len >= 48) {
      const auto op = static_cast<Opcode>(buf[1]);
      if (op == Opcode::kAck) buf[44] = static_cast<uint8_t>(rng() % 10);
      const size_t blocks = op == Opcode::kAck ? buf[44] : 0;
      const size_t fixed = 40 + ext_header_bytes(op) + blocks * sizeof(AckBlock) + kCrcBytes;
      if (len >= fixed && len - fixed <= 0xFFFF) store_be16(buf.data() + 14, static_cast<uint16_t>(len - fixed));
    }
    if (mode >= 3) reseal(buf);

    PacketView v;
    const DecodeError e = decode_packet(buf, v);
    if (crc_matches(buf)) ++crc_ok;
    if (e == DecodeError::kNone) {
      ++accepted;
      check_accepted(buf, v);
      if (HasFatalFailure()) FAIL() << "buffer " << i;
    } else {
      ASSERT_NE(decode_error_name(e), "unknown");
    }
  }
  // The steering must reach the post-CRC checks and produce some accepted packets.
  EXPECT_GT(crc_ok, kRandomBuffers / 5);
  EXPECT_GT(accepted, 100);
  RecordProperty("accepted", accepted);
}

TEST(WireMetaroceRandom, MutatedPacketsWithBadCrcAreNeverAccepted) {
  std::mt19937_64 rng(kSeed + 1);
  int rejected = 0, identical = 0;
  for (int i = 0; i < kMutations; ++i) {
    const auto original = random_valid_packet(rng);
    {
      PacketView v;
      ASSERT_EQ(decode_packet(original, v), DecodeError::kNone) << "generator, iteration " << i;
      check_accepted(original, v);
      if (HasFatalFailure()) FAIL() << "generator, iteration " << i;
    }
    auto buf = original;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < n; ++m) {
      switch (rng() % 7) {
        case 0:  // flip one bit
          if (!buf.empty()) buf[rng() % buf.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:  // overwrite one byte
          if (!buf.empty()) buf[rng() % buf.size()] = static_cast<uint8_t>(rng());
          break;
        case 2:  // truncate
          buf.resize(buf.empty() ? 0 : rng() % buf.size());
          break;
        case 3:  // append garbage
          for (size_t k = 1 + rng() % 16; k > 0; --k) buf.push_back(static_cast<uint8_t>(rng()));
          break;
        case 4:  // insert a byte
          buf.insert(buf.begin() + static_cast<ptrdiff_t>(rng() % (buf.size() + 1)), static_cast<uint8_t>(rng()));
          break;
        case 5:  // delete a byte
          if (!buf.empty()) buf.erase(buf.begin() + static_cast<ptrdiff_t>(rng() % buf.size()));
          break;
        case 6:  // swap two bytes
          if (buf.size() >= 2) std::swap(buf[rng() % buf.size()], buf[rng() % buf.size()]);
          break;
      }
    }
    PacketView v;
    const DecodeError e = decode_packet(buf, v);
    if (buf == original) {
      ++identical;
      ASSERT_EQ(e, DecodeError::kNone) << "iteration " << i;
      continue;
    }
    if (!crc_matches(buf)) {
      ASSERT_NE(e, DecodeError::kNone) << "mutated packet with a bad CRC accepted, iteration " << i;
    }
    if (e == DecodeError::kNone) {
      check_accepted(buf, v);
      if (HasFatalFailure()) FAIL() << "iteration " << i;
    } else {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, kMutations * 9 / 10);
  RecordProperty("identical_after_mutation", identical);
}

}  // namespace
}  // namespace metaroce::wire
