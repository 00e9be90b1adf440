// CRC32C (MetaRoCE trailer) and CRC-32/IEEE (RoCEv2 ICRC) against published
// vectors and against a bit-at-a-time reference written here from the
// polynomial definitions, over every length 0..64 at every alignment.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "metaroce/wire/crc.h"

namespace metaroce::wire {
namespace {

// Reflected CRC, one bit at a time: the textbook definition, independent of
// the table and SSE4.2 implementations under test.
uint32_t reference_crc(uint32_t poly, const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}
uint32_t ref_crc32c(const uint8_t* p, size_t n) { return reference_crc(0x82F63B78u, p, n); }
uint32_t ref_crc32(const uint8_t* p, size_t n) { return reference_crc(0xEDB88320u, p, n); }

std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(WireCrc32c, Rfc3720Vectors) {
  std::array<uint8_t, 32> buf{};
  EXPECT_EQ(crc32c(buf), 0x8A9136AAu) << "32 bytes of zeros";
  buf.fill(0xFF);
  EXPECT_EQ(crc32c(buf), 0x62A8AB43u) << "32 bytes of 0xFF";
  for (size_t i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(buf), 0x46DD794Eu) << "32 incrementing bytes";
  for (size_t i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c(buf), 0x113FDB5Cu) << "32 decrementing bytes";
}

TEST(WireCrc32c, CheckValue) { EXPECT_EQ(crc32c(as_bytes("123456789")), 0xE3069283u); }

TEST(WireCrc32, IeeeCheckValue) { EXPECT_EQ(crc32(as_bytes("123456789")), 0xCBF43926u); }

TEST(WireCrc, EmptyInputIsZero) {
  EXPECT_EQ(crc32c({}), 0u);
  EXPECT_EQ(crc32({}), 0u);
  // A zero-length update leaves the running state untouched.
  EXPECT_EQ(crc32c_update(0x12345678u, nullptr, 0), 0x12345678u);
  EXPECT_EQ(crc32_update(0x12345678u, nullptr, 0), 0x12345678u);
}

TEST(WireCrc, ReferenceAgreesWithPublishedVectors) {
  // Guards the reference itself, so the sweeps below test against something right.
  const auto s = as_bytes("123456789");
  EXPECT_EQ(ref_crc32c(s.data(), s.size()), 0xE3069283u);
  EXPECT_EQ(ref_crc32(s.data(), s.size()), 0xCBF43926u);
}

TEST(WireCrc, RoceIcrcSeedIsEightOnesBytes) {
  // rxe starts the ICRC from 0xDEBB20E3: CRC-32 state after 8 bytes of 0xFF (the masked LRH).
  const std::array<uint8_t, 8> ones = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  EXPECT_EQ(crc32_update(kCrcInit, ones.data(), ones.size()), 0xDEBB20E3u);
}

TEST(WireCrc, AllLengthsAndAlignmentsMatchReference) {
  const auto data = random_bytes(64 + 16, 0xC0FFEE);
  for (size_t off = 0; off < 16; ++off) {
    for (size_t len = 0; len <= 64; ++len) {
      // Copy into a fresh heap buffer at the chosen misalignment so ASan sees exact bounds.
      std::vector<uint8_t> store(off + len);
      if (len) std::memcpy(store.data() + off, data.data() + off, len);
      const std::span<const uint8_t> s(store.data() + off, len);
      EXPECT_EQ(crc32c(s), ref_crc32c(s.data(), len)) << "crc32c off=" << off << " len=" << len;
      EXPECT_EQ(crc32(s), ref_crc32(s.data(), len)) << "crc32 off=" << off << " len=" << len;
    }
  }
}

TEST(WireCrc, LongBufferMatchesReference) {
  const auto data = random_bytes(9018, 42);  // one maximum jumbo frame
  EXPECT_EQ(crc32c(data), ref_crc32c(data.data(), data.size()));
  EXPECT_EQ(crc32(data), ref_crc32(data.data(), data.size()));
}

TEST(WireCrc, IncrementalEqualsOneShotAtEverySplit) {
  const auto data = random_bytes(200, 7);
  const uint32_t whole_c = crc32c(data);
  const uint32_t whole_i = crc32(data);
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    uint32_t c = crc32c_update(kCrcInit, data.data(), cut);
    c = crc32c_update(c, data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc_finish(c), whole_c) << "crc32c cut=" << cut;
    uint32_t i = crc32_update(kCrcInit, data.data(), cut);
    i = crc32_update(i, data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc_finish(i), whole_i) << "crc32 cut=" << cut;
  }
}

TEST(WireCrc, IncrementalByteAtATimeAndRandomPieces) {
  const auto data = random_bytes(1000, 99);
  uint32_t c = kCrcInit, i = kCrcInit;
  for (uint8_t b : data) {
    c = crc32c_update(c, &b, 1);
    i = crc32_update(i, &b, 1);
  }
  EXPECT_EQ(crc_finish(c), crc32c(data));
  EXPECT_EQ(crc_finish(i), crc32(data));

  std::mt19937_64 rng(1234);
  for (int round = 0; round < 200; ++round) {
    size_t pos = 0;
    c = kCrcInit;
    i = kCrcInit;
    while (pos < data.size()) {
      const size_t n = std::min<size_t>(rng() % 40, data.size() - pos);
      c = crc32c_update(c, data.data() + pos, n);
      i = crc32_update(i, data.data() + pos, n);
      pos += n;
    }
    ASSERT_EQ(crc_finish(c), crc32c(data)) << "round " << round;
    ASSERT_EQ(crc_finish(i), crc32(data)) << "round " << round;
  }
}

TEST(WireCrc, DetectsEverySingleBitFlip) {
  auto data = random_bytes(64, 5);
  const uint32_t c0 = crc32c(data), i0 = crc32(data);
  for (size_t byte = 0; byte < data.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      data[byte] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_NE(crc32c(data), c0);
      EXPECT_NE(crc32(data), i0);
      data[byte] ^= static_cast<uint8_t>(1u << bit);
    }
  }
}

TEST(WireCrc, HardwareReportIsStable) {
  // Informational: the value may differ between machines but not between calls.
  EXPECT_EQ(crc32c_hardware(), crc32c_hardware());
  RecordProperty("crc32c_hardware", crc32c_hardware() ? "sse4.2" : "table");
}

}  // namespace
}  // namespace metaroce::wire
