// The simulator backend (sim_backend.h) and run_scenario_sim.
#include "metaroce/scenario/sim_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>

#include "metaroce/capture/frame_comment.h"
#include "metaroce/capture/pcapng.h"
#include "metaroce/emulator/fabric.h"
#include "metaroce/scenario/scenario.h"
#include "metaroce/sim/ring_allreduce.h"
#include "metaroce/sim/simulator.h"
#include "metaroce/sim/workload.h"
#include "metaroce/transport/endpoint.h"
#include "metaroce/units/units.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::scenario {

emulator::Timeline sim_timeline(const RunPlan& plan, double time_scale) {
  emulator::Timeline tl;
  for (const FabricChange& c : plan.timeline)
    tl.set(std::llround(static_cast<double>(c.at_ns) * time_scale), emulator_selector(c.selector), emulator_patch(c, time_scale),
           c.label);
  return tl;
}

namespace {
// A job's workload: depth WRITEs outstanding per connection and stream, each
// in its own destination slot (sim/workload.h).
// Flow f of the job gets its own pattern seed (flow 0 the job's, as before
// jobs had flows).
sim::WriteWorkloadConfig sim_workload_config(const JobSpec& spec, size_t flow = 0) {
  sim::WriteWorkloadConfig wc;
  wc.message_bytes = spec.message_bytes;
  wc.depth = spec.job->queue_depth;
  wc.streams = static_cast<uint16_t>(spec.job->streams);
  wc.slots = 0;  // as many destination slots as WRITEs outstanding (depth)
  wc.seed = spec.seed * 1000 + spec.index + 1 + (static_cast<uint64_t>(flow) << 20);
  wc.record_latency = true;
  wc.messages = spec.job->messages;
  return wc;
}
}  // namespace

std::vector<uint32_t> sim_completion_queue_depths(const RunPlan& plan, uint32_t hosts) {
  std::vector<uint64_t> n(hosts, 0);
  for (const JobSpec& spec : plan.jobs)
    for (const Flow& f : spec.flows)
      if (f.src < hosts)
        // A ring position has one step outstanding: a WRITE per connection (sim/ring_allreduce.h).
        n[f.src] += spec.job->pattern == Pattern::kRingAllReduce
                        ? spec.connections
                        : sim::WriteWorkload::max_outstanding(spec.connections, sim_workload_config(spec));
  std::vector<uint32_t> out(hosts);
  for (uint32_t h = 0; h < hosts; ++h) out[h] = static_cast<uint32_t>(std::clamp<uint64_t>(n[h], 1, 1u << 24));
  return out;
}

namespace {

constexpr uint32_t kIpBase = 0x0A000001;        // simulated only: 10.0.0.1, 10.0.0.2, ...
constexpr uint32_t kRemoteIdOffset = 0x100000;  // responder-side ids (fit RoCEv2's 24-bit QPNs)

uint32_t ip_of(uint32_t h) { return kIpBase + h; }
wire::MacAddr mac_of(uint32_t h) {
  return {0x02, 0, 0, 0, static_cast<uint8_t>((h + 1) >> 8), static_cast<uint8_t>(h + 1)};
}

LatencySummary summarise(std::vector<Nanos> v) {
  LatencySummary l;
  if (v.empty()) return l;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  auto q = [&](double p) {
    const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
    return static_cast<double>(v[std::min(n - 1, i == 0 ? 0 : i - 1)]) / 1e3;
  };
  double sum = 0;
  for (Nanos x : v) sum += static_cast<double>(x);
  l.samples = n;
  l.min_us = static_cast<double>(v.front()) / 1e3;
  l.max_us = static_cast<double>(v.back()) / 1e3;
  l.avg_us = sum / static_cast<double>(n) / 1e3;
  l.median_us = q(0.5);
  l.p99_us = q(0.99);
  l.p999_us = q(0.999);
  l.cdf_us.reserve(kLatencyCdfPoints);
  for (size_t i = 0; i < kLatencyCdfPoints; ++i)
    l.cdf_us.push_back(i == 0 ? l.min_us : q(static_cast<double>(i) / static_cast<double>(kLatencyCdfPoints - 1)));
  return l;
}

// Cumulative job counters at a sampling instant.
struct JobSnapshot {
  double t_s = 0, clock_s = 0;
  std::vector<uint64_t> bytes, messages, retransmits, packets, rtos, path_state_changes;  // per job
};

// One (sender, receiver) flow of a job: its connections (ids local to the
// sender; the receiver's are id + kRemoteIdOffset) and its workload (a ring
// all-reduce's flows are its hops, and one workload drives them all).
struct SimFlow {
  uint32_t src = 0, dst = 0;
  std::vector<uint32_t> conns;
  std::unique_ptr<sim::WriteWorkload> work;  // null in a ring all-reduce
};

struct SimJob {
  JobSpec spec;
  transport::TransportKind kind = transport::TransportKind::kMetaRoCE;
  std::vector<SimFlow> flows;
  std::unique_ptr<sim::RingAllReduceWorkload> ring;  // pattern ring_allreduce
  std::string first_error;

