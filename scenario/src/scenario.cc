// Scenario files: YAML -> Scenario, with every error naming its key, its line
// and what is allowed; check_runnable and plan_runs.
#include "metaroce/scenario/scenario.h"

#include "metaroce/capture/limits.h"
#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/link.h"
#include "metaroce/lab/config.h"
#include "metaroce/scenario/sim_backend.h"
#include "metaroce/transport/connection_params.h"
#include "metaroce/transport/operations.h"
#include "metaroce/units/units.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "metaroce/sim/ring_allreduce.h"
#include "metaroce/sim/workload.h"

namespace metaroce::scenario {

const char* where_name(CaptureWindow::Where w) {
  switch (w) {
    case CaptureWindow::Where::kFabric: return "fabric";
    case CaptureWindow::Where::kEndpoints: return "endpoints";
    case CaptureWindow::Where::kBoth: return "both";
  }
  return "?";
}

namespace {
// The pattern key's words, in the order the error messages list them.
constexpr std::pair<Pattern, const char*> kPatternNames[] = {
    {Pattern::kPair, "pair"},
    {Pattern::kAllToAll, "all_to_all"},
    {Pattern::kPermutation, "permutation"},
    {Pattern::kIncast, "incast"},
    {Pattern::kRingAllReduce, "ring_allreduce"},
};
}  // namespace

const char* pattern_name(Pattern p) {
  for (const auto& [k, name] : kPatternNames)
    if (k == p) return name;
  return "?";
}

std::string format_sweep_value(const std::string& parameter, double v) {
  if (parameter == "loss") return units::format_percent(v, 4);
  if (parameter == "skew_ns") return units::format_duration_as_written(static_cast<Nanos>(v));
  if (parameter == "message_bytes") return units::format_size(static_cast<uint64_t>(v));
  return units::trimmed_fixed(v, 3);
}

namespace {

constexpr Nanos kUs = 1'000, kMs = 1'000'000, kSec = 1'000'000'000, kHour = 3600 * kSec;
// The full mesh has a link per host pair, ECMP link and direction on every
// plane (hosts x (hosts - 1) x ecmp_links of them, each with its queue model
// and a 16 KiB delay histogram): 16 hosts x 16 planes x 16 ECMP links are
// 61,440 links, about 2 GB. A clos grows with the links that exist and takes
// the emulator's limit.
constexpr uint32_t kMaxMeshHosts = 16, kMaxClosHosts = emulator::kMaxFabricHosts;
constexpr uint32_t kMaxPlanes = 16, kMaxEcmp = 16, kMaxJobs = 16;
// A job's connections: the range metaroced's Traffic.Start and metarocectl take.
constexpr uint32_t kMaxConnections = transport::kParamJobConnections.max;
// A job's connection parameters take the ranges every layer takes (transport/connection_params.h).
constexpr uint32_t kMaxPaths = transport::kParamPaths.max, kMaxStreams = transport::kParamStreams.max,
                   kMaxDepth = transport::kParamQueueDepth.max;
constexpr uint32_t kMaxMessage = transport::kParamMaxMessage.max;
constexpr double kMaxRate = 1.6e12;

struct ParseError {
  std::string text;
};

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool valid_name(const std::string& s, size_t max, bool upper_and_dots) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                    (upper_and_dots && ((c >= 'A' && c <= 'Z') || c == '_' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

// One view of a mapping: its keys (in order), their nodes and lines.
struct MapView {
  YAML::Node node;
  std::vector<std::pair<std::string, YAML::Node>> entries;
  const YAML::Node* find(const std::string& k) const {
    for (const auto& e : entries)
      if (e.first == k) return &e.second;
    return nullptr;
  }
  bool has(const std::string& k) const { return find(k) != nullptr; }
};

class Parser {
 public:
  explicit Parser(std::string source) : source_(source.empty() ? "<scenario>" : std::move(source)) {}

  Scenario parse(const std::string& text);

 private:
  // ---- error reporting
  std::string where(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    return m.line < 0 ? source_ + ": " : source_ + ":" + std::to_string(m.line + 1) + ": ";
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& key, const std::string& what) const {
    throw ParseError{where(n) + key + ": " + what};
  }
  static std::string text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "nothing";
  }
  static std::string sub(const std::string& key, const std::string& k) { return key.empty() ? k : key + "." + k; }
  static std::string idx(const std::string& key, size_t i) { return key + "[" + std::to_string(i) + "]"; }

  std::string address(const YAML::Node& n, const std::string& key) const {
    const std::string a = str(n, key);
    if (std::string e = daemon_address_error(a); !e.empty()) fail(n, key, e);
    return a;
  }

  // ---- structure
  MapView map(const YAML::Node& n, const std::string& key, const std::vector<std::string>& allowed) const {
    if (!n.IsMap()) fail(n, key.empty() ? "scenario" : key, "must be a mapping (got " + text(n) + ")");
    MapView v;
    v.node = n;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) fail(kv.first, key.empty() ? "scenario" : key, "keys must be plain words");
      const std::string k = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        fail(kv.first, sub(key, k), "unknown key (allowed: " + join(allowed) + ")");
      if (v.has(k)) fail(kv.first, sub(key, k), "duplicate key");
      v.entries.emplace_back(k, kv.second);
    }
    return v;
  }
  const YAML::Node& need(const MapView& m, const std::string& key, const std::string& k, const std::string& why = "") const {
    const YAML::Node* n = m.find(k);
    if (!n || n->IsNull()) fail(m.node, sub(key, k), why.empty() ? "is required" : why);
    return *n;
  }
  void sequence(const YAML::Node& n, const std::string& key, size_t lo, size_t hi) const {
    if (!n.IsSequence()) fail(n, key, "must be a list (got " + text(n) + ")");
    if (n.size() < lo || n.size() > hi)
      fail(n, key,
           "must have " + std::to_string(lo) + " to " + std::to_string(hi) + " entries (got " + std::to_string(n.size()) +
               ")");
  }

