// Fabric API messages (metaroce.v1) in the emulator's terms, checked: a bad
// value gets INVALID_ARGUMENT naming the field, the value and what is allowed.
// The daemon's Fabric service uses these; tests use them to check that a
// scenario means the same change live as in the simulator.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "metaroce/daemon/config.h"
#include "metaroce/emulator/timeline.h"
#include "metaroce/v1/fabric.pb.h"

namespace metaroce::daemon {

grpc::Status to_emulator_selector(const v1::LinkSelector& in, const FabricSection& fabric, emulator::LinkSelector* out,
                                  const std::string& field = "selector");
grpc::Status to_emulator_patch(const v1::LinkPatch& in, emulator::LinkPatch* out, const std::string& field = "patch");
// Timeline events with instants relative to the load (at most 10000 events).
grpc::Status to_emulator_timeline(const v1::LoadTimelineRequest& req, const FabricSection& fabric,
                                  std::vector<emulator::TimelineEvent>* out);

}  // namespace metaroce::daemon
