#include "metaroce/emulator/timeline.h"

#include <algorithm>
#include <limits>

namespace metaroce::emulator {

void Timeline::set(Nanos at, const LinkSelector& sel, const LinkPatch& patch, std::string label) {
  TimelineEvent e{at, sel, patch, std::move(label)};
  auto pos = std::upper_bound(events_.begin(), events_.end(), at,
                              [](Nanos t, const TimelineEvent& x) { return t < x.at_ns; });
  events_.insert(pos, std::move(e));
}

void Timeline::flap_start(Nanos at, const LinkSelector& sel, Nanos period_ns, Nanos down_ns) {
  LinkPatch p;
  p.flap = FlapConfig{period_ns, down_ns, at};
  set(at, sel, p, "flap start");
}

void Timeline::flap_stop(Nanos at, const LinkSelector& sel) {
  LinkPatch p;
  p.flap = FlapConfig{};
  p.up = true;
  set(at, sel, p, "flap stop");
}

void Timeline::ramp(Nanos at, Nanos duration, uint32_t steps, const LinkSelector& sel, RampField field, double from,
                    double to) {
  steps = std::max<uint32_t>(steps, 1);
  for (uint32_t i = 0; i <= steps; ++i) {
    const double v = from + (to - from) * static_cast<double>(i) / steps;
    const Nanos t = at + static_cast<Nanos>(static_cast<double>(duration) * i / steps);
    LinkPatch p;
    switch (field) {
      case RampField::kLossProbability: {
        LossConfig l;
        l.kind = LossConfig::Kind::kBernoulli;
        l.probability = v;
        p.loss = l;
        break;
      }
      case RampField::kDelayNs: p.prop_delay_ns = static_cast<Nanos>(v); break;
      case RampField::kRateBps: p.rate_bps = v; break;
      case RampField::kDuplicateProbability: p.duplicate_probability = v; break;
      case RampField::kCorruptProbability: p.corrupt_probability = v; break;
    }
    set(t, sel, p, "ramp " + std::to_string(i) + "/" + std::to_string(steps));
  }
}

std::optional<std::string> Timeline::validate(const FabricConfig& fabric) const {
  // What Fabric::apply checks, without building a fabric (a large clos would
  // double the run's memory): the selector against the fabric's shape, and
  // the patch on a default link, which is the one authority for link ranges
  // (a patch's fields are checked each on its own, so a patch valid there is
  // valid on any valid link).
  for (size_t i = 0; i < events_.size(); ++i) {
    const TimelineEvent& e = events_[i];
    if (e.at_ns < 0) return "timeline[" + std::to_string(i) + "].at_ns: must be >= 0";
    auto err = emulator::validate(e.selector, fabric);
    if (!err) err = emulator::validate(e.patch);
    if (err) return "timeline[" + std::to_string(i) + "] (" + e.label + "): " + *err;
  }
  return std::nullopt;
}

size_t TimelineRunner::apply_due(Nanos now) {
  size_t n = 0;
  const auto& ev = timeline_.events();
  while (next_ < ev.size() && ev[next_].at_ns <= now) {
    // Validated up front; a failure here would mean the fabric changed shape.
    fabric_.apply(ev[next_].selector, ev[next_].patch, ev[next_].at_ns);
    ++next_;
    ++n;
  }
  return n;
}

Nanos TimelineRunner::next_at() const {
  const auto& ev = timeline_.events();
  return next_ < ev.size() ? ev[next_].at_ns : std::numeric_limits<Nanos>::max();
}

}  // namespace metaroce::emulator