  // ---- scalars
  std::string str(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "must be a string (got " + text(n) + ")");
    return n.Scalar();
  }
  std::string one_of(const YAML::Node& n, const std::string& key, const std::vector<std::string>& allowed) const {
    const std::string v = str(n, key);
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      fail(n, key, "must be one of " + join(allowed, " | ") + " (got '" + v + "')");
    return v;
  }
  // why (optional): the reason for the range, appended to a range error.
  uint64_t uint(const YAML::Node& n, const std::string& key, uint64_t lo, uint64_t hi, const std::string& why = "") const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    bool ok = n.IsScalar() && !v.empty() && v.size() <= 19;
    for (char c : v) ok = ok && c >= '0' && c <= '9';
    const std::string reason = why.empty() ? "" : ": " + why;
    if (!ok) fail(n, key, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + v + ")" + reason);
    const uint64_t x = std::stoull(v);
    if (x < lo || x > hi)
      fail(n, key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + v + ")" + reason);
    return x;
  }
  // A parse by the shared units library, or an error naming the key, the
  // problem, what the unit allows and the range the key takes.
  template <class T>
  T unit_value(const YAML::Node& n, const std::string& key, const units::Parsed<T>& p, const std::string& range) const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    if (!n.IsScalar()) fail(n, key, "must be a single value, not " + v);
    if (!p.ok())
      fail(n, key, p.problem + " (allowed: " + std::string(p.allowed) + (range.empty() ? "" : ", in " + range) + "; got " + v + ")");
    return p.value;
  }
  static std::string scalar(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : std::string(); }
  double number(const YAML::Node& n, const std::string& key, double lo, double hi, bool lo_open = false) const {
    const std::string range = std::string(lo_open ? "(" : "[") + units::trimmed_fixed(lo, 6) + ", " + units::trimmed_fixed(hi, 6) + "]";
    const double x = unit_value(n, key, units::parse_number(scalar(n)), range);
    if (x < lo || x > hi || (lo_open && x == lo)) fail(n, key, "must be in " + range + " (got " + n.Scalar() + ")");
    return x;
  }
  // "2s" "500ms" "5us" "100ns"; a bare 0.
  Nanos duration(const YAML::Node& n, const std::string& key, Nanos lo, Nanos hi) const {
    const std::string range = "[" + units::format_duration_as_written(lo) + ", " + units::format_duration_as_written(hi) + "]";
    const Nanos ns = unit_value(n, key, units::parse_duration_ns(scalar(n)), range);
    if (ns < lo || ns > hi) fail(n, key, "must be in " + range + " (got " + n.Scalar() + ")");
    return ns;
  }
  // "16K" "1M" (1024-based) or integers (bytes).
  uint64_t size(const YAML::Node& n, const std::string& key, uint64_t lo, uint64_t hi) const {
    const std::string range = "[" + units::format_size(lo) + ", " + units::format_size(hi) + "]";
    const uint64_t b = unit_value(n, key, units::parse_size_bytes(scalar(n)), range);
    if (b < lo || b > hi) fail(n, key, "must be in " + range + " (got " + n.Scalar() + ")");
    return b;
  }
  // "25G" "10M" (bits/s, 1000-based) or numbers.
  double rate(const YAML::Node& n, const std::string& key, double lo, double hi, bool lo_open) const {
    const std::string range = std::string(lo_open ? "(" : "[") + units::format_rate(lo) + ", " + units::format_rate(hi) + "]";
    const double r = unit_value(n, key, units::parse_rate_bps(scalar(n)), range);
    if (r < lo || r > hi || (lo_open && r == lo)) fail(n, key, "must be in " + range + " (got " + n.Scalar() + ")");
    return r;
  }
  // "1%" or 0.01: the range and the percent form are units::parse_probability's
  // (its `allowed` text names them), so no range is written here.
  double probability(const YAML::Node& n, const std::string& key) const {
    return unit_value(n, key, units::parse_probability(scalar(n)), "");
  }

  // ---- sections
  LinkSettings link_settings(const YAML::Node& n, const std::string& key) const;
  void topology(const YAML::Node& n, Scenario& s) const;
  void hosts(const YAML::Node& n, Scenario& s) const;
  Job job(const YAML::Node& n, const std::string& key, const Scenario& s) const;
  FaultEvent fault(const YAML::Node& n, const std::string& key, const Scenario& s) const;
  CaptureWindow capture_window(const YAML::Node& n, const std::string& key, const Scenario& s, Nanos at) const;
  void clos_selector(const MapView& m, const std::string& key, const Scenario& s, Selector* sel) const;
  Assertion assertion(const YAML::Node& n, const std::string& key, const Scenario& s) const;
  Sweep sweep(const YAML::Node& n, const Scenario& s, std::vector<YAML::Node>* value_nodes) const;
  void sim(const YAML::Node& n, Scenario& s) const;
  void fidelity(const YAML::Node& n, Scenario& s) const;
  uint32_t host_ref(const YAML::Node& n, const std::string& key, const Scenario& s) const;
  // [from, to] within [0, duration].
  std::pair<Nanos, Nanos> window(const YAML::Node& n, const std::string& key, const Scenario& s,
                                 std::string* text_out) const;

  std::string source_;
};

LinkSettings Parser::link_settings(const YAML::Node& n, const std::string& key) const {
  const MapView m = map(n, key,
                        {"loss", "delay", "jitter", "duplicate", "corrupt", "reorder", "reorder_delay", "rate",
                         "ecn_threshold", "queue_limit"});
  LinkSettings l;
  for (const auto& [k, v] : m.entries) {
    const std::string f = sub(key, k);
    if (k == "loss") l.loss = probability(v, f);
    else if (k == "delay") l.delay_ns = duration(v, f, 0, kHour);
    else if (k == "jitter") l.jitter_ns = duration(v, f, 0, kHour);
    else if (k == "duplicate") l.duplicate = probability(v, f);
    else if (k == "corrupt") l.corrupt = probability(v, f);
    else if (k == "reorder") l.reorder = probability(v, f);
    else if (k == "reorder_delay") l.reorder_delay_ns = duration(v, f, 0, kHour);
    else if (k == "rate") l.rate_bps = rate(v, f, 0, kMaxRate, true);
    else if (k == "ecn_threshold") l.ecn_threshold_bytes = static_cast<uint32_t>(size(v, f, 0, metaroce::emulator::kMaxQueueLimitBytes));
    else if (k == "queue_limit") l.queue_limit_bytes = static_cast<uint32_t>(size(v, f, 1024, metaroce::emulator::kMaxQueueLimitBytes));
  }
  return l;
}

void Parser::topology(const YAML::Node& n, Scenario& s) const {
  const MapView m = map(n, "topology",
                        {"kind", "hosts", "planes", "ecmp_links", "mtu_payload", "hosts_per_leaf", "spines", "host_rate",
                         "host_delay", "spine_rate", "spine_delay", "withdraw_after", "remote_withdraw_after"});
  using emulator::Topology;
  const Topology kind = m.has("kind") ? *emulator::parse_topology(one_of(*m.find("kind"), "topology.kind",
                                                                         {emulator::topology_name(Topology::kMesh),
                                                                          emulator::topology_name(Topology::kClos)}))
                                      : Topology::kMesh;
  const bool clos = kind == Topology::kClos;
  if (const auto* v = m.find("hosts"))
    s.hosts_count = static_cast<uint32_t>(
        clos ? uint(*v, "topology.hosts", 2, kMaxClosHosts)
             : uint(*v, "topology.hosts", 2, kMaxMeshHosts,
                    "the full mesh has a link per host pair on every plane (hosts x (hosts - 1) x ecmp_links), so "
                    "its memory grows with hosts squared; topology.kind: clos takes up to " +
                        std::to_string(kMaxClosHosts) + " hosts"));
  if (const auto* v = m.find("planes")) s.planes = static_cast<uint32_t>(uint(*v, "topology.planes", 1, kMaxPlanes));
  if (const auto* v = m.find("ecmp_links")) {
    if (clos)
      fail(*v, "topology.ecmp_links", "a clos topology's ECMP group is its spines (topology.spines), not ECMP links");
    s.ecmp_links = static_cast<uint32_t>(uint(*v, "topology.ecmp_links", 1, kMaxEcmp));
  }
  if (const auto* v = m.find("mtu_payload")) {
    const auto& mtu = transport::kParamMtuPayload;
    s.mtu_payload = static_cast<uint32_t>(size(*v, "topology.mtu_payload", mtu.min, mtu.max));
    if (s.mtu_payload % mtu.multiple_of)
      fail(*v, "topology.mtu_payload", "must be a multiple of " + std::to_string(mtu.multiple_of) + " (got " + v->Scalar() + ")");
  }
  static const std::vector<std::string> clos_keys = {"hosts_per_leaf", "spines",         "host_rate",
                                                     "host_delay",     "spine_rate",     "spine_delay",
                                                     "withdraw_after", "remote_withdraw_after"};
  if (!clos) {
    for (const std::string& k : clos_keys)
      if (const auto* v = m.find(k)) fail(*v, "topology." + k, "only a clos topology has it (topology.kind: clos)");
    return;
  }
  ClosTopology c;
  c.hosts_per_leaf = static_cast<uint32_t>(
      uint(need(m, "topology", "hosts_per_leaf", "is required for kind: clos (hosts on each leaf)"), "topology.hosts_per_leaf", 1,
           s.hosts_count));
  c.spines = static_cast<uint32_t>(uint(need(m, "topology", "spines", "is required for kind: clos (spines per plane)"),
                                        "topology.spines", 1, emulator::kMaxSpines));
  if (const auto* v = m.find("host_rate")) c.host_rate_bps = rate(*v, "topology.host_rate", 0, emulator::kMaxLinkRateBps, true);
  if (const auto* v = m.find("spine_rate"))
    c.spine_rate_bps = rate(*v, "topology.spine_rate", 0, emulator::kMaxLinkRateBps, true);
  if (const auto* v = m.find("host_delay")) c.host_delay_ns = duration(*v, "topology.host_delay", 0, emulator::kMaxLinkDelayNs);
  if (const auto* v = m.find("spine_delay")) c.spine_delay_ns = duration(*v, "topology.spine_delay", 0, emulator::kMaxLinkDelayNs);
  if (const auto* v = m.find("withdraw_after"))
    c.withdraw_after_ns = duration(*v, "topology.withdraw_after", 0, emulator::kMaxLinkDelayNs);
  if (const auto* v = m.find("remote_withdraw_after"))
    c.remote_withdraw_after_ns = duration(*v, "topology.remote_withdraw_after", 0, emulator::kMaxLinkDelayNs);
  s.clos = c;
}

