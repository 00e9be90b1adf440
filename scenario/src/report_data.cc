// The data files of a report: report.json (below), timeseries.csv (one row
// per run and interval) and write_report(), which writes them and report.html
// into the report directory.
//
// report.json layout (pretty, 2 spaces, keys in this order; keys are the field
// names of model.h's Report / RunResult / Interval / LatencySummary /
// AssertionResult, plus a "derived" object computed from them):
//
//   {
//     "scenario_name": str, "description": str, "source": str,
//     "mode": "sim" | "live", "version": str, "started_at": str (ISO 8601 UTC),
//     "seed": uint, "scenario_yaml": str, "planes": uint, "plane_rate_bps": num, "duration_s": num,
//     "topology": { "kind": "clos", "hosts", "hosts_per_leaf", "leaves", "spines": uint,   // clos only
//                   "host_rate_bps", "leaf_spine_rate_bps", "oversubscription": num, "links": uint },
//     "point": { "index", "count": uint, "parameter": str, "value": num },  // one sweep point only (below)
//     "runs": [ {
//       "job": str, "transport": str, "op": str,
//       "sweep_parameter": str ("" unless a sweep), "sweep_value": num,
//       "state": "done" | "failed" | "stopped", "error": str,
//       "goodput_bps": num, "bytes": uint, "messages": uint,
//       "retransmits": uint, "spurious_retransmits": uint, "rtos": uint,
//       "data_packets": uint, "path_state_changes": uint,
//       "planes": [ { "plane", "rtos", "retransmits", "state_changes": uint } ],  // per plane, all paths
//       "verified": bool, "verification": str, "verify_failures": uint,
//       "latency": { "samples": uint, "min_us", "median_us", "avg_us",
//                    "p99_us", "p999_us", "max_us": num,
//                    "cdf_us": [num] },   // simulator only: 101 values, cdf_us[i] = the completion
//                                         // time i % of messages did not exceed (i = 0..100), non-decreasing
//       "intervals": [ { "t0_s", "t1_s", "goodput_bps", "messages": num, "retransmits": uint,
//                        "loss_seen": num, "rtos": uint, "path_state_changes": uint, "plane_bytes": [num], "plane_utilisation": [num],
//                        "queue_bytes": num, "ecn_marks": uint,
//                        "tiers": [ tier ] } ],          // clos only, per plane (below)
//       "tiers": [ { "plane": uint, "host_mean", "host_max",   // clos only: per plane, over the
//                    "leaf_spine_mean", "leaf_spine_max": num } ],  // duration (TierLoad)
//       "events": [ { "t_s": num, "label": str } ],   // RunResult::events (pairs)
//       "seed": uint,
//       "jain_fairness": num | null,     // over the job's connections; null when not measured (live)
//       "fidelity": {                     // live runs only (fidelity.h): did the datapath keep up?
//         "faithful": bool, "workers": [ { "daemon", "worker": str, "wall_s", "busy_fraction",
//           "cpu_fraction", "run_delay_fraction": num, "frames_timed": uint, "frame_late_p50_us",
//           "frame_late_p99_us": num, "timers_timed": uint, "timer_late_p50_us", "timer_late_p99_us": num,
//           "frames_received": uint, "receive_wait_p50_us", "receive_wait_p99_us": num, "stall_max_us": num,
//           "realtime_share": num, "realtime_demotions": uint } ],
//         "drops": { cause: uint }, "datapath_drops": uint, "reordered_in_path": uint,
//         "host_steal_s": num, "host_cpus": uint,
//         "problems": [str] }
//     } ],
//     "captures": [ {                     // capture windows (a timeline event's capture:), run by run
//       "run": uint, "run_label": str, "event": str,   // the run's number (1-based) and label; the event's label
//       "at_s", "from_s", "to_s": num,     // the event and the window asked for, scenario seconds
//       "where": "fabric" | "endpoints" | "both", "planes": [uint] (empty: all), "snap_length": uint (0: whole frames),
//       "file": str,                       // relative to the report's folder; "" when nothing was written
//       "frames", "frames_not_written", "frames_truncated": uint,
//       "captured_from_s", "captured_to_s": num,   // only when a capture ran: the time it covered
//       "t0_unix_ns": uint,               // the run's t = 0 on the file's clock (live: wall clock; sim: 0)
//       "sources": [str], "note": str } ],
//     "assertions": [ { "text": str, "passed": bool, "detail": str,
//                       "inconclusive": bool,      // within its resolution of the threshold
//                       "known_issue": str,        // only when the file marks it: the open problem it fails on
//                       "value": num } ],          // the measured figure, when there is one (finite)
//     "derived": {                        // report_derive.cc, shown on the page
//       "passed": bool,                   // Report::passed()
//       "faithful": bool,                 // every live run kept up (Report::faithful())
//       "verdict": "PASS" | "FAIL" | "INCONCLUSIVE",
//       "assertions_total": uint, "assertions_failed": uint,   // failed: definitely, not inconclusive
//       "assertions_inconclusive": uint, "assertions_known_failures": uint,  // failed on a known_issue, not counted as failed
//       "runs": [ {                       // same index as "runs"; keys only when defined
//         "retained": num,                // sweep: goodput / goodput of the same job at the first sweep value
//         "fault_from_s", "fault_to_s": num,   // first event .. last event (or end of run)
//         "baseline_goodput_bps": num,    // mean interval goodput before the first event (first interval skipped)
//         "fault_goodput_bps": num,       // mean interval goodput within the fault window
//         "fault_retained": num,          // fault_goodput_bps / baseline_goodput_bps
//         "stopped_s": num,               // longest stall after the first event
//         "outcome": "unaffected" | "degraded" | "stopped"
//       } ]
//     }
//   }
//
// One sweep point run alone (Report::point) is written as point.json, not as a
// report: the same layout with "point" and without "assertions" and "derived"
// (nothing of a point is judged, and its derived figures, retained first, need
// every point). parse_report_json reads both back; merge_sweep_points joins
// the points into the whole sweep's report.
//
// Non-finite numbers are written as null. The page (report_html) marks every
// number it shows from this file with data-key="<JSON pointer>", text =
// format_number(last key of the pointer, value).

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "metaroce/scenario/report.h"
#include "report_internal.h"

