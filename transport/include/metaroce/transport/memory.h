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
  // key_seed makes the keys unguessable (the daemon draws it from the OS); the
  // simulator and tests pass a fixed one and get the same keys every run.
  explicit MemoryTable(uint64_t key_seed = 0);
  // Registers [addr, addr+length); returns the region's key (used as both lkey and rkey).
  std::optional<uint32_t> register_region(void* addr, uint64_t length, uint32_t access);
  bool deregister(uint32_t key);

  // Validates an access of length bytes at addr through key needing right
  // (0 = local read only). On kOk, *out is the host pointer.
  AccessCheck check(uint32_t key, uint64_t addr, uint64_t length, uint32_t right, uint8_t** out) const;

 private:
  // Keys are index+1 in the low 16 bits and, above, a generation XOR a random
  // mask drawn per slot: a stale key of a deregistered region never aliases a
  // new one (65535 generations), and a host that cannot see keys on the wire
  // must guess 16 random bits per region, as with an RDMA NIC's key variant.
  struct Slot {
    MemoryRegion mr;
    bool used = false;
    uint16_t generation = 0;
    uint16_t mask = 0;
  };
  uint16_t next_mask();
  std::vector<Slot> slots_;
  uint64_t rng_;
};

}  // namespace metaroce::transport