void Parser::hosts(const YAML::Node& n, Scenario& s) const {
  if (!n.IsMap()) fail(n, "hosts", "must be a mapping of host name to daemon address (got " + text(n) + ")");
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) fail(kv.first, "hosts", "host names must be plain words");
    const std::string name = kv.first.Scalar();
    const std::string key = "hosts." + name;
    if (!valid_name(name, 32, true)) fail(kv.first, key, "host names are [A-Za-z0-9_.-]{1,32}");
    if (name == "all") fail(kv.first, key, "'all' is reserved");
    if (!seen.insert(name).second) fail(kv.first, key, "duplicate host");
    if (s.host_order.size() >= s.hosts_count)
      fail(kv.first, key,
           "topology.hosts is " + std::to_string(s.hosts_count) + ", so at most " + std::to_string(s.hosts_count) +
               " hosts may be listed (got " + std::to_string(n.size()) + ")");
    s.host_order.push_back(name);
    if (!kv.second.IsNull()) s.hosts[name] = address(kv.second, key);
  }
}

uint32_t Parser::host_ref(const YAML::Node& n, const std::string& key, const Scenario& s) const {
  if (n.IsScalar()) {
    const std::string v = n.Scalar();
    for (size_t i = 0; i < s.host_order.size(); ++i)
      if (s.host_order[i] == v) return static_cast<uint32_t>(i);
  }
  return static_cast<uint32_t>(uint(n, key, 0, s.hosts_count - 1));
}

Job Parser::job(const YAML::Node& n, const std::string& key, const Scenario& s) const {
  const MapView m = map(n, key,
                        {"name", "pattern", "from", "to", "among", "transport", "op", "size", "connections", "messages",
                         "paths", "streams", "queue_depth", "with"});
  Job j;
  j.name = str(need(m, key, "name"), sub(key, "name"));
  if (!valid_name(j.name, 32, true)) fail(*m.find("name"), sub(key, "name"), "must match [A-Za-z0-9_.-]{1,32} (got '" + j.name + "')");
  if (j.name == "all") fail(*m.find("name"), sub(key, "name"), "'all' is reserved (it means every job in assertions)");
  auto known_host = [&](const YAML::Node& v, const std::string& k) {
    const std::string h = str(v, k);
    if (std::find(s.host_order.begin(), s.host_order.end(), h) == s.host_order.end())
      fail(v, k, "unknown host '" + h + "' (hosts: " + join(s.host_order) + ")");
    return h;
  };
  auto host = [&](const char* k) { return known_host(need(m, key, k), sub(key, k)); };
  if (const auto* v = m.find("pattern")) {
    std::vector<std::string> names;
    for (const auto& [p, name] : kPatternNames) names.push_back(name);
    const std::string w = one_of(*v, sub(key, "pattern"), names);
    for (const auto& [p, name] : kPatternNames)
      if (w == name) j.pattern = p;
  }
  const std::string pattern = pattern_name(j.pattern);
  auto not_with_pattern = [&](const char* k, const std::string& instead) {
    if (const auto* v = m.find(k))
      fail(*v, sub(key, k), "not used by pattern " + pattern + " (" + instead + ")");
  };
  if (j.pattern == Pattern::kPair) {
    not_with_pattern("among", "a pair writes from `from` to `to`; all_to_all, permutation, incast and ring_allreduce take a host set");
    j.from = host("from");
    j.to = host("to");
    if (j.from == j.to) fail(*m.find("to"), sub(key, "to"), "must differ from from (" + j.from + ")");
  } else {
    not_with_pattern("from", "its senders are the hosts in among");
    if (j.pattern == Pattern::kIncast) j.to = host("to");
    else not_with_pattern("to", "its receivers are the hosts in among");
    if (const auto* v = m.find("among")) {
      const std::string ak = sub(key, "among");
      if (v->IsScalar() && v->Scalar() == "all") {
        // every host, as when among is left out
      } else {
        if (!v->IsSequence()) fail(*v, ak, "must be all or a list of host names, e.g. [h0, h1, h2] (got " + text(*v) + ")");
        sequence(*v, ak, 1, s.host_order.size());
        for (size_t i = 0; i < v->size(); ++i) {
          const std::string h = known_host((*v)[i], idx(ak, i));
          if (std::find(j.among.begin(), j.among.end(), h) != j.among.end()) fail((*v)[i], idx(ak, i), "host " + h + " is listed twice");
          if (h == j.to) fail((*v)[i], idx(ak, i), "host " + h + " is the incast's receiver (to), not a sender");
          j.among.push_back(h);
        }
      }
    }
    const size_t set = job_hosts(s, j).size();
    const size_t least = j.pattern == Pattern::kIncast ? 1 : 2;
    if (set < least)
      fail(m.find("among") ? *m.find("among") : n, sub(key, "among"),
           "pattern " + pattern + " needs at least " + std::to_string(least) + " host" + (least > 1 ? "s" : "") + " (got " +
               std::to_string(set) + ")");
  }
  if (const auto* v = m.find("transport")) j.transport = one_of(*v, sub(key, "transport"), {"metaroce", "rocev2"});
  if (const auto* v = m.find("op")) j.op = one_of(*v, sub(key, "op"), transport::operation_name_list());
  const transport::Operation op = transport::parse_operation(j.op).value();
  const bool atomic = transport::is_atomic(op);
  if (j.transport == "rocev2" && !transport::runs_on_rocev2(op))
    fail(*m.find("op"), sub(key, "op"), "rocev2 supports " + transport::operation_names(" | ", true) + " (got " + j.op + ")");
  if (atomic) j.message_bytes = 8;
  if (const auto* v = m.find("size")) {
    j.message_bytes = static_cast<uint32_t>(size(*v, sub(key, "size"), 1, kMaxMessage));
    if (atomic && j.message_bytes != 8)
      fail(*v, sub(key, "size"), j.op + " messages are 8 bytes (got " + v->Scalar() + ")");
  }
  if (const auto* v = m.find("connections"))
    j.connections = static_cast<uint32_t>(uint(*v, sub(key, "connections"), 1, kMaxConnections));
  if (const auto* v = m.find("messages")) j.messages = uint(*v, sub(key, "messages"), 0, kMaxJobMessages);
  {
    // Every flow's connections exist at once in the simulator.
    const uint64_t flows = job_flow_count(s, j), total = flows * j.connections;
    if (total > kMaxJobConnectionsTotal)
      fail(m.find("connections") ? *m.find("connections") : n, sub(key, "connections"),
           "pattern " + pattern + " makes " + std::to_string(flows) + " flows x " + std::to_string(j.connections) +
               " connections = " + std::to_string(total) + ", at most " + std::to_string(kMaxJobConnectionsTotal) +
               " per job");
  }
  if (const auto* v = m.find("paths")) {
    j.paths = static_cast<uint32_t>(uint(*v, sub(key, "paths"), 1, kMaxPaths));
    if (j.transport == "rocev2" && j.paths != 1)
      fail(*v, sub(key, "paths"), "a RoCEv2 connection has one path; use connections (got " + v->Scalar() + ")");
  }
  if (const auto* v = m.find("streams")) j.streams = static_cast<uint32_t>(uint(*v, sub(key, "streams"), 1, kMaxStreams));
  if (const auto* v = m.find("queue_depth"))
    j.queue_depth = static_cast<uint32_t>(uint(*v, sub(key, "queue_depth"), 1, kMaxDepth));
  if (const auto* v = m.find("with")) {
    const std::string wk = sub(key, "with");
    if (v->IsScalar()) {
      j.with.push_back(v->Scalar());
    } else {
      sequence(*v, wk, 1, kMaxJobs);
      for (size_t i = 0; i < v->size(); ++i) j.with.push_back(str((*v)[i], idx(wk, i)));
    }
  }
  return j;
}

std::pair<Nanos, Nanos> Parser::window(const YAML::Node& n, const std::string& key, const Scenario& s,
                                       std::string* text_out) const {
  if (!n.IsSequence() || n.size() != 2)
    fail(n, key, "must be [from, to], e.g. [2s, 4s] (got " + (n.IsScalar() ? n.Scalar() : text(n)) + ")");
  const Nanos a = duration(n[0], idx(key, 0), 0, s.duration_ns);
  const Nanos b = duration(n[1], idx(key, 1), 0, s.duration_ns);
  if (b <= a) fail(n, key, "must be [from, to] with from < to (got [" + n[0].Scalar() + ", " + n[1].Scalar() + "])");
  if (text_out) *text_out = "[" + n[0].Scalar() + "," + n[1].Scalar() + "]";
  return {a, b};
}

