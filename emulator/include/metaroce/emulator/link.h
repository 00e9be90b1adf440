// One direction of an emulated link.
//
// Pipeline, in the order a frame meets it:
//   1. down (blackhole) or in a flap's down phase      -> drop: link_down
//   2. queue: tail drop above a byte or packet limit   -> drop: queue_overflow
//   3. ECN: CE on ECT frames above a step threshold or with RED-like probability
//   4. serialiser at rate_bps (+ per-packet overhead)
//   5. on the wire: loss model                         -> drop: random_loss
//      (after serialisation: a lost frame used its link time, as on a real wire)
//   6. corruption (one bit flipped; the receiver's integrity check must catch it)
//   7. propagation + delay model (jitter, FIFO unless allowed to reorder),
//      netem-style reorder (a chosen frame skips the extra delay), hold-back
//   8. duplication (a copy arrives right behind the original)
//
// The model is analytic: submit() computes when the frame arrives, so the same
// object serves the simulator (virtual clock) and an inline datapath (real
// clock). Time is passed in, never read; randomness comes from one seeded
// source per link. Every drop has its own counter.
#pragma once

#include <cstdint>
#include <vector>
#include <optional>
#include <span>
#include <string>

#include "metaroce/emulator/delay_model.h"
#include "metaroce/emulator/histogram.h"
#include "metaroce/emulator/loss_model.h"
#include "metaroce/emulator/random.h"

namespace metaroce::emulator {

using Nanos = int64_t;

// Periodic down/up: from start_ns, each period_ns ends with down_ns of outage.
struct FlapConfig {
  Nanos period_ns = 0;  // 0 = not flapping; else > down_ns
  Nanos down_ns = 0;    // >= 0
  Nanos start_ns = 0;

  bool operator==(const FlapConfig&) const = default;
};

// The ranges every front end (daemon config, gRPC, scenario files) accepts for
// a link's rate, delay and queue; validate() enforces them, the front ends
// quote them in their errors.
inline constexpr double kMaxLinkRateBps = 1.6e12;
inline constexpr Nanos kMaxLinkDelayNs = 3'600'000'000'000;  // one hour
inline constexpr uint32_t kMaxQueueLimitBytes = 1u << 30;
inline constexpr uint32_t kMaxQueueLimitPackets = 1u << 20;

// A host NIC's transmit queue: a sender sees back-pressure on a host port
// once this many bytes wait there to be serialised. The simulator applies it
// to each host's uplink; a live endpoint with a port rate applies it to its
// own model of the port (datapath::EndpointWorker), so a sender's queue
// builds in the sender in both modes, as behind a real NIC.
inline constexpr uint32_t kNicQueueBytes = 16 * 1024;
struct LinkConfig {
  double rate_bps = 100e9;                // serialisation rate, bits per second (> 0)
  Nanos prop_delay_ns = 1000;             // one-way propagation delay (>= 0)
  uint32_t queue_limit_bytes = 4u << 20;  // tail drop above this backlog (> 0)
  uint32_t queue_limit_packets = 4096;    // and above this many queued packets (> 0)
  uint32_t ecn_threshold_bytes = 0;       // step marking: CE when backlog >= this; 0 = off
  uint32_t red_min_bytes = 0;             // RED-like marking: probability rises linearly from 0 at
  uint32_t red_max_bytes = 0;             //   red_min to red_max_p at red_max, 1 above; 0/0 = off
  double red_max_p = 0.0;                 //   [0, 1]
  uint32_t overhead_bytes = 24;           // per-packet wire overhead: preamble 8, FCS 4, IFG 12
  bool up = true;                         // false: every frame dropped as link_down (blackhole)
  FlapConfig flap;
  LossConfig loss;                        // loss model on the wire
  double loss_probability = 0.0;          // shorthand for a Bernoulli loss model, [0, 1]
  DelayConfig delay;                      // extra delay and jitter on top of prop_delay_ns
  ReorderConfig reorder;                  // netem reorder: chosen frames skip the extra delay
  double reorder_probability = 0.0;       // hold-back: frame delayed by reorder_delay_ns so later
  Nanos reorder_delay_ns = 0;             //   ones overtake it, [0, 1] and >= 0
  double duplicate_probability = 0.0;     // [0, 1]
  double corrupt_probability = 0.0;       // [0, 1]
};

// Returns an error naming the field and its allowed range, or nullopt if valid.
std::optional<std::string> validate(const LinkConfig& c);

// The loss model the link runs: `loss`, or, when no model is set, the
// loss_probability shorthand as a Bernoulli model. The one place the
// shorthand is folded into a model (the link, fabric show and reports all
// read the loss through this).
LossConfig effective_loss(const LinkConfig& c);

enum class DropCause : uint8_t { kNone = 0, kRandomLoss, kQueueOverflow, kLinkDown, kCorrupted, kNoRoute };
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
  uint64_t packets_out = 0, bytes_out = 0;  // delivered (duplicates not counted here)
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

  // Offers one Ethernet frame at time now (non-decreasing across calls). May
  // set CE in the frame's IPv4 header or flip a bit in it.
  LinkVerdict submit(std::span<uint8_t> frame, Nanos now);

  // Bytes queued and not yet serialised at time now.
  uint64_t backlog_bytes(Nanos now);
  // Earliest time at which the backlog is at most target bytes (now if already).
  Nanos drained_to(uint64_t target, Nanos now);
  // The link as a host's NIC port with a send queue of max_backlog bytes (the
  // one back-pressure rule of the simulator's hosts, the fabric's uplinks and
  // the live endpoint's port model): the host may hand it a frame while less
  // than max_backlog bytes wait, and may again from ready_at() on.
  bool ready(uint64_t max_backlog, Nanos now) { return backlog_bytes(now) < max_backlog; }
  Nanos ready_at(uint64_t max_backlog, Nanos now) { return drained_to(max_backlog - 1, now); }
  bool is_up(Nanos now) const;

  // Applies a new configuration from time now on (validated by the caller);
  // queued frames keep their schedule, models restart from the new settings.
  void reconfigure(const LinkConfig& config, Nanos now = 0);
  void set_up(bool up) { config_.up = up; }
  const LinkConfig& config() const { return config_; }
  const LinkCounters& counters() const { return counters_; }
  // Time from submit to arrival of delivered frames (queueing + serialisation + delay).
  const DelayHistogram& delay_histogram() const { return delay_hist_; }
  uint64_t seed() const { return rng_.seed(); }

 private:
  struct Queued {
    int64_t depart_ps;
    uint32_t bytes;
  };
  void drain(Nanos now);
  void build_models();

  LinkConfig config_;
  Random rng_;
  LossModel loss_;
  DelayModel delay_;
  Reorderer reorder_;
  LinkCounters counters_;
  DelayHistogram delay_hist_;
  bool wire_impaired_ = false;  // any on-the-wire impairment configured (else a fast path)
  // Frames still being serialised, in order: a ring that only grows (doubling)
  // when a deeper queue than ever before builds up, so steady state never allocates.
  std::vector<Queued> ring_ = std::vector<Queued>(1024);
  size_t head_ = 0, count_ = 0;
  uint64_t backlog_bytes_ = 0;
  int64_t free_at_ps_ = 0;
};

}  // namespace metaroce::emulator
