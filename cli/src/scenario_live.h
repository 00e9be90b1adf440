// Runs a scenario against live daemons: resets and configures the fabric
// daemon, starts each run's jobs on their source daemons, loads the fault
// timeline when the jobs run, follows their progress, samples the fabric's
// per-plane load every interval, and collects everything into a Report
// (scenario/include/metaroce/scenario/model.h) whose assertions use the
// live thresholds.
#pragma once

#include <functional>
#include <string>

#include "client.h"
#include "metaroce/scenario/model.h"

namespace metarocectl {

metaroce::scenario::Report run_scenario_live(const metaroce::scenario::Scenario& s, const ClientOptions& options,
                                             const std::function<void(const std::string&)>& progress);

// The scenario's fault timeline as Fabric.LoadTimeline events (ramps become
// their steps; flaps a flap patch). Scenario times are nanoseconds.
metaroce::v1::LoadTimelineRequest timeline_request(const metaroce::scenario::Scenario& s);

}  // namespace metarocectl
