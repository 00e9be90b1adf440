// The scenario engine (engine.h): plans, the run loop, the report.
#include "metaroce/scenario/engine.h"

#include "metaroce/capture/limits.h"
#include "metaroce/emulator/fabric.h"
#include "metaroce/scenario/sim_backend.h"
#include "metaroce/units/units.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace metaroce::scenario {

namespace {

// A source port in [49152, 65535] whose flow hashes onto ECMP link want,
// searched from start.
uint16_t port_on_link(wire::UdpFlow flow, uint32_t start, uint32_t want, uint32_t ecmp_links, uint32_t hash_seed) {
  for (uint32_t i = 0; i < 16384; ++i) {
    flow.src_port = static_cast<uint16_t>(49152 + (start + i) % 16384);
    if (emulator::ecmp_link_of(flow, hash_seed, ecmp_links) == want) return flow.src_port;
  }
  return static_cast<uint16_t>(49152 + start % 16384);
}

}  // namespace

std::vector<uint16_t> path_source_ports(const JobSpec& spec, uint32_t planes, uint32_t ecmp_links,
                                        const FlowEnds& ends, uint32_t first_link) {
  const uint32_t P = std::max<uint32_t>(1, planes), K = std::max<uint32_t>(1, ecmp_links);
  wire::UdpFlow flow;
  flow.src_ip = ends.src_ip;
  flow.dst_ip = ends.dst_ip;
  flow.dst_port = ends.dst_port;
  auto start = [&](uint32_t conn, uint32_t index) {
    return static_cast<uint32_t>(((spec.index * 4099 + conn * 131 + index) * 97) % 16384);
  };
  std::vector<uint16_t> ports;
  for (uint32_t c = 0; c < spec.connections; ++c) {
    if (spec.rocev2()) {
      ports.push_back(port_on_link(flow, start(0, c), (c / P + first_link) % K, K, ends.hash_seed));
      continue;
    }
    for (uint32_t i = 0; i < spec.paths; ++i)
      ports.push_back(port_on_link(flow, start(c, i), (i / P + first_link) % K, K, ends.hash_seed));
  }
  return ports;
}

uint32_t clos_first_spine(const JobSpec& spec, uint32_t planes) {
  const uint32_t P = std::max<uint32_t>(1, planes);
  const uint32_t flows = spec.rocev2() ? spec.connections : spec.paths;
  return spec.src * std::max<uint32_t>(1, (flows + P - 1) / P);
}

namespace {

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// A ramp is its steps: from -> to in `steps` equal increments over its duration.
void expand_ramp(const FaultEvent& e, std::vector<FabricChange>* out) {
  const uint32_t steps = std::max<uint32_t>(1, e.ramp_steps);
  for (uint32_t i = 0; i <= steps; ++i) {
    const double v = e.ramp_from + (e.ramp_to - e.ramp_from) * i / steps;
    FabricChange c;
    c.at_ns = e.at_ns + e.ramp_duration_ns * static_cast<Nanos>(i) / static_cast<Nanos>(steps);
    c.selector = e.selector;
    c.label = i == 0 ? e.label : e.label + " step " + std::to_string(i);
    if (e.ramp_field == "loss") c.set.loss = v;
    else if (e.ramp_field == "delay_ns") c.set.delay_ns = std::llround(v);
    else if (e.ramp_field == "rate_bps") c.set.rate_bps = v;
    else if (e.ramp_field == "duplicate") c.set.duplicate = v;
    else if (e.ramp_field == "corrupt") c.set.corrupt = v;
    out->push_back(std::move(c));
  }
}

std::vector<FabricChange> expand_timeline(const Scenario& s) {
  std::vector<FabricChange> out;
  for (const FaultEvent& e : s.timeline) {
    if (e.action == FaultEvent::Action::kRamp) {
      expand_ramp(e, &out);
      continue;
    }
    FabricChange c;
    c.at_ns = e.at_ns;
    c.selector = e.selector;
    c.label = e.label;
    switch (e.action) {
      case FaultEvent::Action::kSet: c.set = e.set; break;
      case FaultEvent::Action::kDown: c.up = false; break;
      case FaultEvent::Action::kUp: c.up = true; break;
      case FaultEvent::Action::kFlap:
        c.flap = FabricChange::Flap{e.flap_period_ns, e.flap_down_ns};
        if (e.flap_period_ns == 0) c.up = true;  // stopping leaves the link up
        break;
      case FaultEvent::Action::kRamp: break;
    }
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const FabricChange& a, const FabricChange& b) { return a.at_ns < b.at_ns; });
  return out;
}