std::string describe_selector(const Selector& sel, const Scenario& s) {
  std::vector<std::string> parts;
  if (sel.plane) parts.push_back("plane " + std::to_string(*sel.plane));
  if (sel.ecmp) parts.push_back("ecmp " + std::to_string(*sel.ecmp));
  if (sel.leaf) parts.push_back("leaf " + std::to_string(*sel.leaf));
  if (sel.spine) parts.push_back("spine " + std::to_string(*sel.spine));
  if (sel.tier == "host") parts.push_back("host links");
  if (sel.tier == "leaf_spine") parts.push_back("leaf-spine links");
  auto host = [&](uint32_t h) { return h < s.host_order.size() ? s.host_order[h] : "h" + std::to_string(h); };
  if (sel.host_a && sel.host_b) parts.push_back(host(*sel.host_a) + "-" + host(*sel.host_b));
  else if (sel.host_a) parts.push_back("links of " + host(*sel.host_a));
  if (sel.direction != "both") parts.push_back(sel.direction);
  if (parts.empty()) return "every link";
  return join(parts, " ");
}

std::string describe_settings(const LinkSettings& l) {
  std::vector<std::string> parts;
  if (l.loss) parts.push_back("loss " + units::format_percent(*l.loss, 4));
  if (l.delay_ns) parts.push_back("delay " + units::format_duration_as_written(*l.delay_ns));
  if (l.jitter_ns) parts.push_back("jitter " + units::format_duration_as_written(*l.jitter_ns));
  if (l.duplicate) parts.push_back("duplicate " + units::format_percent(*l.duplicate, 4));
  if (l.corrupt) parts.push_back("corrupt " + units::format_percent(*l.corrupt, 4));
  if (l.reorder) parts.push_back("reorder " + units::format_percent(*l.reorder, 4));
  if (l.reorder_delay_ns) parts.push_back("reorder_delay " + units::format_duration_as_written(*l.reorder_delay_ns));
  if (l.rate_bps) parts.push_back("rate " + units::format_rate(*l.rate_bps));
  if (l.ecn_threshold_bytes) parts.push_back("ecn_threshold " + units::format_size(*l.ecn_threshold_bytes));
  if (l.queue_limit_bytes) parts.push_back("queue_limit " + units::format_size(*l.queue_limit_bytes));
  return join(parts);
}

std::string ramp_value(const std::string& field, double v) {
  if (field == "delay_ns") return units::format_duration_as_written(static_cast<Nanos>(v));
  if (field == "rate_bps") return units::format_rate(v);
  return units::format_percent(v, 4);
}

FaultEvent Parser::fault(const YAML::Node& n, const std::string& key, const Scenario& s) const {
  const MapView m = map(n, key,
                        {"at", "action", "plane", "ecmp", "direction", "hosts", "leaf", "spine", "tier", "label", "set",
                         "period", "down_for", "field", "from", "to", "over", "steps", "capture"});
  FaultEvent e;
  const std::string action = one_of(need(m, key, "action"), sub(key, "action"), {"set", "down", "up", "flap", "ramp"});
  e.action = action == "set"    ? FaultEvent::Action::kSet
             : action == "down" ? FaultEvent::Action::kDown
             : action == "up"   ? FaultEvent::Action::kUp
             : action == "flap" ? FaultEvent::Action::kFlap
                                : FaultEvent::Action::kRamp;
  {
    const YAML::Node& at = need(m, key, "at");
    const std::string k = sub(key, "at");
    // Checked against the duration by hand for a clearer message.
    e.at_ns = duration(at, k, 0, 100 * kHour);
    if (e.at_ns > s.duration_ns)
      fail(at, k, "must be in [0, duration] = [0, " + units::format_duration_as_written(s.duration_ns) + "] (got " + at.Scalar() + ")");
  }
  // Keys that belong to one action only.
  const std::vector<std::pair<const char*, const char*>> owned = {{"set", "set"},     {"period", "flap"}, {"down_for", "flap"},
                                                                  {"field", "ramp"}, {"from", "ramp"},   {"to", "ramp"},
                                                                  {"over", "ramp"},  {"steps", "ramp"}};
  for (const auto& [k, a] : owned)
    if (m.has(k) && action != a)
      fail(*m.find(k), sub(key, k), std::string("only used by action ") + a + " (this is action " + action + ")");
  if (const auto* v = m.find("plane"))
    e.selector.plane = static_cast<uint32_t>(uint(*v, sub(key, "plane"), 0, s.planes - 1));
  if (s.clos) {
    clos_selector(m, key, s, &e.selector);
  } else {
    for (const char* k : {"leaf", "spine", "tier"})
      if (const auto* v = m.find(k))
        fail(*v, sub(key, k), "only a clos topology has leaves, spines and tiers (topology.kind: clos)");
    if (const auto* v = m.find("ecmp")) e.selector.ecmp = static_cast<uint32_t>(uint(*v, sub(key, "ecmp"), 0, s.ecmp_links - 1));
    if (const auto* v = m.find("direction")) {
      using D = emulator::LinkSelector::Direction;
      e.selector.direction = one_of(*v, sub(key, "direction"),
                                    {emulator::direction_name(D::kBoth), emulator::direction_name(D::kAToB),
                                     emulator::direction_name(D::kBToA)});
    }
    if (const auto* v = m.find("hosts")) {
      const std::string hk = sub(key, "hosts");
      if (v->IsSequence()) {
        sequence(*v, hk, 1, 2);
        e.selector.host_a = host_ref((*v)[0], idx(hk, 0), s);
        if (v->size() == 2) {
          e.selector.host_b = host_ref((*v)[1], idx(hk, 1), s);
          if (*e.selector.host_b == *e.selector.host_a) fail((*v)[1], idx(hk, 1), "must differ from hosts[0]");
        }
      } else {
        e.selector.host_a = host_ref(*v, hk, s);
      }
    }
    if (e.selector.direction != "both" && !(e.selector.host_a && e.selector.host_b))
      fail(*m.find("direction"), sub(key, "direction"), "a_to_b / b_to_a need hosts: [a, b] (the pair they refer to)");
  }
  switch (e.action) {
    case FaultEvent::Action::kSet: {
      const YAML::Node& v = need(m, key, "set", "is required for action set (e.g. set: {loss: 1%})");
      e.set = link_settings(v, sub(key, "set"));
      if (e.set.empty()) fail(v, sub(key, "set"), "must change at least one setting");
      break;
    }
    case FaultEvent::Action::kFlap: {
      const YAML::Node& p = need(m, key, "period", "is required for action flap (0 stops flapping)");
      e.flap_period_ns = duration(p, sub(key, "period"), 0, kHour);
      if (e.flap_period_ns > 0) {
        const YAML::Node& d = need(m, key, "down_for", "is required for action flap with a period");
        e.flap_down_ns = duration(d, sub(key, "down_for"), 0, kHour);
        if (e.flap_down_ns >= e.flap_period_ns)
          fail(d, sub(key, "down_for"), "must be below the period " + p.Scalar() + " (got " + d.Scalar() + ")");
      } else if (const auto* d = m.find("down_for")) {
        e.flap_down_ns = duration(*d, sub(key, "down_for"), 0, kHour);
      }
      break;
    }
    case FaultEvent::Action::kRamp: {
      const YAML::Node& f = need(m, key, "field", "is required for action ramp (loss | delay | rate | duplicate | corrupt)");
      const std::string field = one_of(f, sub(key, "field"), {"loss", "delay", "rate", "duplicate", "corrupt"});
      e.ramp_field = field == "delay" ? "delay_ns" : field == "rate" ? "rate_bps" : field;
      auto value = [&](const char* k) {
        const YAML::Node& v = need(m, key, k, std::string("is required for action ramp"));
        const std::string vk = sub(key, k);
        if (field == "delay") return static_cast<double>(duration(v, vk, 0, kHour));
        if (field == "rate") return rate(v, vk, 0, kMaxRate, true);
        return probability(v, vk);
      };
      e.ramp_from = value("from");
      e.ramp_to = value("to");
      const YAML::Node& o = need(m, key, "over", "is required for action ramp (how long the ramp takes, e.g. 4s)");
      e.ramp_duration_ns = duration(o, sub(key, "over"), 1, kHour);
      if (e.at_ns + e.ramp_duration_ns > s.duration_ns)
        fail(o, sub(key, "over"),
             "the ramp must end by the duration: at + over must be <= " + units::format_duration_as_written(s.duration_ns) + " (got " +
                 units::format_duration_as_written(e.at_ns) + " + " + o.Scalar() + ")");
      if (const auto* st = m.find("steps")) e.ramp_steps = static_cast<uint32_t>(uint(*st, sub(key, "steps"), 1, 1000));
      break;
    }
    default: break;
  }
  if (const auto* v = m.find("capture")) e.capture = capture_window(*v, sub(key, "capture"), s, e.at_ns);
  if (const auto* v = m.find("label")) {
    e.label = str(*v, sub(key, "label"));
    if (e.label.find('\n') != std::string::npos) fail(*v, sub(key, "label"), "must be one line");
  } else {
    const std::string where = describe_selector(e.selector, s);
    switch (e.action) {
      case FaultEvent::Action::kSet: e.label = describe_settings(e.set) + " on " + where; break;
      case FaultEvent::Action::kDown: e.label = where + " down"; break;
      case FaultEvent::Action::kUp: e.label = where + " up"; break;
      case FaultEvent::Action::kFlap:
        e.label = e.flap_period_ns > 0 ? where + " flapping (down " + units::format_duration_as_written(e.flap_down_ns) + " every " +
                                             units::format_duration_as_written(e.flap_period_ns) + ")"
                                       : where + " stops flapping";
        break;
      case FaultEvent::Action::kRamp: {
        const std::string f = e.ramp_field == "delay_ns" ? "delay" : e.ramp_field == "rate_bps" ? "rate" : e.ramp_field;
        e.label = "ramp " + f + " " + ramp_value(e.ramp_field, e.ramp_from) + " -> " + ramp_value(e.ramp_field, e.ramp_to) +
                  " over " + units::format_duration_as_written(e.ramp_duration_ns) + " on " + where;
        break;
      }
    }
  }
  return e;
}

