// Fidelity guard of live runs: did the datapath keep up, so that what the
// transports reacted to was the emulated fabric and not this host?
//
// A live run reads every daemon's counters (GetCounters) when it starts and
// when it ends; assess_fidelity() compares the two and names every reason the
// host, rather than the fabric, may have shaped the result: workers that
// waited for a CPU, were saturated, handled frames or timers late, and frames
// lost in ports and rings rather than by an emulator cause. A run with any
// such reason gets the verdict INCONCLUSIVE, never PASS (model.h, Report).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "metaroce/scenario/model.h"

namespace metaroce::scenario {

// One daemon's counters as GetCounters / /metrics name them (without the
// "metaroce_" prefix), with their labels.
struct CounterSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct DaemonCounters {
  std::string daemon;  // a name for the report: "h0", "fabric"
  std::vector<CounterSample> counters;
};

// before/after: the same daemons, in the same order, at the run's start and end.
Fidelity assess_fidelity(const std::vector<DaemonCounters>& before, const std::vector<DaemonCounters>& after,
                         const FidelityLimits& limits);

}  // namespace metaroce::scenario