namespace metaroce::scenario {

using namespace report_internal;

namespace {

using ojson = nlohmann::ordered_json;

// ------------------------------------------------------------------ JSON

ojson num_or_null(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

ojson tiers_json(const std::vector<TierLoad>& tiers) {
  ojson a = ojson::array();
  for (size_t p = 0; p < tiers.size(); ++p)
    a.push_back(ojson{{"plane", p},
                      {"host_mean", num_or_null(tiers[p].host_mean)},
                      {"host_max", num_or_null(tiers[p].host_max)},
                      {"leaf_spine_mean", num_or_null(tiers[p].leaf_spine_mean)},
                      {"leaf_spine_max", num_or_null(tiers[p].leaf_spine_max)}});
  return a;
}

ojson to_json(const Report& r, const Derived& d) {
  ojson j;
  j["scenario_name"] = r.scenario_name;
  j["description"] = r.description;
  j["source"] = r.source;
  j["mode"] = r.mode;
  j["version"] = r.version;
  j["started_at"] = r.started_at;
  j["seed"] = r.seed;
  j["scenario_yaml"] = r.scenario_yaml;
  j["planes"] = r.planes;
  j["plane_rate_bps"] = num_or_null(r.plane_rate_bps);
  j["duration_s"] = num_or_null(r.duration_s);
  if (r.topology) {
    const TopologySummary& t = *r.topology;
    j["topology"] = ojson{{"kind", "clos"},
                          {"hosts", t.hosts},
                          {"hosts_per_leaf", t.hosts_per_leaf},
                          {"leaves", t.leaves},
                          {"spines", t.spines},
                          {"host_rate_bps", num_or_null(t.host_rate_bps)},
                          {"leaf_spine_rate_bps", num_or_null(t.leaf_spine_rate_bps)},
                          {"oversubscription", num_or_null(t.oversubscription)},
                          {"links", t.links}};
  }
  if (r.point)
    j["point"] = ojson{{"index", r.point->index},
                       {"count", r.point->count},
                       {"parameter", r.point->parameter},
                       {"value", num_or_null(r.point->value)}};
  ojson runs = ojson::array();
  for (const auto& run : r.runs) {
    ojson o;
    o["job"] = run.job;
    o["transport"] = run.transport;
    o["op"] = run.op;
    o["sweep_parameter"] = run.sweep_parameter;
    o["sweep_value"] = num_or_null(run.sweep_value);
    o["state"] = run.state;
    o["error"] = run.error;
    o["goodput_bps"] = num_or_null(run.goodput_bps);
    o["bytes"] = run.bytes;
    o["messages"] = run.messages;
    o["retransmits"] = run.retransmits;
    o["spurious_retransmits"] = run.spurious_retransmits;
    o["rtos"] = run.rtos;
    o["data_packets"] = run.data_packets;
    o["path_state_changes"] = run.path_state_changes;
    ojson planes = ojson::array();
    for (size_t p = 0; p < run.planes.size(); ++p)
      planes.push_back(ojson{{"plane", p}, {"rtos", run.planes[p].rtos}, {"retransmits", run.planes[p].retransmits},
                             {"state_changes", run.planes[p].state_changes}});
    o["planes"] = std::move(planes);
    o["verified"] = run.verified;
    o["verification"] = run.verification;
    o["verify_failures"] = run.verify_failures;
    const auto& l = run.latency;
    o["latency"] = ojson{{"samples", l.samples},
                         {"min_us", num_or_null(l.min_us)},
                         {"median_us", num_or_null(l.median_us)},
                         {"avg_us", num_or_null(l.avg_us)},
                         {"p99_us", num_or_null(l.p99_us)},
                         {"p999_us", num_or_null(l.p999_us)},
                         {"max_us", num_or_null(l.max_us)}};
    if (!l.cdf_us.empty()) {  // live runs have none: their latency object is as it was
      ojson cdf = ojson::array();
      for (double v : l.cdf_us) cdf.push_back(num_or_null(v));
      o["latency"]["cdf_us"] = std::move(cdf);
    }
    ojson ivs = ojson::array();
    for (const auto& iv : run.intervals) {
      ojson x;
      x["t0_s"] = num_or_null(iv.t0_s);
      x["t1_s"] = num_or_null(iv.t1_s);
      x["goodput_bps"] = num_or_null(iv.goodput_bps);
      x["messages"] = num_or_null(iv.messages);
      x["retransmits"] = iv.retransmits;
      x["loss_seen"] = num_or_null(iv.loss_seen);
      x["rtos"] = iv.rtos;
      x["path_state_changes"] = iv.path_state_changes;
      ojson pb = ojson::array(), pu = ojson::array();
      for (double b : iv.plane_bytes) pb.push_back(num_or_null(b));
      for (double u : iv.plane_utilisation) pu.push_back(num_or_null(u));
      x["plane_bytes"] = std::move(pb);
      x["plane_utilisation"] = std::move(pu);
      x["queue_bytes"] = num_or_null(iv.queue_bytes);
      x["ecn_marks"] = iv.ecn_marks;
      if (!iv.tiers.empty()) x["tiers"] = tiers_json(iv.tiers);
      ivs.push_back(std::move(x));
    }
    o["intervals"] = std::move(ivs);
    if (!run.tiers.empty()) o["tiers"] = tiers_json(run.tiers);
    ojson evs = ojson::array();
    for (const auto& e : run.events) evs.push_back(ojson{{"t_s", num_or_null(e.first)}, {"label", e.second}});
    o["events"] = std::move(evs);
    o["seed"] = run.seed;
    o["jain_fairness"] = num_or_null(run.jain_fairness);
    if (run.fidelity.measured) {
      const Fidelity& f = run.fidelity;
      ojson fj;
      fj["faithful"] = f.faithful();
      ojson ws = ojson::array();
      for (const auto& w : f.workers)
        ws.push_back(ojson{{"daemon", w.daemon},
                           {"worker", w.worker},
                           {"wall_s", num_or_null(w.wall_s)},
                           {"busy_fraction", num_or_null(w.busy_fraction)},
                           {"cpu_fraction", num_or_null(w.cpu_fraction)},
                           {"run_delay_fraction", num_or_null(w.run_delay_fraction)},
                           {"frames_timed", w.frames_timed},
                           {"frame_late_p50_us", num_or_null(w.frame_late_p50_us)},
                           {"frame_late_p99_us", num_or_null(w.frame_late_p99_us)},
                           {"timers_timed", w.timers_timed},
                           {"timer_late_p50_us", num_or_null(w.timer_late_p50_us)},
                           {"timer_late_p99_us", num_or_null(w.timer_late_p99_us)},
                           {"frames_received", w.frames_received},
                           {"receive_wait_p50_us", num_or_null(w.receive_wait_p50_us)},
                           {"receive_wait_p99_us", num_or_null(w.receive_wait_p99_us)},
                           {"stall_max_us", num_or_null(w.stall_max_us)},
                           {"realtime_share", num_or_null(w.realtime_share)},
                           {"realtime_demotions", w.realtime_demotions}});
      fj["workers"] = std::move(ws);
      ojson drops = ojson::object();
      for (const auto& [cause, n] : f.drops) drops[cause] = n;
      fj["drops"] = std::move(drops);
      fj["datapath_drops"] = f.datapath_drops;
      fj["reordered_in_path"] = f.reordered_in_path;
      fj["host_steal_s"] = f.host_steal_s;
      fj["host_cpus"] = f.host_cpus;
      fj["problems"] = f.problems;
      o["fidelity"] = std::move(fj);
    }
    runs.push_back(std::move(o));
  }
  j["runs"] = std::move(runs);
  ojson caps = ojson::array();
  for (const CaptureResult& c : r.captures) {
    ojson o{{"run", c.run},
            {"run_label", c.run_label},
            {"event", c.event},
            {"at_s", num_or_null(c.at_s)},
            {"from_s", num_or_null(c.from_s)},
            {"to_s", num_or_null(c.to_s)},
            {"where", c.where},
            {"planes", c.planes},
            {"snap_length", c.snap_length},
            {"file", c.file},
            {"frames", c.frames},
            {"frames_not_written", c.frames_not_written},
            {"frames_truncated", c.frames_truncated}};
    if (c.captured_from_s) o["captured_from_s"] = num_or_null(*c.captured_from_s);
    if (c.captured_to_s) o["captured_to_s"] = num_or_null(*c.captured_to_s);
    o["t0_unix_ns"] = c.t0_unix_ns;
    o["sources"] = c.sources;
    o["note"] = c.note;
    caps.push_back(std::move(o));
  }
  j["captures"] = std::move(caps);
  if (r.point) return j;  // a point is not judged
  ojson as = ojson::array();
  for (const auto& a : r.assertions) {
    as.push_back(ojson{{"text", a.text}, {"passed", a.passed}, {"detail", a.detail}, {"inconclusive", a.inconclusive}});
    if (!a.known_issue.empty()) as.back()["known_issue"] = a.known_issue;
    if (a.value && std::isfinite(*a.value)) as.back()["value"] = *a.value;
  }
  j["assertions"] = std::move(as);
  ojson dj;
  dj["passed"] = r.passed();
  dj["faithful"] = r.faithful();
  dj["verdict"] = verdict_name(r.verdict());
  dj["assertions_total"] = r.assertions.size();
  dj["assertions_failed"] = d.failed;
  dj["assertions_inconclusive"] = r.unresolved();
  dj["assertions_known_failures"] = r.known_failures();
  ojson druns = ojson::array();
  for (const auto& rd : d.runs) {
    ojson o = ojson::object();
    auto put = [&o](const char* k, const std::optional<double>& v) {
      if (v && std::isfinite(*v)) o[k] = *v;
    };
    put("retained", rd.retained);
    put("fault_from_s", rd.fault_from_s);
    put("fault_to_s", rd.fault_to_s);
    put("baseline_goodput_bps", rd.baseline_bps);
    put("fault_goodput_bps", rd.fault_bps);
    put("fault_retained", rd.fault_retained);
    put("stopped_s", rd.stopped_s);
    if (!rd.outcome.empty()) o["outcome"] = rd.outcome;
    druns.push_back(std::move(o));
  }
  dj["runs"] = std::move(druns);
  j["derived"] = std::move(dj);
  return j;
}

// ------------------------------------------------------------------ CSV

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_num(double v) { return std::isfinite(v) ? strf("%.10g", v) : std::string(); }

// ------------------------------------------------------------------ reading report.json / point.json

// Reads what to_json wrote, key by key; a missing key or a wrong type throws
// ReadError naming its JSON pointer.
struct ReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using json = nlohmann::json;

const json& field(const json& o, const std::string& key, const std::string& at) {
  if (!o.is_object()) throw ReadError((at.empty() ? "/" : at) + ": must be an object");
  const auto it = o.find(key);
  if (it == o.end()) throw ReadError(at + "/" + key + ": missing");
  return *it;
}
std::string get_str(const json& o, const std::string& key, const std::string& at) {
  const json& v = field(o, key, at);
  if (!v.is_string()) throw ReadError(at + "/" + key + ": must be a string");
  return v.get<std::string>();
}
bool get_bool(const json& o, const std::string& key, const std::string& at) {
  const json& v = field(o, key, at);
  if (!v.is_boolean()) throw ReadError(at + "/" + key + ": must be true or false");
  return v.get<bool>();
}
uint64_t get_uint(const json& o, const std::string& key, const std::string& at) {
  const json& v = field(o, key, at);
  if (!v.is_number_unsigned()) throw ReadError(at + "/" + key + ": must be an unsigned integer");
  return v.get<uint64_t>();
}
double num_of(const json& v, const std::string& at) {  // null: a non-finite number (num_or_null)
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) throw ReadError(at + ": must be a number or null");
  return v.get<double>();
}
double get_num(const json& o, const std::string& key, const std::string& at) {
  return num_of(field(o, key, at), at + "/" + key);
}
const json& get_array(const json& o, const std::string& key, const std::string& at) {
  const json& v = field(o, key, at);
  if (!v.is_array()) throw ReadError(at + "/" + key + ": must be an array");
  return v;
}
std::vector<double> get_nums(const json& o, const std::string& key, const std::string& at) {
  std::vector<double> out;
  const json& a = get_array(o, key, at);
  for (size_t i = 0; i < a.size(); ++i) out.push_back(num_of(a[i], at + "/" + key + "/" + std::to_string(i)));
  return out;
}

std::vector<TierLoad> read_tiers(const json& o, const std::string& at) {
  std::vector<TierLoad> out;
  if (!o.contains("tiers")) return out;  // a full mesh has none
  const json& a = get_array(o, "tiers", at);
  for (size_t p = 0; p < a.size(); ++p) {
    const std::string pat = at + "/tiers/" + std::to_string(p);
    if (get_uint(a[p], "plane", pat) != p) throw ReadError(pat + "/plane: must be " + std::to_string(p));
    out.push_back(TierLoad{get_num(a[p], "host_mean", pat), get_num(a[p], "host_max", pat),
                           get_num(a[p], "leaf_spine_mean", pat), get_num(a[p], "leaf_spine_max", pat)});
  }
  return out;
}

// LatencySummary::cdf_us: absent (live runs, and reports written before it
// existed) or kLatencyCdfPoints non-negative numbers that never decrease.
std::vector<double> read_cdf(const json& latency, const std::string& at) {
  if (!latency.contains("cdf_us")) return {};
  const std::string cat = at + "/cdf_us";
  const std::vector<double> cdf = get_nums(latency, "cdf_us", at);
  if (cdf.size() != kLatencyCdfPoints)
    throw ReadError(cat + ": must have " + std::to_string(kLatencyCdfPoints) + " values (0 to 100 %), has " +
                    std::to_string(cdf.size()));
  for (size_t i = 0; i < cdf.size(); ++i) {
    const std::string vat = cat + "/" + std::to_string(i);
    if (!std::isfinite(cdf[i]) || cdf[i] < 0) throw ReadError(vat + ": must be a number >= 0");
    if (i > 0 && cdf[i] < cdf[i - 1])
      throw ReadError(vat + ": must not be less than the value before it (" + trim_num(cdf[i], 6) + " < " +
                      trim_num(cdf[i - 1], 6) + ")");
  }
  return cdf;
}

RunResult read_run(const json& o, const std::string& at) {
  RunResult run;
  run.job = get_str(o, "job", at);
  run.transport = get_str(o, "transport", at);
  run.op = get_str(o, "op", at);
  run.sweep_parameter = get_str(o, "sweep_parameter", at);
  run.sweep_value = get_num(o, "sweep_value", at);
  run.state = get_str(o, "state", at);
  run.error = get_str(o, "error", at);
  run.goodput_bps = get_num(o, "goodput_bps", at);
  run.bytes = get_uint(o, "bytes", at);
  run.messages = get_uint(o, "messages", at);
  run.retransmits = get_uint(o, "retransmits", at);
  run.spurious_retransmits = get_uint(o, "spurious_retransmits", at);
  run.rtos = get_uint(o, "rtos", at);
  run.data_packets = get_uint(o, "data_packets", at);
  run.path_state_changes = get_uint(o, "path_state_changes", at);
  const json& planes = get_array(o, "planes", at);
  for (size_t p = 0; p < planes.size(); ++p) {
    const std::string pat = at + "/planes/" + std::to_string(p);
    if (get_uint(planes[p], "plane", pat) != p) throw ReadError(pat + "/plane: must be " + std::to_string(p));
    run.planes.push_back(PlaneFigures{get_uint(planes[p], "rtos", pat), get_uint(planes[p], "retransmits", pat),
                                      get_uint(planes[p], "state_changes", pat)});
  }
  run.verified = get_bool(o, "verified", at);
  run.verification = get_str(o, "verification", at);
  run.verify_failures = get_uint(o, "verify_failures", at);
  const json& l = field(o, "latency", at);
  const std::string lat = at + "/latency";
  run.latency.samples = get_uint(l, "samples", lat);
  run.latency.min_us = get_num(l, "min_us", lat);
  run.latency.median_us = get_num(l, "median_us", lat);
  run.latency.avg_us = get_num(l, "avg_us", lat);
  run.latency.p99_us = get_num(l, "p99_us", lat);
  run.latency.p999_us = get_num(l, "p999_us", lat);
  run.latency.max_us = get_num(l, "max_us", lat);
  run.latency.cdf_us = read_cdf(l, lat);
  const json& ivs = get_array(o, "intervals", at);
  for (size_t i = 0; i < ivs.size(); ++i) {
    const std::string iat = at + "/intervals/" + std::to_string(i);
    Interval iv;
    iv.t0_s = get_num(ivs[i], "t0_s", iat);
    iv.t1_s = get_num(ivs[i], "t1_s", iat);
    iv.goodput_bps = get_num(ivs[i], "goodput_bps", iat);
    iv.messages = get_num(ivs[i], "messages", iat);
    iv.retransmits = get_uint(ivs[i], "retransmits", iat);
    iv.loss_seen = get_num(ivs[i], "loss_seen", iat);
    iv.rtos = get_uint(ivs[i], "rtos", iat);
    iv.path_state_changes = get_uint(ivs[i], "path_state_changes", iat);
    iv.plane_bytes = get_nums(ivs[i], "plane_bytes", iat);
    iv.plane_utilisation = get_nums(ivs[i], "plane_utilisation", iat);
    iv.queue_bytes = get_num(ivs[i], "queue_bytes", iat);
    iv.ecn_marks = get_uint(ivs[i], "ecn_marks", iat);
    iv.tiers = read_tiers(ivs[i], iat);
    run.intervals.push_back(std::move(iv));
  }
  run.tiers = read_tiers(o, at);
  const json& evs = get_array(o, "events", at);
  for (size_t i = 0; i < evs.size(); ++i) {
    const std::string eat = at + "/events/" + std::to_string(i);
    run.events.emplace_back(get_num(evs[i], "t_s", eat), get_str(evs[i], "label", eat));
  }
  run.seed = get_uint(o, "seed", at);
  run.jain_fairness = get_num(o, "jain_fairness", at);
  if (o.contains("fidelity")) {  // live runs
    const json& fj = o["fidelity"];
    const std::string fat = at + "/fidelity";
    Fidelity& f = run.fidelity;
    f.measured = true;
    const json& ws = get_array(fj, "workers", fat);
    for (size_t i = 0; i < ws.size(); ++i) {
      const std::string wat = fat + "/workers/" + std::to_string(i);
      WorkerFidelity w;
      w.daemon = get_str(ws[i], "daemon", wat);
      w.worker = get_str(ws[i], "worker", wat);
      w.wall_s = get_num(ws[i], "wall_s", wat);
      w.busy_fraction = get_num(ws[i], "busy_fraction", wat);
      w.cpu_fraction = get_num(ws[i], "cpu_fraction", wat);
      w.run_delay_fraction = get_num(ws[i], "run_delay_fraction", wat);
      w.frames_timed = get_uint(ws[i], "frames_timed", wat);
      w.frame_late_p50_us = get_num(ws[i], "frame_late_p50_us", wat);
      w.frame_late_p99_us = get_num(ws[i], "frame_late_p99_us", wat);
      w.timers_timed = get_uint(ws[i], "timers_timed", wat);
      w.timer_late_p50_us = get_num(ws[i], "timer_late_p50_us", wat);
      w.timer_late_p99_us = get_num(ws[i], "timer_late_p99_us", wat);
      w.frames_received = get_uint(ws[i], "frames_received", wat);
      w.receive_wait_p50_us = get_num(ws[i], "receive_wait_p50_us", wat);
      w.receive_wait_p99_us = get_num(ws[i], "receive_wait_p99_us", wat);
      w.stall_max_us = get_num(ws[i], "stall_max_us", wat);
      w.realtime_share = get_num(ws[i], "realtime_share", wat);
      w.realtime_demotions = get_uint(ws[i], "realtime_demotions", wat);
      f.workers.push_back(std::move(w));
    }
    const json& drops = field(fj, "drops", fat);
    if (!drops.is_object()) throw ReadError(fat + "/drops: must be an object");
    for (auto it = drops.begin(); it != drops.end(); ++it) f.drops[it.key()] = get_uint(drops, it.key(), fat + "/drops");
    f.datapath_drops = get_uint(fj, "datapath_drops", fat);
    f.reordered_in_path = get_uint(fj, "reordered_in_path", fat);
    // Reports written before these fields have none: 0, as then measured.
    if (fj.contains("host_steal_s")) f.host_steal_s = get_num(fj, "host_steal_s", fat);
    if (fj.contains("host_cpus")) f.host_cpus = static_cast<uint32_t>(get_uint(fj, "host_cpus", fat));
    const json& problems = get_array(fj, "problems", fat);
    for (size_t i = 0; i < problems.size(); ++i) {
      if (!problems[i].is_string()) throw ReadError(fat + "/problems/" + std::to_string(i) + ": must be a string");
      f.problems.push_back(problems[i].get<std::string>());
    }
  }
  return run;
}

CaptureResult read_capture(const json& o, const std::string& at) {
  CaptureResult c;
  c.run = get_uint(o, "run", at);
  c.run_label = get_str(o, "run_label", at);
  c.event = get_str(o, "event", at);
  c.at_s = get_num(o, "at_s", at);
  c.from_s = get_num(o, "from_s", at);
  c.to_s = get_num(o, "to_s", at);
  c.where = get_str(o, "where", at);
  const json& planes = get_array(o, "planes", at);
  for (size_t i = 0; i < planes.size(); ++i) {
    if (!planes[i].is_number_unsigned()) throw ReadError(at + "/planes/" + std::to_string(i) + ": must be an unsigned integer");
    c.planes.push_back(planes[i].get<uint32_t>());
  }
  c.snap_length = static_cast<uint32_t>(get_uint(o, "snap_length", at));
  c.file = get_str(o, "file", at);
  c.frames = get_uint(o, "frames", at);
  c.frames_not_written = get_uint(o, "frames_not_written", at);
  c.frames_truncated = get_uint(o, "frames_truncated", at);
  if (o.contains("captured_from_s")) c.captured_from_s = get_num(o, "captured_from_s", at);
  if (o.contains("captured_to_s")) c.captured_to_s = get_num(o, "captured_to_s", at);
  c.t0_unix_ns = get_uint(o, "t0_unix_ns", at);
  const json& sources = get_array(o, "sources", at);
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].is_string()) throw ReadError(at + "/sources/" + std::to_string(i) + ": must be a string");
    c.sources.push_back(sources[i].get<std::string>());
  }
  c.note = get_str(o, "note", at);
  return c;
}

}  // namespace

