// Packet loss models for one direction of an emulated link: the loss
// vocabulary of tc netem (random, correlated, Gilbert-Elliott, 4-state) plus
// deterministic patterns for tests that need an exact packet to go missing.
//
// drop() is called once per packet, in packet order, and answers "is this
// packet lost?". It never allocates and draws only from the Random passed in,
// so a seeded run replays exactly. Where we differ from netem on purpose it is
// said next to the field; docs/netem-mapping.md has the full comparison.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/emulator/random.h"

namespace metaroce::emulator {

using Nanos = int64_t;

struct LossConfig {
  enum class Kind : uint8_t {
    kNone,            // nothing is lost; drop() draws no random numbers
    kBernoulli,       // each packet lost independently with `probability`
    kCorrelated,      // Bernoulli with bursts: see `correlation`
    kGilbertElliott,  // two-state Markov chain (netem "loss gemodel")
    kFourState,       // four-state Markov chain (netem "loss state")
    kPattern,         // deterministic: every_nth and/or drop_indices
  };
  Kind kind = Kind::kNone;

  // kBernoulli, kCorrelated: probability that a packet is lost. Unitless, [0, 1].
  double probability = 0;

  // kCorrelated: [0, 1). With this probability a packet repeats the previous
  // packet's decision (lost or not); otherwise it draws a fresh
  // Bernoulli(probability). The long-run loss rate stays exactly `probability`
  // whatever the correlation; consecutive decisions have autocorrelation
  // correlation^lag and the mean loss burst is 1 / ((1 - correlation) *
  // (1 - probability)). netem instead averages the uniform draws
  // (next = (1 - c) * fresh + c * last), which narrows their distribution, so
  // "loss 1% 25%" there loses noticeably less than 1%. 1 is excluded because
  // it would freeze the first decision forever.
  double correlation = 0;

  // kGilbertElliott, in netem's "loss gemodel p r 1-h 1-k" order. All are
  // probabilities per packet, unitless, in [0, 1]. Each packet is lost with
  // the loss probability of the state the chain is in, then the chain moves
  // (netem's order; the chain starts Good):
  //   ge_p:   Good -> Bad transition probability
  //   ge_r:   Bad -> Good transition probability; must be > 0 when ge_p > 0
  //           (r = 0 makes Bad absorbing: the link never recovers, which is a
  //           link-down event for a timeline, not a loss rate)
  //   ge_1_h: loss probability in Bad  (netem's "1-h"; 1 = every packet lost)
  //   ge_1_k: loss probability in Good (netem's "1-k"; 0 = no loss in Good)
  // Defaults (p 0, r 1, 1-h 1, 1-k 0) lose nothing; p alone gives the "simple
  // Gilbert" model. Note tc's own default for an omitted r is 1 - p.
  double ge_p = 0, ge_r = 1, ge_1_h = 1, ge_1_k = 0;

  // kFourState, in netem's "loss state p13 p31 p32 p23 p14" order, the GI
  // model of Salsano et al. with netem's state numbering:
  //   1 = packet received, gap period     2 = packet received, burst period
  //   3 = packet lost, burst period       4 = isolated loss, gap period
  // A packet's fate is the state the chain enters for it (3 or 4 = lost).
  // Probabilities per packet, unitless, in [0, 1]:
  //   p13: 1 -> 3, p14: 1 -> 4 (p13 + p14 <= 1; otherwise 1 stays in 1)
  //   p31: 3 -> 1, p32: 3 -> 2 (p31 + p32 <= 1; otherwise 3 stays in 3)
  //   p23: 2 -> 3              (otherwise 2 stays in 2)
  //   4 always returns to 1.
  // The chain starts in 1. Every state reachable from 1 must be able to get
  // back to 1, so that the long-run loss rate exists and does not depend on
  // luck: p13 > 0 requires p31 > 0, and p13 > 0 with p32 > 0 requires p23 > 0.
  // Note tc's own defaults for omitted values are p31 = 1 - p13, p23 = 1.
  double p13 = 0, p31 = 1, p32 = 0, p23 = 0, p14 = 0;

  // kPattern: drop packets n, 2n, 3n, ... counting packets from 1 (so with
  // n = 3 the 3rd, 6th, ... packets are lost). 0 = unused; 1 = lose all.
  uint64_t every_nth = 0;
  // kPattern: 0-based indices of further packets to drop, in any order;
  // duplicates are ignored. Both rules apply (a packet matching either is
  // lost). kPattern with neither rule set is rejected as a likely mistake.
  std::vector<uint64_t> drop_indices;

  bool operator==(const LossConfig&) const = default;
};

// Returns nullopt if the configuration is usable, else an error that starts
// with the field name and states the allowed range, e.g.
// "loss.ge_p: must be in [0, 1] (got 1.5)". Ranges of every numeric field are
// checked whatever the kind (a stray bad value is a typo worth reporting); the
// recurrence rules above only for the kind in use. NaN is always rejected.
std::optional<std::string> validate(const LossConfig& c);

class LossModel {
 public:
  // Takes an invalid configuration as is (validate() first); its behaviour is
  // then unspecified but memory-safe.
  explicit LossModel(const LossConfig& config = {});

  // Decides the fate of the next packet. No allocation; at most two draws.
  bool drop(Random& rng);

  // Back to the state of a fresh model (chain in its start state, pattern at
  // packet 0). The Random is the caller's to reseed.
  void reset();

  const LossConfig& config() const { return config_; }
  // Packets decided since construction or reset().
  uint64_t packets() const { return index_; }

  // Long-run fraction of packets lost, from the chain's stationary
  // distribution (exact, no simulation). kPattern: 1 / every_nth, or 0 with
  // drop_indices only (a finite set has no long-run rate). NaN if invalid.
  static double expected_loss_rate(const LossConfig& c);

  // Mean length of a run of consecutive lost packets in the stationary
  // process: expected_loss_rate / P(packet lost and next one received), which
  // is exact for any of these chains. Examples: Bernoulli 1 / (1 - p);
  // correlated 1 / ((1 - c)(1 - p)); Gilbert-Elliott with 1-k = 0 and
  // 1-h = 1: 1 / r; 4-state with p14 = 0: 1 / (p31 + p32); pattern with
  // every_nth >= 2: 1. NaN where no run ever ends or none ever starts (loss
  // rate 1 or 0, drop_indices only) and for invalid configurations.
  static double expected_burst_length(const LossConfig& c);

 private:
  LossConfig config_;
  std::vector<uint64_t> sorted_drops_;  // kPattern: sorted, unique
  uint64_t index_ = 0;                  // 0-based index of the next packet
  size_t cursor_ = 0;                   // first entry of sorted_drops_ >= index_
  uint8_t state_ = 1;                   // GE: 1 Good, 2 Bad; 4-state: 1..4
  bool have_last_ = false;              // kCorrelated: a previous decision exists
  bool last_ = false;                   // kCorrelated: that decision
};

}  // namespace metaroce::emulator
