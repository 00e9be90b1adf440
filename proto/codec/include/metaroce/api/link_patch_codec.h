// The one codec between the API's LinkPatch (metaroce.v1) and the emulator's
// (emulator::LinkPatch), both ways, field for field. The daemon decodes what
// it is sent; the CLI encodes a scenario's changes and pre-checks its flags
// through the same decode, so both report the emulator's message.
//
// Ranges are not checked here: decode_link_patch runs the emulator's
// validate(LinkPatch), the one authority, and only renames its fields to the
// API's (the emulator's loss.ge_p is the API's loss.p).
#pragma once

#include <optional>
#include <string>

#include "metaroce/emulator/fabric.h"
#include "metaroce/v1/fabric.pb.h"

namespace metaroce::api {

// The API patch in the emulator's terms, checked. Error: "field: problem"
// with the API's field names (e.g. "loss.p: must be in [0, 1] (got 2)"),
// relative to the patch; *out is then unspecified.
std::optional<std::string> decode_link_patch(const v1::LinkPatch& in, emulator::LinkPatch* out);

// The emulator patch as the API sends it: every field it sets. A loss model
// of kind kPattern has no API form (tests only) and is left out; a flap's
// start_ns is not sent (the phase starts when the patch is applied).
v1::LinkPatch encode_link_patch(const emulator::LinkPatch& in);

// The emulator selector as the API sends it (the daemon decodes and checks it
// against its fabric's shape: daemon::to_emulator_selector).
v1::LinkSelector encode_link_selector(const emulator::LinkSelector& in);

}  // namespace metaroce::api
