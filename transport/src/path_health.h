// Path health: active -> degraded (keeps losing, clearly more than the other
// paths) -> down (consecutive retransmission timeouts while other paths are
// answered), and back: a degraded
// path recovers when its loss falls, a down path after answered probes. A path
// that stays degraded has its entropy rotated (new UDP source port) so ECMP
// moves it to another route; a path that goes down is rotated at once.
#pragma once

#include <cstdint>

#include "metaroce/transport/endpoint.h"  // PathState

namespace metaroce::transport {

struct HealthParams {
  double loss_gain = 1.0 / 64;       // EWMA gain per resolved packet
  double degraded_loss = 0.05;
  double degraded_ratio = 2.0;
  uint32_t down_after_rtos = 2;
  uint32_t up_after_probes = 2;
  uint32_t rotate_after_degraded_packets = 512;
};

class PathHealth {
 public:
  explicit PathHealth(const HealthParams& p = {}) : p_(p) {}

  enum class Action : uint8_t { kNone, kRotateEntropy };

  void on_delivered() { loss_ *= (1 - p_.loss_gain); }
  void on_lost() { loss_ = loss_ * (1 - p_.loss_gain) + p_.loss_gain; }

  // After an ACK on a live path: re-evaluate against the mean loss of the
  // other paths (uniform loss everywhere is the fabric's state, not this path's).
  Action evaluate(double others_mean_loss) {
    consecutive_rtos_ = 0;
    if (state_ == PathState::kDown) {
      if (++probe_acks_ >= p_.up_after_probes) set(PathState::kActive);
      return Action::kNone;
    }
    const bool bad = loss_ > p_.degraded_loss && loss_ > p_.degraded_ratio * others_mean_loss;
    if (bad && state_ == PathState::kActive) set(PathState::kDegraded);
    else if (!bad && state_ == PathState::kDegraded && loss_ < p_.degraded_loss / 2) set(PathState::kActive);
    if (state_ == PathState::kDegraded && ++degraded_packets_ >= p_.rotate_after_degraded_packets) {
      degraded_packets_ = 0;
      loss_ = others_mean_loss;  // judge the new route afresh
      return Action::kRotateEntropy;
    }
    return Action::kNone;
  }

  // A retransmission timeout on this path. A timeout while other paths are
  // answered is evidence against this path; when every path goes quiet at
  // once the host or the whole fabric stalled, and a path is declared down
  // only if the silence outlasts kSilentExtraRtos more (backed-off) timeouts,
  // far longer than a scheduler hiccup.
  static constexpr uint32_t kSilentExtraRtos = 3;
  Action on_rto(bool others_answered = true) {
    ++consecutive_rtos_;
    const uint32_t needed = p_.down_after_rtos + (others_answered ? 0 : kSilentExtraRtos);
    if (consecutive_rtos_ >= needed && state_ != PathState::kDown) {
      set(PathState::kDown);
      return Action::kRotateEntropy;
    }
    return Action::kNone;
  }

  PathState state() const { return state_; }
  double loss() const { return loss_; }
  uint64_t state_changes() const { return changes_; }
  bool became_active() {  // edge, consumed by the caller to reset the window
    const bool b = became_active_;
    became_active_ = false;
    return b;
  }

 private:
  void set(PathState s) {
    if (s == state_) return;
    state_ = s;
    ++changes_;
    degraded_packets_ = 0;
    probe_acks_ = 0;
    if (s == PathState::kActive) {
      loss_ = 0;
      became_active_ = true;
    }
  }

  HealthParams p_;
  PathState state_ = PathState::kActive;
  double loss_ = 0;
  uint32_t consecutive_rtos_ = 0, probe_acks_ = 0, degraded_packets_ = 0;
  uint64_t changes_ = 0;
  bool became_active_ = false;
};

}  // namespace metaroce::transport
