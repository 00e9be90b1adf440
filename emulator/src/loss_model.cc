#include "metaroce/emulator/loss_model.h"

#include <algorithm>
#include <cmath>

#include "range_check.h"

namespace metaroce::emulator {

using detail::format_number;
using detail::in_unit;
using detail::in_unit_open;
using detail::kNaN;

namespace {

// Stationary probabilities of the 4-state chain, unnormalised with pi1 = 1.
// Balance: pi4 = p14 pi1; p31 pi3 = p13 pi1 (flow into and out of {1, 4});
// p23 pi2 = p32 pi3.
struct FourStatePi {
  double pi1, pi2, pi3, pi4;
};
FourStatePi four_state_pi(const LossConfig& c) {
  FourStatePi s{1.0, 0.0, 0.0, c.p14};
  if (c.p13 > 0) {
    s.pi3 = c.p13 / c.p31;
    if (c.p32 > 0) s.pi2 = c.p32 * s.pi3 / c.p23;
  }
  return s;
}

}  // namespace

std::optional<std::string> validate(const LossConfig& c) {
  using K = LossConfig::Kind;
  if (c.kind > K::kPattern)
    return "loss.kind: must be one of none, bernoulli, correlated, gilbert_elliott, four_state, pattern (got " +
           std::to_string(static_cast<unsigned>(c.kind)) + ")";
  for (auto [name, v] : {std::pair{"loss.probability", c.probability}, std::pair{"loss.ge_p", c.ge_p},
                         std::pair{"loss.ge_r", c.ge_r}, std::pair{"loss.ge_1_h", c.ge_1_h},
                         std::pair{"loss.ge_1_k", c.ge_1_k}, std::pair{"loss.p13", c.p13},
                         std::pair{"loss.p31", c.p31}, std::pair{"loss.p32", c.p32}, std::pair{"loss.p23", c.p23},
                         std::pair{"loss.p14", c.p14}})
    if (auto e = in_unit(name, v)) return e;
  if (auto e = in_unit_open("loss.correlation", c.correlation)) return e;
  // Leaving state 1 (or 3) is one draw split between two targets; the slack
  // forgives decimal round-off such as 0.3 + 0.7.
  constexpr double kSlack = 1e-12;
  if (!(c.p13 + c.p14 <= 1.0 + kSlack))
    return "loss.p14: must be in [0, 1 - p13] = [0, " + format_number(1.0 - c.p13) + "] (got " + format_number(c.p14) + ")";
  if (!(c.p31 + c.p32 <= 1.0 + kSlack))
    return "loss.p32: must be in [0, 1 - p31] = [0, " + format_number(1.0 - c.p31) + "] (got " + format_number(c.p32) + ")";

  switch (c.kind) {
    case K::kGilbertElliott:
      if (c.ge_p > 0 && c.ge_r == 0)
        return "loss.ge_r: must be in (0, 1] when loss.ge_p > 0 (got 0: the bad state would be absorbing)";
      break;
    case K::kFourState:
      if (c.p13 > 0 && c.p31 == 0)
        return "loss.p31: must be in (0, 1] when loss.p13 > 0 (got 0: state 3 could never return to 1)";
      if (c.p13 > 0 && c.p32 > 0 && c.p23 == 0)
        return "loss.p23: must be in (0, 1] when loss.p13 > 0 and loss.p32 > 0 (got 0: state 2 would be absorbing)";
      break;
    case K::kPattern:
      if (c.every_nth == 0 && c.drop_indices.empty())
        return "loss.every_nth: must be >= 1 when loss.drop_indices is empty (got 0: the pattern would drop nothing)";
      break;
    default:
      break;
  }
  return std::nullopt;
}

LossModel::LossModel(const LossConfig& config) : config_(config) {
  if (config_.kind == LossConfig::Kind::kPattern) {
    sorted_drops_ = config_.drop_indices;
    std::sort(sorted_drops_.begin(), sorted_drops_.end());
    sorted_drops_.erase(std::unique(sorted_drops_.begin(), sorted_drops_.end()), sorted_drops_.end());
  }
}

void LossModel::reset() {
  index_ = 0;
  cursor_ = 0;
  state_ = 1;
  have_last_ = false;
  last_ = false;
}

bool LossModel::drop(Random& rng) {
  using K = LossConfig::Kind;
  const LossConfig& c = config_;
  const uint64_t i = index_++;
  switch (c.kind) {
    case K::kNone:
      return false;

    case K::kBernoulli:
      return rng.bernoulli(c.probability);

    case K::kCorrelated: {
      // No draw for the repeat when correlation is 0, so that case replays
      // exactly like kBernoulli.
      if (!(have_last_ && c.correlation > 0 && rng.uniform() < c.correlation)) last_ = rng.bernoulli(c.probability);
      have_last_ = true;
      return last_;
    }

    case K::kGilbertElliott: {
      // Lost with the current state's probability, then move (netem's order).
      const bool bad = state_ == 2;
      const bool lost = rng.bernoulli(bad ? c.ge_1_h : c.ge_1_k);
      if (rng.bernoulli(bad ? c.ge_r : c.ge_p)) state_ = bad ? 1 : 2;
      return lost;
    }

    case K::kFourState: {
      // One draw per packet, split between the exits of the current state.
      const double u = rng.uniform();
      switch (state_) {
        case 1:
          if (u < c.p14) state_ = 4;
          else if (u < c.p14 + c.p13) state_ = 3;
          break;
        case 2:
          if (u < c.p23) state_ = 3;
          break;
        case 3:
          if (u < c.p32) state_ = 2;
          else if (u < c.p32 + c.p31) state_ = 1;
          break;
        default:  // 4: an isolated loss is always followed by a reception
          state_ = 1;
          break;
      }
      return state_ == 3 || state_ == 4;
    }

    case K::kPattern: {
      bool lost = c.every_nth > 0 && (i + 1) % c.every_nth == 0;
      while (cursor_ < sorted_drops_.size() && sorted_drops_[cursor_] < i) ++cursor_;
      if (cursor_ < sorted_drops_.size() && sorted_drops_[cursor_] == i) {
        lost = true;
        ++cursor_;
      }
      return lost;
    }
  }
  return false;
}

double LossModel::expected_loss_rate(const LossConfig& c) {
  using K = LossConfig::Kind;
  if (validate(c)) return kNaN;
  switch (c.kind) {
    case K::kNone:
      return 0.0;
    case K::kBernoulli:
    case K::kCorrelated:
      return c.probability;
    case K::kGilbertElliott: {
      if (c.ge_p == 0) return c.ge_1_k;  // never leaves Good
      const double bad = c.ge_p / (c.ge_p + c.ge_r);
      return (1.0 - bad) * c.ge_1_k + bad * c.ge_1_h;
    }
    case K::kFourState: {
      const FourStatePi s = four_state_pi(c);
      return (s.pi3 + s.pi4) / (s.pi1 + s.pi2 + s.pi3 + s.pi4);
    }
    case K::kPattern:
      return c.every_nth > 0 ? 1.0 / static_cast<double>(c.every_nth) : 0.0;
  }
  return kNaN;
}

double LossModel::expected_burst_length(const LossConfig& c) {
  using K = LossConfig::Kind;
  if (validate(c)) return kNaN;
  // Runs start as often as they end, so the mean run is the loss rate over
  // the rate of "lost, then received" pairs.
  double rate = 0, ends = 0;
  switch (c.kind) {
    case K::kNone:
      return kNaN;
    case K::kBernoulli:
      rate = c.probability;
      ends = rate * (1.0 - c.probability);
      break;
    case K::kCorrelated:
      rate = c.probability;
      ends = rate * (1.0 - c.correlation) * (1.0 - c.probability);
      break;
    case K::kGilbertElliott: {
      const double bad = c.ge_p == 0 ? 0.0 : c.ge_p / (c.ge_p + c.ge_r);
      const double good = 1.0 - bad;
      // Next packet's state: from Good stay w.p. 1-p; from Bad leave w.p. r.
      const double recv_after_good = (1.0 - c.ge_p) * (1.0 - c.ge_1_k) + c.ge_p * (1.0 - c.ge_1_h);
      const double recv_after_bad = c.ge_r * (1.0 - c.ge_1_k) + (1.0 - c.ge_r) * (1.0 - c.ge_1_h);
      rate = good * c.ge_1_k + bad * c.ge_1_h;
      ends = good * c.ge_1_k * recv_after_good + bad * c.ge_1_h * recv_after_bad;
      break;
    }
    case K::kFourState: {
      const FourStatePi s = four_state_pi(c);
      const double total = s.pi1 + s.pi2 + s.pi3 + s.pi4;
      rate = (s.pi3 + s.pi4) / total;
      // State 3 is followed by a reception when it exits; 4 always is.
      ends = (s.pi3 * (c.p31 + c.p32) + s.pi4) / total;
      break;
    }
    case K::kPattern:
      if (c.every_nth < 2) return kNaN;
      return 1.0;
  }
  if (!(rate > 0) || !(ends > 0)) return kNaN;
  return rate / ends;
}

}  // namespace metaroce::emulator
