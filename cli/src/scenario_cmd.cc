#include "scenario_cmd.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "metaroce/scenario/report.h"
#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/scenario.h"
#include "discover.h"
#include "scenario_live.h"
#include "units.h"

namespace ms = metaroce::scenario;

namespace metarocectl {
namespace {

ms::Scenario load(const ScenarioFlags& f) {
  std::string err;
  auto s = ms::load_scenario_file(f.file, &err);
  if (!s) throw UsageError(err);
  for (const auto& o : f.host_overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == o.size())
      throw UsageError("--host: must be NAME=ADDRESS, e.g. h0=unix:///run/metaroce/h0.sock (got '" + o + "')");
    const std::string name = o.substr(0, eq);
    if (!s->hosts.count(name) && std::find(s->host_order.begin(), s->host_order.end(), name) == s->host_order.end())
      throw UsageError("--host: the scenario has no host '" + name + "'");
    if (std::string e = ms::daemon_address_error(o.substr(eq + 1)); !e.empty()) throw UsageError("--host " + name + ": " + e);
    s->hosts[name] = o.substr(eq + 1);
  }
  if (!f.fabric_override.empty()) {
    if (std::string e = ms::daemon_address_error(f.fabric_override); !e.empty()) throw UsageError("--fabric: " + e);
    s->fabric = f.fabric_override;
  }
  return *s;
}

int finish(const ms::Report& r, const std::string& out, bool json) {
  std::string err;
  if (!ms::write_report(r, out, &err)) throw UsageError("--out: " + err);
  if (json) {
    std::printf("%s\n", ms::report_json(r).c_str());
  } else {
    std::printf("\n%s", ms::summary_table(r).c_str());
    std::printf("\n%s run (%s); report: %s/report.html, %s/report.json, %s/timeseries.csv\n", r.scenario_name.c_str(),
                r.mode == "sim" ? "in the simulator" : "on live daemons", out.c_str(), out.c_str(), out.c_str());
  }
  const size_t failed = r.failed();
  std::fflush(stdout);  // the verdict line after the tables, not inside them
  switch (r.verdict()) {
    case ms::Report::Verdict::kInconclusive: {
      if (!r.faithful()) {
        size_t problems = 0;
        for (const auto& run : r.runs) problems += run.fidelity.problems.size();
        std::fprintf(stderr,
                     "metarocectl: INCONCLUSIVE: the host's datapath, not the emulated fabric, limited this run (%zu "
                     "fidelity problems; see the report's fidelity section); %zu of %zu assertions failed\n",
                     problems, failed, r.assertions.size());
      } else {
        std::fprintf(stderr,
                     "metarocectl: INCONCLUSIVE: %zu of %zu assertions are within their measurement's resolution of "
                     "the threshold (too few messages in the window to tell which side they are on)\n",
                     r.unresolved(), r.assertions.size());
      }
      return kExitInconclusive;
    }
    case ms::Report::Verdict::kFail:
      std::fprintf(stderr, "metarocectl: %zu of %zu assertions failed\n", failed, r.assertions.size());
      return kExitResultFailed;
    case ms::Report::Verdict::kPass: break;
  }
  if (const size_t known = r.known_failures(); known > 0)
    std::fprintf(stderr,
                 "metarocectl: PASS except %zu of %zu assertions, which fail on known issues the scenario names (see "
                 "the report)\n",
                 known, r.assertions.size());
  return kExitOk;
}

ms::Report run(const ms::Scenario& s, bool sim, unsigned sim_threads, const ClientOptions& options, bool json,
              const std::string& out, std::optional<size_t> point = std::nullopt) {
  if (auto e = ms::check_runnable(s, !sim); !e.empty()) throw UsageError(e);
  auto progress = [json](const std::string& line) { std::fprintf(json ? stderr : stdout, "%s\n", line.c_str()); };
  std::fprintf(json ? stderr : stdout, "%s: %s (%s)\n", s.name.c_str(), s.description.c_str(),
               sim ? "simulator, virtual time" : "live daemons");
  return sim ? ms::run_scenario_sim(s, progress, sim_threads, point, out)
             : run_scenario_live(s, options, progress, point, out);
}

// --point: a sweep point of s, 0-based.
size_t parse_point(const ms::Scenario& s, const std::string& text) {
  size_t point = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), point);
  const size_t n = ms::sweep_points(s);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw UsageError("--point: must be a sweep point's index" +
                     (n ? ", in [0, " + std::to_string(n - 1) + "]" : std::string()) + " (got '" + text + "')");
  if (const std::string e = ms::sweep_point_error(s, point, "--point"); !e.empty()) throw UsageError(e);
  return point;
}

