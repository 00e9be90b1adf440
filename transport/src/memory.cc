#include "metaroce/transport/memory.h"

namespace metaroce::transport {

MemoryTable::MemoryTable(uint64_t key_seed) : rng_(key_seed) {}

uint16_t MemoryTable::next_mask() {
  // splitmix64: a well-mixed 64-bit stream from any seed.
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint16_t>((z ^ (z >> 31)) >> 48);
}

std::optional<uint32_t> MemoryTable::register_region(void* addr, uint64_t length, uint32_t access) {
  if (addr == nullptr || length == 0) return std::nullopt;
  const uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (a + length < a) return std::nullopt;
  size_t idx = 0;
  while (idx < slots_.size() && slots_[idx].used) ++idx;
  if (idx == slots_.size()) {
    if (slots_.size() >= 0xFFFF) return std::nullopt;
    slots_.emplace_back();
    slots_.back().mask = next_mask();
  }
  Slot& s = slots_[idx];
  s.used = true;
  s.generation = static_cast<uint16_t>(s.generation + 1);
  if (s.generation == 0) s.generation = 1;
  const uint16_t tag = static_cast<uint16_t>(s.generation ^ s.mask);
  s.mr = {static_cast<uint32_t>(tag) << 16 | static_cast<uint32_t>(idx + 1), a, length, access};
  return s.mr.key;
}

bool MemoryTable::deregister(uint32_t key) {
  const uint32_t idx = (key & 0xFFFF);
  if (idx == 0 || idx > slots_.size()) return false;
  Slot& s = slots_[idx - 1];
  if (!s.used || s.mr.key != key) return false;
  s.used = false;
  return true;
}

AccessCheck MemoryTable::check(uint32_t key, uint64_t addr, uint64_t length, uint32_t right,
                               uint8_t** out) const {
  const uint32_t idx = (key & 0xFFFF);
  if (idx == 0 || idx > slots_.size()) return AccessCheck::kBadKey;
  const Slot& s = slots_[idx - 1];
  if (!s.used || s.mr.key != key) return AccessCheck::kBadKey;
  // Overflow-safe containment: addr >= base and length <= remaining bytes after addr.
  if (addr < s.mr.addr || addr - s.mr.addr > s.mr.length || length > s.mr.length - (addr - s.mr.addr))
    return AccessCheck::kOutOfBounds;
  if (right && (s.mr.access & right) != right) return AccessCheck::kAccessViolation;
  if (out) *out = reinterpret_cast<uint8_t*>(addr);
  return AccessCheck::kOk;
}

}  // namespace metaroce::transport
