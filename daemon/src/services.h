// gRPC services of metaroced: thin adapters from metaroce.v1 calls to DaemonCore.
#pragma once

#include <memory>
#include <vector>

#include "core.h"

namespace metaroce::daemon {

// All services of the API, bound to one core (owned by the caller).
std::vector<std::unique_ptr<grpc::Service>> make_services(DaemonCore& core);

}  // namespace metaroce::daemon