// A point's data: DIR/point.json for the merge; nothing is judged yet.
int finish_point(const ms::Report& r, const std::string& out, bool json) {
  std::string err;
  if (!ms::write_report(r, out, &err)) throw UsageError("--out: " + err);
  if (json) {
    std::printf("%s\n", ms::report_json(r).c_str());
  } else {
    std::printf("\n%s point %zu of 0-%zu (%s %s, %zu runs) written to %s/point.json; assertions are judged when all "
                "%zu points are merged: metarocectl scenario merge POINT_DIR... --out DIR\n",
                r.scenario_name.c_str(), r.point->index, r.point->count - 1, r.point->parameter.c_str(),
                ms::format_sweep_value(r.point->parameter, r.point->value).c_str(), r.runs.size(), out.c_str(),
                r.point->count);
  }
  return kExitOk;
}

}  // namespace

int cmd_scenario_validate(const ScenarioFlags& f, bool json) {
  const ms::Scenario s = load(f);
  const std::string live = ms::check_runnable(s, true), sim = ms::check_runnable(s, false);
  const auto runs = ms::plan_runs(s);
  const ms::LinkSettings link = ms::link_base(s);
  if (json) {
    nlohmann::json j = {{"name", s.name},         {"valid", true},          {"runs", runs.size()}, {"sweep_points", ms::sweep_points(s)},
                        {"live_ok", live.empty()}, {"live_problem", live},   {"sim_ok", sim.empty()},
                        {"sim_only", !ms::sim_only_reason(s).empty()}, {"sim_only_reason", ms::sim_only_reason(s)},
                        {"sim_problem", sim},      {"jobs", s.jobs.size()},  {"timeline_events", s.timeline.size()},
                        {"assertions", s.assertions.size()}, {"hosts", s.host_order},
                        {"topology",
                         {{"hosts", s.hosts_count},
                          {"planes", s.planes},
                          {"ecmp_links", s.ecmp_links},
                          {"mtu_payload", s.mtu_payload},
                          {"link_rate_bps", s.link_rate_bps()},
                          {"link_queue_limit_bytes", *link.queue_limit_bytes},
                          {"link_ecn_threshold_bytes", *link.ecn_threshold_bytes},
                          {"link_delay_ns", s.base.delay_ns.value_or(0)}}}};
    if (s.clos) {  // the full mesh's keys stay as they were; a clos adds its shape
      const ms::ClosTopology& c = *s.clos;
      nlohmann::json& t = j["topology"];
      t["kind"] = "clos";
      t["hosts_per_leaf"] = c.hosts_per_leaf;
      t["leaves"] = c.leaves(s.hosts_count);
      t["spines"] = c.spines;
      t["host_rate_bps"] = c.host_rate_bps;
      t["leaf_spine_rate_bps"] = c.leaf_spine_rate_bps();
      t["host_delay_ns"] = c.host_delay_ns;
      t["leaf_spine_delay_ns"] = c.spine_delay_ns;
      t["oversubscription"] = c.oversubscription();
      t["withdraw_after_ns"] = c.withdraw_after_ns;
      t["remote_withdraw_after_ns"] = c.remote_withdraw_after_ns;
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s: valid: %zu jobs, %zu runs, %zu timeline events, %zu assertions\n", f.file.c_str(), s.jobs.size(),
                runs.size(), s.timeline.size(), s.assertions.size());
    if (const size_t n = ms::sweep_points(s); n > 0)
      std::printf("  sweep points: %zu (--point 0 to %zu)\n", n, n - 1);
    std::printf("  live daemons: %s\n  simulator:    %s\n", live.empty() ? "runnable" : live.c_str(),
                sim.empty() ? "runnable" : sim.c_str());
  }
  return kExitOk;
}

// --hosts-from: every scenario host that no --host names gets the address of
// the daemon of that name behind the Service.
ClientOptions find_hosts(const ScenarioFlags& f, ms::Scenario* s, const ClientOptions& options, bool json) {
  if (f.hosts_from.empty()) return options;
  if (f.sim) throw UsageError("--hosts-from: finds live daemons; a --sim run has none");
  const ServiceAddress service = parse_service_address("--hosts-from", f.hosts_from);
  std::vector<std::string> wanted;
  for (const std::string& name : s->host_order) {
    const bool given = std::any_of(f.host_overrides.begin(), f.host_overrides.end(),
                                   [&](const std::string& o) { return o.rfind(name + "=", 0) == 0; });
    if (!given) wanted.push_back(name);
  }
  const std::map<std::string, std::string> found =
      match_hosts(wanted, discover_daemons(service, options), f.hosts_from);
  std::vector<std::string> addresses;
  for (const auto& [name, address] : found) {
    s->hosts[name] = address;
    addresses.push_back(address);
    std::fprintf(json ? stderr : stdout, "host %s: the daemon named %s behind %s, at %s\n", name.c_str(),
                 name.c_str(), f.hosts_from.c_str(), address.c_str());
  }
  return options_for_found(options, service, addresses);
}