CaptureWindow Parser::capture_window(const YAML::Node& n, const std::string& key, const Scenario& s, Nanos at) const {
  if (!n.IsMap())
    fail(n, key, "must be a mapping, e.g. {before: 50ms, after: 50ms, where: fabric} ({} takes the defaults; got " + text(n) + ")");
  const MapView m = map(n, key, {"before", "after", "where", "planes", "snaplen"});
  CaptureWindow w;
  const auto d = [](Nanos t) { return units::format_duration_as_written(t); };
  if (const auto* v = m.find("before")) {
    const Nanos hi = std::min(at, kMaxCaptureWindowNs);
    w.before_ns = duration(*v, sub(key, "before"), 0, kMaxCaptureWindowNs);
    if (w.before_ns > hi)
      fail(*v, sub(key, "before"),
           "must be in [0, at] = [0, " + d(hi) + "]: the window cannot start before the run (got " + v->Scalar() + ")");
  } else {
    w.before_ns = std::min(w.before_ns, at);
  }
  const Nanos room = s.duration_ns - at;
  if (const auto* v = m.find("after")) {
    const Nanos hi = std::min(room, kMaxCaptureWindowNs);
    w.after_ns = duration(*v, sub(key, "after"), 0, kMaxCaptureWindowNs);
    if (w.after_ns > hi)
      fail(*v, sub(key, "after"),
           "must be in [0, duration - at] = [0, " + d(hi) + "]: the window must end by the run's duration (got " + v->Scalar() + ")");
  } else {
    w.after_ns = std::min(w.after_ns, room);
  }
  if (w.before_ns + w.after_ns < kMinCaptureWindowNs || w.before_ns + w.after_ns > kMaxCaptureWindowNs)
    fail(n, key,
         "before + after must be in [" + d(kMinCaptureWindowNs) + ", " + d(kMaxCaptureWindowNs) + "] (got " + d(w.before_ns) +
             " + " + d(w.after_ns) + ")");
  if (const auto* v = m.find("where")) {
    const std::string where = one_of(*v, sub(key, "where"), {"fabric", "endpoints", "both"});
    w.where = where == "fabric" ? CaptureWindow::Where::kFabric
              : where == "endpoints" ? CaptureWindow::Where::kEndpoints
                                     : CaptureWindow::Where::kBoth;
  }
  if (const auto* v = m.find("planes")) {
    const std::string pk = sub(key, "planes");
    sequence(*v, pk, 1, s.planes);
    for (size_t i = 0; i < v->size(); ++i) {
      const uint32_t p = static_cast<uint32_t>(uint((*v)[i], idx(pk, i), 0, s.planes - 1));
      if (std::find(w.planes.begin(), w.planes.end(), p) != w.planes.end())
        fail((*v)[i], idx(pk, i), "plane " + std::to_string(p) + " is listed twice");
      w.planes.push_back(p);
    }
  }
  if (const auto* v = m.find("snaplen"))
    w.snap_length = static_cast<uint32_t>(size(*v, sub(key, "snaplen"), capture::kMinSnapLength, capture::kMaxSnapLength));
  return w;
}

void Parser::clos_selector(const MapView& m, const std::string& key, const Scenario& s, Selector* sel) const {
  using D = emulator::LinkSelector::Direction;
  using T = emulator::LinkSelector::Tier;
  const ClosTopology& c = *s.clos;
  if (const auto* v = m.find("direction"))
    sel->direction = one_of(*v, sub(key, "direction"),
                            {emulator::direction_name(D::kBoth), emulator::direction_name(D::kUpward),
                             emulator::direction_name(D::kDownward)});
  if (const auto* v = m.find("tier"))
    sel->tier = one_of(*v, sub(key, "tier"),
                       {emulator::tier_name(T::kAll), emulator::tier_name(T::kHost), emulator::tier_name(T::kLeafSpine)});
  if (const auto* v = m.find("hosts")) {
    const std::string hk = sub(key, "hosts");
    if (v->IsSequence()) {
      if (v->size() == 2)
        fail(*v, hk, "a clos topology has no links between two hosts: name one host (its host links), a leaf or a spine");
      sequence(*v, hk, 1, 1);
      sel->host_a = host_ref((*v)[0], idx(hk, 0), s);
    } else {
      sel->host_a = host_ref(*v, hk, s);
    }
  }
  if (const auto* v = m.find("leaf"))
    sel->leaf = static_cast<uint32_t>(uint(*v, sub(key, "leaf"), 0, c.leaves(s.hosts_count) - 1));
  if (const auto* v = m.find("spine")) sel->spine = static_cast<uint32_t>(uint(*v, sub(key, "spine"), 0, c.spines - 1));
  if (const auto* v = m.find("ecmp"))
    fail(*v, sub(key, "ecmp"), "a clos topology has no ECMP link index: its leaves' ECMP group is the spines (name a spine)");
  // What may go together: the emulator's rule (validate(LinkSelector)), its
  // message starting with the field it names.
  if (auto e = emulator::validate(emulator_selector(*sel), emulator_fabric(s, s.planes))) {
    const std::string field = e->substr(0, e->find(':'));
    const std::string k = field == "host_a" || field == "host_b" ? "hosts" : field;
    const YAML::Node& at = m.has(k) ? *m.find(k) : m.node;
    throw ParseError{where(at) + sub(key, k) + e->substr(field.size())};
  }
}

