// Runs a scenario against live daemons: the scenario engine
// (metaroce/scenario/engine.h) with the live backend, which resets and
// configures the fabric daemon, starts each run's jobs on their source
// daemons, loads the fault timeline when the jobs send, follows them, samples
// the fabric every interval and judges the run's fidelity (INCONCLUSIVE when
// the host, not the fabric, set the pace). Capture windows are written under
// out_dir (out_dir/captures/, named in the report).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "client.h"
#include "metaroce/scenario/model.h"

namespace metarocectl {

metaroce::scenario::Report run_scenario_live(const metaroce::scenario::Scenario& s, const ClientOptions& options,
                                             const std::function<void(const std::string&)>& progress,
                                             std::optional<size_t> point = std::nullopt,
                                             const std::string& out_dir = {});

}  // namespace metarocectl
