// The API's operation (metaroce.v1.Operation) and the transport's
// (transport::Operation), both ways, in one place. Names, the order users see
// and what RoCEv2 runs come from the transport's table (operations.h).
#pragma once

#include <optional>

#include "metaroce/transport/operations.h"
#include "metaroce/v1/traffic.pb.h"

namespace metaroce::api {

v1::Operation encode_operation(transport::Operation op);
// OPERATION_UNSPECIFIED means write (traffic.proto); a value the API does not
// define has no operation.
std::optional<transport::Operation> decode_operation(v1::Operation op);

}  // namespace metaroce::api