Assertion Parser::assertion(const YAML::Node& n, const std::string& key, const Scenario& s) const {
  if (n.IsMap())
    for (const char* gone : {"live_min", "live_max"})
      if (n[gone])
        fail(n[gone], sub(key, gone),
             "removed: one threshold (min, max) holds live and in the simulator; a live run the host cannot measure "
             "faithfully is reported INCONCLUSIVE instead");
  const MapView m = map(n, key,
                        {"metric", "job", "other", "window", "baseline", "at", "fraction", "min", "max", "known_issue"});
  Assertion a;
  const std::string metric = one_of(need(m, key, "metric"), sub(key, "metric"),
                                    {"goodput_ratio", "recovery_time", "data_errors", "job_succeeded", "compare", "retained"});
  using M = Assertion::Metric;
  a.metric = metric == "goodput_ratio"   ? M::kGoodputRatio
             : metric == "recovery_time" ? M::kRecoveryTime
             : metric == "data_errors"   ? M::kDataErrors
             : metric == "job_succeeded" ? M::kJobSucceeded
             : metric == "compare"       ? M::kCompare
                                         : M::kRetained;
  // Which keys each metric uses (metric and job always).
  std::vector<std::string> uses, required;
  switch (a.metric) {
    case M::kGoodputRatio: uses = {"window", "baseline", "min"}, required = {"window", "baseline", "min"}; break;
    case M::kRecoveryTime:
      uses = {"at", "baseline", "fraction", "max"}, required = {"at", "baseline", "max"};
      break;
    case M::kDataErrors: uses = {"max"}; break;
    case M::kJobSucceeded: break;
    case M::kCompare: uses = {"other", "window", "min"}, required = {"other", "min"}; break;
    case M::kRetained: uses = {"min"}, required = {"min"}; break;
  }
  for (const auto& [k, v] : m.entries)
    if (k != "metric" && k != "job" && k != "known_issue" && std::find(uses.begin(), uses.end(), k) == uses.end())
      fail(v, sub(key, k), "not used by metric " + metric + (uses.empty() ? "" : " (it uses: " + join(uses) + ")"));
  for (const auto& k : required) need(m, key, k, "is required for metric " + metric);

  auto job_name = [&](const YAML::Node& v, const std::string& k, bool allow_all) {
    const std::string name = str(v, k);
    if (allow_all && name == "all") return name;
    for (const Job& j : s.jobs)
      if (j.name == name) return name;
    std::vector<std::string> names;
    for (const Job& j : s.jobs) names.push_back(j.name);
    fail(v, k, "unknown job '" + name + "' (jobs: " + join(names) + (allow_all ? ", or all" : "") + ")");
  };
  if (const auto* v = m.find("job")) a.job = job_name(*v, sub(key, "job"), true);
  std::string window_text, baseline_text;
  if (const auto* v = m.find("window"))
    std::tie(a.window_from_ns, a.window_to_ns) = window(*v, sub(key, "window"), s, &window_text);
  if (const auto* v = m.find("baseline"))
    std::tie(a.baseline_from_ns, a.baseline_to_ns) = window(*v, sub(key, "baseline"), s, &baseline_text);
  if (const auto* v = m.find("other")) {
    a.other = job_name(*v, sub(key, "other"), false);
    if (a.other == a.job) fail(*v, sub(key, "other"), "must differ from job (" + a.job + ")");
  }
  if (const auto* v = m.find("at")) a.at_ns = duration(*v, sub(key, "at"), 0, s.duration_ns);
  if (const auto* v = m.find("fraction")) a.fraction = number(*v, sub(key, "fraction"), 0, 1, true);
  std::string min_text, max_text;
  if (const auto* v = m.find("min")) {
    a.min = number(*v, sub(key, "min"), 0, 1e9);
    min_text = v->Scalar();
  }
  if (a.metric == M::kRecoveryTime) {
    const YAML::Node& v = *m.find("max");
    a.max_ns = duration(v, sub(key, "max"), 0, s.duration_ns);
    max_text = v.Scalar();
    if (a.baseline_to_ns > a.at_ns)
      fail(*m.find("baseline"), sub(key, "baseline"),
           "must end by at (" + units::format_duration_as_written(a.at_ns) + "): the baseline is the goodput before the fault");
  }
  if (a.metric == M::kDataErrors) {
    if (const auto* v = m.find("max")) {
      a.max_value = static_cast<double>(uint(*v, sub(key, "max"), 0, 1'000'000'000'000ull));
      max_text = v->Scalar();
    } else {
      max_text = "0";
    }
  }
  if (const auto* v = m.find("known_issue")) {
    a.known_issue = str(*v, sub(key, "known_issue"));
    if (a.known_issue.empty() || a.known_issue.size() > 500)
      fail(*v, sub(key, "known_issue"), "must say which open problem the assertion fails on, 1 to 500 characters");
  }
  if (a.metric == M::kRetained && !s.sweep)
    fail(*m.find("metric"), sub(key, "metric"), "retained compares sweep values: the scenario needs a sweep");
  switch (a.metric) {
    case M::kGoodputRatio: a.text = "goodput_ratio " + a.job + " " + window_text + "/" + baseline_text + " >= " + min_text; break;
    case M::kRecoveryTime:
      a.text = "recovery_time " + a.job + " after " + m.find("at")->Scalar() + " to " + units::trimmed_fixed(a.fraction, 4) +
               " x " + baseline_text + " <= " + max_text;
      break;
    case M::kDataErrors: a.text = "data_errors " + a.job + " <= " + max_text; break;
    case M::kJobSucceeded: a.text = "job_succeeded " + a.job; break;
    case M::kCompare:
      a.text = "compare " + a.job + "/" + a.other + (window_text.empty() ? "" : " " + window_text) + " >= " + min_text;
      break;
    case M::kRetained: a.text = "retained " + a.job + " >= " + min_text; break;
  }
  return a;
}

Sweep Parser::sweep(const YAML::Node& n, const Scenario& s, std::vector<YAML::Node>* value_nodes) const {
  const MapView m = map(n, "sweep", {"parameter", "values"});
  Sweep w;
  const std::string p = one_of(need(m, "sweep", "parameter"), "sweep.parameter",
                               {"loss", "skew", "planes", "message_bytes", "connections"});
  w.parameter = p == "skew" ? "skew_ns" : p;
  const YAML::Node& values = need(m, "sweep", "values");
  sequence(values, "sweep.values", 1, 64);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string k = idx("sweep.values", i);
    const YAML::Node& v = values[i];
    double x = 0;
    if (p == "loss") x = probability(v, k);
    else if (p == "skew") x = static_cast<double>(duration(v, k, 0, kSec));
    else if (p == "planes") x = static_cast<double>(uint(v, k, 1, kMaxPlanes));
    else if (p == "message_bytes") x = static_cast<double>(size(v, k, 1, kMaxMessage));
    else x = static_cast<double>(uint(v, k, 1, kMaxConnections));
    w.values.push_back(x);
    value_nodes->push_back(v);
  }
  (void)s;
  return w;
}

void Parser::sim(const YAML::Node& n, Scenario& s) const {
  if (n.IsMap())
    for (const auto& [gone, now] : {std::pair{"plane_rate", "the fabric's rate is base.rate"},
                                    std::pair{"plane_delay", "the fabric's delay is base.delay"},
                                    std::pair{"mtu_payload", "the payload per packet is topology.mtu_payload"}})
      if (n[gone]) fail(n[gone], std::string("sim.") + gone, std::string("removed: ") + now + ", the same live and in the simulator");
  const MapView m = map(n, "sim", {"time_scale"});
  if (const auto* v = m.find("time_scale")) s.sim.time_scale = number(*v, "sim.time_scale", 0, 1, true);
}