  template <typename F>
  uint64_t sum(F f) const {
    uint64_t n = 0;
    for (const SimFlow& fl : flows) n += f(*fl.work);
    return n;
  }
  uint64_t bytes() const {
    return ring ? ring->bytes_completed() : sum([](const sim::WriteWorkload& w) { return w.bytes_completed(); });
  }
  uint64_t messages() const {
    return ring ? ring->messages_completed() : sum([](const sim::WriteWorkload& w) { return w.messages_completed(); });
  }
};

// Which job and flow a connection (by its id at the sender) belongs to.
struct ConnectionOwner {
  SimJob* job = nullptr;
  uint32_t flow = 0;
};

// Everything one run builds; the simulator and fabric refer to each other, so
// a run's objects live and die together.
struct SimRun {
  explicit SimRun(const emulator::FabricConfig& fc) : fabric(fc), sim_fabric(fabric), sim(sim_fabric) {}
  emulator::Fabric fabric;
  sim::EmulatedFabric sim_fabric;
  sim::Simulator sim;
  uint32_t hosts = 0, planes = 0;
  std::vector<std::unique_ptr<transport::Endpoint>> eps;
  std::vector<SimJob> jobs;
  std::vector<ConnectionOwner> owner;  // by the sender's connection id
  std::vector<bool> sends;             // by host: some flow sends from it
  std::vector<JobSnapshot> snaps;
};

// One capture window of a run in the simulator: the frames as the emulated
// fabric takes, drops and delivers them, on the simulated clock.
struct SimCapture {
  std::unique_ptr<capture::PcapngWriter> writer;
  CaptureResult result;
};

class SimBackend final : public Backend {
 public:
  SimBackend(const Scenario& s, std::string out_dir) : s_(s), out_dir_(std::move(out_dir)) {}
  std::string mode() const override { return "sim"; }
  uint32_t planes() const override { return s_.planes; }
  bool real_time() const override { return false; }

  Nanos sc(Nanos t) const { return std::llround(static_cast<double>(t) * s_.sim.time_scale); }

