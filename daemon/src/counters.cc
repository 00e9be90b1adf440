// Every counter of the daemon, once: the gRPC GetCounters answer and the
// Prometheus text exposition at /metrics are both rendered from this list.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <sstream>

#include "core.h"

namespace metaroce::daemon {
namespace {

struct Sample {
  std::string name;  // without the metaroce_ prefix
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  const char* help = "";
  bool counter = true;  // else gauge
};

// Lateness buckets exported: eight per power of two (le = 1.125, 1.25, ...,
// 2 x 2^e ns) from 1.024 us to 17.2 s, read from the worker's log-linear
// histogram (64 sub-buckets per power of two, so every edge is exact). A
// quantile read at a bucket's upper edge overstates by at most 12.5%: edges
// at powers of two overstated by up to 2x and made a 140 us p99 read as
// 262 us against a 250 us limit, and four per power of two made a single
// stall of 4.2-5.2 ms read as 5.2 ms against the guard's 5 ms.
constexpr int kFirstLatenessExponent = 10, kLastLatenessExponent = 34;  // 2^10 ns ... 2^34 ns
constexpr int kLatenessEdgesPerPowerOfTwo = 8;

std::string fmt_le(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

const char* path_state_text(transport::PathState s) {
  return s == transport::PathState::kActive ? "active" : s == transport::PathState::kDegraded ? "degraded" : "down";
}

// This host's CPUs as the kernel counts them in /proc/stat: how many, and the
// seconds the hypervisor ran something else on them while they were due to
// run this guest (steal). false where there is no such file.
bool host_cpu_steal(double* steal_s, int* cpus) {
  FILE* f = std::fopen("/proc/stat", "re");
  if (!f) return false;
  char line[512];
  unsigned long long steal = 0;
  bool found = false;
  *cpus = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "cpu", 3) != 0) break;  // the cpu lines come first
    if (line[3] == ' ') {
      // cpu user nice system idle iowait irq softirq steal ...
      unsigned long long v[8] = {};
      found = std::sscanf(line + 3, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                          &v[5], &v[6], &v[7]) == 8;
      steal = v[7];
    } else {
      ++*cpus;
    }
  }
  std::fclose(f);
  const long hz = sysconf(_SC_CLK_TCK);
  if (!found || hz <= 0) return false;
  *steal_s = static_cast<double>(steal) / static_cast<double>(hz);
  return true;
}

}  // namespace