// The sample taken closest to time t.
const FabricSample* nearest(const std::vector<FabricSample>& v, double t) {
  const FabricSample* best = nullptr;
  for (const auto& s : v)
    if (!best || std::abs(s.t_s - t) < std::abs(best->t_s - t)) best = &s;
  return best;
}

// Per plane, the tiers' link utilisation between two samples of a clos run
// (TierLoad; dt in the backend's seconds).
std::vector<TierLoad> tier_loads(const FabricSample& a, const FabricSample& b, double dt, const ClosTopology& c) {
  std::vector<TierLoad> out;
  if (dt <= 0) return out;
  const auto load = [dt](const std::vector<double>& from, const std::vector<double>& to, double rate, double* mean,
                         double* max) {
    double sum = 0;
    *max = 0;
    for (size_t k = 0; k < to.size() && k < from.size(); ++k) {
      const double u = std::clamp((to[k] - from[k]) * 8 / (dt * rate), 0.0, 1.0);
      sum += u;
      *max = std::max(*max, u);
    }
    *mean = to.empty() ? 0 : sum / static_cast<double>(to.size());
  };
  for (size_t p = 0; p < b.tier_bytes.size() && p < a.tier_bytes.size(); ++p) {
    TierLoad t;
    load(a.tier_bytes[p].host_links, b.tier_bytes[p].host_links, c.host_rate_bps, &t.host_mean, &t.host_max);
    load(a.tier_bytes[p].leaf_spine_links, b.tier_bytes[p].leaf_spine_links, c.leaf_spine_rate_bps(), &t.leaf_spine_mean,
         &t.leaf_spine_max);
    out.push_back(t);
  }
  return out;
}

// The fabric's columns of each interval, from the samples around it.
void add_fabric_columns(const Scenario& s, const std::vector<FabricSample>& samples, uint32_t planes, double rate,
                        RunResult* rr) {
  for (Interval& i : rr->intervals) {
    const FabricSample* a = nearest(samples, i.t0_s);
    const FabricSample* b = nearest(samples, i.t1_s);
    if (!a || !b || b->t_s <= a->t_s) continue;
    // Rates are per second of the backend's own clock (simulated or wall).
    const double dt = b->clock_s - a->clock_s;
    if (s.clos) i.tiers = tier_loads(*a, *b, dt, *s.clos);
    i.plane_bytes.clear();
    i.plane_utilisation.clear();
    for (uint32_t p = 0; p < planes && p < b->plane_bytes.size() && p < a->plane_bytes.size(); ++p) {
      const double bytes = b->plane_bytes[p] - a->plane_bytes[p];
      i.plane_bytes.push_back(bytes);
      i.plane_utilisation.push_back(rate > 0 && dt > 0 ? std::clamp(bytes * 8 / (dt * rate), 0.0, 1.0) : 0);
    }
    i.queue_bytes = b->queue_bytes;
    i.ecn_marks = static_cast<uint64_t>(std::max(0.0, b->ecn_marks - a->ecn_marks));
  }
  // Over the run's traffic: from its start to the duration.
  if (s.clos && !samples.empty()) {
    const FabricSample* end = nearest(samples, static_cast<double>(s.duration_ns) / 1e9);
    rr->tiers = tier_loads(samples.front(), *end, end->clock_s - samples.front().clock_s, *s.clos);
  }
}

}  // namespace