  void prepare(const RunPlan& plan) override {
    emulator::FabricConfig fc = emulator_fabric(s_, plan.planes);
    for (uint32_t h = 0; h < fc.hosts; ++h) fc.host_ips.push_back(ip_of(h));
    if (auto e = emulator::validate(fc)) throw std::invalid_argument("fabric: " + *e);
    run_.reset();
    run_ = std::make_unique<SimRun>(fc);
    captures_.clear();
    captures_.resize(plan.captures.size());
    t_ns_ = 0;
    run_->hosts = fc.hosts;
    run_->planes = fc.planes;
    // Frame buffers as large as this run's frames, not jumbo: at cluster
    // scale every frame in every emulated queue holds one.
    run_->sim.set_frame_capacity(transport::max_frame_bytes(s_.mtu_payload));
    // The setup changes every ECMP link; the host ports take the same queue
    // and marking settings. On a clos a selector names host links too.
    for (const FabricChange& c : plan.setup) {
      const emulator::LinkPatch p = emulator_patch(c, s_.sim.time_scale);
      if (auto e = run_->fabric.apply(emulator_selector(c.selector), p, 0)) throw std::invalid_argument(c.label + ": " + *e);
      if (s_.clos || c.selector.plane || c.selector.ecmp || c.selector.host_a) continue;
      emulator::LinkConfig port = fc.port;
      if (p.queue_limit_bytes) port.queue_limit_bytes = *p.queue_limit_bytes;
      if (p.ecn_threshold_bytes) port.ecn_threshold_bytes = *p.ecn_threshold_bytes;
      for (uint32_t pl = 0; pl < fc.planes; ++pl)
        if (auto e = run_->fabric.set_port_config(pl, port)) throw std::invalid_argument(c.label + ": " + *e);
    }
  }

