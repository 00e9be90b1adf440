// Deterministic random source: xoshiro256** seeded through splitmix64.
//
// Every impairment owns one, seeded from the run's seed and its own identity,
// so the same seed replays the same run bit for bit whatever else changes.
#pragma once

#include <cstdint>

namespace metaroce::emulator {

class Random {
 public:
  explicit Random(uint64_t seed = 1) { reseed(seed); }
  void reseed(uint64_t seed) {
    seed_ = seed;
    uint64_t x = seed;
    for (auto& w : s_) w = splitmix64(x);
  }
  uint64_t seed() const { return seed_; }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 bits of precision.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool bernoulli(double p) { return p > 0.0 && uniform() < p; }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }

  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Derives a component seed from a run seed and a component identity.
  static uint64_t derive(uint64_t run_seed, uint64_t id) {
    uint64_t x = run_seed ^ (id * 0xD1B54A32D192ED03ull);
    return splitmix64(x);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  uint64_t seed_ = 0;
};

}  // namespace metaroce::emulator
