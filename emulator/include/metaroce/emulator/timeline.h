// A timeline of fabric changes at given instants: set, ramp, down, up, flap
// start/stop. The fabric applies every event whose time has come before it
// handles a frame offered at or after that time, so a change takes effect at
// exactly its instant under the virtual clock and the real clock alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "metaroce/emulator/fabric.h"

namespace metaroce::emulator {

struct TimelineEvent {
  Nanos at_ns = 0;
  LinkSelector selector;
  LinkPatch patch;
  std::string label;  // for reports ("plane 1 down", "ramp loss 2/10")
};

// Numeric fields a ramp can move linearly.
enum class RampField : uint8_t { kLossProbability, kDelayNs, kRateBps, kDuplicateProbability, kCorruptProbability };

class Timeline {
 public:
  void set(Nanos at, const LinkSelector& sel, const LinkPatch& patch, std::string label = "set");
  void down(Nanos at, const LinkSelector& sel) { set(at, sel, patch_up(false), "down"); }
  void up(Nanos at, const LinkSelector& sel) { set(at, sel, patch_up(true), "up"); }
  void flap_start(Nanos at, const LinkSelector& sel, Nanos period_ns, Nanos down_ns);
  void flap_stop(Nanos at, const LinkSelector& sel);
  // from -> to in `steps` equal steps over [at, at + duration]; steps >= 1.
  void ramp(Nanos at, Nanos duration, uint32_t steps, const LinkSelector& sel, RampField field, double from,
            double to);

  // Events in time order (stable for equal times).
  const std::vector<TimelineEvent>& events() const { return events_; }
  // Checks every event against the fabric: the error names the event and field.
  std::optional<std::string> validate(const FabricConfig& fabric) const;

 private:
  static LinkPatch patch_up(bool up) {
    LinkPatch p;
    p.up = up;
    return p;
  }
  std::vector<TimelineEvent> events_;
};

// Drives a timeline against a fabric: call apply_due(now) before handling
// frames at time now; next_at() says when the next event is due.
class TimelineRunner {
 public:
  TimelineRunner(Fabric& fabric, Timeline timeline) : fabric_(fabric), timeline_(std::move(timeline)) {}
  // Applies all events with at_ns <= now; returns how many.
  size_t apply_due(Nanos now);
  Nanos next_at() const;
  size_t applied() const { return next_; }
  const Timeline& timeline() const { return timeline_; }

 private:
  Fabric& fabric_;
  Timeline timeline_;
  size_t next_ = 0;
};

}  // namespace metaroce::emulator
