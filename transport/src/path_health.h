// Path health: active -> degraded (keeps losing, clearly and significantly
// more than the other live paths) -> down (consecutive retransmission timeouts while other paths are
// answered), and back: a degraded
// path recovers when its loss falls, a down path after answered probes. A path
// that stays degraded has its entropy rotated (new UDP source port) so ECMP
// moves it to another route; a path that goes down is rotated at once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "metaroce/transport/endpoint.h"  // PathState

namespace metaroce::transport {

// The loss estimate's gain per resolved packet: a memory of about 2 / gain =
// 512 packets. A shorter memory holds too few losses at the loss rates the
// fabric really has (at 0.5%, about one in 128 packets), so chance clusters
// of them look like a bad path: at 1/64, 3-7 % of 8-path runs of 16,000
// packets per path saw a healthy path flip to degraded and back under
// uniform 0.5-5 % loss (tests/unit/transport_path_health_test.cc). A path
// losing 10 % among paths losing 0.5 % is still found in about 100 packets.
inline constexpr double kPathLossGain = 1.0 / 256;

// Values come from TransportTuning (and kPathLossGain): no defaults here, so a
// default lives in one place only.
struct HealthParams {
  double loss_gain = 0;  // EWMA gain per resolved packet
  double degraded_loss = 0;
  double degraded_ratio = 0;
  uint32_t down_after_rtos = 0;
  uint32_t up_after_probes = 0;
  uint32_t rotate_after_degraded_packets = 0;
};

// What a set of paths has seen: the (bias-corrected) exponentially weighted
// loss and the weights behind it, so that the loss estimate of several paths
// pooled and the noise of that estimate follow from sums.
struct LossEvidence {
  double weighted_losses = 0;  // sum of w_k * lost_k over resolved packets k
  double weight = 0;           // sum of w_k
  double weight_sq = 0;        // sum of w_k^2
  LossEvidence& operator+=(const LossEvidence& o) {
    weighted_losses += o.weighted_losses;
    weight += o.weight;
    weight_sq += o.weight_sq;
    return *this;
  }
  double loss() const { return weight > 0 ? weighted_losses / weight : 0.0; }
  // Variance of loss() per unit of p(1 - p): 1/n for n equally weighted packets.
  double noise() const { return weight > 0 ? weight_sq / (weight * weight) : 1.0; }
};

class PathHealth {
 public:
  explicit PathHealth(const HealthParams& p = {}) : p_(p) {}

  enum class Action : uint8_t { kNone, kRotateEntropy };

  // How far above the other paths' loss, in standard deviations of the
  // difference, this path's loss must be to count as evidence against it.
  // Every path's estimate is noisy (about 2/loss_gain packets of memory): at
  // 5% uniform loss a bare "twice the others" test is crossed by chance many
  // times a second and marks healthy paths degraded. The test runs after
  // every ACK, so its false-alarm rate per test must be far below one in the
  // number of tests a run makes; a path losing clearly more than the others
  // is still found within a few hundred packets.
  static constexpr double kEvidenceSigmas = 5.0;
  // The same confidence for few losses, where the normal approximation fails:
  // at 0.5% loss a path's estimate holds about 2.5 expected losses, and
  // clusters of them happen by chance. So the path's loss count must also be
  // this improbable under a Poisson law at the other paths' rate (about the
  // one-sided tail of 5.6 sigmas; at 2.87e-7, 5 sigmas, 1 % of runs under
  // uniform 5 % loss still flipped a path).
  static constexpr double kEvidenceTail = 1e-8;
  // A degraded path comes back when it is within this many sigmas of the others.
  static constexpr double kRecoverSigmas = 1.0;

  void on_delivered() { record(0.0); }
  void on_lost() { record(1.0); }

  // After an ACK on a live path: judge this path against the pooled evidence
  // of the other live paths (uniform loss everywhere is the fabric's state,
  // not this path's).
  Action evaluate(const LossEvidence& others) {
    consecutive_rtos_ = 0;
    if (state_ == PathState::kDown) {
      if (++probe_acks_ >= p_.up_after_probes) set(PathState::kActive);
      return Action::kNone;
    }
    const double loss = ev_.loss(), others_loss = others.loss();
    // Null hypothesis: this path loses like the others, at their pooled rate.
    // Its noise is that of both estimates; with no evidence from the others
    // (one path, or all others fresh) the difference is as uncertain as one
    // packet. One pseudo-loss and one pseudo-delivery keep p0 off 0 and 1,
    // where the variance would vanish and a first lost packet would count as proof.
    LossEvidence all = ev_;
    all += others;
    const double p0 = (all.weighted_losses + p_.loss_gain) / (all.weight + 2 * p_.loss_gain);
    const double sigma = std::sqrt(p0 * (1 - p0) * (ev_.noise() + others.noise()));
    const double excess = loss - others_loss;
    const bool bad = loss > p_.degraded_loss && loss > p_.degraded_ratio * others_loss &&
                     excess > kEvidenceSigmas * sigma && improbable_at_others_rate(others);
    const bool good = loss < p_.degraded_loss / 2 || excess < kRecoverSigmas * sigma;
    if (bad && state_ == PathState::kActive) set(PathState::kDegraded);
    else if (good && state_ == PathState::kDegraded) set(PathState::kActive);
    if (state_ == PathState::kDegraded && ++degraded_packets_ >= p_.rotate_after_degraded_packets) {
      degraded_packets_ = 0;
      ev_ = {};  // judge the new route afresh
      return Action::kRotateEntropy;
    }
    return Action::kNone;
  }

