// Registered memory regions: keys, bounds, access rights.
//
// Every remote access is checked here before a byte moves: a key that names no
// region, a range that leaves its region, or a missing right is refused, so a
// forged or buggy packet can never touch memory outside a registered region.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace metaroce::transport {

struct MemoryRegion {
  uint32_t key = 0;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
};

enum class AccessCheck : uint8_t { kOk, kBadKey, kOutOfBounds, kAccessViolation };

class MemoryTable {
 public:
  // Registers [addr, addr+length); returns the region's key (used as both lkey and rkey).
  std::optional<uint32_t> register_region(void* addr, uint64_t length, uint32_t access);
  bool deregister(uint32_t key);

  // Validates an access of length bytes at addr through key needing right
  // (0 = local read only). On kOk, *out is the host pointer.
  AccessCheck check(uint32_t key, uint64_t addr, uint64_t length, uint32_t right, uint8_t** out) const;

 private:
  // Keys are index+1 in the low 16 bits and a generation above, so a stale
  // key of a deregistered region never aliases a new one.
  struct Slot {
    MemoryRegion mr;
    bool used = false;
    uint16_t generation = 0;
  };
  std::vector<Slot> slots_;
};

}  // namespace metaroce::transport
