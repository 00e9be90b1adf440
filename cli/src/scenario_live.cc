#include "scenario_live.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <thread>

#include "metaroce/scenario/fidelity.h"
#include "metaroce/scenario/scenario.h"
#include "units.h"

namespace v1 = metaroce::v1;
namespace ms = metaroce::scenario;

namespace metarocectl {
namespace {

v1::LinkSelector to_selector(const ms::Selector& s) {
  v1::LinkSelector out;
  if (s.plane) out.set_plane(*s.plane);
  if (s.ecmp) out.set_ecmp(*s.ecmp);
  out.set_direction(s.direction);
  if (s.host_a) out.set_host_a(*s.host_a);
  if (s.host_b) out.set_host_b(*s.host_b);
  return out;
}

v1::LinkPatch to_patch(const ms::LinkSettings& l) {
  v1::LinkPatch p;
  if (l.loss) p.set_loss_probability(*l.loss);
  if (l.delay_ns || l.jitter_ns) {
    p.mutable_delay()->set_delay_ns(l.delay_ns.value_or(0));
    p.mutable_delay()->set_jitter_ns(l.jitter_ns.value_or(0));
    p.mutable_delay()->set_distribution("uniform");
  }
  if (l.duplicate) p.set_duplicate_probability(*l.duplicate);
  if (l.corrupt) p.set_corrupt_probability(*l.corrupt);
  if (l.reorder) p.set_reorder_probability(*l.reorder);
  if (l.reorder_delay_ns) p.set_reorder_delay_ns(*l.reorder_delay_ns);
  if (l.rate_bps) p.set_rate_bps(*l.rate_bps);
  if (l.ecn_threshold_bytes) p.set_ecn_threshold_bytes(*l.ecn_threshold_bytes);
  if (l.queue_limit_bytes) p.set_queue_limit_bytes(*l.queue_limit_bytes);
  return p;
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

std::string state_text(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_DONE: return "done";
    case v1::JOB_STATE_FAILED: return "failed";
    case v1::JOB_STATE_STOPPED: return "stopped";
    default: return "running";
  }
}

// How long after its duration a run's jobs may keep draining before they are stopped.
constexpr double kDrainGraceS = 10;

bool terminal(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_STOPPED;
}

// Fabric load samples taken while a run goes: time since the timeline base,
// cumulative bytes per plane, deepest backlog, cumulative ECN marks.
struct FabricSample {
  double t_s = 0;
  std::vector<double> plane_bytes;
  double queue_bytes = 0;
  double ecn_marks = 0;
};

FabricSample sample_fabric(Client& fabric, uint32_t planes, double t_s) {
  const auto st = fabric.call<v1::FabricState>(
      "Fabric.Show", [&](auto* ctx, auto* r) { return fabric.fabric().Show(ctx, v1::ShowFabricRequest{}, r); });
  FabricSample s;
  s.t_s = t_s;
  s.plane_bytes.assign(planes, 0);
  for (const auto& l : st.links()) {
    if (l.plane() < planes) s.plane_bytes[l.plane()] += static_cast<double>(l.bytes_out());
    s.queue_bytes = std::max(s.queue_bytes, static_cast<double>(l.queue_bytes()));
    s.ecn_marks += static_cast<double>(l.ecn_marks());
  }
  return s;
}

// The sample taken closest to time t.
const FabricSample* nearest(const std::vector<FabricSample>& v, double t) {
  const FabricSample* best = nullptr;
  for (const auto& s : v)
    if (!best || std::abs(s.t_s - t) < std::abs(best->t_s - t)) best = &s;
  return best;
}

// Every daemon's counters now, for the fidelity guard (fidelity.h).
ms::DaemonCounters read_counters(Client& c, const std::string& name) {
  const auto all = c.call<v1::Counters>(
      "Daemon.GetCounters", [&](auto* ctx, auto* r) { return c.daemon().GetCounters(ctx, v1::GetCountersRequest{}, r); });
  ms::DaemonCounters out;
  out.daemon = name;
  out.counters.reserve(static_cast<size_t>(all.counters_size()));
  for (const v1::Counter& k : all.counters())
    out.counters.push_back({k.name(), std::map<std::string, std::string>(k.labels().begin(), k.labels().end()), k.value()});
  return out;
}

}  // namespace

v1::LoadTimelineRequest timeline_request(const ms::Scenario& s) {
  v1::LoadTimelineRequest req;
  for (const auto& e : s.timeline) {
    auto add = [&](int64_t at, const std::string& label) {
      auto* ev = req.add_events();
      ev->set_at_ns(at);
      *ev->mutable_selector() = to_selector(e.selector);
      ev->set_label(label);
      return ev;
    };
    switch (e.action) {
      case ms::FaultEvent::Action::kSet: *add(e.at_ns, e.label)->mutable_set() = to_patch(e.set); break;
      case ms::FaultEvent::Action::kDown: add(e.at_ns, e.label)->set_down(true); break;
      case ms::FaultEvent::Action::kUp: add(e.at_ns, e.label)->set_up(true); break;
      case ms::FaultEvent::Action::kFlap: {
        auto* f = add(e.at_ns, e.label)->mutable_set()->mutable_flap();
        f->set_period_ns(e.flap_period_ns);
        f->set_down_ns(e.flap_down_ns);
        break;
      }
      case ms::FaultEvent::Action::kRamp: {
        // A ramp is its steps: from -> to in `steps` equal increments.
        const uint32_t steps = std::max<uint32_t>(1, e.ramp_steps);
        for (uint32_t i = 0; i <= steps; ++i) {
          const double v = e.ramp_from + (e.ramp_to - e.ramp_from) * i / steps;
          ms::LinkSettings l;
          if (e.ramp_field == "loss") l.loss = v;
          else if (e.ramp_field == "delay_ns" || e.ramp_field == "delay") l.delay_ns = static_cast<int64_t>(v);
          else if (e.ramp_field == "rate_bps" || e.ramp_field == "rate") l.rate_bps = v;
          else if (e.ramp_field == "duplicate") l.duplicate = v;
          else if (e.ramp_field == "corrupt") l.corrupt = v;
          *add(e.at_ns + e.ramp_duration_ns * i / steps, i == 0 ? e.label : e.label + " step " + std::to_string(i))
               ->mutable_set() = to_patch(l);
        }
        break;
      }
    }
  }
  return req;
}

ms::Report run_scenario_live(const ms::Scenario& s, const ClientOptions& options,
                             const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  Client fabric(s.fabric, options);
  std::map<std::string, std::unique_ptr<Client>> hosts;
  for (const auto& [name, addr] : s.hosts) hosts[name] = std::make_unique<Client>(addr, options);
  // Everyone must answer before anything changes.
  fabric.call<v1::DaemonInfo>("Daemon.GetInfo",
                              [&](auto* ctx, auto* r) { return fabric.daemon().GetInfo(ctx, v1::GetInfoRequest{}, r); });
  for (auto& [name, c] : hosts)
    c->call<v1::DaemonInfo>("Daemon.GetInfo", [&](auto* ctx, auto* r) { return c->daemon().GetInfo(ctx, v1::GetInfoRequest{}, r); });
  const auto shown = fabric.call<v1::FabricState>(
      "Fabric.Show", [&](auto* ctx, auto* r) { return fabric.fabric().Show(ctx, v1::ShowFabricRequest{}, r); });
  const uint32_t planes = shown.planes();
  // The emulated links run at the scenario's rate (as in the simulator), set with the base below.
  const double plane_rate = s.link_rate_bps();
  if (planes < s.planes)
    throw UsageError(fmt::format("topology.planes: the scenario needs {} planes, the fabric daemon at {} has {}", s.planes,
                                 s.fabric, planes));

  ms::Report report;
  report.scenario_name = s.name;
  report.description = s.description;
  report.source = s.source;
  report.mode = "live";
  report.version = METAROCE_VERSION;
  report.started_at = iso_now();
  report.seed = s.seed;
  report.scenario_yaml = s.yaml;
  report.planes = planes;
  report.plane_rate_bps = plane_rate;

  const v1::LoadTimelineRequest timeline = timeline_request(s);
  uint64_t run_index = 0;
  for (const ms::PlannedRun& pr : ms::plan_runs(s)) {
    ++run_index;
    // 1. The fabric: base settings (and the sweep value), no timeline.
    fabric.call<v1::SetLinksResponse>(
        "Fabric.Reset", [&](auto* ctx, auto* r) { return fabric.fabric().Reset(ctx, v1::ResetFabricRequest{}, r); });
    ms::LinkSettings base = s.base;
    base.rate_bps = plane_rate;
    if (pr.sweep_parameter == "loss") base.loss = pr.sweep_value;
    {
      v1::SetLinksRequest set;
      *set.mutable_patch() = to_patch(base);
      fabric.call<v1::SetLinksResponse>("Fabric.Set",
                                        [&](auto* ctx, auto* r) { return fabric.fabric().Set(ctx, set, r); });
    }
    if (pr.sweep_parameter == "skew_ns")
      for (uint32_t p = 1; p < planes; ++p) {
        v1::SetLinksRequest set;
        set.mutable_selector()->set_plane(p);
        ms::LinkSettings l;
        l.delay_ns = base.delay_ns.value_or(0) + static_cast<int64_t>(pr.sweep_value * p);  // as in the simulator: base + p x skew
        *set.mutable_patch() = to_patch(l);
        fabric.call<v1::SetLinksResponse>("Fabric.Set",
                                          [&](auto* ctx, auto* r) { return fabric.fabric().Set(ctx, set, r); });
      }

    // The datapath's own counters before the run: the fidelity guard compares them with those after.
    auto read_all = [&] {
      std::vector<ms::DaemonCounters> v;
      v.push_back(read_counters(fabric, "fabric"));
      for (auto& [name, c] : hosts) v.push_back(read_counters(*c, name));
      return v;
    };
    const std::vector<ms::DaemonCounters> counters_before = read_all();

    // 2. The jobs of this run, on their source daemons.
    struct Started {
      const ms::Job* job;
      Client* client;
      uint64_t id = 0;
    };
    std::vector<Started> started;
    for (const ms::Job* j : pr.jobs) {
      v1::JobSpec spec;
      static const std::map<std::string, v1::Operation> ops = {
          {"write", v1::OPERATION_WRITE}, {"write_imm", v1::OPERATION_WRITE_IMM}, {"read", v1::OPERATION_READ},
          {"send", v1::OPERATION_SEND},   {"fetch_add", v1::OPERATION_FETCH_ADD}, {"cmp_swap", v1::OPERATION_CMP_SWAP}};
      spec.set_operation(ops.at(j->op));
      spec.add_peers(s.hosts.at(j->to));
      uint32_t size = j->message_bytes, conns = j->connections;
      if (pr.sweep_parameter == "message_bytes") size = static_cast<uint32_t>(pr.sweep_value);
      if (pr.sweep_parameter == "connections") conns = static_cast<uint32_t>(pr.sweep_value);
      spec.add_message_bytes(size);
      spec.set_connections(conns);
      const bool rocev2 = j->transport == "rocev2";
      spec.mutable_params()->set_transport(rocev2 ? v1::TRANSPORT_ROCEV2 : v1::TRANSPORT_METAROCE);
      spec.mutable_params()->set_paths(rocev2 ? 1 : (j->paths ? j->paths : 2 * planes));
      spec.mutable_params()->set_streams(j->streams);
      spec.mutable_params()->set_queue_depth(j->queue_depth);
      spec.set_duration_ns(s.duration_ns);
      spec.set_interval_ns(s.interval_ns);
      spec.set_seed(s.seed + run_index);
      Client* c = hosts.at(j->from).get();
      v1::StartJobRequest req;
      *req.mutable_spec() = spec;
      const auto info = c->call<v1::JobInfo>("Traffic.Start", [&](auto* ctx, auto* r) { return c->traffic().Start(ctx, req, r); });
      started.push_back({j, c, info.id()});
    }
    std::string label = pr.jobs[0]->name;
    if (!pr.sweep_parameter.empty()) label += fmt::format(" {}={}", pr.sweep_parameter, pr.sweep_value);
    say(fmt::format("run {}: {} ({} job{})", run_index, label, started.size(), started.size() > 1 ? "s" : ""));

    // 3. When every job sends, the timeline starts (its instants are relative to that).
    auto get = [](Started& st) {
      v1::GetJobRequest g;
      g.set_id(st.id);
      return st.client->call<v1::JobInfo>("Traffic.Get", [&](auto* ctx, auto* r) { return st.client->traffic().Get(ctx, g, r); });
    };
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      bool all = true;
      for (auto& st : started) {
        const auto info = get(st);
        all = all && (info.state() == v1::JOB_STATE_RUNNING || terminal(info.state()));
      }
      if (all || std::chrono::steady_clock::now() > until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (timeline.events_size() > 0)
      fabric.call<v1::LoadTimelineResponse>(
          "Fabric.LoadTimeline", [&](auto* ctx, auto* r) { return fabric.fabric().LoadTimeline(ctx, timeline, r); });
    const auto t0 = std::chrono::steady_clock::now();

    // 4. Follow: fabric samples every interval until every job has ended.
    std::vector<FabricSample> samples;
    samples.push_back(sample_fabric(fabric, planes, 0));
    const auto interval = std::chrono::nanoseconds(s.interval_ns);
    auto next = t0 + interval;
    bool stop_sent = false;
    for (;;) {
      std::this_thread::sleep_until(next);
      next += interval;
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      samples.push_back(sample_fabric(fabric, planes, t));
      bool done = true;
      for (auto& st : started) {
        const auto info = get(st);
        done = done && terminal(info.state());
      }
      // Live progress: what the fabric carried in the last interval.
      const FabricSample& cur = samples.back();
      const FabricSample& prev = samples[samples.size() - 2];
      double bytes = 0;
      std::string loads;
      for (uint32_t p = 0; p < planes; ++p) {
        const double b = cur.plane_bytes[p] - prev.plane_bytes[p];
        bytes += b;
        const double dt = std::max(1e-9, cur.t_s - prev.t_s);
        loads += fmt::format(" {:.0f}%", plane_rate > 0 ? 100.0 * std::min(1.0, b * 8 / dt / plane_rate) : 0.0);
      }
      say(fmt::format("  {:6.2f} s  fabric {:7.3f} Gb/s  plane load{}  queue {:.0f} B", t,
                      bytes * 8 / std::max(1e-9, cur.t_s - prev.t_s) / 1e9, loads, cur.queue_bytes));
      if (done) break;
      // A job still draining well after its duration is stuck (e.g. RoCEv2
      // retransmitting under reordering): stop it once; the daemon ends it
      // within its own drain limit, and the run records the state it ends in.
      if (!stop_sent && t > static_cast<double>(s.duration_ns) / 1e9 + kDrainGraceS) {
        stop_sent = true;
        for (auto& st : started) {
          v1::StopJobRequest stop;
          stop.set_id(st.id);
          try {
            st.client->call<v1::JobInfo>("Traffic.Stop",
                                         [&](auto* ctx, auto* r) { return st.client->traffic().Stop(ctx, stop, r); });
          } catch (const RpcError& e) {
            say(std::string("  ") + e.what());  // the job still ends: keep following it
          }
        }
        say(fmt::format("  jobs still running {:.0f} s after their duration: stopped", kDrainGraceS));
      }
    }

    // 5. Results, one RunResult per job of the run, each with the run's fidelity.
    const ms::Fidelity fidelity = ms::assess_fidelity(counters_before, read_all(), s.fidelity);
    for (const auto& problem : fidelity.problems) say("  not a faithful measurement: " + problem);
    for (auto& st : started) {
      const auto info = get(st);
      const auto& res = info.result();
      ms::RunResult rr;
      rr.job = st.job->name;
      rr.transport = st.job->transport;
      rr.op = st.job->op;
      rr.sweep_parameter = pr.sweep_parameter;
      rr.sweep_value = pr.sweep_value;
      rr.state = state_text(info.state());
      rr.error = info.error();
      rr.seed = info.seed();
      for (const auto& bw : res.bandwidth()) {
        rr.bytes += static_cast<uint64_t>(bw.average_bps() * static_cast<double>(bw.duration_ns()) / 8e9);
        rr.messages += bw.iterations();
        rr.goodput_bps = bw.average_bps();
      }
      rr.retransmits = res.retransmits();
      rr.spurious_retransmits = res.spurious_retransmits();
      rr.rtos = res.rtos();
      rr.data_packets = res.data_packets_sent();
      rr.path_state_changes = res.path_state_changes();
      rr.verified = res.verified();
      rr.verification = res.verification();
      rr.fidelity = fidelity;
      // A data error is a failed check; "off" or "not checked" (a job forced to stop) is not one.
      const std::string& v = res.verification();
      rr.verify_failures = v.rfind("requester", 0) == 0 || v.rfind("responder", 0) == 0 ? 1 : 0;
      if (res.latency_size() > 0) {
        const auto& l = res.latency(0);
        rr.latency.samples = l.samples();
        rr.latency.min_us = l.min_ns() / 1e3;
        rr.latency.median_us = l.median_ns() / 1e3;
        rr.latency.avg_us = l.average_ns() / 1e3;
        rr.latency.p99_us = l.p99_ns() / 1e3;
        rr.latency.p999_us = l.p999_ns() / 1e3;
        rr.latency.max_us = l.max_ns() / 1e3;
      }
      for (const auto& iv : res.intervals()) {
        ms::Interval i;
        i.t0_s = iv.start_ns() / 1e9;
        i.t1_s = iv.end_ns() / 1e9;
        i.goodput_bps = iv.goodput_bps();
        i.retransmits = iv.retransmits();
        i.loss_seen = iv.loss_seen();
        const FabricSample* a = nearest(samples, i.t0_s);
        const FabricSample* b = nearest(samples, i.t1_s);
        if (a && b && b->t_s > a->t_s) {
          const double dt = b->t_s - a->t_s;
          for (uint32_t p = 0; p < planes; ++p) {
            const double bytes = b->plane_bytes[p] - a->plane_bytes[p];
            i.plane_bytes.push_back(bytes);
            i.plane_utilisation.push_back(plane_rate > 0 ? std::min(1.0, bytes * 8 / dt / plane_rate) : 0);
          }
          i.queue_bytes = b->queue_bytes;
          i.ecn_marks = static_cast<uint64_t>(b->ecn_marks - a->ecn_marks);
        }
        rr.intervals.push_back(std::move(i));
      }
      for (const auto& e : timeline.events()) rr.events.emplace_back(e.at_ns() / 1e9, e.label());
      say(fmt::format("  {}: {} {:.3f} Gb/s, {} retransmits, verification {}", rr.job, rr.state, rr.goodput_bps / 1e9,
                      rr.retransmits, rr.verification));
      report.runs.push_back(std::move(rr));
    }
  }
  fabric.call<v1::SetLinksResponse>(
      "Fabric.Reset", [&](auto* ctx, auto* r) { return fabric.fabric().Reset(ctx, v1::ResetFabricRequest{}, r); });
  report.assertions = ms::evaluate_assertions(s, report.runs);
  return report;
}

}  // namespace metarocectl
