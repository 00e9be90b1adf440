// Traffic jobs: set up connections to the peers, run a TrafficDriver on the
// endpoint worker, sample progress every interval, verify at the responders,
// tear everything down and compute perftest-style results.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <thread>

#include "core.h"
#include "metaroce/api/operation_codec.h"
#include "metaroce/transport/connection_params.h"

namespace metaroce::daemon {

struct JobRecord {
  uint64_t id = 0;
  v1::JobSpec spec;
  v1::ConnectionParams params;  // spec.params resolved (defaults filled in) once, by start_job
  uint64_t seed = 0;
  Operation op = Operation::kWrite;
  std::vector<uint32_t> sizes;
  int64_t started_unix_ns = 0;
  int64_t started_ns = 0;  // monotonic
  // Guarded by DaemonCore::jobs_mu_.
  v1::JobState state = v1::JOB_STATE_STARTING;
  std::vector<uint32_t> conn_ids;
  std::vector<v1::JobProgress> intervals;
  v1::JobResult result;
  std::string error;
  int64_t ended_ns = 0;
  bool ended = false;
  // Any thread.
  std::atomic<bool> stop_requested{false};
  std::thread thread;
};

namespace {

constexpr uint32_t kMaxRunningJobs = 16;

// A job's per-connection control calls (Create with its Peer.Accept, Verify,
// Release) are round trips that mostly wait: for the peer and for the worker
// loops, which pick up a command within their 1 ms block. One after another
// they took 1.5 ms per connection, 24 s to set up 16,000; this many in flight
// overlap the waits.
constexpr unsigned kSetupCallsInFlight = 8;
// JobResult.paths lists the paths of this many connections; JobResult.planes sums them all.
constexpr size_t kResultPathConnections = 1024;

// Runs fn(i) for every i in [0, n) on up to `threads` threads (this one
// included); stops handing out indices once an fn returns false or `stop` is set.
template <typename Fn>
void for_each_in_flight(size_t n, unsigned threads, const std::atomic<bool>& stop, Fn fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed) && !stop.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      if (!fn(i)) failed.store(true, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min<size_t>(threads, n); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

bool terminal(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_STOPPED;
}

}  // namespace

uint32_t DaemonCore::jobs_running() const {
  std::lock_guard<std::mutex> g(jobs_mu_);
  uint32_t n = 0;
  for (const auto& [id, j] : jobs_) n += terminal(j->state) ? 0 : 1;
  return n;
}

grpc::Status DaemonCore::start_job(const v1::JobSpec& in, v1::JobInfo* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  if (shutting_down_) return {grpc::StatusCode::UNAVAILABLE, "the daemon is shutting down"};
  join_finished_jobs();
  v1::JobSpec spec = in;
  const std::optional<Operation> decoded = api::decode_operation(spec.operation());
  if (!decoded)
    return invalid("spec.operation", "must be one of " + transport::operation_names(", ") + " (got " +
                                         std::to_string(spec.operation()) + ")");
  const Operation op = *decoded;
  if (spec.peers_size() < 1 || spec.peers_size() > 64)
    return invalid("spec.peers", "must list 1 to 64 peer daemon addresses (got " + std::to_string(spec.peers_size()) + ")");
  for (int i = 0; i < spec.peers_size(); ++i)
    if (spec.peers(i).empty()) return invalid("spec.peers[" + std::to_string(i) + "]", "is empty");
  if (spec.message_bytes_size() == 0) spec.add_message_bytes(is_atomic(op) ? 8 : 65536);
  if (spec.message_bytes_size() > 64)
    return invalid("spec.message_bytes", "at most 64 sizes (got " + std::to_string(spec.message_bytes_size()) + ")");
  uint32_t max_size = 0;
  for (int i = 0; i < spec.message_bytes_size(); ++i) {
    const uint32_t b = spec.message_bytes(i);
    const std::string f = "spec.message_bytes[" + std::to_string(i) + "]";
    if (is_atomic(op) && b != 8) return invalid(f, std::string(operation_name(op)) + " messages are 8 bytes (got " + std::to_string(b) + ")");
    if (b < 1 || b > (16u << 20)) return invalid(f, "must be in [1, 16777216] (got " + std::to_string(b) + ")");
    max_size = std::max(max_size, b);
  }
  // Per peer (transport/connection_params.h); all of them must fit endpoint.max_connections.
  const auto& conn_range = transport::kParamJobConnections;
  if (spec.connections() == 0) spec.set_connections(static_cast<uint32_t>(conn_range.default_value));
  if (!conn_range.accepts(spec.connections()))
    return {grpc::StatusCode::INVALID_ARGUMENT, conn_range.refusal("spec.connections (per peer)", spec.connections())};
  if (uint64_t{spec.connections()} * static_cast<uint64_t>(spec.peers_size()) > config_.endpoint->max_connections)
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "spec.connections: " + std::to_string(spec.connections()) + " per peer x " + std::to_string(spec.peers_size()) +
                " peers exceeds endpoint.max_connections " + std::to_string(config_.endpoint->max_connections)};
  if (spec.duration_ns() == 0 && spec.iterations() == 0) spec.set_duration_ns(5'000'000'000);
  if (spec.duration_ns() != 0 && (spec.duration_ns() < 1'000'000 || spec.duration_ns() > 3'600'000'000'000))
    return invalid("spec.duration_ns", "must be in [1 ms, 1 h] = [1000000, 3600000000000] (got " + std::to_string(spec.duration_ns()) + ")");
  if (spec.iterations() > 1'000'000'000'000ull)
    return invalid("spec.iterations", "must be at most 10^12 (got " + std::to_string(spec.iterations()) + ")");
  if (spec.interval_ns() == 0) spec.set_interval_ns(1'000'000'000);
  if (spec.interval_ns() < 10'000'000 || spec.interval_ns() > 60'000'000'000)
    return invalid("spec.interval_ns", "must be in [10 ms, 60 s] = [10000000, 60000000000] (got " + std::to_string(spec.interval_ns()) + ")");
  v1::ConnectionParams params = spec.params();
  if (params.max_message_bytes() == 0) params.set_max_message_bytes(std::max<uint32_t>(max_size, 8));
  if (params.max_message_bytes() < max_size)
    return invalid("spec.params.max_message_bytes",
                   "must be at least the largest message size " + std::to_string(max_size) + " (got " +
                       std::to_string(params.max_message_bytes()) + ")");
  v1::ConnectionParams resolved;
  if (auto s = resolve_params(params, &resolved); !s.ok())
    return {s.error_code(), "spec." + s.error_message()};
  if (resolved.transport() == v1::TRANSPORT_ROCEV2 && !transport::runs_on_rocev2(op))
    return invalid("spec.operation", std::string(operation_name(op)) + " is not supported by rocev2 (supported: " +
                                         transport::operation_names(", ", true) + ")");
  if (spec.path_src_ports_size() > 0) {
    if (params.path_src_ports_size() > 0 || params.base_src_port() != 0)
      return invalid("spec.path_src_ports", "set spec.path_src_ports or params.base_src_port/path_src_ports, not both");
    const uint64_t want = uint64_t(spec.peers_size()) * spec.connections() * resolved.paths();
    if (static_cast<uint64_t>(spec.path_src_ports_size()) != want)
      return invalid("spec.path_src_ports", "one port per path of every connection: peers x connections x paths = " +
                                                std::to_string(want) + " (got " +
                                                std::to_string(spec.path_src_ports_size()) + ")");
    if (auto s = check_src_ports("spec.path_src_ports", spec.path_src_ports()); !s.ok()) return s;
  }
  *spec.mutable_params() = params;

  auto job = std::make_shared<JobRecord>();
  job->op = op;
  job->sizes.assign(spec.message_bytes().begin(), spec.message_bytes().end());
  job->seed = spec.seed() != 0 ? spec.seed() : (uint64_t{std::random_device{}()} << 32 | std::random_device{}()) | 1;
  spec.set_seed(job->seed);
  job->spec = spec;
  job->params = resolved;
  job->started_unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  job->started_ns = datapath::monotonic_ns();
  {
    std::lock_guard<std::mutex> g(jobs_mu_);
    uint32_t running = 0;
    for (const auto& [id, j] : jobs_) running += terminal(j->state) ? 0 : 1;
    if (running >= kMaxRunningJobs)
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "jobs: " + std::to_string(running) + " are running (at most " + std::to_string(kMaxRunningJobs) + ")"};
    job->id = next_job_++;
    jobs_[job->id] = job;
    job_info(*job, out);
  }
  spdlog::info("job {}: {} x{} to {} peer(s), seed {}", job->id, operation_name(op), spec.connections(),
               spec.peers_size(), job->seed);
  job->thread = std::thread([this, job] { run_job(job); });
  return grpc::Status::OK;
}

void DaemonCore::run_job(std::shared_ptr<JobRecord> job) {
  const v1::JobSpec& spec = job->spec;
  auto set_state = [&](v1::JobState s, const std::string& error = {}) {
    std::lock_guard<std::mutex> g(jobs_mu_);
    job->state = s;
    if (!error.empty() && job->error.empty()) job->error = error;
    jobs_cv_.notify_all();
  };
  std::vector<v1::ConnectionInfo> conns;
  auto teardown = [&](std::shared_ptr<TrafficDriver> driver) {
    // Connections go first (no request may still read or write driver memory),
    // then the driver's registrations, both on the worker; its memory is freed
    // wherever the last reference goes, off the worker.
    std::vector<uint32_t> ids;
    for (const auto& c : conns) ids.push_back(c.id());
    endpoint_->channel().call([this, ids, driver](transport::Nanos) {
      if (driver) endpoint_->remove_driver(driver.get());
      for (uint32_t id : ids) endpoint_->endpoint().destroy_connection(id);
      if (driver) driver->detach();
    });
    {
      std::lock_guard<std::mutex> g(conns_mu_);
      for (const auto& c : conns) conns_.erase(c.id());
    }
    const std::atomic<bool> never{false};
    for_each_in_flight(conns.size(), kSetupCallsInFlight, never, [&](size_t i) {
      release_at_peer(conns[i].peer_address(), conns[i].remote_id(), 2000);
      return true;
    });
  };
  auto finish = [&](v1::JobState s) {
    std::lock_guard<std::mutex> g(jobs_mu_);
    job->state = s;
    job->ended = true;
    job->ended_ns = datapath::monotonic_ns();
    v1::JobProgress last;
    last.set_job_id(job->id);
    last.set_state(s);
    const int64_t t = job->ended_ns - job->started_ns;
    last.set_start_ns(t);
    last.set_end_ns(t);
    last.set_fraction_done(1.0);
    *last.mutable_result() = job->result;
    last.mutable_result()->clear_intervals();
    job->intervals.push_back(last);
    jobs_cv_.notify_all();
    spdlog::info("job {}: {} {}", job->id, v1::JobState_Name(s), job->error);
  };

  // 1. Connections, connections() per peer, spread over the planes; several
  // set up at once (kSetupCallsInFlight), each keeping its index's plane and ports.
  const bool needs_recv = job->op == Operation::kSend || job->op == Operation::kWriteImm;
  const uint32_t max_size = *std::max_element(job->sizes.begin(), job->sizes.end());
  const size_t total = static_cast<size_t>(spec.peers_size()) * spec.connections();
  std::vector<std::optional<v1::ConnectionInfo>> made(total);
  std::mutex setup_mu;
  std::string setup_error;  // the failure of the lowest index
  size_t setup_error_at = total;
  for_each_in_flight(total, kSetupCallsInFlight, job->stop_requested, [&](size_t k) {
    const int p = static_cast<int>(k / spec.connections());
    v1::CreateConnectionRequest req;
    req.set_peer_address(spec.peers(p));
    *req.mutable_params() = job->params;
    req.mutable_params()->set_first_plane(static_cast<uint32_t>(k % endpoint_->planes()));
    if (spec.path_src_ports_size() > 0) {  // this connection's slice, validated by start_job
      const size_t paths = static_cast<size_t>(spec.path_src_ports_size()) / total;
      for (size_t i = 0; i < paths; ++i)
        req.mutable_params()->add_path_src_ports(spec.path_src_ports(static_cast<int>(k * paths + i)));
    }
    req.set_seed(job->seed);
    v1::ConnectionInfo info;
    const grpc::Status s = create_resolved_connection(req, job->id, needs_recv ? max_size : 0, &info);
    std::lock_guard<std::mutex> g(setup_mu);
    if (!s.ok()) {
      if (k < setup_error_at) setup_error_at = k, setup_error = "connection to " + spec.peers(p) + ": " + s.error_message();
      return false;
    }
    made[k] = std::move(info);
    std::lock_guard<std::mutex> j(jobs_mu_);
    job->conn_ids.push_back(made[k]->id());
    return true;
  });
  for (auto& m : made)
    if (m) conns.push_back(std::move(*m));
  {
    std::lock_guard<std::mutex> g(jobs_mu_);
    job->conn_ids.clear();  // in connection order (peer by peer), as the results
    for (const auto& c : conns) job->conn_ids.push_back(c.id());
  }
  if (!setup_error.empty()) {
    teardown(nullptr);
    job->result.set_first_error(setup_error);
    set_state(v1::JOB_STATE_FAILED, job->result.first_error());
    finish(v1::JOB_STATE_FAILED);
    return;
  }
  if (job->stop_requested) {
    teardown(nullptr);
    finish(v1::JOB_STATE_STOPPED);
    return;
  }

  // 2. The driver, on the worker.
  DriverSpec ds;
  ds.op = job->op;
  ds.sizes = job->sizes;
  ds.streams = static_cast<uint16_t>(conns[0].params().streams());
  ds.queue_depth = conns[0].params().queue_depth();
  ds.duration_ns = spec.iterations() ? 0 : spec.duration_ns();
  ds.iterations = spec.iterations();
  ds.verify = !spec.no_verify();
  ds.seed = job->seed;
  ds.max_message_bytes = conns[0].params().max_message_bytes();  // same slot size as the responders
  std::vector<DriverConnection> dcs;
  for (const auto& c : conns) dcs.push_back({c.id(), c.remote_addr(), c.rkey(), c.remote_length_bytes()});
  // The driver's local buffers (one slot layout per connection), held against
  // the memory budget until the job ends.
  std::string budget_error;
  auto job_memory = memory_budget_.reserve(
      make_layout(ds.streams, ds.queue_depth, ds.max_message_bytes).bytes() * conns.size(), "this job's buffers",
      &budget_error);
  if (!job_memory) {
    teardown(nullptr);
    job->result.set_first_error(budget_error);
    set_state(v1::JOB_STATE_FAILED, budget_error);
    finish(v1::JOB_STATE_FAILED);
    return;
  }
  struct Created {
    std::shared_ptr<TrafficDriver> driver;
    std::string error;
    bool attached = false;
  };
  auto created = std::make_shared<Created>();
  // Buffers are allocated and filled here; the worker only registers them.
  created->driver = TrafficDriver::prepare(endpoint_->endpoint(), ds, dcs, &created->error);
  const bool answered = created->driver && endpoint_->channel().call([this, created](transport::Nanos) {
    if (!created->driver->attach(&created->error)) return;
    endpoint_->add_driver(created->driver.get());
    created->attached = true;
  });
  if (created->driver && !answered) created->error = "endpoint worker did not answer";  // it may attach later
  if (!answered || !created->attached) {
    teardown(nullptr);
    job->result.set_first_error(created->error);
    set_state(v1::JOB_STATE_FAILED, created->error);
    finish(v1::JOB_STATE_FAILED);
    return;
  }
  std::shared_ptr<TrafficDriver> driver = created->driver;
  set_state(v1::JOB_STATE_RUNNING);

  // 3. Progress every interval until the driver is done.
  std::vector<uint32_t> ids;
  for (const auto& c : conns) ids.push_back(c.id());
  const int64_t t0 = datapath::monotonic_ns();
  int64_t prev_t = t0;
  uint64_t prev_bytes = 0, prev_msgs = 0, prev_pkts = 0, prev_retx = 0, prev_rtos = 0, prev_changes = 0;
  bool stop_sent = false;
  int64_t stop_at = 0;
  // A stop drains outstanding requests; a fabric that delivers nothing may
  // keep them until their retry budget ends, so give up after this long. When
  // the daemon is shutting down, much sooner: SIGTERM must end it well inside
  // a pod's 30 s grace period, or it is killed with its ports and XDP
  // programs attached (a RoCEv2 QP whose peer vanished took 5-12 s to exhaust
  // its retries).
  constexpr int64_t kStopDrainNs = 30'000'000'000, kShutdownDrainNs = 2'000'000'000;
  int64_t drain_limit_ns = kStopDrainNs;
  bool forced = false;
  std::vector<transport::ConnectionStats> stats;
  while (!driver->finished()) {
    {
      std::unique_lock<std::mutex> lk(jobs_mu_);
      const int64_t next = prev_t + spec.interval_ns();
      jobs_cv_.wait_for(lk, std::chrono::nanoseconds(std::max<int64_t>(0, next - datapath::monotonic_ns())),
                        [&] { return job->stop_requested.load() || driver->finished(); });
    }
    const int64_t now = datapath::monotonic_ns();
    if (job->stop_requested && !stop_sent) {
      driver->request_stop();
      stop_sent = true;
      stop_at = now;
    }
    if (shutting_down_) drain_limit_ns = kShutdownDrainNs;
    if (stop_sent && now - stop_at > drain_limit_ns) {
      forced = true;
      break;
    }
    if (now - prev_t < spec.interval_ns() && !driver->finished()) continue;
    // Goodput and messages at the interval's end time, read next to it:
    // connection_stats waits for the worker, and this thread may wait tens of
    // ms for a CPU beside real-time workers, which would move completions into
    // the wrong interval. The packet, retransmit, RTO and path-change counts
    // below are read after that wait; they are counts, not the asserted rates.
    const uint64_t bytes = driver->bytes_done(), msgs = driver->messages_done();
    connection_stats(ids, &stats);
    uint64_t pkts = 0, retx = 0, rtos = 0, changes = 0;
    for (const auto& s : stats) {
      pkts += s.data_packets_sent, retx += s.retransmits, rtos += s.rtos, changes += s.path_state_changes();
    }
    const double dt = static_cast<double>(now - prev_t) / 1e9;
    v1::JobProgress pr;
    pr.set_job_id(job->id);
    pr.set_state(v1::JOB_STATE_RUNNING);
    pr.set_start_ns(prev_t - t0);
    pr.set_end_ns(now - t0);
    pr.set_goodput_bps(dt > 0 ? static_cast<double>(bytes - prev_bytes) * 8 / dt : 0);
    pr.set_message_rate(dt > 0 ? static_cast<double>(msgs - prev_msgs) / dt : 0);
    pr.set_packet_rate(dt > 0 ? static_cast<double>(pkts - prev_pkts) / dt : 0);
    pr.set_retransmits(retx - prev_retx);
    pr.set_loss_seen(pkts > prev_pkts ? static_cast<double>(retx - prev_retx) / static_cast<double>(pkts - prev_pkts) : 0);
    pr.set_rtos(rtos - prev_rtos);
    pr.set_path_state_changes(changes - prev_changes);
    pr.set_bytes_total(bytes);
    pr.set_fraction_done(std::clamp(driver->fraction_done(now), 0.0, 1.0));
    pr.set_message_bytes(job->sizes[std::min<size_t>(driver->phase(), job->sizes.size() - 1)]);
    prev_t = now, prev_bytes = bytes, prev_msgs = msgs, prev_pkts = pkts, prev_retx = retx;
    prev_rtos = rtos, prev_changes = changes;
    std::lock_guard<std::mutex> g(jobs_mu_);
    job->intervals.push_back(pr);
    jobs_cv_.notify_all();
  }

  // 4. Results: final connection stats, then the responders' verification.
  connection_stats(ids, &stats);
  v1::JobResult& res = job->result;
  const double elapsed_s = static_cast<double>(datapath::monotonic_ns() - t0) / 1e9;
  std::string verification = spec.no_verify() ? "off" : "passed";
  bool verified = !spec.no_verify();
  // Spurious retransmissions are counted where they can be seen exactly: at
  // the receiver of the data, as payload that arrived again after it was
  // already placed (the responder for WRITE/SEND, this side for READ/atomic
  // responses). A sender cannot tell a late original from a lost one once it
  // has moved its path floor past it.
  uint64_t responder_duplicates = 0;
  bool duplicates_known = false;
  if (forced) {
    // The driver may still be working: read only its atomics.
    const std::string why = "stop: outstanding requests did not complete within " +
                            std::to_string(drain_limit_ns / 1'000'000'000) + " s" +
                            (drain_limit_ns == kShutdownDrainNs ? " (daemon shutting down): abandoned" : "");
    res.set_first_error(why);
    if (shutting_down_) spdlog::warn("job {}: {}", job->id, why);
    verified = false;
    verification = "not checked (job forced to stop)";
  } else {
    for (const auto& ph : driver->phases()) {
      auto* bw = res.add_bandwidth();
      bw->set_message_bytes(ph.size);
      bw->set_iterations(ph.messages);
      const double dur = static_cast<double>(ph.end_ns - ph.start_ns) / 1e9;
      bw->set_duration_ns(ph.end_ns - ph.start_ns);
      bw->set_average_bps(dur > 0 ? static_cast<double>(ph.bytes) * 8 / dur : 0);
      bw->set_message_rate(dur > 0 ? static_cast<double>(ph.messages) / dur : 0);
      double peak = 0;
      {
        std::lock_guard<std::mutex> g(jobs_mu_);
        for (const auto& iv : job->intervals)
          if (iv.message_bytes() == ph.size) peak = std::max(peak, iv.goodput_bps());
      }
      bw->set_peak_bps(std::max(peak, bw->average_bps()));
      auto* lat = res.add_latency();
      lat->set_message_bytes(ph.size);
      lat->set_samples(ph.latency.count());
      lat->set_min_ns(ph.latency.min());
      lat->set_max_ns(ph.latency.max());
      lat->set_median_ns(ph.latency.percentile(0.5));
      lat->set_average_ns(ph.latency.mean());
      lat->set_stdev_ns(ph.latency.stddev());
      lat->set_p99_ns(ph.latency.percentile(0.99));
      lat->set_p999_ns(ph.latency.percentile(0.999));
    }
    res.set_completion_errors(driver->completion_errors());
    if (!driver->first_error().empty()) res.set_first_error(driver->first_error());
    if (!spec.no_verify() && driver->verify_failures() > 0) {
      verified = false;
      verification = "requester: " + driver->first_error();
    }
    if (!spec.no_verify() && !job->stop_requested) {
      duplicates_known = true;
      // Every responder is asked (for its duplicate count), several at once;
      // the failure of the first connection in order names the verdict.
      std::vector<grpc::Status> vstatus(conns.size());
      std::vector<v1::VerifyResponse> vresps(conns.size());
      const std::atomic<bool> never{false};
      for_each_in_flight(conns.size(), kSetupCallsInFlight, never, [&](size_t ci) {
        v1::VerifyRequest vr;
        vr.set_responder_id(conns[ci].remote_id());
        vr.set_operation(operation_name(job->op));
        for (const auto& ph : driver->phases()) {
          auto* vp = vr.add_phases();
          vp->set_message_bytes(ph.size);
          for (uint64_t n : ph.stream_end[ci]) vp->add_stream_end(n);
        }
        grpc::ClientContext ctx;
        dialer_.prepare(&ctx, 30000);
        vstatus[ci] = v1::Peer::NewStub(dialer_.channel(conns[ci].peer_address()))->Verify(&ctx, vr, &vresps[ci]);
        return true;
      });
      for (size_t ci = 0; ci < conns.size(); ++ci) {
        const grpc::Status& s = vstatus[ci];
        const v1::VerifyResponse& vresp = vresps[ci];
        responder_duplicates += vresp.duplicates_received();
        duplicates_known = duplicates_known && s.ok();
        if (!s.ok()) {
          if (verified) verification = "responder " + conns[ci].peer_address() + ": " + s.error_message();
          verified = false;
        } else if (!vresp.ok()) {
          if (verified)
            verification = "responder " + conns[ci].peer_name() + " connection " +
                           std::to_string(conns[ci].remote_id()) + ": " + std::to_string(vresp.mismatches()) +
                           " mismatches; " + vresp.detail();
          verified = false;
        }
      }
    } else if (!spec.no_verify()) {
      verification = "passed (requester checks only: job stopped early)";
    }
  }
  uint64_t retx = 0, spurious = 0, rtos = 0, pkts = 0, changes = 0;
  for (size_t ci = 0; ci < stats.size(); ++ci) {
    const auto& s = stats[ci];
    retx += s.retransmits, spurious += s.duplicates_received, rtos += s.rtos, pkts += s.data_packets_sent;
    for (size_t p = 0; p < s.paths.size(); ++p) {
      const auto& ps = s.paths[p];
      changes += ps.state_changes;
      v1::PlaneResult* plane = nullptr;
      for (auto& pl : *res.mutable_planes())
        if (pl.plane() == ps.plane) plane = &pl;
      if (!plane) plane = res.add_planes(), plane->set_plane(ps.plane);
      plane->set_paths(plane->paths() + 1);
      plane->set_goodput_bps(plane->goodput_bps() +
                             (elapsed_s > 0 ? static_cast<double>(ps.payload_bytes_acked) * 8 / elapsed_s : 0));
      plane->set_retransmits(plane->retransmits() + ps.retransmits);
      plane->set_state_changes(plane->state_changes() + ps.state_changes);
      plane->set_rtos(plane->rtos() + ps.rtos);
      if (ci >= kResultPathConnections) {
        res.set_paths_omitted(res.paths_omitted() + 1);
        continue;
      }
      auto* pr = res.add_paths();
      pr->set_connection(ids[ci]);
      pr->set_path(static_cast<uint32_t>(p));
      pr->set_plane(ps.plane);
      pr->set_goodput_bps(elapsed_s > 0 ? static_cast<double>(ps.payload_bytes_acked) * 8 / elapsed_s : 0);
      pr->set_retransmits(ps.retransmits);
      pr->set_state_changes(ps.state_changes);
      pr->set_rtos(ps.rtos);
      pr->set_final_state(to_proto(ps.state));
    }
  }
  res.set_retransmits(retx);
  res.set_spurious_retransmits(spurious + responder_duplicates);
  res.set_spurious_retransmits_known(duplicates_known);
  res.set_rtos(rtos);
  res.set_data_packets_sent(pkts);
  res.set_path_state_changes(changes);
  res.set_verified(verified);
  res.set_verification(verification);

  teardown(forced ? nullptr : driver);
  if (forced) {
    // Keep the driver's memory alive: a request may still reference it. The
    // connections are gone, so nothing will; free it on the worker.
    endpoint_->channel().call([this, driver](transport::Nanos) {
      endpoint_->remove_driver(driver.get());
      driver->detach();
    });
  }
  v1::JobState final_state = v1::JOB_STATE_DONE;
  if (job->stop_requested) final_state = v1::JOB_STATE_STOPPED;
  if (res.completion_errors() > 0 || (!spec.no_verify() && !verified) || forced) final_state = v1::JOB_STATE_FAILED;
  if (final_state == v1::JOB_STATE_FAILED) {
    std::lock_guard<std::mutex> g(jobs_mu_);
    if (job->error.empty()) job->error = !res.first_error().empty() ? res.first_error() : verification;
  }
  // The buffers leave the budget before the job is seen to end: a client
  // that reads the counters once it is DONE finds them released (at the end
  // of this function, after finish, it raced such a client on a busy host).
  job_memory.reset();
  finish(final_state);
}

grpc::Status DaemonCore::stop_job(uint64_t id, v1::JobInfo* out) {
  std::shared_ptr<JobRecord> job;
  {
    std::lock_guard<std::mutex> g(jobs_mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return {grpc::StatusCode::NOT_FOUND, "id: no job " + std::to_string(id)};
    job = it->second;
    job->stop_requested = true;
    jobs_cv_.notify_all();
  }
  // Wait (bounded) for it to drain, so the answer carries the result.
  std::unique_lock<std::mutex> lk(jobs_mu_);
  // Shorter than a client's default 10 s deadline, so the answer gets back.
  jobs_cv_.wait_for(lk, std::chrono::seconds(8), [&] { return job->ended; });
  job_info(*job, out);
  return grpc::Status::OK;
}

void DaemonCore::stop_job_for_shutdown(const std::shared_ptr<JobRecord>& job) {
  job->stop_requested = true;
  std::lock_guard<std::mutex> g(jobs_mu_);
  jobs_cv_.notify_all();
}

void DaemonCore::join_job(const std::shared_ptr<JobRecord>& job) {
  if (job->thread.joinable()) job->thread.join();
}

void DaemonCore::join_finished_jobs() {
  std::vector<std::shared_ptr<JobRecord>> done;
  {
    std::lock_guard<std::mutex> g(jobs_mu_);
    for (auto& [id, j] : jobs_)
      if (j->ended && j->thread.joinable()) done.push_back(j);
  }
  for (auto& j : done) join_job(j);
}

grpc::Status DaemonCore::get_job(uint64_t id, v1::JobInfo* out) {
  std::lock_guard<std::mutex> g(jobs_mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return {grpc::StatusCode::NOT_FOUND, "id: no job " + std::to_string(id)};
  job_info(*it->second, out);
  return grpc::Status::OK;
}

grpc::Status DaemonCore::list_jobs(v1::ListJobsResponse* out) {
  std::lock_guard<std::mutex> g(jobs_mu_);
  for (const auto& [id, j] : jobs_) {
    auto* ji = out->add_jobs();
    job_info(*j, ji);
    ji->mutable_result()->clear_intervals();
  }
  return grpc::Status::OK;
}

void DaemonCore::job_info(const JobRecord& job, v1::JobInfo* out) const {
  out->set_id(job.id);
  *out->mutable_spec() = job.spec;
  out->set_state(job.state);
  out->set_seed(job.seed);
  out->set_started_at_unix_ns(job.started_unix_ns);
  out->set_elapsed_ns((job.ended ? job.ended_ns : datapath::monotonic_ns()) - job.started_ns);
  for (uint32_t id : job.conn_ids) out->add_connections(id);
  if (job.ended) {
    *out->mutable_result() = job.result;
    for (const auto& iv : job.intervals)
      if (!iv.has_result()) *out->mutable_result()->add_intervals() = iv;
  }
  out->set_error(job.error);
}

bool DaemonCore::wait_job(uint64_t id, size_t seen, std::vector<v1::JobProgress>* events, bool* ended,
                          const std::atomic<bool>& cancelled) {
  std::unique_lock<std::mutex> lk(jobs_mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  std::shared_ptr<JobRecord> job = it->second;
  while (job->intervals.size() <= seen && !job->ended && !cancelled && !shutting_down_)
    jobs_cv_.wait_for(lk, std::chrono::milliseconds(200));
  for (size_t i = seen; i < job->intervals.size(); ++i) events->push_back(job->intervals[i]);
  *ended = (job->ended && seen + events->size() >= job->intervals.size()) || (shutting_down_ && events->empty());
  return true;
}

void DaemonCore::running_progress(const std::vector<uint64_t>& ids, std::vector<v1::JobProgress>* out) {
  std::lock_guard<std::mutex> g(jobs_mu_);
  for (const auto& [id, j] : jobs_) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
    if (ids.empty() && terminal(j->state)) continue;
    if (!j->intervals.empty()) out->push_back(j->intervals.back());
  }
}

}  // namespace metaroce::daemon