// ------------------------------------------------------------------ public

std::string report_json(const Report& r) {
  return to_json(r, derive(r)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string timeseries_csv(const Report& r) {
  size_t planes = 0;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals) planes = std::max(planes, iv.plane_utilisation.size());
  size_t tier_planes = 0;  // clos only
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals) tier_planes = std::max(tier_planes, iv.tiers.size());
  std::string out =
      "run,job,transport,sweep_parameter,sweep_value,t0_s,t1_s,goodput_gbps,retransmits,loss_seen,rtos,"
      "path_state_changes,queue_bytes,ecn_marks";
  for (size_t p = 0; p < planes; ++p) out += ",plane" + std::to_string(p) + "_util";
  for (size_t p = 0; p < tier_planes; ++p)
    for (const char* c : {"host_mean", "host_max", "leaf_spine_mean", "leaf_spine_max"})
      out += ",plane" + std::to_string(p) + "_" + c;
  out += "\n";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    for (const auto& iv : run.intervals) {
      out += std::to_string(i) + "," + csv_field(run.job) + "," + csv_field(run.transport) + "," +
             csv_field(run.sweep_parameter) + "," + (run.sweep_parameter.empty() ? "" : csv_num(run.sweep_value)) +
             "," + csv_num(iv.t0_s) + "," + csv_num(iv.t1_s) + "," + csv_num(iv.goodput_bps / 1e9) + "," +
             std::to_string(iv.retransmits) + "," + csv_num(iv.loss_seen) + "," + std::to_string(iv.rtos) + "," +
             std::to_string(iv.path_state_changes) + "," + csv_num(iv.queue_bytes) + "," +
             std::to_string(iv.ecn_marks);
      for (size_t p = 0; p < planes; ++p)
        out += "," + (p < iv.plane_utilisation.size() ? csv_num(iv.plane_utilisation[p]) : std::string());
      for (size_t p = 0; p < tier_planes; ++p) {
        if (p >= iv.tiers.size()) {
          out += ",,,,";
          continue;
        }
        const TierLoad& t = iv.tiers[p];
        out += "," + csv_num(t.host_mean) + "," + csv_num(t.host_max) + "," + csv_num(t.leaf_spine_mean) + "," +
               csv_num(t.leaf_spine_max);
      }
      out += "\n";
    }
  }
  return out;
}

