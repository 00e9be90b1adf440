// run_scenario_sim: every planned run of a scenario in the deterministic
// simulator (the real transport engine and emulator in virtual time).
//
// Scenario time is scaled by sim.time_scale (timeline instants, flap periods,
// ramp lengths, duration and interval; link delays are not), because the
// simulated fabric has microsecond RTTs where the software datapath has
// milliseconds. Reports carry scenario seconds on the time axis and simulated
// rates (bits per simulated second), so plots line up with live runs.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>
#include <stdexcept>

#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/timeline.h"
#include "metaroce/scenario/scenario.h"
#include "metaroce/sim/simulator.h"
#include "metaroce/sim/workload.h"
#include "metaroce/transport/endpoint.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::scenario {

namespace detail {  // scenario.cc
std::string trim_number(double v, int max_decimals);
std::string format_sweep_value(const std::string& parameter, double v);
}  // namespace detail

namespace {

constexpr uint32_t kIpBase = 0x0A000001;        // simulated only: 10.0.0.1, 10.0.0.2, ...
constexpr uint32_t kRemoteIdOffset = 0x100000;  // responder-side ids (fit RoCEv2's 24-bit QPNs)
constexpr uint32_t kDefaultQueueLimit = 4u << 20;    // as run_transfer / the loss sweep
constexpr uint32_t kDefaultEcnThreshold = 256 * 1024;
constexpr uint16_t kRoCEv2Port = 4791;

uint32_t ip_of(uint32_t h) { return kIpBase + h; }
wire::MacAddr mac_of(uint32_t h) {
  return {0x02, 0, 0, 0, static_cast<uint8_t>((h + 1) >> 8), static_cast<uint8_t>(h + 1)};
}

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

emulator::LinkPatch to_patch(const LinkSettings& l) {
  emulator::LinkPatch p;
  if (l.loss) {
    emulator::LossConfig loss;
    loss.kind = *l.loss > 0 ? emulator::LossConfig::Kind::kBernoulli : emulator::LossConfig::Kind::kNone;
    loss.probability = *l.loss;
    p.loss = loss;
  }
  if (l.delay_ns || l.jitter_ns) {  // as the live runner: delay and jitter together (uniform, FIFO)
    emulator::DelayConfig d;
    d.delay_ns = l.delay_ns.value_or(0);
    d.jitter_ns = l.jitter_ns.value_or(0);
    p.delay = d;
  }
  if (l.duplicate) p.duplicate_probability = *l.duplicate;
  if (l.corrupt) p.corrupt_probability = *l.corrupt;
  if (l.reorder) p.reorder_probability = *l.reorder;
  if (l.reorder_delay_ns) p.reorder_delay_ns = *l.reorder_delay_ns;
  if (l.rate_bps) p.rate_bps = *l.rate_bps;
  if (l.ecn_threshold_bytes) p.ecn_threshold_bytes = *l.ecn_threshold_bytes;
  if (l.queue_limit_bytes) p.queue_limit_bytes = *l.queue_limit_bytes;
  return p;
}

emulator::LinkSelector to_selector(const Selector& s) {
  emulator::LinkSelector out;
  out.plane = s.plane;
  out.ecmp = s.ecmp;
  out.host_a = s.host_a;
  out.host_b = s.host_b;
  out.direction = s.direction == "a_to_b"   ? emulator::LinkSelector::Direction::kAToB
                  : s.direction == "b_to_a" ? emulator::LinkSelector::Direction::kBToA
                                            : emulator::LinkSelector::Direction::kBoth;
  return out;
}

// The scenario's timeline in simulated time.
emulator::Timeline sim_timeline(const Scenario& s) {
  const double ts = s.sim.time_scale;
  auto sc = [ts](Nanos t) { return static_cast<Nanos>(std::llround(static_cast<double>(t) * ts)); };
  emulator::Timeline tl;
  for (const FaultEvent& e : s.timeline) {
    const emulator::LinkSelector sel = to_selector(e.selector);
    emulator::LinkPatch p;
    switch (e.action) {
      case FaultEvent::Action::kSet: tl.set(sc(e.at_ns), sel, to_patch(e.set), e.label); break;
      case FaultEvent::Action::kDown:
        p.up = false;
        tl.set(sc(e.at_ns), sel, p, e.label);
        break;
      case FaultEvent::Action::kUp:
        p.up = true;
        tl.set(sc(e.at_ns), sel, p, e.label);
        break;
      case FaultEvent::Action::kFlap:
        if (e.flap_period_ns > 0) {
          const Nanos period = std::max<Nanos>(2, sc(e.flap_period_ns));
          const Nanos down = std::min(sc(e.flap_down_ns), period - 1);
          p.flap = emulator::FlapConfig{period, down, sc(e.at_ns)};
        } else {
          p.flap = emulator::FlapConfig{};  // stop, and leave the link up (as Timeline::flap_stop)
          p.up = true;
        }
        tl.set(sc(e.at_ns), sel, p, e.label);
        break;
      case FaultEvent::Action::kRamp: {
        // The same steps the live runner loads: from -> to in `steps` equal increments.
        const uint32_t steps = std::max<uint32_t>(1, e.ramp_steps);
        for (uint32_t i = 0; i <= steps; ++i) {
          const double v = e.ramp_from + (e.ramp_to - e.ramp_from) * i / steps;
          LinkSettings l;
          if (e.ramp_field == "loss") l.loss = v;
          else if (e.ramp_field == "delay_ns") l.delay_ns = static_cast<Nanos>(std::llround(v));
          else if (e.ramp_field == "rate_bps") l.rate_bps = v;
          else if (e.ramp_field == "duplicate") l.duplicate = v;
          else if (e.ramp_field == "corrupt") l.corrupt = v;
          const Nanos at = e.at_ns + e.ramp_duration_ns * static_cast<Nanos>(i) / static_cast<Nanos>(steps);
          tl.set(sc(at), sel, to_patch(l), i == 0 ? e.label : e.label + " step " + std::to_string(i));
        }
        break;
      }
    }
  }
  return tl;
}

// Fabric state at a sampling instant (cumulative counters).
struct Snapshot {
  std::vector<uint64_t> job_bytes, job_retransmits, job_packets;
  std::vector<uint64_t> plane_bytes;
  uint64_t ecn_marks = 0;
  double queue_bytes = 0;
};

struct JobState {
  const Job* job = nullptr;
  size_t index = 0;  // in s.jobs
  transport::TransportKind kind = transport::TransportKind::kMetaRoCE;
  uint32_t src = 0, dst = 0;
  std::vector<uint32_t> conns;
  std::unique_ptr<sim::WriteWorkload> work;
  uint64_t error_completions = 0;
  std::string first_error;
};

// A UDP source port (the path's ECMP entropy) for a path from host `from` to
// `to` that hashes onto ECMP link `want` of its plane: the k-th path (or QP)
// on a plane takes link k % ecmp_links, so paths spread evenly over the ECMP
// links and a fault on one link hits a known share of them. Searched from a
// per-(job, connection, path) start, so it is deterministic.
uint16_t path_port(const emulator::Fabric& fabric, uint32_t from, uint32_t to, uint16_t dst_port, size_t job,
                   uint32_t conn, uint32_t index, uint32_t want) {
  const uint32_t start = static_cast<uint32_t>(((job * 4099 + conn * 131 + index) * 97) % 16384);
  std::vector<uint8_t> frame(wire::kUdpFrameHeaderBytes);
  wire::UdpFlow flow;
  flow.src_ip = ip_of(from);
  flow.dst_ip = ip_of(to);
  flow.dst_port = dst_port;
  for (uint32_t i = 0; i < 16384; ++i) {
    const auto port = static_cast<uint16_t>(49152 + (start + i) % 16384);
    flow.src_port = port;
    wire::encode_udp_headers(frame, flow, wire::Ecn::kNotEct, 0, 0);
    if (static_cast<uint32_t>(std::max(0, fabric.ecmp_index(frame))) == want) return port;
  }
  return static_cast<uint16_t>(49152 + start);
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
  return l;
}

std::vector<RunResult> run_one(const Scenario& s, const PlannedRun& pr) {
  using namespace transport;
  const double ts = s.sim.time_scale;
  auto sc = [ts](Nanos t) { return static_cast<Nanos>(std::llround(static_cast<double>(t) * ts)); };
  const uint32_t H = s.hosts_count;
  const uint32_t P = pr.sweep_parameter == "planes" ? static_cast<uint32_t>(pr.sweep_value) : s.planes;
  const double rate = s.link_rate_bps();

  // 1. The fabric: ports and ECMP links at the plane rate, the base (and sweep value) on every ECMP link.
  emulator::FabricConfig fc;
  fc.hosts = H;
  fc.planes = P;
  fc.ecmp_links = s.ecmp_links;
  for (uint32_t h = 0; h < H; ++h) fc.host_ips.push_back(ip_of(h));
  fc.port.rate_bps = rate;
  fc.port.prop_delay_ns = 0;
  fc.port.queue_limit_bytes = s.base.queue_limit_bytes.value_or(kDefaultQueueLimit);
  fc.port.ecn_threshold_bytes = s.base.ecn_threshold_bytes.value_or(kDefaultEcnThreshold);
  fc.ecmp = fc.port;
  fc.ecmp.prop_delay_ns = 0;  // the scenario's delay is base.delay, applied below as live
  fc.seed = s.seed;
  if (auto e = emulator::validate(fc)) throw std::invalid_argument("fabric: " + *e);
  emulator::Fabric fabric(fc);
  LinkSettings base = s.base;
  if (pr.sweep_parameter == "loss") base.loss = pr.sweep_value;
  if (!base.empty())
    if (auto e = fabric.apply({}, to_patch(base), 0)) throw std::invalid_argument("base: " + *e);
  if (pr.sweep_parameter == "skew_ns")
    for (uint32_t p = 1; p < P; ++p) {
      emulator::LinkSelector sel;
      sel.plane = p;
      emulator::LinkPatch patch;
      emulator::DelayConfig d;
      d.delay_ns = s.base.delay_ns.value_or(0) + static_cast<Nanos>(std::llround(pr.sweep_value * p));
      d.jitter_ns = s.base.jitter_ns.value_or(0);
      patch.delay = d;
      if (auto e = fabric.apply(sel, patch, 0)) throw std::invalid_argument("sweep skew: " + *e);
    }
  const emulator::Timeline timeline = sim_timeline(s);
  if (auto e = timeline.validate(fabric.config())) throw std::invalid_argument(*e);
  sim::EmulatedFabric sim_fabric(fabric);
  sim_fabric.set_timeline(timeline);
  sim::Simulator sim(sim_fabric);

  // 2. Hosts and the run's jobs.
  std::vector<std::unique_ptr<Endpoint>> eps;
  for (uint32_t h = 0; h < H; ++h) {
    EndpointConfig c;
    c.ip = ip_of(h);
    c.mac = mac_of(h);
    c.inbound_capacity_bps = rate * P;
    eps.push_back(std::make_unique<Endpoint>(c));
    sim.add_host(eps.back().get());
  }
  auto host_index = [&](const std::string& name) {
    const auto it = std::find(s.host_order.begin(), s.host_order.end(), name);
    return static_cast<uint32_t>(it - s.host_order.begin());
  };
  std::vector<JobState> jobs(pr.jobs.size());
  std::vector<JobState*> owner;  // by local connection id
  std::vector<std::vector<JobState*>> senders(H);
  for (size_t ji = 0; ji < pr.jobs.size(); ++ji) {
    JobState& js = jobs[ji];
    const Job& j = *pr.jobs[ji];
    js.job = &j;
    js.index = static_cast<size_t>(&j - s.jobs.data());
    js.kind = j.transport == "rocev2" ? TransportKind::kRoCEv2 : TransportKind::kMetaRoCE;
    js.src = host_index(j.from);
    js.dst = host_index(j.to);
    const uint32_t size =
        pr.sweep_parameter == "message_bytes" ? static_cast<uint32_t>(pr.sweep_value) : j.message_bytes;
    const uint32_t conns =
        pr.sweep_parameter == "connections" ? static_cast<uint32_t>(pr.sweep_value) : j.connections;
    const uint32_t paths = j.paths ? j.paths : 2 * P;
    for (uint32_t c = 0; c < conns; ++c) {
      ConnectionConfig ca;
      ca.transport = js.kind;
      ca.local_id = 1 + static_cast<uint32_t>(js.index) * 256 + c;
      ca.remote_id = ca.local_id + kRemoteIdOffset;
      ca.peer_ip = ip_of(js.dst);
      ca.peer_mac = mac_of(js.dst);
      const uint32_t K = s.ecmp_links;
      if (js.kind == TransportKind::kMetaRoCE) {
        // Path i on plane i % planes, the k-th path of a plane on ECMP link k % ecmp_links.
        for (uint32_t i = 0; i < paths; ++i)
          ca.paths.push_back({static_cast<uint8_t>(i % P),
                              path_port(fabric, js.src, js.dst, wire::kDefaultUdpPort, js.index, c, i, (i / P) % K)});
      } else {
        // A RoCEv2 QP is pinned to one path: connection c on plane c % planes,
        // ECMP link (c / planes) % ecmp_links.
        ca.paths.push_back({static_cast<uint8_t>(c % P),
                            path_port(fabric, js.src, js.dst, kRoCEv2Port, js.index, 0, c, (c / P) % K)});
      }
      ca.streams = static_cast<uint16_t>(j.streams);
      ca.max_outstanding_per_stream = j.queue_depth;
      ca.recv_window_messages = std::max<uint32_t>(128, j.queue_depth);
      ca.max_message_bytes = std::max<uint32_t>(size, 4096);
      ca.mtu_payload = s.sim.mtu_payload;
      ConnectionConfig cb = ca;
      std::swap(cb.local_id, cb.remote_id);
      cb.peer_ip = ip_of(js.src);
      cb.peer_mac = mac_of(js.src);
      std::string err;
      if (!eps[js.src]->create_connection(ca, &err) || !eps[js.dst]->create_connection(cb, &err))
        throw std::invalid_argument("jobs[" + std::to_string(js.index) + "]: connection: " + err);
      js.conns.push_back(ca.local_id);
      if (owner.size() <= ca.local_id) owner.resize(ca.local_id + 1, nullptr);
      owner[ca.local_id] = &js;
    }
    sim::WriteWorkloadConfig wc;
    wc.message_bytes = size;
    wc.depth = j.queue_depth;
    wc.streams = static_cast<uint16_t>(j.streams);
    const uint32_t fit = static_cast<uint32_t>(std::max<uint64_t>(1, (64ull << 20) / size));
    wc.slots = std::max(j.queue_depth, std::min(std::max(2 * j.queue_depth, 32u), fit));
    wc.seed = s.seed * 1000 + js.index + 1;
    wc.record_latency = true;
    js.work = std::make_unique<sim::WriteWorkload>(sim, *eps[js.src], static_cast<int>(js.src), *eps[js.dst], js.conns, wc);
    senders[js.src].push_back(&js);
  }
  // Several jobs may send from one host: poll its completions here and hand
  // each to the job that owns the connection.
  sim.on_host_activity([&](int h) {
    if (senders[h].empty()) return;
    Completion wc[64];
    size_t n;
    while ((n = eps[h]->poll_completions(wc)) > 0)
      for (size_t i = 0; i < n; ++i) {
        JobState* js = wc[i].conn < owner.size() ? owner[wc[i].conn] : nullptr;
        if (!js || js->src != static_cast<uint32_t>(h)) continue;
        if (wc[i].status != WcStatus::kSuccess && js->first_error.empty())
          js->first_error = wc_status_name(wc[i].status);
        if (wc[i].status != WcStatus::kSuccess) ++js->error_completions;
        js->work->on_completion(wc[i]);
      }
  });

  // 3. Sampling at every interval end (scenario time T_k, simulated b_k).
  std::vector<Nanos> bounds{0};  // scenario ns
  for (Nanos t = s.interval_ns; bounds.back() < s.duration_ns; t += s.interval_ns) {
    const Nanos b = std::min(t, s.duration_ns);
    if (sc(b) > sc(bounds.back())) bounds.push_back(b);
    else if (b == s.duration_ns) break;
  }
  std::vector<Snapshot> snaps;
  snaps.reserve(bounds.size());
  auto take = [&] {
    Snapshot sn;
    for (const JobState& js : jobs) {
      uint64_t retx = 0, pkts = 0;
      for (uint32_t c : js.conns) {
        const ConnectionStats st = eps[js.src]->stats(c);
        retx += st.retransmits;
        pkts += st.data_packets_sent;
      }
      sn.job_bytes.push_back(js.work->bytes_completed());
      sn.job_retransmits.push_back(retx);
      sn.job_packets.push_back(pkts);
    }
    const emulator::FabricCounters c = fabric.counters();
    for (const auto& p : c.per_plane) sn.plane_bytes.push_back(p.bytes_out);
    sn.ecn_marks = c.total.ecn_marks;
    const Nanos now = sim.now();
    uint64_t deepest = 0;
    for (uint32_t p = 0; p < P; ++p) {
      for (uint32_t h = 0; h < H; ++h) deepest = std::max(deepest, fabric.downlink(p, h).backlog_bytes(now));
      for (uint32_t a = 0; a < H; ++a)
        for (uint32_t b = 0; b < H; ++b)
          if (a != b)
            for (uint32_t k = 0; k < s.ecmp_links; ++k)
              deepest = std::max(deepest, fabric.ecmp_link(p, a, b, k).backlog_bytes(now));
    }
    sn.queue_bytes = static_cast<double>(deepest);
    snaps.push_back(std::move(sn));
  };
  take();
  // Timeline changes take effect at their instants even when no frame passes then.
  for (const auto& e : timeline.events()) sim.at(e.at_ns, [&sim_fabric, t = e.at_ns] { sim_fabric.apply_due(t); });
  for (size_t k = 1; k < bounds.size(); ++k) sim.at(sc(bounds[k]), take);
  for (JobState& js : jobs) js.work->start();
  const Nanos end = sc(bounds.back());
  sim.run_until(end);

  // 4. Results, one per job of the run.
  std::vector<RunResult> out;
  const double sim_seconds = static_cast<double>(end) / 1e9;
  for (size_t ji = 0; ji < jobs.size(); ++ji) {
    const JobState& js = jobs[ji];
    RunResult rr;
    rr.job = js.job->name;
    rr.transport = js.job->transport;
    rr.op = js.job->op;
    rr.sweep_parameter = pr.sweep_parameter;
    rr.sweep_value = pr.sweep_value;
    rr.seed = s.seed;
    rr.bytes = js.work->bytes_completed();
    rr.messages = js.work->messages_completed();
    rr.goodput_bps = sim_seconds > 0 ? 8.0 * static_cast<double>(rr.bytes) / sim_seconds : 0;
    for (uint32_t c : js.conns) {
      const ConnectionStats sa = eps[js.src]->stats(c);
      rr.data_packets += sa.data_packets_sent;
      rr.retransmits += sa.retransmits;
      rr.rtos += sa.rtos;
      if (js.kind == TransportKind::kMetaRoCE) {
        rr.spurious_retransmits += sa.spurious_retransmits;
      } else {
        // Go-back-N: the responder sees them as duplicates of PSNs it had accepted.
        rr.spurious_retransmits += eps[js.dst]->stats(c + kRemoteIdOffset).duplicates_received;
      }
      for (const PathStats& p : sa.paths) rr.path_state_changes += p.state_changes;
    }
    rr.verify_failures = js.work->verify_failures();
    const uint64_t errors = js.work->error_completions();
    rr.verified = rr.messages > 0 && rr.verify_failures == 0 && errors == 0;
    if (rr.verified) {
      rr.verification = "passed";
    } else if (rr.verify_failures > 0) {
      rr.verification = std::to_string(rr.verify_failures) + " of " + std::to_string(rr.messages) +
                        " messages differed from what was written";
    } else if (errors > 0) {
      rr.verification = std::to_string(errors) + " WRITEs failed" +
                        (js.first_error.empty() ? "" : " (first: " + js.first_error + ")");
    } else {
      rr.verification = "no message completed";
    }
    if (errors > 0) {
      rr.state = "failed";
      rr.error = std::to_string(errors) + " WRITEs completed with an error" +
                 (js.first_error.empty() ? "" : " (first: " + js.first_error + ")");
    }
    rr.latency = summarise(js.work->latencies());
    for (size_t k = 1; k < snaps.size(); ++k) {
      const Snapshot &a = snaps[k - 1], &b = snaps[k];
      Interval iv;
      iv.t0_s = static_cast<double>(bounds[k - 1]) / 1e9;
      iv.t1_s = static_cast<double>(bounds[k]) / 1e9;
      const double dt = static_cast<double>(sc(bounds[k]) - sc(bounds[k - 1])) / 1e9;  // simulated seconds
      iv.goodput_bps = 8.0 * static_cast<double>(b.job_bytes[ji] - a.job_bytes[ji]) / dt;
      iv.retransmits = b.job_retransmits[ji] - a.job_retransmits[ji];
      const uint64_t pkts = b.job_packets[ji] - a.job_packets[ji];
      iv.loss_seen = pkts > 0 ? static_cast<double>(iv.retransmits) / static_cast<double>(pkts) : 0;
      for (uint32_t p = 0; p < P; ++p) {
        const double bytes = static_cast<double>(b.plane_bytes[p] - a.plane_bytes[p]);
        iv.plane_bytes.push_back(bytes);
        iv.plane_utilisation.push_back(std::clamp(bytes * 8 / (dt * rate), 0.0, 1.0));
      }
      iv.queue_bytes = b.queue_bytes;
      iv.ecn_marks = b.ecn_marks - a.ecn_marks;
      rr.intervals.push_back(std::move(iv));
    }
    for (const FaultEvent& e : s.timeline) rr.events.emplace_back(static_cast<double>(e.at_ns) / 1e9, e.label);
    out.push_back(std::move(rr));
  }
  return out;
}

}  // namespace