namespace {

// conns: a copy of the first metrics.connection_series entries of the
// connection table (taken under its lock by the caller); total: all of them.
std::vector<Sample> collect(DaemonCore& core, const std::map<uint32_t, ConnectionRecord>& conns, size_t total) {
  std::vector<Sample> out;
  auto add = [&](std::string name, std::vector<std::pair<std::string, std::string>> labels, double v, const char* help,
                 bool counter = true) { out.push_back({std::move(name), std::move(labels), v, help, counter}); };
  // Both roles' ports and workers expose the same counters.
  auto add_port = [&](const std::string& port, const char* use, const datapath::PortStats& st) {
    const std::vector<std::pair<std::string, std::string>> l = {{"port", port}, {"use", use}};
    add("port_rx_frames_total", l, st.rx_frames, "Frames received by a datapath port");
    add("port_rx_bytes_total", l, st.rx_bytes, "Bytes received by a datapath port");
    add("port_tx_frames_total", l, st.tx_frames, "Frames sent by a datapath port");
    add("port_tx_bytes_total", l, st.tx_bytes, "Bytes sent by a datapath port");
    add("port_tx_ring_full_total", l, st.tx_ring_full, "Frames refused by a full transmit ring");
    add("port_rx_dropped_total", l, st.rx_dropped, "Frames dropped by the port backend");
    add("port_rx_truncated_total", l, st.rx_truncated, "Frames larger than the port's frame size");
  };
  auto add_worker = [&](const char* worker, const datapath::WorkerStats& w) {
    add("worker_iterations_total", {{"worker", worker}}, w.iterations, "Worker loop iterations");
    add("worker_idle_blocks_total", {{"worker", worker}}, w.idle_blocks, "Times the worker blocked when idle");
    add("worker_realtime_share", {{"worker", worker}}, w.realtime_share,
        "Share of every 10 ms the worker may run SCHED_FIFO (0: an ordinary thread, by config or refused)", false);
    add("worker_idle_spin_seconds", {{"worker", worker}}, w.idle_spin_ns / 1e9,
        "How long the worker polls on after work before it blocks: its blocks' recent wake-up lateness, bounded", false);
    add("worker_realtime_demotions_total", {{"worker", worker}}, w.realtime_demotions,
        "Windows in which the worker used up its real-time share and ran as an ordinary thread");
    // Fidelity: did the worker keep up on the real clock? (docs/architecture.md, "Fidelity")
    const double wall = w.started_ns > 0 && w.sampled_ns > w.started_ns ? (w.sampled_ns - w.started_ns) / 1e9 : 0;
    add("worker_wall_seconds_total", {{"worker", worker}}, wall, "Seconds the worker loop has run");
    add("worker_busy_seconds_total", {{"worker", worker}}, w.busy_ns / 1e9, "Seconds in iterations that moved frames");
    add("worker_cpu_seconds_total", {{"worker", worker}}, w.cpu_ns / 1e9, "CPU seconds of the worker thread");
    add("worker_run_delay_seconds_total", {{"worker", worker}}, w.run_delay_ns / 1e9,
        "Seconds the worker was runnable but waited for a CPU");
    auto add_lateness = [&](const char* name, const emulator::DelayHistogram& h, const char* help) {
      // Cumulative buckets, as a Prometheus histogram: le = an edge in seconds,
      // counting every value below it (integer ns: value <= le - 1 ns).
      for (int e = kFirstLatenessExponent; e <= kLastLatenessExponent; ++e)
        for (int k = e == kFirstLatenessExponent ? kLatenessEdgesPerPowerOfTwo : 1; k <= kLatenessEdgesPerPowerOfTwo;
             ++k) {
          const int64_t edge = (int64_t{1} << (e - 1)) + k * (int64_t{1} << (e - 1)) / kLatenessEdgesPerPowerOfTwo;
          add(std::string(name) + "_bucket", {{"worker", worker}, {"le", fmt_le(static_cast<double>(edge) / 1e9)}},
              static_cast<double>(h.count_below(edge)), help);
        }
      add(std::string(name) + "_count", {{"worker", worker}}, static_cast<double>(h.count()), help);
    };
    add("worker_tx_dropped_ring_full_total", {{"worker", worker}}, w.tx_dropped_ring_full,
        "Frames a port refused at their due time");
    for (size_t c = 1; c < std::size(w.emu_drops); ++c)
      add("worker_emulator_drops_total",
          {{"worker", worker}, {"reason", emulator::drop_cause_name(static_cast<emulator::DropCause>(c))}},
          w.emu_drops[c], "Frames the emulator dropped on this worker (every hop), by cause");
    add("worker_delay_line_full_total", {{"worker", worker}}, w.delay_line_full, "Frames dropped: no delay-line buffer");
    add("worker_frames_too_large_total", {{"worker", worker}}, w.frames_too_large,
        "Frames dropped: longer than the worker's frame_size");
    add_lateness("worker_frame_lateness_seconds", w.frame_lateness, "Frames handled after their due time, by lateness");
    add_lateness("worker_timer_lateness_seconds", w.timer_lateness, "Engine timers serviced after their due time, by lateness");
    add_lateness("worker_receive_wait_seconds", w.receive_wait,
                 "Received frames, by how long they may have waited in the port's ring for the worker (upper bound)");
  };
  add("uptime_seconds", {}, static_cast<double>(core.uptime_ns()) / 1e9, "Seconds since the daemon started", false);
  double steal_s = 0;
  int cpus = 0;
  if (host_cpu_steal(&steal_s, &cpus)) {
    add("host_cpu_steal_seconds_total", {}, steal_s,
        "Seconds this host's CPUs were due to run it but the hypervisor ran something else (steal, /proc/stat)");
    add("host_cpus", {}, cpus, "CPUs of this host (/proc/stat)", false);
  }
  add("jobs_running", {}, core.jobs_running(), "Traffic jobs running", false);
  if (core.config().endpoint) {
    add("memory_budget_bytes", {}, static_cast<double>(core.memory_budget().limit()),
        "Memory the daemon may register for callers (endpoint.memory_budget_bytes)", false);
    add("memory_reserved_bytes", {}, static_cast<double>(core.memory_budget().used()),
        "Memory registered for callers now: operator regions, accepted connections, job buffers", false);
    add("connections_expired_total", {}, static_cast<double>(core.half_open_expired()),
        "Accepted connections released because nothing arrived within endpoint.half_open_timeout_ns");
  }
  if (EndpointRuntime* ep = core.endpoint()) {
    std::vector<PortSnapshot> ports;
    if (ep->snapshot_ports(&ports))
      for (const auto& p : ports) {
        add_port(p.name, "endpoint", p.stats);
        if (p.udp) {
          const std::vector<std::pair<std::string, std::string>> l = {{"port", p.name}, {"use", "endpoint"}};
          add("port_udp_entropy_fallback_total", l, p.udp->tx_entropy_fallback,
              "Frames the udp datapath sent from its main socket: no socket for their source port (entropy lost)");
          for (const auto& [reason, n] : {std::pair{"not_udp", p.udp->tx_not_udp}, std::pair{"oversize", p.udp->tx_oversize},
                                         std::pair{"send_error", p.udp->tx_send_errors}})
            add("port_tx_dropped_total", {{"port", p.name}, {"use", "endpoint"}, {"reason", reason}}, n,
                "Frames a port dropped on transmit, by reason");
        }
      }
    transport::EndpointCounters c;
    datapath::WorkerStats w;
    if (ep->snapshot_counters(&c, &w)) {
      add("endpoint_frames_in_total", {}, c.frames_in, "Frames handed to the transport engine");
      add("endpoint_frames_out_total", {}, c.frames_out, "Frames produced by the transport engine");
      const std::pair<const char*, uint64_t> drops[] = {{"not_ours", c.drop_not_ours},
                                                        {"decode", c.drop_decode},
                                                        {"checksum", c.drop_checksum},
                                                        {"bad_version", c.drop_bad_version},
                                                        {"bad_opcode", c.drop_bad_opcode},
                                                        {"unknown_connection", c.drop_unknown_connection},
                                                        {"wrong_peer", c.drop_wrong_peer},
                                                        {"out_of_window", c.drop_out_of_window},
                                                        {"qp_error", c.drop_qp_error}};
      for (const auto& [why, n] : drops)
        add("endpoint_drops_total", {{"reason", why}}, n, "Frames the engine dropped, by reason");
      for (size_t k = 0; k < transport::kRejectCodes; ++k) {
        const char* code = transport::reject_code_name(static_cast<transport::RejectCode>(k));
        add("endpoint_naks_sent_total", {{"code", code}}, c.naks_sent[k], "Requests this host refused (NAKs sent), by cause");
        add("endpoint_naks_received_total", {{"code", code}}, c.naks_received[k],
            "Requests the peers refused (NAKs received), by cause");
      }
      add("endpoint_cq_overflow_total", {}, c.completion_queue_overflow, "Completions lost to a full queue");
      add("endpoint_rx_reordered_in_path_total", {}, c.rx_reordered_in_path,
          "MetaRoCE frames that arrived after a later frame of their own path (reordered by the fabric or the "
          "datapath); their sender counted them lost");
      add("endpoint_connection_state_bytes", {}, static_cast<double>(c.connection_state_bytes),
          "Bytes of engine state all connections hold now (idle ones little; a stream's or path's arrays from first use)",
          false);
      if (total > 0)
        add("endpoint_connection_state_bytes_per_connection", {},
            static_cast<double>(c.connection_state_bytes) / static_cast<double>(total),
            "endpoint_connection_state_bytes / connections: the mean bytes of engine state per connection", false);
      add_worker("endpoint", w);
    }
    // Per-connection series for the first metrics.connection_series
    // connections (lowest ids) only: 16,000 connections would be 224,000
    // series (more with paths). The totals above and below count them all.
    const uint32_t series = core.config().metrics.connection_series;
    const double n = static_cast<double>(total);
    add("connections", {}, n, "Connections this daemon holds (requester and responder halves)", false);
    add("connections_max", {}, core.config().endpoint ? core.config().endpoint->max_connections : 0,
        "endpoint.max_connections", false);
    add("connection_series_omitted", {}, n > series ? n - series : 0,
        "Connections without their own connection_* and path_* series (beyond metrics.connection_series, lowest ids "
        "first); their traffic still counts in the endpoint_* and port_* totals",
        false);
    std::vector<uint32_t> ids;
    for (const auto& [id, r] : conns) {
      if (ids.size() == series) break;
      ids.push_back(id);
    }
    std::vector<transport::ConnectionStats> st;
    if (!ids.empty() && core.connection_stats(ids, &st)) {
      size_t i = 0;
      for (const auto& [id, r] : conns) {
        if (i == ids.size()) break;
        const auto& s = st[i++];
        const std::vector<std::pair<std::string, std::string>> l = {
            {"conn", std::to_string(id)}, {"peer", r.peer_name}, {"transport", transport::transport_name(s.transport)}};
        add("connection_data_packets_sent_total", l, s.data_packets_sent, "Data packets sent (with retransmits)");
        add("connection_retransmits_total", l, s.retransmits, "Data packets retransmitted");
        add("connection_spurious_retransmits_total", l, s.spurious_retransmits, "Retransmits of packets that had arrived");
        add("connection_rtos_total", l, s.rtos, "Retransmission timeouts");
        add("connection_late_timeouts_deferred_total", l, s.late_timeouts_deferred,
            "Retransmission timeouts that fired late because this host did not run, given one more round trip");
        add("connection_messages_completed_total", l, s.messages_completed, "Messages completed");
        add("connection_payload_bytes_completed_total", l, s.payload_bytes_completed, "Payload bytes completed");
        add("connection_duplicates_received_total", l, s.duplicates_received, "Duplicate packets received");
        add("connection_state_bytes", l, static_cast<double>(s.state_bytes),
            "Bytes of engine state this connection holds now (grows at its first post, receive or packet per stream/path)",
            false);
        for (size_t p = 0; p < s.paths.size(); ++p) {
          const auto& ps = s.paths[p];
          std::vector<std::pair<std::string, std::string>> pl = {
              {"conn", std::to_string(id)}, {"path", std::to_string(p)}, {"plane", std::to_string(ps.plane)}};
          add("path_packets_sent_total", pl, ps.packets_sent, "Packets sent on a path");
          add("path_retransmits_total", pl, ps.retransmits, "Retransmits on a path");
          add("path_state_changes_total", pl, ps.state_changes, "Path state changes");
          add("path_srtt_seconds", pl, ps.srtt_ns / 1e9, "Smoothed RTT of a path", false);
          pl.emplace_back("state", path_state_text(ps.state));
          add("path_state", pl, 1, "Path state (1 for the current state label)", false);
        }
      }
    }
  }
  if (FabricRuntime* fab = core.fabric()) {
    FabricSnapshot snap;
    if (fab->snapshot(&snap)) {
      for (const auto& [name, ps] : snap.ports) {
        add_port(name, "fabric", ps);
      }
      add_worker("fabric", snap.worker);
      add("fabric_delay_line_full_total", {}, snap.worker.delay_line_full, "Frames dropped: no buffer to hold them");
      for (const auto& l : snap.links) {
        const std::vector<std::pair<std::string, std::string>> lb = {{"plane", std::to_string(l.plane)},
                                                                     {"ecmp", std::to_string(l.ecmp)},
                                                                     {"from", std::to_string(l.a)},
                                                                     {"to", std::to_string(l.b)}};
        const auto& k = l.counters;
        add("link_packets_in_total", lb, k.packets_in, "Packets offered to an ECMP link");
        add("link_packets_out_total", lb, k.packets_out, "Packets delivered by an ECMP link");
        for (auto [why, n] : {std::pair{"random_loss", k.drops_random_loss}, {"queue_overflow", k.drops_queue_overflow},
                              {"link_down", k.drops_link_down}}) {
          auto dl = lb;
          dl.emplace_back("reason", why);
          add("link_drops_total", dl, n, "Packets an ECMP link dropped, by reason");
        }
        add("link_ecn_marks_total", lb, k.ecn_marks, "Packets marked CE");
        add("link_duplicates_total", lb, k.duplicates, "Packets duplicated");
        add("link_reorders_total", lb, k.reorders, "Packets reordered");
        add("link_corruptions_total", lb, k.corruptions, "Packets corrupted");
        add("link_up", lb, l.up ? 1 : 0, "1 when the link is up", false);
        add("link_delay_p99_seconds", lb, static_cast<double>(l.p99_ns) / 1e9, "99th percentile one-way delay", false);
        add("link_queue_bytes", lb, static_cast<double>(l.backlog_bytes), "Bytes queued on the link now", false);
        add("link_queue_high_water_bytes", lb, static_cast<double>(k.queue_high_water_bytes),
            "Deepest the link's queue has been since the fabric started or was reset", false);
      }
      add("fabric_timeline_pending", {}, snap.timeline_pending, "Timeline events not yet applied", false);
    }
  }
  return out;
}

std::string escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

}  // namespace

