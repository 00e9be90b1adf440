// Memory regions: every remote access is bounds- and rights-checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "metaroce/transport/memory.h"

namespace metaroce::transport {
namespace {

TEST(MemoryTable, ChecksKeyBoundsAndRights) {
  MemoryTable t;
  std::vector<uint8_t> buf(4096);
  const uint64_t base = reinterpret_cast<uint64_t>(buf.data());
  const uint32_t key = *t.register_region(buf.data(), buf.size(), 2 /*remote write*/);
  uint8_t* p = nullptr;
  EXPECT_EQ(t.check(key, base, 4096, 2, &p), AccessCheck::kOk);
  EXPECT_EQ(p, buf.data());
  EXPECT_EQ(t.check(key, base + 4095, 1, 2, &p), AccessCheck::kOk);
  EXPECT_EQ(t.check(key, base + 4096, 0, 2, &p), AccessCheck::kOk);  // empty access at the end
  EXPECT_EQ(t.check(key, base + 4095, 2, 2, &p), AccessCheck::kOutOfBounds);
  EXPECT_EQ(t.check(key, base - 1, 1, 2, &p), AccessCheck::kOutOfBounds);
  EXPECT_EQ(t.check(key, base + 4097, 0, 2, &p), AccessCheck::kOutOfBounds);
  EXPECT_EQ(t.check(key, base, UINT64_MAX, 2, &p), AccessCheck::kOutOfBounds);  // no overflow wrap
  EXPECT_EQ(t.check(key, UINT64_MAX - 1, 16, 2, &p), AccessCheck::kOutOfBounds);
  EXPECT_EQ(t.check(key, base, 8, 4 /*remote read*/, &p), AccessCheck::kAccessViolation);
  EXPECT_EQ(t.check(key ^ 0x10000, base, 8, 2, &p), AccessCheck::kBadKey);
  EXPECT_EQ(t.check(0, base, 8, 2, &p), AccessCheck::kBadKey);
  EXPECT_EQ(t.check(0xFFFF, base, 8, 2, &p), AccessCheck::kBadKey);
}

TEST(MemoryTable, StaleKeysNeverAliasNewRegions) {
  MemoryTable t;
  std::vector<uint8_t> a(64), b(64);
  const uint32_t ka = *t.register_region(a.data(), a.size(), 2);
  EXPECT_TRUE(t.deregister(ka));
  EXPECT_FALSE(t.deregister(ka));
  const uint32_t kb = *t.register_region(b.data(), b.size(), 2);
  EXPECT_NE(ka, kb);  // same slot, new generation
  EXPECT_EQ(t.check(ka, reinterpret_cast<uint64_t>(b.data()), 8, 2, nullptr), AccessCheck::kBadKey);
  EXPECT_EQ(t.check(kb, reinterpret_cast<uint64_t>(b.data()), 8, 2, nullptr), AccessCheck::kOk);
}

// Keys carry 16 bits drawn from the table's seed: two tables seeded apart give
// different keys for the same registrations, one seed gives the same keys
// (deterministic simulations), and a slot's keys never repeat over its
// generations.
TEST(MemoryTable, KeysCarrySeededRandomBitsAndNeverRepeatPerSlot) {
  std::vector<uint8_t> buf(64);
  MemoryTable a(1), b(2), a2(1);
  int differ = 0;
  for (int i = 0; i < 32; ++i) {
    const uint32_t ka = *a.register_region(buf.data(), buf.size(), 2);
    const uint32_t kb = *b.register_region(buf.data(), buf.size(), 2);
    EXPECT_EQ(ka, *a2.register_region(buf.data(), buf.size(), 2));
    EXPECT_EQ(ka & 0xFFFF, kb & 0xFFFF);  // the slot index
    differ += (ka >> 16) != (kb >> 16);
  }
  EXPECT_GE(differ, 31);  // 16 random bits: at most a chance collision
  MemoryTable t(7);
  std::vector<uint32_t> seen;
  for (int g = 0; g < 1000; ++g) {
    const uint32_t k = *t.register_region(buf.data(), buf.size(), 2);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), k), 0) << "generation " << g;
    seen.push_back(k);
    ASSERT_TRUE(t.deregister(k));
  }
}

TEST(MemoryTable, RejectsEmptyOrWrappingRegions) {
  MemoryTable t;
  uint8_t x;
  EXPECT_FALSE(t.register_region(nullptr, 8, 2));
  EXPECT_FALSE(t.register_region(&x, 0, 2));
  EXPECT_FALSE(t.register_region(reinterpret_cast<void*>(UINT64_MAX - 4), 64, 2));
}

}  // namespace
}  // namespace metaroce::transport
