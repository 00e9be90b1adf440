// Checksums used on the wire.
//
// crc32c: Castagnoli, reflected, init/xorout 0xFFFFFFFF (RFC 3720). MetaRoCE's
//   integrity trailer. Uses SSE4.2 when the CPU has it, slicing-by-8 otherwise.
// crc32: IEEE 802.3, reflected, init/xorout 0xFFFFFFFF. RoCEv2's ICRC.
// Both take a running value so a checksum can cover discontiguous pieces
// (ICRC covers masked copies of headers followed by the payload).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace metaroce::wire {

// Start with kCrcInit, feed pieces with *_update, finish with crc_finish.
inline constexpr uint32_t kCrcInit = 0xFFFFFFFFu;
inline uint32_t crc_finish(uint32_t state) { return state ^ 0xFFFFFFFFu; }

uint32_t crc32c_update(uint32_t state, const uint8_t* data, size_t len);
uint32_t crc32_update(uint32_t state, const uint8_t* data, size_t len);

inline uint32_t crc32c(std::span<const uint8_t> d) {
  return crc_finish(crc32c_update(kCrcInit, d.data(), d.size()));
}
inline uint32_t crc32(std::span<const uint8_t> d) {
  return crc_finish(crc32_update(kCrcInit, d.data(), d.size()));
}

// True when crc32c uses the SSE4.2 instruction on this machine (reported by benchmarks).
bool crc32c_hardware();

}  // namespace metaroce::wire