std::map<uint32_t, ConnectionRecord> DaemonCore::connections_copy(size_t limit, size_t* total) const {
  std::map<uint32_t, ConnectionRecord> copy;
  *total = 0;
  std::lock_guard<std::mutex> g(conns_mu_);
  for (const auto& [id, r] : conns_) {
    if (r.remote_id == 0) continue;  // being set up
    if (copy.size() < limit) copy.emplace_hint(copy.end(), id, r);
    ++*total;
  }
  return copy;
}



grpc::Status DaemonCore::counters(v1::Counters* out) {
  out->set_time_ns(uptime_ns());
  size_t total = 0;
  const auto conns = connections_copy(config_.metrics.connection_series, &total);
  for (const auto& s : collect(*this, conns, total)) {
    auto* c = out->add_counters();
    c->set_name(s.name);
    for (const auto& [k, v] : s.labels) (*c->mutable_labels())[k] = v;
    c->set_value(s.value);
    c->set_help(s.help);
  }
  return grpc::Status::OK;
}

std::string DaemonCore::prometheus_text() {
  size_t total = 0;
  const auto conns = connections_copy(config_.metrics.connection_series, &total);
  std::vector<Sample> samples = collect(*this, conns, total);
  // The exposition format wants each metric's samples together.
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.name < b.name; });
  std::ostringstream o;
  o.precision(17);
  std::string last;
  for (const auto& s : samples) {
    if (s.name != last) {
      o << "# HELP metaroce_" << s.name << ' ' << s.help << "\n# TYPE metaroce_" << s.name << ' '
        << (s.counter ? "counter" : "gauge") << '\n';
      last = s.name;
    }
    o << "metaroce_" << s.name;
    if (!s.labels.empty()) {
      o << '{';
      for (size_t i = 0; i < s.labels.size(); ++i)
        o << (i ? "," : "") << s.labels[i].first << "=\"" << escape(s.labels[i].second) << '"';
      o << '}';
    }
    o << ' ' << s.value << '\n';
  }
  return o.str();
}

}  // namespace metaroce::daemon