Report run_scenario_sim(const Scenario& s, const std::function<void(const std::string&)>& progress) {
  if (const std::string e = check_runnable(s, false); !e.empty()) throw std::invalid_argument(e);
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  Report r;
  r.scenario_name = s.name;
  r.description = s.description;
  r.source = s.source;
  r.mode = "sim";
  r.version = METAROCE_VERSION;
  r.started_at = iso_now();
  r.seed = s.seed;
  r.scenario_yaml = s.yaml;
  r.planes = s.planes;
  r.plane_rate_bps = s.link_rate_bps();
  const std::vector<PlannedRun> runs = plan_runs(s);
  for (size_t i = 0; i < runs.size(); ++i) {
    const PlannedRun& pr = runs[i];
    std::string label = pr.jobs[0]->name;
    if (!pr.sweep_parameter.empty())
      label += " " + std::string(pr.sweep_parameter == "skew_ns" ? "skew" : pr.sweep_parameter) + "=" +
               detail::format_sweep_value(pr.sweep_parameter, pr.sweep_value);
    say("run " + std::to_string(i + 1) + "/" + std::to_string(runs.size()) + ": " + label + " (" +
        std::to_string(pr.jobs.size()) + (pr.jobs.size() > 1 ? " jobs" : " job") + ")");
    for (RunResult& rr : run_one(s, pr)) {
      say("  " + rr.job + ": " + rr.state + " " + fixed(rr.goodput_bps / 1e9, 2) + " Gb/s, " +
          std::to_string(rr.retransmits) + " retransmits, verification " + rr.verification);
      r.runs.push_back(std::move(rr));
    }
  }
  r.assertions = evaluate_assertions(s, r.runs);
  return r;
}

}  // namespace metaroce::scenario