  void start_jobs(const RunPlan& plan) override {
    using namespace transport;
    SimRun& r = *run_;
    const uint32_t H = r.hosts, P = r.planes;
    const std::vector<uint32_t> cq_depth = sim_completion_queue_depths(plan, H);
    for (uint32_t h = 0; h < H; ++h) {
      EndpointConfig c;
      c.ip = ip_of(h);
      c.mac = mac_of(h);
      c.inbound_capacity_bps = plan.link_rate_bps * P;
      c.completion_queue_depth = cq_depth[h];
      r.eps.push_back(std::make_unique<Endpoint>(c));
      r.sim.add_host(r.eps.back().get());
    }
    r.sends.assign(H, false);
    r.jobs.resize(plan.jobs.size());
    // Connection ids count up over the run's jobs and flows; the responders'
    // are the same + kRemoteIdOffset, so both must stay below it.
    uint32_t next_id = 1;
    for (size_t ji = 0; ji < plan.jobs.size(); ++ji) {
      SimJob& js = r.jobs[ji];
      js.spec = plan.jobs[ji];
      const JobSpec& spec = js.spec;
      const Job& j = *spec.job;
      js.kind = spec.rocev2() ? TransportKind::kRoCEv2 : TransportKind::kMetaRoCE;
      js.flows.resize(spec.flows.size());
      for (size_t fi = 0; fi < spec.flows.size(); ++fi) {
        SimFlow& fl = js.flows[fi];
        fl.src = spec.flows[fi].src;
        fl.dst = spec.flows[fi].dst;
        // The flow as a pair job: its ends choose the ports and the first spine.
        JobSpec pair = spec;
        pair.src = fl.src;
        pair.dst = fl.dst;
        FlowEnds ends;
        ends.src_ip = ip_of(fl.src);
        ends.dst_ip = ip_of(fl.dst);
        ends.dst_port = js.kind == TransportKind::kRoCEv2 ? wire::rocev2::kUdpPort : wire::kDefaultUdpPort;
        ends.hash_seed = r.fabric.config().hash_seed;
        const std::vector<uint16_t> ports =
            path_source_ports(pair, P, s_.ecmp_width(), ends, s_.clos ? clos_first_spine(pair, P) : 0);
        if (next_id + spec.connections >= kRemoteIdOffset)
          throw std::invalid_argument("jobs: the run's jobs have more than " + std::to_string(kRemoteIdOffset - 1) +
                                      " connections in all, more than the simulator numbers");
        for (uint32_t c = 0; c < spec.connections; ++c) {
          ConnectionConfig ca;
          ca.transport = js.kind;
          ca.local_id = next_id++;
          ca.remote_id = ca.local_id + kRemoteIdOffset;
          ca.peer_ip = ip_of(fl.dst);
          ca.peer_mac = mac_of(fl.dst);
          if (js.kind == TransportKind::kMetaRoCE) {
            // Path i on plane i % planes; its ECMP link is path_source_ports'.
            for (uint32_t i = 0; i < spec.paths; ++i)
              ca.paths.push_back({static_cast<uint8_t>(i % P), ports[c * spec.paths + i]});
          } else {
            // A RoCEv2 QP is pinned to one path: connection c on plane c % planes.
            ca.paths.push_back({static_cast<uint8_t>(c % P), ports[c]});
          }
          ca.streams = static_cast<uint16_t>(j.streams);
          ca.max_outstanding_per_stream = j.queue_depth;
          ca.recv_window_messages = std::max<uint32_t>(128, j.queue_depth);
          ca.max_message_bytes = std::max<uint32_t>(spec.message_bytes, 4096);
          ca.mtu_payload = s_.mtu_payload;
          // Timer floors: the engine's, for an ideal clock
          // (kParamMinRto.engine_default), not the live daemons'
          // (kParamMinRto.default_value). The simulator compresses the
          // scenario's time (sim.time_scale) but not the transport's timers,
          // so a 2 ms floor would make every reaction 50x slower against the
          // faults than live (tried: plane-failure kept 0.39, not 0.75).
          ConnectionConfig cb = ca;
          std::swap(cb.local_id, cb.remote_id);
          cb.peer_ip = ip_of(fl.src);
          cb.peer_mac = mac_of(fl.src);
          std::string err;
          if (!r.eps[fl.src]->create_connection(ca, &err) || !r.eps[fl.dst]->create_connection(cb, &err))
            throw std::invalid_argument("jobs[" + std::to_string(spec.index) + "]: connection: " + err);
          fl.conns.push_back(ca.local_id);
          if (r.owner.size() <= ca.local_id) r.owner.resize(ca.local_id + 1);
          r.owner[ca.local_id] = {&js, static_cast<uint32_t>(fi)};
        }
        if (j.pattern != Pattern::kRingAllReduce)
          fl.work = std::make_unique<sim::WriteWorkload>(r.sim, *r.eps[fl.src], static_cast<int>(fl.src), *r.eps[fl.dst],
                                                         fl.conns, sim_workload_config(spec, fi));
        r.sends[fl.src] = true;
      }
      if (j.pattern == Pattern::kRingAllReduce) {
        // The hops in ring order: flow k is host k of the set to host k + 1.
        std::vector<transport::Endpoint*> eps;
        std::vector<int> hosts;
        std::vector<std::vector<uint32_t>> conns;
        for (const SimFlow& fl : js.flows) {
          eps.push_back(r.eps[fl.src].get());
          hosts.push_back(static_cast<int>(fl.src));
          conns.push_back(fl.conns);
        }
        sim::RingAllReduceConfig rc;
        rc.buffer_bytes = spec.message_bytes;
        rc.iterations = j.messages;
        rc.seed = sim_workload_config(spec).seed;
        rc.record_latency = true;
        js.ring = std::make_unique<sim::RingAllReduceWorkload>(r.sim, std::move(eps), std::move(hosts), std::move(conns), rc);
      }
    }
    // Several jobs and flows may send from one host: poll its completions
    // here and hand each to the flow that owns the connection.
    r.sim.on_host_activity([&r](int h) {
      if (!r.sends[h]) return;
      Completion wc[64];
      size_t n;
      while ((n = r.eps[h]->poll_completions(wc)) > 0)
        for (size_t i = 0; i < n; ++i) {
          const ConnectionOwner o = wc[i].conn < r.owner.size() ? r.owner[wc[i].conn] : ConnectionOwner{};
          if (!o.job || o.job->flows[o.flow].src != static_cast<uint32_t>(h)) continue;
          if (wc[i].status != WcStatus::kSuccess && o.job->first_error.empty())
            o.job->first_error = wc_status_name(wc[i].status);
          if (o.job->ring) o.job->ring->on_completion(h, wc[i]);
          else o.job->flows[o.flow].work->on_completion(wc[i]);
        }
    });
    for (SimJob& js : r.jobs) {
      if (js.ring) js.ring->start();
      for (SimFlow& fl : js.flows)
        if (fl.work) fl.work->start();
    }
  }

