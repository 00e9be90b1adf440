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
//                    "p99_us", "p999_us", "max_us": num },
//       "intervals": [ { "t0_s", "t1_s", "goodput_bps", "messages": num, "retransmits": uint,
//                        "loss_seen": num, "plane_bytes": [num], "plane_utilisation": [num],
//                        "queue_bytes": num, "ecn_marks": uint } ],
//       "events": [ { "t_s": num, "label": str } ],   // RunResult::events (pairs)
//       "seed": uint,
//       "fidelity": {                     // live runs only (fidelity.h): did the datapath keep up?
//         "faithful": bool, "workers": [ { "daemon", "worker": str, "wall_s", "busy_fraction",
//           "cpu_fraction", "run_delay_fraction": num, "frames_timed": uint, "frame_late_p50_us",
//           "frame_late_p99_us": num, "timers_timed": uint, "timer_late_p50_us", "timer_late_p99_us": num,
//           "frames_received": uint, "receive_wait_p50_us", "receive_wait_p99_us": num,
//           "realtime_share": num, "realtime_demotions": uint } ],
//         "drops": { cause: uint }, "datapath_drops": uint, "problems": [str] }
//     } ],
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
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "metaroce/scenario/report.h"
#include "report_internal.h"

namespace metaroce::scenario {

using namespace report_internal;

namespace {

using ojson = nlohmann::ordered_json;

// ------------------------------------------------------------------ JSON

ojson num_or_null(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

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
    ojson ivs = ojson::array();
    for (const auto& iv : run.intervals) {
      ojson x;
      x["t0_s"] = num_or_null(iv.t0_s);
      x["t1_s"] = num_or_null(iv.t1_s);
      x["goodput_bps"] = num_or_null(iv.goodput_bps);
      x["messages"] = num_or_null(iv.messages);
      x["retransmits"] = iv.retransmits;
      x["loss_seen"] = num_or_null(iv.loss_seen);
      ojson pb = ojson::array(), pu = ojson::array();
      for (double b : iv.plane_bytes) pb.push_back(num_or_null(b));
      for (double u : iv.plane_utilisation) pu.push_back(num_or_null(u));
      x["plane_bytes"] = std::move(pb);
      x["plane_utilisation"] = std::move(pu);
      x["queue_bytes"] = num_or_null(iv.queue_bytes);
      x["ecn_marks"] = iv.ecn_marks;
      ivs.push_back(std::move(x));
    }
    o["intervals"] = std::move(ivs);
    ojson evs = ojson::array();
    for (const auto& e : run.events) evs.push_back(ojson{{"t_s", num_or_null(e.first)}, {"label", e.second}});
    o["events"] = std::move(evs);
    o["seed"] = run.seed;
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
                           {"realtime_share", num_or_null(w.realtime_share)},
                           {"realtime_demotions", w.realtime_demotions}});
      fj["workers"] = std::move(ws);
      ojson drops = ojson::object();
      for (const auto& [cause, n] : f.drops) drops[cause] = n;
      fj["drops"] = std::move(drops);
      fj["datapath_drops"] = f.datapath_drops;
      fj["problems"] = f.problems;
      o["fidelity"] = std::move(fj);
    }
    runs.push_back(std::move(o));
  }
  j["runs"] = std::move(runs);
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

}  // namespace

// ------------------------------------------------------------------ public

std::string report_json(const Report& r) {
  return to_json(r, derive(r)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string timeseries_csv(const Report& r) {
  size_t planes = 0;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals) planes = std::max(planes, iv.plane_utilisation.size());
  std::string out =
      "run,job,transport,sweep_parameter,sweep_value,t0_s,t1_s,goodput_gbps,retransmits,loss_seen,queue_bytes,"
      "ecn_marks";
  for (size_t p = 0; p < planes; ++p) out += ",plane" + std::to_string(p) + "_util";
  out += "\n";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    for (const auto& iv : run.intervals) {
      out += std::to_string(i) + "," + csv_field(run.job) + "," + csv_field(run.transport) + "," +
             csv_field(run.sweep_parameter) + "," + (run.sweep_parameter.empty() ? "" : csv_num(run.sweep_value)) +
             "," + csv_num(iv.t0_s) + "," + csv_num(iv.t1_s) + "," + csv_num(iv.goodput_bps / 1e9) + "," +
             std::to_string(iv.retransmits) + "," + csv_num(iv.loss_seen) + "," + csv_num(iv.queue_bytes) + "," +
             std::to_string(iv.ecn_marks);
      for (size_t p = 0; p < planes; ++p)
        out += "," + (p < iv.plane_utilisation.size() ? csv_num(iv.plane_utilisation[p]) : std::string());
      out += "\n";
    }
  }
  return out;
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
  const std::pair<const char*, std::string> files[] = {
      {"report.json", report_json(r)}, {"timeseries.csv", timeseries_csv(r)}, {"report.html", report_html(r)}};
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
