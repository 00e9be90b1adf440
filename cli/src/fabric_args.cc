#include "fabric_args.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "metaroce/api/link_patch_codec.h"
#include "units.h"

namespace metarocectl {

namespace v1 = metaroce::v1;

std::string flag_namer(std::string_view key) { return fmt::format("--{}", key); }

const std::vector<FabricFlagInfo>& selector_flag_infos() {
  static const std::vector<FabricFlagInfo> infos = {
      {"plane", "only links of this plane (default: all)", false},
      {"ecmp", "only this ECMP link of each host pair (default: all)", false},
      {"direction", "both (default) | a_to_b (lower host to higher) | b_to_a", false},
      {"hosts", "only links between host indices A,B (default: all pairs)", false},
  };
  return infos;
}

const std::vector<FabricFlagInfo>& patch_flag_infos() {
  static const std::vector<FabricFlagInfo> infos = {
      {"rate", "link rate, e.g. 25G, 100Gbit, 10Mbps", false, "rate_bps"},
      {"prop-delay", "propagation delay, e.g. 2us", false, "prop_delay_ns"},
      {"loss", "loss probability, e.g. 1% or 0.01 (Bernoulli unless --loss-model says otherwise)", false, "loss_probability loss.probability"},
      {"loss-model", "none | bernoulli | correlated | gilbert_elliott | four_state", false, "loss.kind"},
      {"loss-correlation", "correlated: probability a packet repeats the previous decision, [0, 1)", false, "loss.correlation"},
      {"ge-p", "gilbert_elliott: Good->Bad probability; four_state: p13", false, "loss.p"},
      {"ge-r", "gilbert_elliott: Bad->Good probability (default 1); four_state: p31 (default 1)", false, "loss.r"},
      {"ge-h", "gilbert_elliott: loss probability in Bad, netem's 1-h (default 1); four_state: p32 (default 0)", false, "loss.h"},
      {"ge-k", "gilbert_elliott: loss probability in Good, netem's 1-k (default 0); four_state: p23 (default 0)", false, "loss.k"},
      {"ge-p14", "four_state: p14, isolated losses (default 0)", false, "loss.p14"},
      {"delay", "extra delay of the delay model, e.g. 100us", false, "delay.delay_ns"},
      {"jitter", "jitter of the delay model, e.g. 10us", false, "delay.jitter_ns"},
      {"distribution", "jitter distribution: uniform | normal | pareto | paretonormal", false, "delay.distribution"},
      {"delay-correlation", "delay correlation, [0, 1)", false, "delay.correlation"},
      {"allow-reorder", "let jitter reorder packets (netem); FIFO otherwise", true, "delay.allow_reorder"},
      {"reorder", "netem reorder probability (packet skips the delay)", false, "reorder.probability"},
      {"reorder-gap", "netem reorder gap", false, "reorder.gap"},
      {"reorder-correlation", "netem reorder correlation, [0, 1)", false, "reorder.correlation"},
      {"holdback", "hold-back reorder probability (packet held so later ones overtake it)", false, "reorder_probability"},
      {"holdback-delay", "hold-back delay, e.g. 50us", false, "reorder_delay_ns"},
      {"duplicate", "duplicate probability", false, "duplicate_probability"},
      {"corrupt", "corrupt probability", false, "corrupt_probability"},
      {"queue-bytes", "queue limit in bytes, e.g. 256K", false, "queue_limit_bytes"},
      {"queue-packets", "queue limit in packets", false, "queue_limit_packets"},
      {"ecn-threshold", "ECN marking threshold in bytes (0 = off), e.g. 64K", false, "ecn_threshold_bytes"},
      {"flap-period", "flap period, e.g. 1s (0 stops flapping)", false, "flap"},
      {"flap-down", "down time within each flap period, e.g. 100ms", false},
  };
  return infos;
}

namespace {

const std::string* find_value(const ArgValues& values, std::string_view key) {
  auto it = values.find(std::string(key));
  return it == values.end() ? nullptr : &it->second;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::uint32_t parse_u32(const KeyNamer& name_of, std::string_view key, std::string_view text,
                        std::uint32_t min = 0) {
  return static_cast<std::uint32_t>(parse_unsigned(name_of(key), text, min, UINT32_MAX));
}

std::uint32_t parse_size_u32(const KeyNamer& name_of, std::string_view key,
                             std::string_view text, std::uint64_t min) {
  const std::uint64_t bytes = parse_size_bytes(name_of(key), text);
  if (bytes < min || bytes > UINT32_MAX) {
    throw UsageError(fmt::format("{}: out of range (allowed: {} to 4G - 1 bytes; got \"{}\")",
                                 name_of(key), min, text));
  }
  return static_cast<std::uint32_t>(bytes);
}

[[noreturn]] void combination_error(std::string_view what) { throw UsageError(std::string(what)); }

// The loss flags: --loss alone is the Bernoulli shorthand; --loss-model
// builds a full LossModel. The proto's 0 is not a neutral value for every
// parameter (r = 0 never recovers), so omitted ones are sent explicitly with
// the emulator's defaults (GE: r 1, loss in Bad 1, loss in Good 0; 4-state:
// p31 1, others 0).
void apply_loss(const ArgValues& values, const KeyNamer& name_of, v1::LinkPatch& patch) {
  static const std::vector<std::string_view> kModelParams = {"loss-correlation", "ge-p", "ge-r",
                                                             "ge-h", "ge-k", "ge-p14"};
  const std::string* model = find_value(values, "loss-model");
  const std::string* loss = find_value(values, "loss");
  if (model == nullptr) {
    for (std::string_view key : kModelParams) {
      if (find_value(values, key) != nullptr) {
        combination_error(fmt::format("{}: needs {} (correlated, gilbert_elliott or four_state)",
                                      name_of(key), name_of("loss-model")));
      }
    }
    if (loss != nullptr) patch.set_loss_probability(parse_probability(name_of("loss"), *loss));
    return;
  }

  const std::string kind = lowered(*model);
  std::set<std::string_view> uses;  // which keys this kind reads
  if (kind == "none") {
  } else if (kind == "bernoulli") {
    uses = {"loss"};
  } else if (kind == "correlated") {
    uses = {"loss", "loss-correlation"};
  } else if (kind == "gilbert_elliott") {
    uses = {"ge-p", "ge-r", "ge-h", "ge-k"};
  } else if (kind == "four_state") {
    uses = {"ge-p", "ge-r", "ge-h", "ge-k", "ge-p14"};
  } else {
    throw UsageError(fmt::format(
        "{}: unknown loss model (allowed: none, bernoulli, correlated, gilbert_elliott, "
        "four_state; got \"{}\")",
        name_of("loss-model"), *model));
  }
  std::vector<std::string_view> all_keys = kModelParams;
  all_keys.push_back("loss");
  for (std::string_view key : all_keys) {
    if (find_value(values, key) != nullptr && uses.count(key) == 0) {
      combination_error(fmt::format("{}: not used by {} {}", name_of(key), name_of("loss-model"),
                                    kind));
    }
  }
  if ((kind == "bernoulli" || kind == "correlated") && loss == nullptr) {
    combination_error(fmt::format("{} {} needs {}", name_of("loss-model"), kind, name_of("loss")));
  }
  if ((kind == "gilbert_elliott" || kind == "four_state") && find_value(values, "ge-p") == nullptr) {
    combination_error(fmt::format("{} {} needs {}", name_of("loss-model"), kind, name_of("ge-p")));
  }

  auto probability_or = [&](std::string_view key, double fallback) {
    const std::string* text = find_value(values, key);
    return text ? parse_probability(name_of(key), *text) : fallback;
  };
  v1::LossModel& m = *patch.mutable_loss();
  m.set_kind(kind);
  if (loss != nullptr) m.set_probability(parse_probability(name_of("loss"), *loss));
  if (const std::string* c = find_value(values, "loss-correlation"))
    m.set_correlation(parse_correlation(name_of("loss-correlation"), *c));
  if (kind == "gilbert_elliott") {
    m.set_p(probability_or("ge-p", 0));
    m.set_r(probability_or("ge-r", 1));
    m.set_h(probability_or("ge-h", 1));  // loss in Bad
    m.set_k(probability_or("ge-k", 0));  // loss in Good
  } else if (kind == "four_state") {
    m.set_p(probability_or("ge-p", 0));   // p13
    m.set_r(probability_or("ge-r", 1));   // p31
    m.set_h(probability_or("ge-h", 0));   // p32
    m.set_k(probability_or("ge-k", 0));   // p23
    m.set_p14(probability_or("ge-p14", 0));
  }
}

void apply_delay(const ArgValues& values, const KeyNamer& name_of, v1::LinkPatch& patch) {
  static const std::vector<std::string_view> kKeys = {"delay", "jitter", "distribution",
                                                      "delay-correlation", "allow-reorder"};
  if (std::none_of(kKeys.begin(), kKeys.end(),
                   [&](std::string_view k) { return find_value(values, k) != nullptr; })) {
    return;
  }
  v1::DelayModel& d = *patch.mutable_delay();
  if (const std::string* t = find_value(values, "delay"))
    d.set_delay_ns(parse_duration_ns(name_of("delay"), *t));
  if (const std::string* t = find_value(values, "jitter"))
    d.set_jitter_ns(parse_duration_ns(name_of("jitter"), *t));
  if (const std::string* t = find_value(values, "distribution")) {
    const std::string dist = lowered(*t);
    if (dist != "uniform" && dist != "normal" && dist != "pareto" && dist != "paretonormal") {
      throw UsageError(fmt::format(
          "{}: unknown distribution (allowed: uniform, normal, pareto, paretonormal; got \"{}\")",
          name_of("distribution"), *t));
    }
    d.set_distribution(dist);
  }
  if (const std::string* t = find_value(values, "delay-correlation"))
    d.set_correlation(parse_correlation(name_of("delay-correlation"), *t));
  if (const std::string* t = find_value(values, "allow-reorder"))
    d.set_allow_reorder(parse_bool(name_of("allow-reorder"), *t));
}

void apply_reorder(const ArgValues& values, const KeyNamer& name_of, v1::LinkPatch& patch) {
  const std::string* probability = find_value(values, "reorder");
  const std::string* gap = find_value(values, "reorder-gap");
  const std::string* correlation = find_value(values, "reorder-correlation");
  if (!probability && !gap && !correlation) return;
  if (!probability) {
    combination_error(fmt::format("{}: needs {}", name_of(gap ? "reorder-gap" : "reorder-correlation"),
                                  name_of("reorder")));
  }
  v1::ReorderModel& r = *patch.mutable_reorder();
  r.set_probability(parse_probability(name_of("reorder"), *probability));
  if (gap) r.set_gap(parse_u32(name_of, "reorder-gap", *gap));
  if (correlation) r.set_correlation(parse_correlation(name_of("reorder-correlation"), *correlation));
}

void apply_flap(const ArgValues& values, const KeyNamer& name_of, v1::LinkPatch& patch) {
  const std::string* period = find_value(values, "flap-period");
  const std::string* down = find_value(values, "flap-down");
  if (!period && !down) return;
  if (!period) combination_error(fmt::format("{}: needs {}", name_of("flap-down"), name_of("flap-period")));
  const std::int64_t period_ns = parse_duration_ns(name_of("flap-period"), *period);
  const std::int64_t down_ns = down ? parse_duration_ns(name_of("flap-down"), *down) : 0;
  if (period_ns > 0 && !down) {
    combination_error(fmt::format("{}: needs {}", name_of("flap-period"), name_of("flap-down")));
  }
  patch.mutable_flap()->set_period_ns(period_ns);
  patch.mutable_flap()->set_down_ns(period_ns > 0 ? down_ns : 0);
}

// The daemon's own decode and range check (the emulator's validate) before
// sending: its message, "field: problem", with the field's flag as its name.
void check_ranges(const v1::LinkPatch& patch, const KeyNamer& name_of) {
  metaroce::emulator::LinkPatch decoded;
  const auto error = metaroce::api::decode_link_patch(patch, &decoded);
  if (!error) return;
  const size_t colon = error->find(": ");
  const std::string_view field = std::string_view(*error).substr(0, colon == std::string::npos ? 0 : colon);
  for (const FabricFlagInfo& info : patch_flag_infos()) {
    std::string_view fields = info.api_fields;
    while (!fields.empty()) {
      const size_t space = fields.find(' ');
      if (fields.substr(0, space) == field) throw UsageError(name_of(info.key) + error->substr(colon));
      fields = space == std::string_view::npos ? std::string_view{} : fields.substr(space + 1);
    }
  }
  throw UsageError(*error);
}

}  // namespace

v1::LinkSelector build_link_selector(const ArgValues& values, const KeyNamer& name_of) {
  v1::LinkSelector selector;
  if (const std::string* t = find_value(values, "plane")) selector.set_plane(parse_u32(name_of, "plane", *t));
  if (const std::string* t = find_value(values, "ecmp")) selector.set_ecmp(parse_u32(name_of, "ecmp", *t));
  if (const std::string* t = find_value(values, "direction")) {
    const std::string direction = lowered(*t);
    if (!metaroce::emulator::parse_direction(direction)) {
      throw UsageError(fmt::format("{}: unknown direction (allowed: both, a_to_b, b_to_a; got \"{}\")",
                                   name_of("direction"), *t));
    }
    selector.set_direction(direction);
  }
  const std::string* hosts = find_value(values, "hosts");
  const std::string* host_a = find_value(values, "host-a");
  const std::string* host_b = find_value(values, "host-b");
  if (hosts && (host_a || host_b)) {
    combination_error(fmt::format("{}: give either it or {} and {}", name_of("hosts"),
                                  name_of("host-a"), name_of("host-b")));
  }
  if (hosts) {
    const std::vector<std::string> pair = split_list(*hosts);
    if (pair.size() != 2) {
      throw UsageError(fmt::format("{}: not a host pair (allowed: two host indices A,B, e.g. 0,1; got \"{}\")",
                                   name_of("hosts"), *hosts));
    }
    selector.set_host_a(parse_u32(name_of, "hosts", pair[0]));
    selector.set_host_b(parse_u32(name_of, "hosts", pair[1]));
  } else if (host_a || host_b) {
    if (!host_a || !host_b) {
      combination_error(fmt::format("{} and {}: give both or neither", name_of("host-a"), name_of("host-b")));
    }
    selector.set_host_a(parse_u32(name_of, "host-a", *host_a));
    selector.set_host_b(parse_u32(name_of, "host-b", *host_b));
  }
  return selector;
}

v1::LinkPatch build_link_patch(const ArgValues& values, const KeyNamer& name_of) {
  const auto& infos = patch_flag_infos();
  for (const auto& [key, value] : values) {
    if (std::none_of(infos.begin(), infos.end(), [&](const FabricFlagInfo& i) { return i.key == key; }))
      throw UsageError(fmt::format("{}: unknown setting", name_of(key)));
  }
  v1::LinkPatch patch;
  if (const std::string* t = find_value(values, "rate")) patch.set_rate_bps(parse_rate_bps(name_of("rate"), *t));
  if (const std::string* t = find_value(values, "prop-delay"))
    patch.set_prop_delay_ns(parse_duration_ns(name_of("prop-delay"), *t));
  if (const std::string* t = find_value(values, "queue-bytes"))
    patch.set_queue_limit_bytes(parse_size_u32(name_of, "queue-bytes", *t, 0));
  if (const std::string* t = find_value(values, "queue-packets"))
    patch.set_queue_limit_packets(parse_u32(name_of, "queue-packets", *t));
  if (const std::string* t = find_value(values, "ecn-threshold"))
    patch.set_ecn_threshold_bytes(parse_size_u32(name_of, "ecn-threshold", *t, 0));
  apply_loss(values, name_of, patch);
  apply_delay(values, name_of, patch);
  apply_reorder(values, name_of, patch);
  if (const std::string* t = find_value(values, "holdback"))
    patch.set_reorder_probability(parse_probability(name_of("holdback"), *t));
  if (const std::string* t = find_value(values, "holdback-delay"))
    patch.set_reorder_delay_ns(parse_duration_ns(name_of("holdback-delay"), *t));
  if (const std::string* t = find_value(values, "duplicate"))
    patch.set_duplicate_probability(parse_probability(name_of("duplicate"), *t));
  if (const std::string* t = find_value(values, "corrupt"))
    patch.set_corrupt_probability(parse_probability(name_of("corrupt"), *t));
  apply_flap(values, name_of, patch);
  check_ranges(patch, name_of);
  return patch;
}

// ---- timeline ---------------------------------------------------------------

namespace {

bool is_selector_key(std::string_view key) {
  return key == "plane" || key == "ecmp" || key == "direction" || key == "hosts" ||
         key == "host-a" || key == "host-b";
}

bool is_patch_key(std::string_view key) {
  const auto& infos = patch_flag_infos();
  return std::any_of(infos.begin(), infos.end(), [&](const FabricFlagInfo& i) { return i.key == key; });
}

}  // namespace

v1::LoadTimelineRequest parse_timeline_yaml(std::string_view yaml_text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw UsageError(fmt::format("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  const YAML::Node events = root.IsMap() ? root["events"] : root;
  if (!events || !events.IsSequence()) {
    throw UsageError(fmt::format(
        "{}: expected a list of events, or a map with an `events:` list", source));
  }
  if (events.size() > 10000) {
    throw UsageError(fmt::format("{}: {} events (allowed: at most 10000)", source, events.size()));
  }

  v1::LoadTimelineRequest request;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const YAML::Node event = events[i];
    const std::string where = fmt::format("{}: events[{}]", source, i);
    if (!event.IsMap()) throw UsageError(fmt::format("{}: an event must be a map", where));

    // Keys as written (for errors) by their normalised form ('_' -> '-').
    std::map<std::string, std::string> written;
    ArgValues selector_values, patch_values;
    std::string at, action, label;
    bool has_at = false;
    for (const auto& entry : event) {
      const std::string raw_key = entry.first.as<std::string>();
      std::string key = raw_key;
      std::replace(key.begin(), key.end(), '_', '-');
      written[key] = raw_key;
      if (entry.second.IsNull()) continue;  // "ecmp:" with no value: unset
      if (!entry.second.IsScalar()) {
        throw UsageError(fmt::format("{}.{}: expected a single value", where, raw_key));
      }
      const std::string value = entry.second.as<std::string>();
      if (key == "at") { at = value; has_at = true; }
      else if (key == "action") action = value;
      else if (key == "label") label = value;
      else if (is_selector_key(key)) selector_values[key] = value;
      else if (is_patch_key(key)) patch_values[key] = value;
      else throw UsageError(fmt::format("{}.{}: unknown key", where, raw_key));
    }
    const KeyNamer name_of = [&](std::string_view key) {
      auto it = written.find(std::string(key));
      return fmt::format("{}.{}", where, it == written.end() ? std::string(key) : it->second);
    };

    if (!has_at) throw UsageError(fmt::format("{}: at: missing (allowed: a duration such as 2s)", where));
    v1::TimelineEvent& out = *request.add_events();
    out.set_at_ns(parse_duration_ns(name_of("at"), at));
    if (!label.empty()) out.set_label(label);
    *out.mutable_selector() = build_link_selector(selector_values, name_of);

    const std::string verb = lowered(action);
    if (verb == "set") {
      if (patch_values.empty()) {
        throw UsageError(fmt::format("{}: action set needs at least one setting (e.g. loss: 1%)", where));
      }
      *out.mutable_set() = build_link_patch(patch_values, name_of);
    } else if (verb == "down" || verb == "up") {
      if (!patch_values.empty()) {
        throw UsageError(fmt::format("{}: settings ({}) need action set, not {}", where,
                                     written[patch_values.begin()->first], verb));
      }
      if (verb == "down") out.set_down(true);
      else out.set_up(true);
    } else if (action.empty()) {
      throw UsageError(fmt::format("{}: action: missing (allowed: set, down, up)", where));
    } else {
      throw UsageError(fmt::format("{}.action: unknown action (allowed: set, down, up; got \"{}\")",
                                   where, action));
    }
  }
  return request;
}

v1::LoadTimelineRequest load_timeline_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("{}: cannot read the timeline file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_timeline_yaml(text.str(), path);
}

}  // namespace metarocectl