std::string capture_file_name(size_t run, const std::string& run_label, const std::string& event_label) {
  // Every other character becomes '-', runs of them one, none at the ends.
  const auto clean = [](const std::string& text) {
    std::string out;
    for (char c : text) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_';
      if (ok) out += c;
      else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && (out.back() == '-' || out.back() == '.')) out.pop_back();
    return out;
  };
  char number[24];
  std::snprintf(number, sizeof number, "%02zu", run);
  std::string name = std::string(number) + "-" + clean(run_label);
  const std::string event = clean(event_label);
  if (!event.empty()) name += "-" + event;
  const size_t room = capture::kMaxFileNameChars - 7;  // ".pcapng"
  if (name.size() > room) name.resize(room);
  return name + ".pcapng";
}

CaptureResult capture_result_for(const RunPlan& plan, const PlannedCapture& c) {
  CaptureResult r;
  r.run = plan.index;
  r.run_label = plan.label;
  r.event = c.label;
  r.at_s = static_cast<double>(c.at_ns) / 1e9;
  r.from_s = static_cast<double>(c.from_ns) / 1e9;
  r.to_s = static_cast<double>(c.to_ns) / 1e9;
  r.where = where_name(c.window.where);
  r.planes = c.window.planes;
  r.snap_length = c.window.snap_length;
  return r;
}

std::vector<CaptureResult> Backend::capture_results(const RunPlan& plan) {
  std::vector<CaptureResult> out;
  for (const PlannedCapture& c : plan.captures) {
    CaptureResult r = capture_result_for(plan, c);
    r.note = "no packets captured: the " + mode() + " backend does not capture";
    out.push_back(std::move(r));
  }
  return out;
}

LinkSettings link_base(const Scenario& s) {
  LinkSettings b = s.base;
  if (!s.clos) b.rate_bps = s.link_rate_bps();  // a clos's rates are per tier, set with the fabric
  if (!b.queue_limit_bytes) b.queue_limit_bytes = kDefaultQueueLimitBytes;
  if (!b.ecn_threshold_bytes) b.ecn_threshold_bytes = kDefaultEcnThresholdBytes;
  return b;
}

std::vector<std::string> deployment_mismatches(const Scenario& s, const DeployedHostLinks& fabric,
                                               const std::vector<DeployedEndpoint>& endpoints) {
  std::vector<std::string> out;
  const LinkSettings base = link_base(s);
  const double rate = s.link_rate_bps();
  // Rates are written as decimals in YAML ("200e6", "200M"): equal to a part in a million.
  const auto same_rate = [](double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b)); };
  const std::string where = "fabric daemon " + fabric.daemon + ": ";
  if (!same_rate(fabric.rate_bps, rate))
    out.push_back(where + "fabric.port.rate_bps is " + units::format_rate(fabric.rate_bps) +
                  ", the scenario's host links run at " + units::format_rate(rate) + " (base.rate)");
  if (fabric.queue_limit_bytes != *base.queue_limit_bytes)
    out.push_back(where + "fabric.port.queue_limit_bytes is " + std::to_string(fabric.queue_limit_bytes) +
                  ", the scenario's links drop above " + std::to_string(*base.queue_limit_bytes) + " (base.queue_limit)");
  if (fabric.ecn_threshold_bytes != *base.ecn_threshold_bytes)
    out.push_back(where + "fabric.port.ecn_threshold_bytes is " + std::to_string(fabric.ecn_threshold_bytes) +
                  ", the scenario's links mark at " + std::to_string(*base.ecn_threshold_bytes) + " (base.ecn_threshold)");
  for (const DeployedEndpoint& e : endpoints)
    if (!same_rate(e.port_rate_bps, rate))
      out.push_back("host " + e.host + " (" + e.daemon + "): endpoint.port_rate_bps is " +
                    (e.port_rate_bps > 0 ? units::format_rate(e.port_rate_bps) : std::string("0 (not paced)")) +
                    ", it must be the host links' rate " + units::format_rate(rate) +
                    " (an endpoint sends at its NIC's rate, as in the simulator)");
  return out;
}