void Parser::fidelity(const YAML::Node& n, Scenario& s) const {
  const MapView m = map(n, "fidelity",
                        {"max_run_delay", "max_busy", "max_frame_lateness_p99", "max_timer_lateness_p99",
                         "max_receive_wait_p99", "max_stall", "max_datapath_drops"});
  FidelityLimits& f = s.fidelity;
  if (const auto* v = m.find("max_run_delay")) f.max_run_delay_fraction = probability(*v, "fidelity.max_run_delay");
  if (const auto* v = m.find("max_busy")) f.max_busy_fraction = probability(*v, "fidelity.max_busy");
  if (const auto* v = m.find("max_frame_lateness_p99"))
    f.max_frame_lateness_p99_ns = duration(*v, "fidelity.max_frame_lateness_p99", 1 * kUs, kSec);
  if (const auto* v = m.find("max_timer_lateness_p99"))
    f.max_timer_lateness_p99_ns = duration(*v, "fidelity.max_timer_lateness_p99", 1 * kUs, kSec);
  if (const auto* v = m.find("max_receive_wait_p99"))
    f.max_receive_wait_p99_ns = duration(*v, "fidelity.max_receive_wait_p99", 1 * kUs, kSec);
  if (const auto* v = m.find("max_stall")) f.max_stall_ns = duration(*v, "fidelity.max_stall", 1 * kUs, kSec);
  if (const auto* v = m.find("max_datapath_drops"))
    f.max_datapath_drops = uint(*v, "fidelity.max_datapath_drops", 0, 1'000'000'000);
}

Scenario Parser::parse(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ParseError{source_ + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax: " + e.msg};
  }
  if (!root.IsDefined() || root.IsNull()) throw ParseError{source_ + ": the file is empty (a scenario is a mapping)"};
  const MapView m = map(root, "",
                        {"name", "description", "seed", "topology", "hosts", "fabric", "base", "duration", "interval",
                         "jobs", "timeline", "assertions", "sweep", "sim", "fidelity"});
  Scenario s;
  s.source = source_;
  s.yaml = text;
  {
    const YAML::Node& v = need(m, "", "name");
    s.name = str(v, "name");
    if (!valid_name(s.name, 40, false)) fail(v, "name", "must match [a-z0-9-]{1,40} (got '" + s.name + "')");
  }
  {
    const YAML::Node& v = need(m, "", "description");
    s.description = str(v, "description");
    while (!s.description.empty() && (s.description.back() == '\n' || s.description.back() == ' ')) s.description.pop_back();
    if (s.description.empty()) fail(v, "description", "must not be empty");
    if (s.description.find('\n') != std::string::npos) fail(v, "description", "must be one line");
    if (s.description.size() > 200)
      fail(v, "description", "must be at most 200 characters (got " + std::to_string(s.description.size()) + ")");
  }
  if (const auto* v = m.find("seed")) s.seed = uint(*v, "seed", 0, UINT64_MAX / 2);
  if (const auto* v = m.find("topology")) topology(*v, s);
  if (const auto* v = m.find("sim")) sim(*v, s);
  if (const auto* v = m.find("fidelity")) fidelity(*v, s);
  if (const auto* v = m.find("hosts"); v && !v->IsNull()) hosts(*v, s);
  // Hosts the file does not name are h<index> (enough for the simulator).
  for (uint32_t i = static_cast<uint32_t>(s.host_order.size()); i < s.hosts_count; ++i) {
    std::string name = "h" + std::to_string(i);
    while (std::find(s.host_order.begin(), s.host_order.end(), name) != s.host_order.end()) name += "_";
    s.host_order.push_back(name);
  }
  if (const auto* v = m.find("fabric"); v && !v->IsNull()) {
    s.fabric = address(*v, "fabric");
  }
  if (const auto* v = m.find("base"); v && !v->IsNull()) {
    s.base = link_settings(*v, "base");
    if (s.clos)
      for (const auto& [k, where] : {std::pair{"rate", "topology.host_rate and topology.spine_rate"},
                                     std::pair{"delay", "topology.host_delay and topology.spine_delay"}})
        if ((*v)[k])
          fail((*v)[k], std::string("base.") + k,
               std::string("a clos topology sets its links' ") + k + " per tier: " + where + " (base." + k +
                   " is the full mesh's)");
  }
  if (const auto* v = m.find("duration")) s.duration_ns = duration(*v, "duration", 100 * kMs, kHour);
  if (const auto* v = m.find("interval")) {
    s.interval_ns = duration(*v, "interval", 10 * kMs, kHour);
    if (s.interval_ns > s.duration_ns)
      fail(*v, "interval", "must be in [10ms, duration] = [10ms, " + units::format_duration_as_written(s.duration_ns) + "] (got " + v->Scalar() + ")");
  } else if (s.interval_ns > s.duration_ns) {
    s.interval_ns = s.duration_ns;
  }

  // Jobs.
  {
    const YAML::Node& jobs = need(m, "", "jobs");
    sequence(jobs, "jobs", 1, kMaxJobs);
    std::vector<YAML::Node> with_nodes;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const std::string key = idx("jobs", i);
      Job j = job(jobs[i], key, s);
      for (size_t k = 0; k < s.jobs.size(); ++k)
        if (s.jobs[k].name == j.name)
          fail(jobs[i]["name"], key + ".name", "duplicate job name '" + j.name + "' (also jobs[" + std::to_string(k) + "])");
      s.jobs.push_back(std::move(j));
    }
    // `with` names other jobs; a job listed in a `with` runs inside that job's run only.
    std::set<std::string> listed;
    for (const Job& j : s.jobs) listed.insert(j.with.begin(), j.with.end());
    for (size_t i = 0; i < s.jobs.size(); ++i) {
      const Job& j = s.jobs[i];
      const YAML::Node w = jobs[i]["with"];
      const std::string key = idx("jobs", i) + ".with";
      std::set<std::string> seen;
      for (size_t k = 0; k < j.with.size(); ++k) {
        const YAML::Node wn = w.IsSequence() ? w[k] : w;
        const std::string wk = w.IsSequence() ? idx(key, k) : key;
        const std::string& other = j.with[k];
        if (other == j.name) fail(wn, wk, "a job cannot run with itself");
        const bool known = std::any_of(s.jobs.begin(), s.jobs.end(), [&](const Job& x) { return x.name == other; });
        if (!known) {
          std::vector<std::string> names;
          for (const Job& x : s.jobs) names.push_back(x.name);
          fail(wn, wk, "unknown job '" + other + "' (jobs: " + join(names) + ")");
        }
        if (!seen.insert(other).second) fail(wn, wk, "lists '" + other + "' twice");
      }
      if (!j.with.empty() && listed.count(j.name))
        fail(w, key, "'" + j.name + "' is itself listed in another job's with; nesting is not supported");
    }
  }

  // Sweep values are checked against the timeline below (planes vs plane selectors).
  std::vector<YAML::Node> sweep_value_nodes;
  if (const auto* v = m.find("sweep"); v && !v->IsNull()) s.sweep = sweep(*v, s, &sweep_value_nodes);

  if (const auto* v = m.find("timeline"); v && !v->IsNull()) {
    sequence(*v, "timeline", 0, 1000);
    for (size_t i = 0; i < v->size(); ++i) s.timeline.push_back(fault((*v)[i], idx("timeline", i), s));
  }
  // Capture windows one at a time (a daemon writes one capture at once).
  for (size_t i = 0; i < s.timeline.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const FaultEvent &a = s.timeline[i], &b = s.timeline[j];
      if (!a.capture || !b.capture) continue;
      const Nanos a0 = a.at_ns - a.capture->before_ns, a1 = a.at_ns + a.capture->after_ns;
      const Nanos b0 = b.at_ns - b.capture->before_ns, b1 = b.at_ns + b.capture->after_ns;
      const auto d = [](Nanos t) { return units::format_duration_as_written(t); };
      if (a0 < b1 && b0 < a1)
        fail((*m.find("timeline"))[i]["capture"], idx("timeline", i) + ".capture",
             "its window [" + d(a0) + ", " + d(a1) + "] overlaps timeline[" + std::to_string(j) + "].capture's [" + d(b0) +
                 ", " + d(b1) + "]; captures run one at a time, so windows must not overlap");
    }
  if (s.sweep && s.sweep->parameter == "planes") {
    uint32_t needed = 1;
    size_t which = 0;
    for (size_t i = 0; i < s.timeline.size(); ++i) {
      if (s.timeline[i].selector.plane && *s.timeline[i].selector.plane + 1 > needed)
        needed = *s.timeline[i].selector.plane + 1, which = i;
      if (s.timeline[i].capture)
        for (uint32_t p : s.timeline[i].capture->planes)
          if (p + 1 > needed) needed = p + 1, which = i;
    }
    for (size_t i = 0; i < s.sweep->values.size(); ++i)
      if (s.sweep->values[i] < needed)
        fail(sweep_value_nodes[i], idx("sweep.values", i),
             "timeline[" + std::to_string(which) + "] names plane " + std::to_string(needed - 1) + ", so at least " +
                 std::to_string(needed) + " planes are needed (got " + sweep_value_nodes[i].Scalar() + ")");
  }
  if (const auto* v = m.find("assertions"); v && !v->IsNull()) {
    sequence(*v, "assertions", 0, 256);
    for (size_t i = 0; i < v->size(); ++i) s.assertions.push_back(assertion((*v)[i], idx("assertions", i), s));
  }
  return s;
}

}  // namespace

