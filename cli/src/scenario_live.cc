#include "scenario_live.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "capture_files.h"
#include "metaroce/capture/pcapng.h"
#include "metaroce/emulator/fabric.h"
#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/fidelity.h"
#include "metaroce/scenario/scenario.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"
#include "scenario_requests.h"
#include "units.h"

namespace v1 = metaroce::v1;
namespace ms = metaroce::scenario;

namespace metarocectl {
namespace {

std::string state_text(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_DONE: return "done";
    case v1::JOB_STATE_FAILED: return "failed";
    case v1::JOB_STATE_STOPPED: return "stopped";
    default: return "running";
  }
}

bool terminal(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_STOPPED;
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

// A daemon's effective configuration (Daemon.GetConfig), as JSON.
nlohmann::json daemon_config(Client& c) {
  const auto config = c.call<v1::DaemonConfig>(
      "Daemon.GetConfig", [&](auto* ctx, auto* r) { return c.daemon().GetConfig(ctx, v1::GetConfigRequest{}, r); });
  return nlohmann::json::parse(config.json(), nullptr, /*allow_exceptions=*/false);
}

// The live daemons as a backend of the scenario engine: the fabric daemon
// takes the run's changes (Fabric.Reset, Fabric.Set, Fabric.LoadTimeline),
// the source hosts' daemons its jobs (Traffic.Start), and the run goes on in
// wall-clock time.
class LiveBackend final : public ms::Backend {
 public:
  LiveBackend(const ms::Scenario& s, const ClientOptions& options, const ms::Progress& progress, std::string out_dir)
      : s_(s), options_(options), out_dir_(std::move(out_dir)), fabric_(s.fabric, options), say_(progress) {
    for (const auto& [name, addr] : s.hosts) hosts_[name] = std::make_unique<Client>(addr, options);
    // Everyone must answer before anything changes.
    fabric_.call<v1::DaemonInfo>("Daemon.GetInfo",
                                 [&](auto* ctx, auto* r) { return fabric_.daemon().GetInfo(ctx, v1::GetInfoRequest{}, r); });
    for (auto& [name, c] : hosts_)
      infos_[name] = c->call<v1::DaemonInfo>(
          "Daemon.GetInfo", [&](auto* ctx, auto* r) { return c->daemon().GetInfo(ctx, v1::GetInfoRequest{}, r); });
    planes_ = show().planes();
    if (planes_ < s.planes)
      throw UsageError(fmt::format("topology.planes: the scenario needs {} planes, the fabric daemon at {} has {}",
                                   s.planes, s.fabric, planes_));
    check_deployment();
  }
  // Host links and pacing are set when the daemons start; a deployment
  // whose values differ from the scenario's would run another fabric under
  // the same file, so it is refused before anything changes, every
  // difference named (scripts/run-scenario.sh starts daemons that agree).
  void check_deployment() {
    const auto field = [](const nlohmann::json& j, std::initializer_list<const char*> path) -> const nlohmann::json* {
      const nlohmann::json* at = &j;
      for (const char* key : path) {
        if (!at->is_object() || !at->contains(key)) return nullptr;
        at = &(*at)[key];
      }
      return at->is_number() ? at : nullptr;
    };
    const nlohmann::json fc = daemon_config(fabric_);
    const auto* rate = field(fc, {"fabric", "port", "rate_bps"});
    const auto* queue = field(fc, {"fabric", "port", "queue_limit_bytes"});
    const auto* ecn = field(fc, {"fabric", "port", "ecn_threshold_bytes"});
    if (!rate || !queue || !ecn)
      throw UsageError(fmt::format("fabric: the daemon at {} reports no fabric.port settings (Daemon.GetConfig): "
                                   "is it a fabric daemon?", s_.fabric));
    ms::DeployedHostLinks links{s_.fabric, rate->get<double>(), queue->get<uint32_t>(), ecn->get<uint32_t>()};
    std::vector<ms::DeployedEndpoint> endpoints;
    for (const std::string& name : s_.host_order) {
      // A daemon that is both the fabric node and this host (one daemon per core) is asked once.
      const nlohmann::json ec = s_.hosts.at(name) == s_.fabric ? fc : daemon_config(*hosts_.at(name));
      const auto* pace = field(ec, {"endpoint", "port_rate_bps"});
      if (!pace)
        throw UsageError(fmt::format("hosts.{}: the daemon at {} reports no endpoint settings (Daemon.GetConfig): "
                                     "is it an endpoint daemon?", name, s_.hosts.at(name)));
      endpoints.push_back({name, s_.hosts.at(name), pace->get<double>()});
      // The shortest timeout any host's transports use: the fidelity guard's
      // bound on how long the fabric node may hold frames.
      if (const auto* min_rto = field(ec, {"endpoint", "min_rto_ns"})) {
        const auto ns = min_rto->get<ms::Nanos>();
        if (ns > 0 && (transport_min_rto_ns_ == 0 || ns < transport_min_rto_ns_)) transport_min_rto_ns_ = ns;
      }
    }
    const std::vector<std::string> problems = ms::deployment_mismatches(s_, links, endpoints);
    if (problems.empty()) return;
    std::string text = "the live daemons were started for another fabric than this scenario's, so its results "
                       "would not mean what the simulator's do:";
    for (const std::string& p : problems) text += "\n  - " + p;
    text += "\n  start the daemons with these values (scripts/run-scenario.sh writes such configs), or run --sim";
    throw UsageError(text);
  }

  ~LiveBackend() override {
    try {
      reset();  // leave the fabric as the daemon's configuration made it
    } catch (...) {
    }
  }

  std::string mode() const override { return "live"; }
  uint32_t planes() const override { return planes_; }
  bool real_time() const override { return true; }

  void prepare(const ms::RunPlan& plan) override {
    captures_.assign(plan.captures.size(), {});
    reset();
    for (const v1::SetLinksRequest& set : live_setup(plan))
      fabric_.call<v1::SetLinksResponse>("Fabric.Set",
                                         [&](auto* ctx, auto* r) { return fabric_.fabric().Set(ctx, set, r); });
    // The datapath's own counters before the run: the fidelity guard compares them with those after.
    counters_before_ = read_all();
  }

  void start_jobs(const ms::RunPlan& plan) override {
    started_.clear();
    for (const ms::JobSpec& js : plan.jobs) {
      const v1::StartJobRequest req = live_job(s_, js, path_source_ports(js, plan.planes, *js.job));
      Client* c = hosts_.at(js.job->from).get();
      const auto info = c->call<v1::JobInfo>("Traffic.Start", [&](auto* ctx, auto* r) { return c->traffic().Start(ctx, req, r); });
      started_.push_back({&js, c, info.id()});
    }
    // Bounded: a job that never starts sending is reported as it ends up.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      bool all = true;
      for (auto& st : started_) {
        const auto state = get(st).state();
        all = all && (state == v1::JOB_STATE_RUNNING || terminal(state));
      }
      if (all || std::chrono::steady_clock::now() > until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void start_timeline(const ms::RunPlan& plan) override {
    const v1::LoadTimelineRequest timeline = live_timeline(plan);
    origin_unix_ns_ = 0;
    if (timeline.events_size() > 0)
      origin_unix_ns_ = fabric_.call<v1::LoadTimelineResponse>("Fabric.LoadTimeline", [&](auto* ctx, auto* r) {
                                  return fabric_.fabric().LoadTimeline(ctx, timeline, r);
                                }).base_unix_ns();
    t0_ = std::chrono::steady_clock::now();
    // The run's t = 0 on the daemons' wall clock: the instant the fabric's
    // timeline counts from (its faults happen at origin + at), else now.
    if (origin_unix_ns_ == 0)
      origin_unix_ns_ = static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  }

  // A window: Capture.Start on every daemon it involves, armed ahead with
  // the window on their wall clock (live_capture_requests), Capture.Stop
  // once the run is past it, and after the run each daemon's file fetched
  // (Capture.Read) and merged into one file in the report's folder. A daemon
  // that refuses is named in the result's note; the run goes on.
  void start_capture(const ms::RunPlan& plan, const ms::PlannedCapture& c) override {
    LiveCapture& lc = captures_.at(static_cast<size_t>(&c - plan.captures.data()));
    lc.started = true;
    if (out_dir_.empty()) {
      lc.problems.push_back("no output folder (scenario run --out), so nothing was captured");
      return;
    }
    for (LiveCaptureRequest& r : live_capture_requests(s_, plan, c, origin_unix_ns_)) {
      Client* client = client_for(r.address);
      try {
        const auto info = client->call<v1::CaptureInfo>(
            "Capture.Start", [&](auto* ctx, auto* out) { return client->capture().Start(ctx, r.start, out); });
        lc.parts.push_back({std::move(r), client, info});
      } catch (const RpcError& e) {
        lc.problems.push_back(r.daemon + " did not capture: " + e.what());
        if (say_) say_("  capture " + c.label + ": " + r.daemon + ": " + e.what());
      }
    }
  }

  void stop_capture(const ms::RunPlan& plan, const ms::PlannedCapture& c) override {
    LiveCapture& lc = captures_.at(static_cast<size_t>(&c - plan.captures.data()));
    for (LiveCapturePart& part : lc.parts) {
      try {
        part.info = part.client->call<v1::CaptureInfo>(
            "Capture.Stop", [&](auto* ctx, auto* out) { return part.client->capture().Stop(ctx, v1::StopCaptureRequest{}, out); });
        part.stopped = true;
      } catch (const RpcError& e) {
        lc.problems.push_back(part.request.daemon + ": " + e.what());
      }
    }
  }

  std::vector<ms::CaptureResult> capture_results(const ms::RunPlan& plan) override {
    std::vector<ms::CaptureResult> out;
    for (size_t i = 0; i < plan.captures.size(); ++i) {
      const ms::PlannedCapture& c = plan.captures[i];
      LiveCapture& lc = captures_.at(i);
      ms::CaptureResult r = ms::capture_result_for(plan, c);
      r.t0_unix_ns = origin_unix_ns_;
      if (lc.started) collect(c, lc, &r);
      out.push_back(std::move(r));
    }
    return out;
  }

  bool run_until(ms::Nanos t_ns) override {
    std::this_thread::sleep_until(t0_ + std::chrono::nanoseconds(t_ns));
    bool done = true;
    for (auto& st : started_) done = done && terminal(get(st).state());
    return done;
  }

  ms::FabricSample sample_fabric() override {
    const auto st = show();
    ms::FabricSample s;
    s.t_s = s.clock_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    s.plane_bytes.assign(planes_, 0);
    for (const auto& l : st.links()) {
      if (l.plane() < planes_) s.plane_bytes[l.plane()] += static_cast<double>(l.bytes_out());
      s.queue_bytes = std::max(s.queue_bytes, static_cast<double>(l.queue_bytes()));
      s.ecn_marks += static_cast<double>(l.ecn_marks());
    }
    return s;
  }

  void stop_jobs() override {
    for (auto& st : started_) {
      v1::StopJobRequest stop;
      stop.set_id(st.id);
      try {
        st.client->call<v1::JobInfo>("Traffic.Stop", [&](auto* ctx, auto* r) { return st.client->traffic().Stop(ctx, stop, r); });
      } catch (const RpcError& e) {
        if (say_) say_(std::string("  ") + e.what());  // the job still ends: keep following it
      }
    }
  }

  std::vector<ms::RunResult> results(const ms::RunPlan&) override {
    ms::FidelityLimits limits = s_.fidelity;
    limits.transport_min_rto_ns = transport_min_rto_ns_;
    const ms::Fidelity fidelity = ms::assess_fidelity(counters_before_, read_all(), limits);
    for (const auto& problem : fidelity.problems)
      if (say_) say_("  not a faithful measurement: " + problem);
    std::vector<ms::RunResult> out;
    for (auto& st : started_) {
      const auto info = get(st);
      const auto& res = info.result();
      ms::RunResult rr;
      rr.job = st.spec->job->name;
      rr.transport = st.spec->job->transport;
      rr.op = st.spec->job->op;
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
      // By plane: JobResult.planes sums every path (paths lists only the first
      // 1,024 connections'); a daemon without planes lists every path.
      for (const auto& p : res.planes()) {
        if (p.plane() >= rr.planes.size()) rr.planes.resize(p.plane() + 1);
        ms::PlaneFigures& f = rr.planes[p.plane()];
        f.rtos += p.rtos(), f.retransmits += p.retransmits(), f.state_changes += p.state_changes();
      }
      if (res.planes_size() == 0)
        for (const auto& p : res.paths()) {
          if (p.plane() >= rr.planes.size()) rr.planes.resize(p.plane() + 1);
          ms::PlaneFigures& f = rr.planes[p.plane()];
          f.rtos += p.rtos(), f.retransmits += p.retransmits(), f.state_changes += p.state_changes();
        }
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
        i.messages = std::round(iv.message_rate() * static_cast<double>(iv.end_ns() - iv.start_ns()) / 1e9);
        i.retransmits = iv.retransmits();
        i.loss_seen = iv.loss_seen();
        i.rtos = iv.rtos();
        i.path_state_changes = iv.path_state_changes();
        rr.intervals.push_back(std::move(i));
      }
      out.push_back(std::move(rr));
    }
    return out;
  }

 private:
  struct LiveCapturePart {
    LiveCaptureRequest request;
    Client* client = nullptr;
    v1::CaptureInfo info;     // Capture.Start's answer, then Capture.Stop's
    bool stopped = false;
  };
  struct LiveCapture {
    bool started = false;
    std::vector<LiveCapturePart> parts;
    std::vector<std::string> problems;
  };

  Client* client_for(const std::string& address) {
    if (address == s_.fabric) return &fabric_;
    for (auto& [name, c] : hosts_)
      if (c->address() == address || s_.hosts.at(name) == address) return c.get();
    auto& extra = extra_clients_[address];
    if (!extra) extra = std::make_unique<Client>(address, options_);
    return extra.get();
  }

  // Fetches each daemon's file, merges them into out_dir_/c.file and fills r.
  void collect(const ms::PlannedCapture& c, LiveCapture& lc, ms::CaptureResult* r) {
    namespace fs = std::filesystem;
    const fs::path target = fs::path(out_dir_) / c.file;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    std::vector<metaroce::capture::PcapngFile> files;
    std::vector<std::string> names;
    // What every daemon covered: its window, from when its taps went on to
    // when they came off.
    std::optional<uint64_t> from_unix, to_unix;
    for (LiveCapturePart& part : lc.parts) {
      const v1::CaptureInfo& info = part.info;
      r->frames_not_written += info.packets_not_written();
      const uint64_t on = std::max(info.started_unix_ns(), part.request.start.spec().start_unix_ns());
      const uint64_t off = info.ended_unix_ns() ? std::min(info.ended_unix_ns(), part.request.start.spec().stop_unix_ns())
                                                : part.request.start.spec().stop_unix_ns();
      from_unix = std::max(from_unix.value_or(0), on);
      to_unix = std::min(to_unix.value_or(UINT64_MAX), off);
      if (!part.stopped) continue;
      if (info.stop_reason() != "window_end" && info.stop_reason() != "stopped")
        lc.problems.push_back(part.request.daemon + "'s capture ended early: " + info.stop_reason());
      if (info.started_unix_ns() > part.request.start.spec().start_unix_ns())
        lc.problems.push_back(part.request.daemon + "'s capture began " +
                              fmt::format("{:.1f}", static_cast<double>(info.started_unix_ns() -
                                                                        part.request.start.spec().start_unix_ns()) / 1e6) +
                              " ms into the window (Capture.Start was late)");
      const std::string local = target.string() + "." + part.request.daemon + ".part";
      try {
        fetch_capture_file(*part.client, part.request.start.spec().file(), local);
        std::string err;
        auto file = metaroce::capture::read_pcapng(local, &err, 2 * ms::kMaxCaptureBytesPerDaemon);
        if (!file) lc.problems.push_back(part.request.daemon + ": " + err);
        else files.push_back(std::move(*file)), names.push_back(part.request.daemon);
      } catch (const std::exception& e) {
        lc.problems.push_back(part.request.daemon + ": " + e.what());
      }
      fs::remove(local, ec);
    }
    if (from_unix && to_unix && *to_unix >= *from_unix) {
      r->captured_from_s = static_cast<double>(static_cast<int64_t>(*from_unix - origin_unix_ns_)) / 1e9;
      r->captured_to_s = static_cast<double>(static_cast<int64_t>(*to_unix - origin_unix_ns_)) / 1e9;
    }
    if (!files.empty()) {
      std::vector<metaroce::capture::PcapngSource> sources;
      for (size_t k = 0; k < files.size(); ++k) sources.push_back({names[k], &files[k]});
      const std::string comment =
          "metaroce-testbed live run: scenario " + s_.name + ", run " + std::to_string(r->run) + " (" + r->run_label +
          "), window [" + fmt::format("{:.3f}", r->from_s) + " s, " + fmt::format("{:.3f}", r->to_s) + " s] around \"" +
          c.label + "\". Timestamps are the daemons' wall clocks; the run's t = 0 (the instant the fabric's timeline "
          "counts from) is " + std::to_string(origin_unix_ns_) + " ns since the Unix epoch. Interfaces are named "
          "after the daemon and plane.";
      std::string err;
      const auto written = metaroce::capture::merge_pcapng(sources, target.string(), "metarocectl " METAROCE_VERSION, comment, &err);
      if (!written) {
        lc.problems.push_back(err);
      } else {
        r->file = c.file;
        r->frames = written->frames_written;
        r->frames_truncated = written->frames_truncated;
        r->sources = names;
      }
    }
    std::string note = "wall-clock timestamps; the run's t = 0 is the instant the fabric's timeline counts from";
    for (const std::string& p : lc.problems) note += "; " + p;
    r->note = note;
  }

  struct Started {
    const ms::JobSpec* spec;
    Client* client;
    uint64_t id = 0;
  };

  v1::FabricState show() {
    return fabric_.call<v1::FabricState>(
        "Fabric.Show", [&](auto* ctx, auto* r) { return fabric_.fabric().Show(ctx, v1::ShowFabricRequest{}, r); });
  }
  void reset() {
    fabric_.call<v1::SetLinksResponse>(
        "Fabric.Reset", [&](auto* ctx, auto* r) { return fabric_.fabric().Reset(ctx, v1::ResetFabricRequest{}, r); });
  }
  v1::JobInfo get(Started& st) {
    v1::GetJobRequest g;
    g.set_id(st.id);
    return st.client->call<v1::JobInfo>("Traffic.Get", [&](auto* ctx, auto* r) { return st.client->traffic().Get(ctx, g, r); });
  }
  // The job's paths placed on ECMP links as the simulator places them
  // (ms::path_source_ports), from the endpoints' real addresses and ports.
  std::vector<uint16_t> path_source_ports(const ms::JobSpec& js, uint32_t planes, const ms::Job& j) const {
    const v1::DaemonInfo& from = infos_.at(j.from);
    const v1::DaemonInfo& to = infos_.at(j.to);
    const auto src = metaroce::wire::parse_ipv4(from.endpoint_address().c_str());
    const auto dst = metaroce::wire::parse_ipv4(to.endpoint_address().c_str());
    if (!src || !dst)
      throw UsageError(fmt::format("hosts: {} and {} must run endpoints (addresses '{}', '{}')", j.from, j.to,
                                   from.endpoint_address(), to.endpoint_address()));
    ms::FlowEnds ends;
    ends.src_ip = *src;
    ends.dst_ip = *dst;
    ends.dst_port = js.rocev2() ? metaroce::wire::rocev2::kUdpPort : static_cast<uint16_t>(to.endpoint_udp_port());
    // The fabric daemon hashes with the emulator's default salt, as the simulator does.
    ends.hash_seed = metaroce::emulator::FabricConfig{}.hash_seed;
    return ms::path_source_ports(js, planes, s_.ecmp_links, ends);
  }

  std::vector<ms::DaemonCounters> read_all() {
    std::vector<ms::DaemonCounters> v;
    // A host whose daemon also runs the fabric node (role both, same address)
    // is read once, as "NAME+fabric": read twice, its drops would count twice.
    std::string fabric_host;
    for (const auto& [name, addr] : s_.hosts)
      if (addr == s_.fabric) fabric_host = name;
    v.push_back(read_counters(fabric_, fabric_host.empty() ? "fabric" : fabric_host + "+fabric"));
    for (auto& [name, c] : hosts_)
      if (name != fabric_host) v.push_back(read_counters(*c, name));
    return v;
  }

  const ms::Scenario& s_;
  ClientOptions options_;
  std::string out_dir_;  // the report's folder: capture windows go to out_dir_/captures/
  Client fabric_;
  std::map<std::string, std::unique_ptr<Client>> hosts_;
  std::map<std::string, v1::DaemonInfo> infos_;  // GetInfo of each host, at the start
  ms::Progress say_;
  uint32_t planes_ = 0;
  std::vector<ms::DaemonCounters> counters_before_;
  ms::Nanos transport_min_rto_ns_ = 0;  // the hosts' shortest endpoint.min_rto_ns (check_deployment); 0: none reported
  std::vector<Started> started_;
  std::chrono::steady_clock::time_point t0_;
  uint64_t origin_unix_ns_ = 0;  // the run's t = 0 on the daemons' wall clock (captures)
  std::vector<LiveCapture> captures_;  // by plan.captures index, for the current run
  std::map<std::string, std::unique_ptr<Client>> extra_clients_;
};

}  // namespace

ms::Report run_scenario_live(const ms::Scenario& s, const ClientOptions& options,
                             const std::function<void(const std::string&)>& progress, std::optional<size_t> point,
                             const std::string& out_dir) {
  LiveBackend backend(s, options, progress, out_dir);
  return ms::run_scenario(s, backend, progress, point);
}

}  // namespace metarocectl
