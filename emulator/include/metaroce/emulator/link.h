// One direction of an emulated link: a byte/packet-limited FIFO queue in front
// of a serialiser at a configured bit rate, then propagation delay, with ECN
// marking of ECT packets at enqueue and random loss on the wire.
//
// The model is analytic: submit() computes when a packet leaves the queue and
// when it arrives, so the same object serves the discrete-event simulator
// (virtual clock) and an inline datapath (real clock, a timer wheel releasing
// packets at deliver_at). Time is passed in, never read.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>

#include "metaroce/emulator/random.h"

namespace metaroce::emulator {

using Nanos = int64_t;

struct LinkConfig {
  double rate_bps = 100e9;              // serialisation rate, bits per second (> 0)
  Nanos prop_delay_ns = 1000;           // one-way propagation delay (>= 0)
  uint32_t queue_limit_bytes = 4u << 20;  // tail drop above this backlog (> 0)
  uint32_t queue_limit_packets = 4096;  // and above this many queued packets (> 0)
  uint32_t ecn_threshold_bytes = 0;     // mark CE on ECT packets when backlog >= this; 0 = off
  double loss_probability = 0.0;        // independent (Bernoulli) loss on the wire, [0, 1]
  double duplicate_probability = 0.0;   // a second copy arrives right behind the first, [0, 1]
  double reorder_probability = 0.0;     // held back by reorder_delay_ns so later packets pass it, [0, 1]
  Nanos reorder_delay_ns = 0;           // >= 0
  double corrupt_probability = 0.0;     // one random bit flipped (the receiver's check must catch it), [0, 1]
  uint32_t overhead_bytes = 24;         // per-packet wire overhead: preamble 8, FCS 4, IFG 12
  bool up = true;                       // false: every packet dropped as link_down
};

// Returns an error naming the field and its allowed range, or nullopt if valid.
std::optional<std::string> validate(const LinkConfig& c);

enum class DropCause : uint8_t { kNone = 0, kRandomLoss, kQueueOverflow, kLinkDown, kCorrupted };
const char* drop_cause_name(DropCause c);

struct LinkVerdict {
  DropCause drop = DropCause::kNone;  // kNone: delivered at deliver_at
  Nanos deliver_at = 0;
  Nanos duplicate_at = -1;            // >= 0: deliver a copy at this time too
  bool ecn_marked = false;
  bool corrupted = false;
  bool reordered = false;
};

struct LinkCounters {
  uint64_t packets_in = 0, bytes_in = 0;
  uint64_t packets_out = 0, bytes_out = 0;  // delivered
  uint64_t drops_random_loss = 0;
  uint64_t drops_queue_overflow = 0;
  uint64_t drops_link_down = 0;
  uint64_t ecn_marks = 0;
  uint64_t duplicates = 0, reorders = 0, corruptions = 0;
  uint64_t queue_high_water_bytes = 0;
};

class Link {
 public:
  Link(const LinkConfig& config, uint64_t seed);

  // Offers one Ethernet frame at time now. May set CE in the frame's IPv4
  // header (ECT frames only). The caller delivers the frame at deliver_at.
  LinkVerdict submit(std::span<uint8_t> frame, Nanos now);

  // Bytes queued and not yet serialised at time now.
  uint64_t backlog_bytes(Nanos now);
  // Earliest time the serialiser is free (for senders that pace to the link).
  Nanos free_at() const { return static_cast<Nanos>(free_at_ps_ / 1000); }
  // Earliest time at which the backlog is at most target bytes (now if already).
  Nanos drained_to(uint64_t target, Nanos now);

  // Applies a new configuration from time now on; queued packets keep their schedule.
  void reconfigure(const LinkConfig& config) { config_ = config; }
  void set_up(bool up) { config_.up = up; }
  const LinkConfig& config() const { return config_; }
  const LinkCounters& counters() const { return counters_; }
  uint64_t seed() const { return rng_.seed(); }

 private:
  struct Queued {
    int64_t depart_ps;
    uint32_t bytes;
  };
  void drain(Nanos now);

  LinkConfig config_;
  Random rng_;
  LinkCounters counters_;
  std::deque<Queued> queue_;  // packets still being serialised, in order
  uint64_t backlog_bytes_ = 0;
  int64_t free_at_ps_ = 0;
};

}  // namespace metaroce::emulator
