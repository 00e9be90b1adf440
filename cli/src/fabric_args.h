// Fabric flags and timeline files -> metaroce.v1 Fabric messages.
//
// Flags and timeline YAML keys share one vocabulary (a YAML key may use '_'
// where the flag uses '-'), so both go through the same builders: the values
// arrive as text keyed by the flag name without its dashes ("prop-delay"),
// together with a function that says how to name a key in an error
// ("--prop-delay" for flags, "plan.yaml: events[2].prop_delay" for YAML).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "metaroce/v1/fabric.pb.h"

namespace metarocectl {

// Text values keyed by flag name without dashes, e.g. {"loss", "1%"}.
using ArgValues = std::map<std::string, std::string>;
// Names a key for an error message, e.g. "loss" -> "--loss".
using KeyNamer = std::function<std::string(std::string_view key)>;

std::string flag_namer(std::string_view key);  // "loss" -> "--loss"

struct FabricFlagInfo {
  std::string_view key;   // flag name without dashes
  std::string_view help;
  bool is_switch;         // takes no value on the command line
  // Patch flags: the API fields (space-separated) whose errors this flag
  // answers for, so the emulator's message can name the flag.
  std::string_view api_fields = {};
};

// Selector keys: plane, ecmp, direction, hosts ("A,B"), host-a, host-b.
const std::vector<FabricFlagInfo>& selector_flag_infos();
// Patch keys: rate, prop-delay, loss, loss-model, ..., flap-down.
const std::vector<FabricFlagInfo>& patch_flag_infos();

// Unset keys select all; the host pair must be given both or neither.
metaroce::v1::LinkSelector build_link_selector(const ArgValues& values,
                                               const KeyNamer& name_of);

// Only the fields named by `values` are set. Throws UsageError on unknown
// keys, malformed values, inconsistent combinations (e.g. --ge-p without
// --loss-model gilbert_elliott) and values out of range; ranges are the
// emulator's (the patch is pre-checked by the daemon's own decode,
// api::decode_link_patch), its message under the flag's name.
metaroce::v1::LinkPatch build_link_patch(const ArgValues& values,
                                         const KeyNamer& name_of);

// Timeline YAML: either a list of events or a map with `events:`. Each event
// has `at` (a duration, required), `action` (set | down | up, required), an
// optional `label`, selector keys and, for `set`, patch keys. `source` names
// the file in errors.
metaroce::v1::LoadTimelineRequest parse_timeline_yaml(std::string_view yaml_text,
                                                      std::string_view source);
metaroce::v1::LoadTimelineRequest load_timeline_file(const std::string& path);

}  // namespace metarocectl
