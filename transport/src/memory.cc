#include "metaroce/transport/memory.h"

namespace metaroce::transport {

std::optional<uint32_t> MemoryTable::register_region(void* addr, uint64_t length, uint32_t access) {
  if (addr == nullptr || length == 0) return std::nullopt;
  const uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (a + length < a) return std::nullopt;
  size_t idx = 0;
  while (idx < slots_.size() && slots_[idx].used) ++idx;
  if (idx == slots_.size()) {
    if (slots_.size() >= 0xFFFF) return std::nullopt;
    slots_.emplace_back();
  }
  Slot& s = slots_[idx];
  s.used = true;
  s.generation = static_cast<uint16_t>(s.generation + 1);
  if (s.generation == 0) s.generation = 1;
  s.mr = {static_cast<uint32_t>(s.generation) << 16 | static_cast<uint32_t>(idx + 1), a, length, access};
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