double jain_index(const std::vector<uint64_t>& x) {
  if (x.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0, squares = 0;
  for (uint64_t v : x) {
    sum += static_cast<double>(v);
    squares += static_cast<double>(v) * static_cast<double>(v);
  }
  return squares > 0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 1.0;
}

std::vector<RunPlan> plan_scenario(const Scenario& s) {
  const std::vector<PlannedRun> planned = plan_runs(s);
  const std::vector<FabricChange> timeline = expand_timeline(s);
  std::vector<Nanos> bounds;
  for (Nanos t = s.interval_ns;; t += s.interval_ns) {
    bounds.push_back(std::min(t, s.duration_ns));
    if (t >= s.duration_ns) break;
  }
  // plan_runs goes value by value, every run group at each value.
  const size_t per_point = s.sweep && !s.sweep->values.empty() ? planned.size() / s.sweep->values.size() : 0;
  std::vector<RunPlan> out;
  for (size_t r = 0; r < planned.size(); ++r) {
    const PlannedRun& pr = planned[r];
    RunPlan p;
    p.index = r + 1;
    p.count = planned.size();
    p.point = per_point ? r / per_point : 0;
    p.sweep_parameter = pr.sweep_parameter;
    p.sweep_value = pr.sweep_value;
    p.label = pr.jobs[0]->name;
    if (!pr.sweep_parameter.empty())
      p.label += " " + std::string(pr.sweep_parameter == "skew_ns" ? "skew" : pr.sweep_parameter) + "=" +
                 format_sweep_value(pr.sweep_parameter, pr.sweep_value);
    p.planes = pr.sweep_parameter == "planes" ? static_cast<uint32_t>(pr.sweep_value) : s.planes;
    p.link_rate_bps = s.link_rate_bps();

    // The base on every link, with the link defaults both modes share and the sweep value.
    FabricChange base;
    base.set = link_base(s);
    if (pr.sweep_parameter == "loss") base.set.loss = pr.sweep_value;
    base.label = "base";
    p.setup.push_back(base);
    // A skew sweep: plane p's links get the base delay + p x skew, keeping
    // the base jitter. On a clos, the plane's host uplinks, which every frame
    // of the plane crosses once.
    if (pr.sweep_parameter == "skew_ns")
      for (uint32_t plane = 1; plane < p.planes; ++plane) {
        FabricChange c;
        c.selector.plane = plane;
        if (s.clos) c.selector.tier = "host", c.selector.direction = "upward";
        c.set.delay_ns = s.base.delay_ns.value_or(0) + std::llround(pr.sweep_value * plane);
        c.set.jitter_ns = s.base.jitter_ns.value_or(0);
        c.label = "skew plane " + std::to_string(plane);
        p.setup.push_back(std::move(c));
      }
    p.timeline = timeline;

    for (const Job* j : pr.jobs) {
      JobSpec js;
      js.job = j;
      js.index = static_cast<size_t>(j - s.jobs.data());
      js.flows = job_flows(s, *j);
      js.src = js.flows.front().src;
      js.dst = js.flows.front().dst;
      js.message_bytes = pr.sweep_parameter == "message_bytes" ? static_cast<uint32_t>(pr.sweep_value) : j->message_bytes;
      js.connections = pr.sweep_parameter == "connections" ? static_cast<uint32_t>(pr.sweep_value) : j->connections;
      js.paths = j->transport == "rocev2" ? 1
                                          : (j->paths ? j->paths : static_cast<uint32_t>(transport::kDefaultPathsPerPlane) * p.planes);
      js.seed = s.seed + p.index;
      p.jobs.push_back(js);
    }
    p.sample_at_ns = bounds;
    for (size_t e = 0; e < s.timeline.size(); ++e) {
      const FaultEvent& ev = s.timeline[e];
      if (!ev.capture) continue;
      PlannedCapture c;
      c.event = e;
      c.label = ev.label;
      c.at_ns = ev.at_ns;
      c.from_ns = ev.at_ns - ev.capture->before_ns;
      c.to_ns = ev.at_ns + ev.capture->after_ns;
      c.window = *ev.capture;
      std::string name = capture_file_name(p.index, p.label, ev.label);
      // Two events of one label: the second file gets "-2" (and so on).
      for (int k = 2; std::any_of(p.captures.begin(), p.captures.end(),
                                  [&](const PlannedCapture& o) { return o.file == "captures/" + name; });
           ++k)
        name = capture_file_name(p.index, p.label, ev.label + " " + std::to_string(k));
      c.file = "captures/" + name;
      p.captures.push_back(std::move(c));
    }
    std::stable_sort(p.captures.begin(), p.captures.end(),
                     [](const PlannedCapture& a, const PlannedCapture& b) { return a.from_ns < b.from_ns; });
    out.push_back(std::move(p));
  }
  return out;
}

size_t sweep_points(const Scenario& s) { return s.sweep ? s.sweep->values.size() : 0; }

std::string sweep_point_error(const Scenario& s, size_t point, const std::string& field) {
  const size_t n = sweep_points(s);
  if (n == 0) return field + ": " + s.source + " has no sweep, so it has no points (a point is one value of sweep.values)";
  if (point >= n)
    return field + ": must be in [0, " + std::to_string(n - 1) + "], one point per sweep.values entry (got " +
           std::to_string(point) + ")";
  return {};
}

namespace {

// The plans a run goes through: all, or those of one sweep point.
std::vector<RunPlan> plans_for(const Scenario& s, std::optional<size_t> point) {
  std::vector<RunPlan> plans = plan_scenario(s);
  if (!point) return plans;
  if (const std::string e = sweep_point_error(s, *point, "point"); !e.empty()) throw std::invalid_argument(e);
  std::erase_if(plans, [&](const RunPlan& p) { return p.point != *point; });
  return plans;
}

struct PlanOutcome {
  std::vector<RunResult> runs;
  std::vector<CaptureResult> captures;
};

// One planned run through one backend: its results (the engine's columns
// added), and its progress lines through say.
PlanOutcome run_plan(const Scenario& s, const RunPlan& plan, Backend& backend, const Progress& say) {
  say("run " + std::to_string(plan.index) + "/" + std::to_string(plan.count) + ": " + plan.label + " (" +
      std::to_string(plan.jobs.size()) + (plan.jobs.size() > 1 ? " jobs" : " job") + ")");
  backend.prepare(plan);
  backend.start_jobs(plan);
  backend.start_timeline(plan);

  // Interval by interval to the duration, then (live) on until every job has
  // drained. Capture windows are armed as early as they can be (the first
  // now, each next one once the one before it has stopped), so that a slow
  // control plane cannot shorten them, and stopped when the run reaches
  // their end; the backend keeps only the frames inside each window.
  std::vector<FabricSample> samples{backend.sample_fabric()};
  bool stop_sent = false;
  Nanos t = 0;
  size_t capture_next = 0;    // plan.captures[capture_next] is the next to arm
  bool capture_open = false;  // plan.captures[capture_next - 1] is armed
  const auto capture_due = [&](Nanos until) {
    for (;;) {
      if (capture_open) {
        const PlannedCapture& c = plan.captures[capture_next - 1];
        if (c.to_ns > until) return;
        backend.run_until(c.to_ns);
        backend.stop_capture(plan, c);
        capture_open = false;
      }
      if (capture_next >= plan.captures.size()) return;
      backend.start_capture(plan, plan.captures[capture_next++]);
      capture_open = true;
    }
  };
  capture_due(0);
  for (size_t k = 0;; ++k) {
    t = k < plan.sample_at_ns.size() ? plan.sample_at_ns[k] : t + s.interval_ns;
    capture_due(t);
    const bool done = backend.run_until(t);
    samples.push_back(backend.sample_fabric());
    if (backend.real_time()) {
      const FabricSample &cur = samples.back(), &prev = samples[samples.size() - 2];
      const double dt = std::max(1e-9, cur.clock_s - prev.clock_s);
      double bytes = 0;
      std::string loads;
      for (size_t p = 0; p < cur.plane_bytes.size() && p < prev.plane_bytes.size(); ++p) {
        const double b = cur.plane_bytes[p] - prev.plane_bytes[p];
        bytes += b;
        loads += " " + fixed(100.0 * std::min(1.0, b * 8 / dt / plan.link_rate_bps), 0) + "%";
      }
      say("  " + fixed(cur.t_s, 2) + " s  fabric " + units::format_gbps(bytes * 8 / dt, 3) + "  plane load" + loads +
          "  queue " + fixed(cur.queue_bytes, 0) + " B");
    }
    if (done) break;
    if (!stop_sent && t > s.duration_ns + kDrainGraceNs) {
      stop_sent = true;
      backend.stop_jobs();
      say("  jobs still running " + fixed(static_cast<double>(kDrainGraceNs) / 1e9, 0) +
          " s after their duration: stopped");
    }
  }

  // A run that ended early stops its open window; later ones never started.
  if (capture_open) backend.stop_capture(plan, plan.captures[capture_next - 1]);

  std::vector<RunResult> results = backend.results(plan);
  for (RunResult& rr : results) {
    rr.sweep_parameter = plan.sweep_parameter;
    rr.sweep_value = plan.sweep_value;
    add_fabric_columns(s, samples, plan.planes, s.plane_capacity_bps(), &rr);
    rr.events.clear();
    for (const FaultEvent& e : s.timeline) rr.events.emplace_back(static_cast<double>(e.at_ns) / 1e9, e.label);
    say("  " + rr.job + ": " + rr.state + " " + units::format_gbps(rr.goodput_bps, 3) + ", " +
        std::to_string(rr.retransmits) + " retransmits, verification " + rr.verification);
  }
  std::vector<CaptureResult> captures = backend.capture_results(plan);
  for (size_t i = 0; i < captures.size() && i < plan.captures.size(); ++i) {
    CaptureResult& c = captures[i];
    const std::string ended = "the run ended at " + fixed(static_cast<double>(t) / 1e9, 3) + " s";
    if (t < plan.captures[i].from_ns) {
      c.note = "not captured: " + ended + ", before the window began" + (c.note.empty() ? "" : "; " + c.note);
      c.captured_from_s.reset();
      c.captured_to_s.reset();
    } else if (t < plan.captures[i].to_ns) {
      c.note += (c.note.empty() ? "" : "; ") + ended + ", before the window's end";
    }
    say("  capture " + c.event + " [" + fixed(c.from_s, 3) + ", " + fixed(c.to_s, 3) + "] s: " +
        (c.file.empty() ? std::string("no file") : c.file + ", " + std::to_string(c.frames) + " frames, " +
                                                       std::to_string(c.frames_not_written) + " not written") +
        (c.note.empty() ? "" : " (" + c.note + ")"));
  }
  return {std::move(results), std::move(captures)};
}

Report report_header(const Scenario& s, const Backend& backend, std::optional<size_t> point) {
  Report report;
  report.scenario_name = s.name;
  report.description = s.description;
  report.source = s.source;
  report.mode = backend.mode();
  report.version = METAROCE_VERSION;
  report.started_at = iso_now();
  report.seed = s.seed;
  report.scenario_yaml = s.yaml;
  report.planes = backend.planes();
  report.plane_rate_bps = s.plane_capacity_bps();
  report.duration_s = static_cast<double>(s.duration_ns) / 1e9;
  if (s.clos) {
    TopologySummary t;
    t.hosts = s.hosts_count;
    t.hosts_per_leaf = s.clos->hosts_per_leaf;
    t.leaves = s.clos->leaves(s.hosts_count);
    t.spines = s.clos->spines;
    t.host_rate_bps = s.clos->host_rate_bps;
    t.leaf_spine_rate_bps = s.clos->leaf_spine_rate_bps();
    t.oversubscription = s.clos->oversubscription();
    t.links = emulator_fabric(s, report.planes).link_count();
    report.topology = t;
  }
  if (point) report.point = SweepPoint{*point, sweep_points(s), s.sweep->parameter, s.sweep->values[*point]};
  return report;
}

}  // namespace

Report run_scenario(const Scenario& s, Backend& backend, const Progress& progress, std::optional<size_t> point) {
  if (const std::string e = check_runnable(s, backend.mode() == "live"); !e.empty()) throw std::invalid_argument(e);
  const Progress say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const std::vector<RunPlan> plans = plans_for(s, point);
  Report report = report_header(s, backend, point);
  for (const RunPlan& plan : plans) {
    PlanOutcome o = run_plan(s, plan, backend, say);
    for (RunResult& rr : o.runs) report.runs.push_back(std::move(rr));
    for (CaptureResult& c : o.captures) report.captures.push_back(std::move(c));
  }
  if (!point) report.assertions = evaluate_assertions(s, report.runs);
  return report;
}

Report run_scenario_parallel(const Scenario& s, const BackendFactory& make_backend, unsigned workers,
                             const Progress& progress, std::optional<size_t> point) {
  std::unique_ptr<Backend> first = make_backend();
  if (workers <= 1 || first->real_time()) return run_scenario(s, *first, progress, point);
  if (const std::string e = check_runnable(s, first->mode() == "live"); !e.empty()) throw std::invalid_argument(e);
  const std::vector<RunPlan> plans = plans_for(s, point);
  Report report = report_header(s, *first, point);
  std::vector<PlanOutcome> results(plans.size());
  std::vector<std::vector<std::string>> lines(plans.size());
  std::vector<char> done(plans.size(), 0);
  std::atomic<size_t> next{0};
  std::mutex print;  // guards done, printed and the progress callback
  size_t printed = 0;
  std::exception_ptr failure;
  // Each thread owns a backend and takes whole runs; a run's lines are held
  // back until every earlier run has printed, so the output reads as a
  // sequential run's does.
  const auto work = [&](Backend& backend) {
    for (size_t i; (i = next.fetch_add(1)) < plans.size();) {
      try {
        results[i] = run_plan(s, plans[i], backend, [&, i](const std::string& l) { lines[i].push_back(l); });
      } catch (...) {
        std::lock_guard<std::mutex> lock(print);
        if (!failure) failure = std::current_exception();
        next = plans.size();
      }
      std::lock_guard<std::mutex> lock(print);
      done[i] = 1;
      for (; printed < plans.size() && done[printed]; ++printed)
        if (progress)
          for (const std::string& l : lines[printed]) progress(l);
    }
  };
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::move(first));
  const unsigned n = std::min<unsigned>(workers, static_cast<unsigned>(plans.size()));
  for (unsigned w = 1; w < n; ++w) backends.push_back(make_backend());
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < n; ++w) threads.emplace_back(work, std::ref(*backends[w]));
  work(*backends[0]);
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  for (PlanOutcome& r : results) {
    for (RunResult& rr : r.runs) report.runs.push_back(std::move(rr));
    for (CaptureResult& c : r.captures) report.captures.push_back(std::move(c));
  }
  if (!point) report.assertions = evaluate_assertions(s, report.runs);
  return report;
}

