// The live backend's translation of a run (metaroce/scenario/engine.h) into
// Fabric and Traffic API requests, and nothing else: the simulator's
// counterpart is metaroce/scenario/sim_backend.h, and tests compare the two.
#pragma once

#include <vector>

#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/model.h"
#include "metaroce/v1/capture.pb.h"
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

// One daemon's part of a run's capture window: its address, its name in the
// report ("fabric", a host's name, or "h0+fabric" for a daemon with both
// roles) and the Capture.Start request: the window's points on that daemon
// (fabric: in, out and dropped at the fabric node; endpoints: rx and tx of
// the run's hosts), its planes and snap length, a file name of its own in
// the daemon's capture directory, and the window on the daemons' wall clock
// (start_unix_ns, stop_unix_ns: origin_unix_ns, the instant the fabric's
// timeline counts from, + from_ns and + to_ns), which also ends the capture
// if metarocectl never stops it, and at most kMaxCaptureBytesPerDaemon.
// Daemons in address order; one daemon serving several roles gets one
// request with all their points.
struct LiveCaptureRequest {
  std::string daemon;
  std::string address;
  metaroce::v1::StartCaptureRequest start;
};
std::vector<LiveCaptureRequest> live_capture_requests(const metaroce::scenario::Scenario& s,
                                                      const metaroce::scenario::RunPlan& plan,
                                                      const metaroce::scenario::PlannedCapture& c,
                                                      std::uint64_t origin_unix_ns);

}  // namespace metarocectl