  void start_timeline(const RunPlan& plan) override {
    SimRun& r = *run_;
    emulator::Timeline tl = sim_timeline(plan, s_.sim.time_scale);
    if (auto e = tl.validate(r.fabric.config())) throw std::invalid_argument(*e);
    // Changes take effect at their instants even when no frame passes then.
    for (const auto& e : tl.events()) r.sim.at(e.at_ns, [&r, t = e.at_ns] { r.sim_fabric.apply_due(t); });
    r.sim_fabric.set_timeline(std::move(tl));
    t_ns_ = 0;
  }

  bool run_until(Nanos t_ns) override {
    run_->sim.run_until(sc(t_ns));
    t_ns_ = t_ns;
    return t_ns >= s_.duration_ns;  // simulated jobs end with the run, nothing drains
  }

  FabricSample sample_fabric() override {
    SimRun& r = *run_;
    const Nanos now = r.sim.now();
    JobSnapshot js;
    js.t_s = static_cast<double>(t_ns_) / 1e9;
    js.clock_s = static_cast<double>(now) / 1e9;
    for (const SimJob& j : r.jobs) {
      uint64_t retx = 0, pkts = 0, rtos = 0, changes = 0;
      for (const SimFlow& fl : j.flows)
        for (uint32_t c : fl.conns) {
          const transport::ConnectionStats st = r.eps[fl.src]->stats(c);
          retx += st.retransmits;
          pkts += st.data_packets_sent;
          rtos += st.rtos;
          changes += st.path_state_changes();
        }
      js.bytes.push_back(j.bytes());
      js.messages.push_back(j.messages());
      js.retransmits.push_back(retx);
      js.packets.push_back(pkts);
      js.rtos.push_back(rtos);
      js.path_state_changes.push_back(changes);
    }
    r.snaps.push_back(std::move(js));
    FabricSample f;
    f.t_s = r.snaps.back().t_s;
    f.clock_s = r.snaps.back().clock_s;
    const emulator::FabricCounters c = r.fabric.counters();
    for (const auto& p : c.per_plane) f.plane_bytes.push_back(static_cast<double>(p.bytes_out));
    f.ecn_marks = static_cast<double>(c.total.ecn_marks);
    f.queue_bytes = static_cast<double>(r.fabric.deepest_queue(now));
    if (s_.clos) {
      const uint32_t leaves = r.fabric.config().leaves(), spines = r.fabric.config().spines;
      f.tier_bytes.resize(r.planes);
      for (uint32_t p = 0; p < r.planes; ++p) {
        TierBytes& t = f.tier_bytes[p];
        for (uint32_t h = 0; h < r.hosts; ++h)
          for (emulator::Link* l : {&r.fabric.uplink(p, h), &r.fabric.downlink(p, h)})
            t.host_links.push_back(static_cast<double>(l->counters().bytes_out));
        for (uint32_t l = 0; l < leaves; ++l)
          for (uint32_t sp = 0; sp < spines; ++sp)
            for (bool up : {true, false})
              t.leaf_spine_links.push_back(static_cast<double>(r.fabric.leaf_spine_link(p, l, sp, up).counters().bytes_out));
      }
    }
    return f;
  }

  void stop_jobs() override {}  // never needed: run_until ends every simulated run at its duration