int cmd_scenario_run(const ScenarioFlags& f, const ClientOptions& given_options, bool json) {
  ms::Scenario s = load(f);
  const ClientOptions options = find_hosts(f, &s, given_options, json);
  if (!f.point.empty()) {
    const size_t point = parse_point(s, f.point);
    return finish_point(run(s, f.sim, f.sim_threads, options, json, f.out, point), f.out, json);
  }
  return finish(run(s, f.sim, f.sim_threads, options, json, f.out), f.out, json);
}

int cmd_scenario_merge(const MergeFlags& f, bool json) {
  std::vector<ms::Report> points;
  std::vector<std::string> names;
  for (const std::string& in : f.inputs) {
    const std::filesystem::path path =
        std::filesystem::is_directory(in) ? std::filesystem::path(in) / "point.json" : std::filesystem::path(in);
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      const bool report = std::filesystem::exists(std::filesystem::path(in) / "report.json");
      throw UsageError("point directory " + in + ": cannot read " + path.string() +
                       (report ? " (it holds a whole run's report.json; merge takes the directories of "
                                 "`scenario run --point I`)"
                               : ""));
    }
    std::ostringstream text;
    text << file.rdbuf();
    std::string err;
    std::optional<ms::Report> r = ms::parse_report_json(text.str(), path.string(), &err);
    if (!r) throw UsageError(err);
    // A point's capture files stay in its folder: link them from the merged report's.
    for (ms::CaptureResult& c : r->captures)
      if (!c.file.empty())
        c.file = std::filesystem::path(path.parent_path() / c.file).lexically_proximate(f.out).generic_string();
    points.push_back(std::move(*r));
    names.push_back(path.string());
  }
  std::string err;
  std::optional<ms::Report> merged = ms::merge_sweep_points(points, names, &err);
  if (!merged) throw UsageError(err);
  if (!json)
    std::printf("%s: %zu sweep points merged (%zu runs)\n", merged->scenario_name.c_str(), points.size(),
                merged->runs.size());
  return finish(*merged, f.out, json);
}

int cmd_sweep(const SweepFlags& f, const ClientOptions& options, bool json) {
  static const char* params[] = {"loss", "skew", "planes", "message_bytes", "connections"};
  if (std::find(std::begin(params), std::end(params), f.parameter) == std::end(params))
    throw UsageError("--param: must be loss, skew, planes, message_bytes or connections (got '" + f.parameter + "')");
  if (!f.sim && (f.from.empty() || f.to.empty() || f.fabric.empty()))
    throw UsageError("--from, --to and --fabric: needed for a live sweep (or give --sim)");
  std::string values;
  for (const auto& v : split_list(f.values)) values += (values.empty() ? "" : ", ") + v;
  std::string yaml = fmt::format(
      "name: sweep-{0}\n"
      "description: {0} sweep, MetaRoCE and RoCEv2 side by side\n"
      "seed: {1}\n"
      "topology: {{hosts: 2, planes: {2}, ecmp_links: 2}}\n",
      f.parameter == "message_bytes" ? "size" : f.parameter, f.seed, f.planes);
  if (!f.sim) yaml += fmt::format("hosts: {{h0: \"{}\", h1: \"{}\"}}\nfabric: \"{}\"\n", f.from, f.to, f.fabric);
  yaml += fmt::format(
      "duration: {0}\ninterval: {1}\n"
      "jobs:\n"
      "  - {{name: metaroce, from: h0, to: h1, transport: metaroce, size: {2}}}\n"
      "  - {{name: rocev2, from: h0, to: h1, transport: rocev2, size: {2}, connections: {3}}}\n"
      "sweep: {{parameter: {4}, values: [{5}]}}\n"
      "assertions:\n  - {{metric: data_errors, job: all, max: 0}}\n",
      f.duration, f.interval, f.size, f.planes, f.parameter, values);
  std::string err;
  auto s = ms::parse_scenario_yaml(yaml, "metarocectl sweep", &err);
  if (!s) throw UsageError(err);
  return finish(run(*s, f.sim, f.sim_threads, options, json, f.out), f.out, json);
}

}  // namespace metarocectl