  // A retransmission timeout on this path. A timeout while other paths are
  // answered is evidence against this path; when every path goes quiet at
  // once the host or the whole fabric stalled, and a path is declared down
  // only if the silence outlasts kSilentExtraRtos more (backed-off) timeouts,
  // far longer than a scheduler hiccup. others_loss: the other live paths'
  // pooled loss (rtos_to_down).
  static constexpr uint32_t kSilentExtraRtos = 3;
  Action on_rto(bool others_answered = true, double others_loss = 0) {
    ++consecutive_rtos_;
    const uint32_t needed = rtos_to_down(others_loss) + (others_answered ? 0 : kSilentExtraRtos);
    if (consecutive_rtos_ >= needed && state_ != PathState::kDown) {
      set(PathState::kDown);
      return Action::kRotateEntropy;
    }
    return Action::kNone;
  }

  // How unlikely consecutive timeouts must be, for a path that loses like the
  // others, before they make it down.
  static constexpr double kDownEvidence = 1e-4;
  // A path silent through this many backed-off timeouts (seconds) is down
  // whatever the fabric loses.
  static constexpr uint32_t kMaxRtosToDown = 16;
  // Consecutive timeouts that mark a path down: down_after_rtos, or more
  // where the fabric loses so much that a path losing like the others would
  // time out that often by chance. After a timeout a path has one packet in
  // flight (its window collapsed), which times out again when it or its ACK
  // is lost, with probability 1 - (1 - loss)^2: at 10 % loss, 19 %, so two
  // timeouts in a row (the old rule) marked a healthy path down in one of
  // about five timeouts; six are needed for kDownEvidence. At 0.5 % two remain.
  uint32_t rtos_to_down(double others_loss) const {
    const double delivered = 1 - std::clamp(others_loss, 0.0, 1.0);
    const double round_trip_loss = 1 - delivered * delivered;
    if (round_trip_loss <= 0) return p_.down_after_rtos;
    const double n = round_trip_loss >= 1 ? kMaxRtosToDown
                                          : std::ceil(std::log(kDownEvidence) / std::log(round_trip_loss) - 1e-9);
    return std::max(p_.down_after_rtos, static_cast<uint32_t>(std::min<double>(n, kMaxRtosToDown)));
  }

  PathState state() const { return state_; }
  bool timing_out() const { return consecutive_rtos_ > 0; }  // timed out since its last ACK
  double loss() const { return ev_.loss(); }
  const LossEvidence& evidence() const { return ev_; }
  uint64_t state_changes() const { return changes_; }
  bool became_active() {  // edge, back from down, consumed by the caller to reset the window
    const bool b = became_active_;
    became_active_ = false;
    return b;
  }

 private:
  // Whether this path's losses (k of n effective packets) would happen with
  // probability below kEvidenceTail if it lost at the others' rate (one
  // pseudo-loss and one pseudo-delivery again keep that rate off 0).
  bool improbable_at_others_rate(const LossEvidence& others) const {
    const double n = 1.0 / ev_.noise();  // effective packets in the estimate
    const double k = ev_.loss() * n;
    const double rate = (others.weighted_losses + p_.loss_gain) / (others.weight + 2 * p_.loss_gain);
    return poisson_tail(k, rate * n) < kEvidenceTail;
  }

  // P(X >= k) for X ~ Poisson(lambda > 0), k real: the regularized lower
  // incomplete gamma P(k, lambda), by its series (converges fast for k > lambda;
  // 1 otherwise, which is all the caller needs).
  static double poisson_tail(double k, double lambda) {
    if (k <= lambda) return 1.0;
    double term = std::exp(k * std::log(lambda) - lambda - std::lgamma(k + 1));
    double sum = term;
    for (int i = 1; i < 200 && term > sum * 1e-12; ++i) {
      term *= lambda / (k + i);
      sum += term;
    }
    return sum;
  }

  // Exponential weighting with the weights kept explicitly: dividing by their
  // sum removes the start-up bias of an EWMA that begins at 0, and their
  // squares give the estimate's noise, large while few packets are in it.
  void record(double lost) {
    const double keep = 1 - p_.loss_gain;
    ev_.weighted_losses = ev_.weighted_losses * keep + p_.loss_gain * lost;
    ev_.weight = ev_.weight * keep + p_.loss_gain;
    ev_.weight_sq = ev_.weight_sq * keep * keep + p_.loss_gain * p_.loss_gain;
  }

  void set(PathState s) {
    if (s == state_) return;
    const PathState from = state_;
    state_ = s;
    ++changes_;
    degraded_packets_ = 0;
    probe_acks_ = 0;
    if (from == PathState::kDown && s == PathState::kActive) {
      ev_ = {};  // what the path lost before it went down says nothing about it now
      became_active_ = true;
    }
  }

  HealthParams p_;
  PathState state_ = PathState::kActive;
  LossEvidence ev_;
  uint32_t consecutive_rtos_ = 0, probe_acks_ = 0, degraded_packets_ = 0;
  uint64_t changes_ = 0;
  bool became_active_ = false;
};

}  // namespace metaroce::transport
