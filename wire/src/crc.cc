#include "metaroce/wire/crc.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace metaroce::wire {
namespace {

using Table = std::array<std::array<uint32_t, 256>, 8>;

constexpr Table make_tables(uint32_t poly) {
  Table t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}

constexpr Table kCrc32cTables = make_tables(0x82F63B78u);
constexpr Table kCrc32Tables = make_tables(0xEDB88320u);

uint32_t slice8(const Table& t, uint32_t crc, const uint8_t* p, size_t len) {
  while (len >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian hosts only (x86_64, aarch64 LE)
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p, size_t len) {
  uint64_t c = crc;
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#else
const bool kHaveSse42 = false;
#endif

}  // namespace

uint32_t crc32c_update(uint32_t state, const uint8_t* data, size_t len) {
#if defined(__x86_64__)
  if (kHaveSse42) return crc32c_sse42(state, data, len);
#endif
  return slice8(kCrc32cTables, state, data, len);
}

uint32_t crc32_update(uint32_t state, const uint8_t* data, size_t len) {
  return slice8(kCrc32Tables, state, data, len);
}

bool crc32c_hardware() { return kHaveSse42; }

}  // namespace metaroce::wire