std::optional<Report> merge_sweep_points(const std::vector<Report>& points, const std::vector<std::string>& names,
                                         std::string* error) {
  const auto fail = [error](const std::string& message) -> std::optional<Report> {
    if (error != nullptr) *error = message;
    return std::nullopt;
  };
  const auto name = [&](size_t i) { return i < names.size() ? names[i] : "point file " + std::to_string(i + 1); };
  if (points.empty()) return fail("no sweep points to merge");
  for (size_t i = 0; i < points.size(); ++i)
    if (!points[i].point)
      return fail(name(i) + ": point: missing: this is a whole run's report, not one sweep point's (scenario run --point I)");
  const Report& first = points[0];
  for (size_t i = 1; i < points.size(); ++i) {
    const Report& p = points[i];
    const auto differs = [&](const std::string& field, const std::string& got, const std::string& want) {
      return fail(name(i) + ": " + field + ": " + got + ", but " + name(0) + " has " + want +
                  " (only points of one sweep, run by one metarocectl, can be merged)");
    };
    if (p.scenario_yaml != first.scenario_yaml)
      return fail(name(i) + ": scenario_yaml: differs from " + name(0) +
                  "'s (points of different scenario files cannot be merged)");
    if (p.seed != first.seed) return differs("seed", std::to_string(p.seed), std::to_string(first.seed));
    if (p.mode != first.mode) return differs("mode", p.mode, first.mode);
    if (p.version != first.version) return differs("version", p.version, first.version);
  }
  std::string err;
  const std::optional<Scenario> parsed = parse_scenario_yaml(first.scenario_yaml, first.source, &err);
  if (!parsed) return fail(name(0) + ": scenario_yaml: " + err);
  const Scenario& s = *parsed;
  if (first.seed != s.seed)
    return fail(name(0) + ": seed: " + std::to_string(first.seed) + ", but its scenario_yaml says " + std::to_string(s.seed));
  const size_t n = sweep_points(s);
  if (n == 0) return fail(name(0) + ": scenario_yaml: the scenario has no sweep, so it has no points");
  const std::string range = "[0, " + std::to_string(n - 1) + "]";
  std::vector<size_t> at(n, points.size());  // point index -> position in points
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& pt = *points[i].point;
    if (pt.count != n)
      return fail(name(i) + ": point.count: " + std::to_string(pt.count) + ", but the scenario's sweep has " +
                  std::to_string(n) + " points");
    if (pt.index >= n) return fail(name(i) + ": point.index: must be in " + range + " (got " + std::to_string(pt.index) + ")");
    if (at[pt.index] != points.size())
      return fail(name(i) + ": point.index: point " + std::to_string(pt.index) + " given twice (also " + name(at[pt.index]) +
                  "); each point in " + range + " exactly once");
    if (pt.parameter != s.sweep->parameter || pt.value != s.sweep->values[pt.index])
      return fail(name(i) + ": point: " + pt.parameter + "=" + format_sweep_value(pt.parameter, pt.value) +
                  ", but point " + std::to_string(pt.index) + " of the scenario's sweep is " + s.sweep->parameter + "=" +
                  format_sweep_value(s.sweep->parameter, s.sweep->values[pt.index]));
    at[pt.index] = i;
  }
  std::string missing;
  size_t missing_count = 0;
  for (size_t k = 0; k < n; ++k)
    if (at[k] == points.size()) missing += (missing_count++ ? ", " : "") + std::to_string(k);
  if (missing_count > 0)
    return fail(std::string(missing_count > 1 ? "points " : "point ") + missing + " missing: point.index must cover " +
                range + ", each point exactly once (got " + std::to_string(points.size()) + " of " + std::to_string(n) +
                " points)");

  // Each point's runs must be the ones the plan gives it, in plan order.
  const std::vector<RunPlan> plans = plan_scenario(s);
  Report merged = first;
  merged.point.reset();
  merged.runs.clear();
  merged.assertions.clear();
  merged.captures.clear();
  for (size_t k = 0; k < n; ++k) {
    const Report& p = points[at[k]];
    merged.started_at = std::min(merged.started_at, p.started_at);  // ISO 8601 UTC: text order is time order
    size_t r = 0;
    for (const RunPlan& plan : plans) {
      if (plan.point != k) continue;
      for (const JobSpec& js : plan.jobs) {
        const std::string where = name(at[k]) + ": runs[" + std::to_string(r) + "]";
        if (r >= p.runs.size())
          return fail(where + ": missing: point " + std::to_string(k) + " has fewer runs than its plan");
        const RunResult& rr = p.runs[r++];
        if (rr.job != js.job->name || rr.seed != js.seed || rr.sweep_value != plan.sweep_value)
          return fail(where + ": job " + rr.job + ", seed " + std::to_string(rr.seed) + ", but the plan runs job " +
                      js.job->name + " with seed " + std::to_string(js.seed) + " there");
        merged.runs.push_back(rr);
      }
    }
    if (r != p.runs.size())
      return fail(name(at[k]) + ": runs: " + std::to_string(p.runs.size()) + ", but point " + std::to_string(k) +
                  " plans " + std::to_string(r));
    merged.captures.insert(merged.captures.end(), p.captures.begin(), p.captures.end());
  }
  merged.assertions = evaluate_assertions(s, merged.runs);
  return merged;
}

}  // namespace metaroce::scenario
