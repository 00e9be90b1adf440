// The live backend's translation of a run (metaroce/scenario/engine.h) into
// Fabric API requests, and nothing else: the simulator's counterpart is
// metaroce/scenario/sim_backend.h, and tests compare the two change by change.
#pragma once

#include <vector>

#include "metaroce/scenario/engine.h"
#include "metaroce/v1/fabric.pb.h"

namespace metarocectl {

metaroce::v1::LinkSelector live_selector(const metaroce::scenario::Selector& s);
// The fields of a change as a Fabric API patch (set fields, up/down, flap).
metaroce::v1::LinkPatch live_patch(const metaroce::scenario::FabricChange& c);
// A run's setup: one Fabric.Set per change, in order, after a Fabric.Reset.
std::vector<metaroce::v1::SetLinksRequest> live_setup(const metaroce::scenario::RunPlan& plan);
// A run's timeline as Fabric.LoadTimeline events (scenario nanoseconds).
metaroce::v1::LoadTimelineRequest live_timeline(const metaroce::scenario::RunPlan& plan);

}  // namespace metarocectl