  // A window's frames (armed ahead: only those from c.from_ns to c.to_ns are
  // kept): fabric points (in before the emulator, out after it
  // with what it did, drops with their causes) and/or the hosts' ports (tx =
  // the fabric's in, rx = its out: the simulator has no wire between them),
  // one pcapng interface per source and plane, as the live merge names them.
  void start_capture(const RunPlan& plan, const PlannedCapture& c) override {
    SimCapture& cap = captures_.at(static_cast<size_t>(&c - plan.captures.data()));
    cap.result = capture_result_for(plan, c);
    if (out_dir_.empty()) {
      cap.result.note = "no file: the run was given no output folder (scenario run --out)";
      return;
    }
    const double scale = s_.sim.time_scale;
    const bool fabric = c.window.where != CaptureWindow::Where::kEndpoints;
    const bool endpoints = c.window.where != CaptureWindow::Where::kFabric;
    const uint32_t P = run_->planes, H = run_->hosts;
    const uint32_t snap = c.window.snap_length ? c.window.snap_length : capture::kDefaultSnapLength;
    std::vector<capture::PcapngInterface> interfaces;  // fabric planes, then each host's planes
    if (fabric)
      for (uint32_t p = 0; p < P; ++p) interfaces.push_back({"fabric plane" + std::to_string(p), snap});
    if (endpoints)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t p = 0; p < P; ++p) interfaces.push_back({s_.host_order[h] + " plane" + std::to_string(p), snap});
    const std::string path = out_dir_ + "/" + c.file;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const std::string comment =
        "metaroce-testbed simulator: scenario " + s_.name + ", run " + std::to_string(plan.index) + " (" + plan.label +
        "), window [" + units::trimmed_fixed(cap.result.from_s, 6) + " s, " + units::trimmed_fixed(cap.result.to_s, 6) +
        " s] of scenario time around \"" + c.label + "\". Timestamps are simulated time since the run's start "
        "(shown as 1970-01-01 00:00:00); scenario time = simulated time / sim.time_scale (" + units::trimmed_fixed(scale, 6) +
        "). Frames are the bytes the simulated endpoints sent (hosts 10.0.0.1, 10.0.0.2, ...) and the emulator's verdicts.";
    cap.writer = std::make_unique<capture::PcapngWriter>(path, interfaces, "metarocectl " METAROCE_VERSION " (simulator)", comment);
    if (!cap.writer->ok()) {
      cap.result.note = "no file: " + cap.writer->error();
      cap.writer.reset();
      return;
    }
    cap.result.file = c.file;
    cap.result.sources = {"simulator"};
    cap.result.captured_from_s = cap.result.from_s;
    uint64_t plane_mask = 0;
    for (uint32_t p : c.window.planes) plane_mask |= 1ull << p;
    if (c.window.planes.empty()) plane_mask = ~0ull;
    capture::PcapngWriter* w = cap.writer.get();
    const Nanos from = sc(c.from_ns), until = sc(c.to_ns);  // the window on the simulated clock
    run_->sim.on_frame([w, fabric, endpoints, P, plane_mask, from, until](const sim::FrameEvent& e) {
      if (e.at < from || e.at > until || !((plane_mask >> e.plane) & 1)) return;
      std::array<char, capture::kFrameCommentBytes> buf;
      std::array<char, emulator::kFrameMarksTextBytes> marks;
      const auto put = [&](uint32_t interface, capture::CapturePoint point, const capture::FrameFate& fate) {
        w->write(interface, static_cast<uint64_t>(e.at), e.frame,
                 capture::frame_comment(point, static_cast<uint32_t>(e.host), fate, buf));
      };
      const uint32_t host_if = (fabric ? P : 0) + static_cast<uint32_t>(e.host) * P + e.plane;
      using K = sim::FrameEvent::Kind;
      using CP = capture::CapturePoint;
      switch (e.kind) {
        case K::kSent:
          if (endpoints) put(host_if, CP::kEndpointTx, {});
          if (fabric) put(e.plane, CP::kFabricIn, {});
          break;
        case K::kDropped:
          if (fabric) put(e.plane, CP::kFabricDropped, {emulator::drop_cause_name(e.drop), {}});
          break;
        case K::kDelivered:
          if (fabric) put(e.plane, CP::kFabricOut, {{}, emulator::frame_marks_text(e.marks, marks)});
          if (endpoints) put(host_if, CP::kEndpointRx, {});
          break;
      }
    });
  }