std::optional<Scenario> parse_scenario_yaml(const std::string& text, const std::string& source, std::string* error) {
  try {
    Parser p(source);
    return p.parse(text);
  } catch (const ParseError& e) {
    if (error) *error = lab::one_line(e.text);
  } catch (const YAML::Exception& e) {
    if (error)
      *error = lab::one_line((source.empty() ? "<scenario>" : source) + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return std::nullopt;
}

// One word of at most 256 printable characters: the daemon refuses longer
// request strings, and a newline would forge report and log lines.
std::string daemon_address_error(const std::string& a) {
  if (a.empty()) return "the daemon address is empty";
  if (a.size() > 256) return "a daemon address is at most 256 characters (got " + std::to_string(a.size()) + ")";
  for (unsigned char c : a)
    if (c <= 0x20 || c == 0x7f)
      return "a daemon address is one word of printable characters, e.g. unix:///run/metaroce/h0.sock";
  return {};
}

std::optional<Scenario> load_scenario_file(const std::string& path, std::string* error) {
  std::string scratch;
  auto text = lab::read_config_text(path, lab::kMaxConfigFileBytes, error ? error : &scratch);
  if (!text) return std::nullopt;
  return parse_scenario_yaml(*text, path, error);
}

std::string sim_only_reason(const Scenario& s) {
  for (size_t i = 0; i < s.jobs.size(); ++i)
    if (s.jobs[i].pattern != Pattern::kPair)
      return "jobs[" + std::to_string(i) + "].pattern: not run live: " + pattern_name(s.jobs[i].pattern) + " over " +
             std::to_string(job_hosts(s, s.jobs[i]).size()) +
             " hosts; a live scenario starts one from -> to traffic job per job, so a collective runs in the simulator (--sim)";
  if (!s.clos) return {};
  return "topology.kind: not run live: needs " + std::to_string(s.hosts_count) + " hosts in a clos topology (" +
         std::to_string(s.clos->leaves(s.hosts_count)) + " leaves and " + std::to_string(s.clos->spines) +
         " spines on each of " + std::to_string(s.planes) +
         " planes); the live fabric node emulates the full mesh only, so a clos runs in the simulator (--sim)";
}

std::string check_runnable(const Scenario& s, bool live) {
  if (live)
    if (std::string why = sim_only_reason(s); !why.empty()) return why;
  if (live) {
    for (size_t i = 0; i < s.jobs.size(); ++i)
      for (const std::string* h : {&s.jobs[i].from, &s.jobs[i].to})
        if (!s.hosts.count(*h))
          return "jobs[" + std::to_string(i) + "]." + (h == &s.jobs[i].from ? "from" : "to") + ": host " + *h +
                 " has no daemon address (list it under hosts: " + *h + ": unix:///run/metaroce/...)";
    if (s.fabric.empty()) return "fabric: a live run needs the fabric daemon's address (fabric: unix:///run/metaroce/...)";
    if (s.sweep && s.sweep->parameter == "planes") return "sweep.parameter: planes can only be swept in the simulator";
    return {};
  }
  for (size_t i = 0; i < s.jobs.size(); ++i)
    if (s.jobs[i].op != transport::operation_name(transport::Operation::kWrite))
      return "jobs[" + std::to_string(i) + "].op: the simulator runs write only (got " + s.jobs[i].op + ")";
  const Nanos interval = static_cast<Nanos>(std::llround(static_cast<double>(s.interval_ns) * s.sim.time_scale));
  if (interval < 1000)
    return "sim.time_scale: interval x time_scale must be at least 1us of simulated time (got " +
           units::format_duration_as_written(interval) + ")";
  // Buffers the simulated WRITEs need at once (sim/workload.h: a source
  // pattern per flow, a destination slot per WRITE outstanding), over the
  // jobs that run together, at the largest sweep value.
  auto largest = [&](const char* parameter, double v) {
    return s.sweep && s.sweep->parameter == parameter ? *std::max_element(s.sweep->values.begin(), s.sweep->values.end()) : v;
  };
  for (const PlannedRun& run : plan_runs(s)) {
    if (run.sweep_value != (s.sweep ? s.sweep->values.front() : 0)) break;  // every value's runs have the same jobs
    double bytes = 0;
    for (const Job* j : run.jobs) {
      const double size = largest("message_bytes", j->message_bytes), conns = largest("connections", j->connections);
      const double flows = static_cast<double>(job_flow_count(s, *j));
      if (j->pattern == Pattern::kRingAllReduce) {
        bytes += static_cast<double>(sim::RingAllReduceWorkload::buffer_bytes_for(flows, static_cast<uint32_t>(size)));
        continue;
      }
      sim::WriteWorkloadConfig wc;
      wc.message_bytes = static_cast<uint32_t>(size);
      wc.depth = j->queue_depth;
      wc.streams = static_cast<uint16_t>(j->streams);
      wc.messages = j->messages;
      bytes += flows * static_cast<double>(wc.buffer_bytes(static_cast<uint64_t>(conns)));
    }
    if (bytes > kMaxSimBufferBytes)
      return "jobs[" + std::to_string(run.jobs[0] - s.jobs.data()) + "] (" + run.jobs[0]->name +
             (run.jobs.size() > 1 ? " and the jobs with it" : "") + "): the simulator would need " +
             units::trimmed_fixed(bytes / (1 << 20), 0) + " MiB of message buffers at once (flows x connections x streams x "
             "min(queue_depth, messages) x size), at most " + units::trimmed_fixed(kMaxSimBufferBytes / (1 << 20), 0);
  }
  return {};
}

namespace {
// A host's index (Scenario::host_order) by name; the parser has checked it exists.
uint32_t host_index(const Scenario& s, const std::string& name) {
  return static_cast<uint32_t>(std::find(s.host_order.begin(), s.host_order.end(), name) - s.host_order.begin());
}
}  // namespace

std::vector<uint32_t> job_hosts(const Scenario& s, const Job& j) {
  const auto index = [&s](const std::string& name) { return host_index(s, name); };
  std::vector<uint32_t> out;
  if (j.pattern == Pattern::kPair) return {index(j.from), index(j.to)};
  if (!j.among.empty()) {
    for (const std::string& h : j.among) out.push_back(index(h));
    return out;
  }
  for (const std::string& h : s.host_order)
    if (j.pattern != Pattern::kIncast || h != j.to) out.push_back(index(h));
  return out;
}

uint64_t job_flow_count(const Scenario& s, const Job& j) {
  if (j.pattern == Pattern::kPair) return 1;
  const uint64_t n = j.among.empty() ? s.host_order.size() - (j.pattern == Pattern::kIncast) : j.among.size();
  return j.pattern == Pattern::kAllToAll ? n * (n - 1) : n;
}

std::vector<Flow> job_flows(const Scenario& s, const Job& j) {
  const std::vector<uint32_t> set = job_hosts(s, j);
  const size_t n = set.size();
  std::vector<Flow> out;
  switch (j.pattern) {
    case Pattern::kPair: out.push_back({set[0], set[1]}); break;
    case Pattern::kAllToAll:
      for (uint32_t a : set)
        for (uint32_t b : set)
          if (a != b) out.push_back({a, b});
      break;
    case Pattern::kPermutation: {
      // Sattolo's shuffle gives a single cycle: nobody writes to itself. Its
      // own generator (splitmix64), so the pairs are the same on every platform.
      std::vector<uint32_t> to = set;
      uint64_t x = s.seed;
      auto next = [&x] {
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
      };
      for (size_t i = n - 1; i > 0; --i) std::swap(to[i], to[next() % i]);
      for (size_t k = 0; k < n; ++k) out.push_back({set[k], to[k]});
      break;
    }
    case Pattern::kIncast: {
      const uint32_t dst = host_index(s, j.to);
      for (uint32_t a : set) out.push_back({a, dst});
      break;
    }
    case Pattern::kRingAllReduce:
      for (size_t k = 0; k < n; ++k) out.push_back({set[k], set[(k + 1) % n]});
      break;
  }
  return out;
}

std::vector<PlannedRun> plan_runs(const Scenario& s) {
  std::set<std::string> inside;
  for (const Job& j : s.jobs) inside.insert(j.with.begin(), j.with.end());
  std::vector<std::vector<const Job*>> groups;
  for (const Job& j : s.jobs) {
    if (inside.count(j.name)) continue;
    std::vector<const Job*> g{&j};
    for (const std::string& w : j.with)
      for (const Job& o : s.jobs)
        if (o.name == w) g.push_back(&o);
    groups.push_back(std::move(g));
  }
  std::vector<PlannedRun> runs;
  if (!s.sweep) {
    for (auto& g : groups) runs.push_back({g, "", 0});
    return runs;
  }
  // Value by value, every job at that value, so the transports compared at one
  // value run next to each other.
  for (double v : s.sweep->values)
    for (auto& g : groups) runs.push_back({g, s.sweep->parameter, v});
  return runs;
}

}  // namespace metaroce::scenario
