// Receiver's view of one path: the next sequence number expected (cum) and a
// 256-bit selective-acknowledgment bitmap of what arrived beyond it.
//
// Bit i stands for seq cum+1+i, exactly as AckBlock carries it. The sender's
// path_floor lets the window slide over holes the sender has given up on
// (retransmitted elsewhere under a fresh seq), so one lost packet never pins
// the window.
#pragma once

#include <cstdint>
#include <cstring>

namespace metaroce::transport {

inline int32_t seq_diff(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b); }

class SackWindow {
 public:
  static constexpr uint32_t kBits = 256;
  enum class Result : uint8_t {
    kNew,           // first arrival of this seq
    kDuplicate,     // already SACKed
    kBelowWindow,   // below cum: a late copy or already resolved
    kBeyondWindow,  // more than kBits ahead: refused (the sender never does this)
  };

  // Applies the sender's floor, then records seq.
  Result on_packet(uint32_t seq, uint32_t floor) {
    if (seq_diff(floor, cum_) > 0) slide_to(floor);
    const int32_t d = seq_diff(seq, cum_);
    if (d < 0) return Result::kBelowWindow;
    if (d == 0) {
      advance();
      return Result::kNew;
    }
    if (d > static_cast<int32_t>(kBits)) return Result::kBeyondWindow;
    const uint32_t i = static_cast<uint32_t>(d - 1);
    const uint64_t m = 1ull << (i % 64);
    if (w_[i / 64] & m) return Result::kDuplicate;
    w_[i / 64] |= m;
    return Result::kNew;
  }

  // Whether a seq after `seq` has arrived already (asked before on_packet):
  // on a path, which its fabric route keeps in order, `seq` then comes late,
  // reordered on the way.
  bool later_arrived(uint32_t seq) const {
    const int32_t d = seq_diff(seq, cum_);
    if (d < 0 || d > static_cast<int32_t>(kBits)) return false;
    for (uint32_t k = static_cast<uint32_t>(d) / 64; k < 4; ++k) {
      uint64_t w = w_[k];
      if (k == static_cast<uint32_t>(d) / 64) w &= ~0ull << (static_cast<uint32_t>(d) % 64);  // bits for seqs > seq
      if (w != 0) return true;
    }
    return false;
  }
  uint32_t cum() const { return cum_; }
  bool has_gap() const { return (w_[0] | w_[1] | w_[2] | w_[3]) != 0; }
  // The bitmap as AckBlock.sack bytes (LSB of byte 0 = cum+1).
  void copy_bits(uint8_t out[32]) const {
    for (int k = 0; k < 4; ++k)
      for (int b = 0; b < 8; ++b) out[k * 8 + b] = static_cast<uint8_t>(w_[k] >> (8 * b));
  }
  bool received(uint32_t seq) const {
    const int32_t d = seq_diff(seq, cum_);
    if (d < 0) return true;
    if (d == 0 || d > static_cast<int32_t>(kBits)) return false;
    const uint32_t i = static_cast<uint32_t>(d - 1);
    return (w_[i / 64] >> (i % 64)) & 1;
  }

 private:
  // cum has just arrived: move past it and every contiguous SACKed seq.
  void advance() {
    const uint32_t run = trailing_ones();
    shift_right(run + 1);
    cum_ += run + 1;
  }
  void slide_to(uint32_t floor) {
    const uint32_t k = floor - cum_;
    const bool floor_seen = k - 1 < kBits && ((w_[(k - 1) / 64] >> ((k - 1) % 64)) & 1);
    shift_right(k);
    cum_ = floor;
    if (floor_seen) advance();
  }
  uint32_t trailing_ones() const {
    uint32_t n = 0;
    for (uint64_t w : w_) {
      if (w == ~0ull) {
        n += 64;
        continue;
      }
      return n + static_cast<uint32_t>(__builtin_ctzll(~w));
    }
    return n;
  }
  void shift_right(uint32_t n) {
    if (n >= kBits) {
      w_[0] = w_[1] = w_[2] = w_[3] = 0;
      return;
    }
    const uint32_t words = n / 64, bits = n % 64;
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t src = i + words;
      uint64_t v = src < 4 ? w_[src] >> bits : 0;
      if (bits && src + 1 < 4) v |= w_[src + 1] << (64 - bits);
      w_[i] = v;
    }
  }

  uint32_t cum_ = 0;
  uint64_t w_[4] = {0, 0, 0, 0};
};

// Sender side: whether an AckBlock (cum, sack bytes) covers seq.
inline bool sack_covers(uint32_t cum, const uint8_t sack[32], uint32_t seq) {
  const int32_t d = seq_diff(seq, cum);
  if (d < 0) return true;
  if (d == 0 || d > static_cast<int32_t>(SackWindow::kBits)) return false;
  const uint32_t i = static_cast<uint32_t>(d - 1);
  return (sack[i / 8] >> (i % 8)) & 1;
}

}  // namespace metaroce::transport