  void stop_capture(const RunPlan& plan, const PlannedCapture& c) override {
    SimCapture& cap = captures_.at(static_cast<size_t>(&c - plan.captures.data()));
    if (!cap.writer) return;
    run_->sim.on_frame({});
    cap.writer->flush();
    const capture::PcapngCounters& k = cap.writer->counters();
    cap.result.frames = k.frames_written;
    cap.result.frames_not_written = k.frames_not_written;
    cap.result.frames_truncated = k.frames_truncated;
    cap.result.captured_to_s = std::min(cap.result.to_s, static_cast<double>(t_ns_) / 1e9);
    cap.result.note = "simulated: timestamps are simulated time from the run's start (scenario time x " +
                      units::trimmed_fixed(s_.sim.time_scale, 6) + ")";
    cap.writer.reset();  // closes the file
  }

  std::vector<CaptureResult> capture_results(const RunPlan& plan) override {
    std::vector<CaptureResult> out;
    for (size_t i = 0; i < plan.captures.size(); ++i)
      out.push_back(i < captures_.size() && captures_[i].result.run ? captures_[i].result
                                                                    : capture_result_for(plan, plan.captures[i]));
    return out;
  }

  std::vector<RunResult> results(const RunPlan&) override {
    SimRun& r = *run_;
    std::vector<RunResult> out;
    const double sim_seconds = static_cast<double>(r.sim.now()) / 1e9;
    for (size_t ji = 0; ji < r.jobs.size(); ++ji) {
      const SimJob& js = r.jobs[ji];
      RunResult rr;
      rr.job = js.spec.job->name;
      rr.transport = js.spec.job->transport;
      rr.op = js.spec.job->op;
      rr.seed = js.spec.seed;
      rr.bytes = js.bytes();
      rr.messages = js.messages();
      rr.goodput_bps = sim_seconds > 0 ? 8.0 * static_cast<double>(rr.bytes) / sim_seconds : 0;
      std::vector<Nanos> latencies;
      uint64_t work_errors = 0, cq_lost = 0;
      std::string overflowed;  // the first sender whose completion queue overflowed
      std::vector<bool> counted(r.hosts, false);
      for (const SimFlow& fl : js.flows) {
        for (uint32_t c : fl.conns) {
          const transport::ConnectionStats sa = r.eps[fl.src]->stats(c);
          rr.data_packets += sa.data_packets_sent;
          rr.retransmits += sa.retransmits;
          rr.rtos += sa.rtos;
          if (js.kind == transport::TransportKind::kMetaRoCE) {
            rr.spurious_retransmits += sa.spurious_retransmits;
          } else {
            // Go-back-N: the responder sees them as duplicates of PSNs it had accepted.
            rr.spurious_retransmits += r.eps[fl.dst]->stats(c + kRemoteIdOffset).duplicates_received;
          }
          for (const transport::PathStats& p : sa.paths) {
            rr.path_state_changes += p.state_changes;
            if (p.plane >= rr.planes.size()) rr.planes.resize(p.plane + 1);
            PlaneFigures& f = rr.planes[p.plane];
            f.rtos += p.rtos, f.retransmits += p.retransmits, f.state_changes += p.state_changes;
          }
        }
        if (fl.work) {
          const std::vector<uint64_t> b = fl.work->bytes_by_connection();
          rr.connection_bytes.insert(rr.connection_bytes.end(), b.begin(), b.end());
          latencies.insert(latencies.end(), fl.work->latencies().begin(), fl.work->latencies().end());
          rr.verify_failures += fl.work->verify_failures();
          work_errors += fl.work->error_completions();
        }
        if (!counted[fl.src]) {
          counted[fl.src] = true;
          const uint64_t lost = r.eps[fl.src]->counters().completion_queue_overflow;
          if (lost && overflowed.empty()) overflowed = s_.host_order[fl.src];
          cq_lost += lost;
        }
      }
      if (js.ring) {
        rr.connection_bytes = js.ring->bytes_by_connection();
        latencies = js.ring->latencies();  // one per all-reduce iteration
        rr.verify_failures = js.ring->verify_failures();
        work_errors = js.ring->error_completions();
      }
      rr.jain_fairness = jain_index(rr.connection_bytes);
      rr.sim_events = r.sim.events_processed();
      // Sized to what the host's jobs can have outstanding, the queue cannot
      // overflow; if it ever did, completions were lost: say so, never silently.
      const uint64_t errors = work_errors + cq_lost;
      rr.verified = rr.messages > 0 && rr.verify_failures == 0 && errors == 0;
      const std::string& first_error = js.ring && !js.ring->first_error().empty() ? js.ring->first_error() : js.first_error;
      const std::string first = first_error.empty() ? "" : " (first: " + first_error + ")";
      if (rr.verified) {
        rr.verification = "passed";
      } else if (rr.verify_failures > 0) {
        rr.verification = std::to_string(rr.verify_failures) + " of " + std::to_string(rr.messages) +
                          " messages differed from what was written";
      } else if (errors > 0) {
        rr.verification = std::to_string(errors) + " WRITEs failed" + first;
      } else {
        rr.verification = "no message completed";
      }
      // A finite job (messages per connection) that the run ended before it
      // finished did not succeed: its completion times miss the slowest flows.
      const uint64_t planned =
          js.ring ? js.spec.job->messages : js.spec.job->messages * js.spec.connections * js.flows.size();
      const uint64_t finished = js.ring ? js.ring->iterations_completed() : rr.messages;
      if (errors > 0) {
        rr.state = "failed";
        rr.error = cq_lost > 0 ? std::to_string(cq_lost) + " completions lost: host " + overflowed +
                                     "'s completion queue overflowed"
                               : std::to_string(errors) + " WRITEs completed with an error" + first;
      } else if (planned > 0 && finished < planned) {
        rr.state = "stopped";
        rr.error = std::to_string(finished) + " of " + std::to_string(planned) +
                   (js.ring ? " all-reduce iterations" : " messages") +
                   " completed before the run's end (duration): not every flow finished";
      }
      rr.latency = summarise(std::move(latencies));
      for (size_t k = 1; k < r.snaps.size(); ++k) {
        const JobSnapshot &a = r.snaps[k - 1], &b = r.snaps[k];
        const double dt = b.clock_s - a.clock_s;  // simulated seconds
        if (dt <= 0) continue;
        Interval iv;
        iv.t0_s = a.t_s;
        iv.t1_s = b.t_s;
        iv.goodput_bps = 8.0 * static_cast<double>(b.bytes[ji] - a.bytes[ji]) / dt;
        iv.messages = static_cast<double>(b.messages[ji] - a.messages[ji]);
        iv.retransmits = b.retransmits[ji] - a.retransmits[ji];
        const uint64_t pkts = b.packets[ji] - a.packets[ji];
        iv.loss_seen = pkts > 0 ? static_cast<double>(iv.retransmits) / static_cast<double>(pkts) : 0;
        iv.rtos = b.rtos[ji] - a.rtos[ji];
        iv.path_state_changes = b.path_state_changes[ji] - a.path_state_changes[ji];
        rr.intervals.push_back(std::move(iv));
      }
      out.push_back(std::move(rr));
    }
    return out;
  }

 private:
  const Scenario& s_;
  std::string out_dir_;              // the report's folder (captures go under it); "" = none
  std::unique_ptr<SimRun> run_;
  std::vector<SimCapture> captures_;  // by plan.captures index, for the current run
  Nanos t_ns_ = 0;
};

}  // namespace

Report run_scenario_sim(const Scenario& s, const std::function<void(const std::string&)>& progress, unsigned workers,
                        std::optional<size_t> point, const std::string& out_dir) {
  if (workers == 0) workers = std::max(1u, std::thread::hardware_concurrency());
  return run_scenario_parallel(s, [&s, &out_dir] { return std::make_unique<SimBackend>(s, out_dir); }, workers, progress,
                               point);
}

}  // namespace metaroce::scenario