std::optional<Report> parse_report_json(const std::string& text, const std::string& source, std::string* error) {
  const auto fail = [&](const std::string& message) -> std::optional<Report> {
    if (error != nullptr) *error = source + ": " + message;
    return std::nullopt;
  };
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail("not JSON");
  try {
    Report r;
    r.scenario_name = get_str(j, "scenario_name", "");
    r.description = get_str(j, "description", "");
    r.source = get_str(j, "source", "");
    r.mode = get_str(j, "mode", "");
    r.version = get_str(j, "version", "");
    r.started_at = get_str(j, "started_at", "");
    r.seed = get_uint(j, "seed", "");
    r.scenario_yaml = get_str(j, "scenario_yaml", "");
    r.planes = static_cast<uint32_t>(get_uint(j, "planes", ""));
    r.plane_rate_bps = get_num(j, "plane_rate_bps", "");
    r.duration_s = get_num(j, "duration_s", "");
    if (j.contains("topology")) {
      const json& t = j["topology"];
      if (get_str(t, "kind", "/topology") != "clos") throw ReadError("/topology/kind: must be clos");
      TopologySummary ts;
      ts.hosts = static_cast<uint32_t>(get_uint(t, "hosts", "/topology"));
      ts.hosts_per_leaf = static_cast<uint32_t>(get_uint(t, "hosts_per_leaf", "/topology"));
      ts.leaves = static_cast<uint32_t>(get_uint(t, "leaves", "/topology"));
      ts.spines = static_cast<uint32_t>(get_uint(t, "spines", "/topology"));
      ts.host_rate_bps = get_num(t, "host_rate_bps", "/topology");
      ts.leaf_spine_rate_bps = get_num(t, "leaf_spine_rate_bps", "/topology");
      ts.oversubscription = get_num(t, "oversubscription", "/topology");
      ts.links = get_uint(t, "links", "/topology");
      r.topology = ts;
    }
    if (j.contains("point")) {
      const json& p = j["point"];
      r.point = SweepPoint{get_uint(p, "index", "/point"), get_uint(p, "count", "/point"),
                           get_str(p, "parameter", "/point"), get_num(p, "value", "/point")};
    }
    const json& runs = get_array(j, "runs", "");
    for (size_t i = 0; i < runs.size(); ++i) r.runs.push_back(read_run(runs[i], "/runs/" + std::to_string(i)));
    if (j.contains("captures")) {  // reports before capture windows have none
      const json& caps = get_array(j, "captures", "");
      for (size_t i = 0; i < caps.size(); ++i) r.captures.push_back(read_capture(caps[i], "/captures/" + std::to_string(i)));
    }
    if (!r.point) {
      const json& as = get_array(j, "assertions", "");
      for (size_t i = 0; i < as.size(); ++i) {
        const std::string at = "/assertions/" + std::to_string(i);
        AssertionResult a;
        a.text = get_str(as[i], "text", at);
        a.passed = get_bool(as[i], "passed", at);
        a.detail = get_str(as[i], "detail", at);
        a.inconclusive = get_bool(as[i], "inconclusive", at);
        if (as[i].contains("known_issue")) a.known_issue = get_str(as[i], "known_issue", at);
        if (as[i].contains("value")) a.value = get_num(as[i], "value", at);
        r.assertions.push_back(std::move(a));
      }
    }
    return r;
  } catch (const ReadError& e) {
    return fail(e.what());
  }
}

bool write_report(const Report& r, const std::string& dir, std::string* error) {
  auto fail = [error](const std::string& msg) {
    if (error != nullptr) *error = msg;
    return false;
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("cannot create report directory " + dir + ": " + ec.message());
  if (!std::filesystem::is_directory(dir, ec)) return fail("cannot create report directory " + dir + ": not a directory");
  std::vector<std::pair<const char*, std::string>> files;
  if (r.point) {
    files = {{"point.json", report_json(r)}};  // not a report until merged
  } else {
    files = {{"report.json", report_json(r)}, {"timeseries.csv", timeseries_csv(r)}, {"report.html", report_html(r)}};
  }
  for (const auto& [name, text] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    errno = 0;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) return fail("cannot write " + path + ": " + std::strerror(errno ? errno : EIO));
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.close();
    if (!f) return fail("cannot write " + path + ": " + std::strerror(errno ? errno : EIO));
  }
  return true;
}

}  // namespace metaroce::scenario
