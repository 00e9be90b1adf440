// The live backend's translation of a run (metaroce/scenario/engine.h) into
// Fabric and Traffic API requests, and nothing else: the simulator's
// counterpart is metaroce/scenario/sim_backend.h, and tests compare the two.
#pragma once

#include <vector>

#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/model.h"
#include "metaroce/v1/fabric.pb.h"
#include "metaroce/v1/traffic.pb.h"

namespace metarocectl {

// A change as a Fabric API patch: the simulator's patch (emulator_patch at
// time_scale 1), encoded, so a scenario means the same change in both modes.
metaroce::v1::LinkPatch live_patch(const metaroce::scenario::FabricChange& c);
// A run's setup: one Fabric.Set per change, in order, after a Fabric.Reset.
std::vector<metaroce::v1::SetLinksRequest> live_setup(const metaroce::scenario::RunPlan& plan);
// A run's timeline as Fabric.LoadTimeline events (scenario nanoseconds).
metaroce::v1::LoadTimelineRequest live_timeline(const metaroce::scenario::RunPlan& plan);
// One job of a run as a Traffic.Start request to the daemon of the job's
// `from` host: its peer, size, connections, transport parameters (the
// scenario's mtu_payload), duration, seed and every path's source port
// (src_ports: metaroce::scenario::path_source_ports for the daemons' addresses).
metaroce::v1::StartJobRequest live_job(const metaroce::scenario::Scenario& s, const metaroce::scenario::JobSpec& js,
                                       const std::vector<uint16_t>& src_ports);

}  // namespace metarocectl
