// metaroce_daemon_connections_bench: what N live connections cost a daemon
// (issue 12, "a daemon holds at least 16,000 connections"). For each N it
// starts two metaroced processes on the UDP datapath over loopback (Unix
// socket control, unprivileged; tests/daemon/udp_daemon_pair.h), then:
//   create   Connections.Create N times at daemon a, one after the other (each
//            a Peer.Accept at b): total, per connection, and the last tenth's
//            per-connection time over the first tenth's (about 1 when
//            creation does not slow down as connections accumulate; O(n^2)
//            would make it grow with N);
//   memory   each daemon's RSS growth per connection, and its own account
//            (Daemon.GetInfo connection_state_bytes / N, the engine state);
//   delete   Connections.Delete of all N;
//   job      a verified WRITE job of N connections (1 path, queue depth 1,
//            64-byte messages, --iterations each): wall time from Start to
//            its end (set-up, data, verification, teardown), the data phase
//            alone and its goodput.
// Small connections on purpose (one path, depth 1): the figures are what the
// number of connections costs, not the size of their buffers. A benchmark,
// not a test: it prints a table (and --json FILE) and fails only when a step
// fails. --quick runs N = 50 and 200 (ctest bench.daemon_connections_quick).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "udp_daemon_pair.h"

namespace {

namespace v1 = ::metaroce::v1;
using daemon_test::UdpDaemonPair;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Row {
  uint32_t n = 0;
  double create_s = 0, create_first_us = 0, create_last_us = 0;
  double rss_a = 0, rss_b = 0;        // growth per connection, bytes
  double state_a = 0, state_b = 0;    // the daemon's own account per connection, bytes
  double delete_s = 0;
  double job_s = 0, setup_s = 0, data_s = 0, goodput_bps = 0;
  uint64_t messages = 0;
  bool verified = false;
};

bool info(UdpDaemonPair& d, int h, v1::DaemonInfo* out) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return d.daemon(h).GetInfo(&ctx, v1::GetInfoRequest{}, out).ok();
}

std::string measure(const std::string& metaroced, uint32_t n, uint64_t iterations, Row* row) {
  row->n = n;
  UdpDaemonPair d(metaroced, "mrconnbench", "  max_connections: 32768\n  memory_budget_bytes: 4294967296\n  half_open_timeout_ns: 1h\n");
  if (auto e = d.wait_ready(); !e.empty()) return e;
  const uint64_t rss0[2] = {d.rss_bytes(0), d.rss_bytes(1)};
  const v1::ConnectionParams params = daemon_test::small_params(d.udp_port());
  std::vector<uint32_t> ids;
  ids.reserve(n);
  const uint32_t tenth = std::max<uint32_t>(1, n / 10);
  Clock::time_point t0 = Clock::now(), tenth_start = t0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i == n - tenth) tenth_start = Clock::now();
    v1::ConnectionInfo ci;
    if (auto s = d.create_connection(i + 1, params, &ci); !s.ok())
      return "create " + std::to_string(i) + ": " + s.error_message();
    ids.push_back(ci.id());
    if (i + 1 == tenth) row->create_first_us = seconds_since(t0) * 1e6 / tenth;
  }
  row->create_s = seconds_since(t0);
  row->create_last_us = seconds_since(tenth_start) * 1e6 / tenth;
  v1::DaemonInfo ia, ib;
  if (!info(d, 0, &ia) || !info(d, 1, &ib)) return "GetInfo failed";
  if (ia.connections() != n || ib.connections() != n)
    return "the daemons hold " + std::to_string(ia.connections()) + " and " + std::to_string(ib.connections());
  row->rss_a = (static_cast<double>(d.rss_bytes(0)) - static_cast<double>(rss0[0])) / n;
  row->rss_b = (static_cast<double>(d.rss_bytes(1)) - static_cast<double>(rss0[1])) / n;
  row->state_a = static_cast<double>(ia.connection_state_bytes()) / n;
  row->state_b = static_cast<double>(ib.connection_state_bytes()) / n;
  t0 = Clock::now();
  for (uint32_t id : ids) {
    v1::DeleteConnectionResponse resp;
    if (auto s = d.delete_connection(id, &resp); !s.ok()) return "delete: " + s.error_message();
  }
  row->delete_s = seconds_since(t0);

  v1::JobInfo job;
  t0 = Clock::now();
  if (auto s = daemon_test::run_write_job(d, n, iterations, 64, &job, std::chrono::seconds(600), &row->setup_s); !s.ok())
    return "job: " + s.error_message();
  row->job_s = seconds_since(t0);
  if (job.state() != v1::JOB_STATE_DONE) return "job ended " + v1::JobState_Name(job.state()) + ": " + job.error();
  row->verified = job.result().verified();
  if (job.result().bandwidth_size() > 0) {
    const auto& bw = job.result().bandwidth(0);
    row->data_s = static_cast<double>(bw.duration_ns()) / 1e9;
    row->goodput_bps = bw.average_bps();
    row->messages = bw.iterations();
  }
  const auto rc = d.stop();
  if (rc[0] != 0 || rc[1] != 0) return "a daemon did not exit cleanly";
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  std::string metaroced = METAROCED_PATH, json;
  bool quick = false;
  uint64_t iterations = 1;
  std::vector<uint32_t> counts;
  CLI::App app{"metaroce_daemon_connections_bench: creation time, memory and a verified job at N connections"};
  app.add_option("--metaroced", metaroced, "the daemon binary")->capture_default_str();
  app.add_option("--count", counts, "connection counts (default 1000 4000 16000)")->check(CLI::Range(1u, 32768u));
  app.add_option("--iterations", iterations, "messages per connection in the job")->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  app.add_flag("--quick", quick, "N = 50 and 200 only (a smoke run)");
  app.add_option("--json", json, "write the rows as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  if (counts.empty()) counts = quick ? std::vector<uint32_t>{50, 200} : std::vector<uint32_t>{1000, 4000, 16000};

  std::vector<Row> rows;
  for (uint32_t n : counts) {
    Row r;
    if (auto e = measure(metaroced, n, iterations, &r); !e.empty()) {
      std::fprintf(stderr, "metaroce_daemon_connections_bench: N=%u: %s\n", n, e.c_str());
      return 1;
    }
    rows.push_back(r);
  }
  std::printf("%7s %9s %9s %11s %11s %10s %10s %10s %10s %9s %9s %9s %9s %11s %8s\n", "N", "create s", "us/conn",
              "first10% us", "last10% us", "rss a B/c", "rss b B/c", "state a", "state b", "delete s", "job s",
              "setup s", "data s", "goodput", "verified");
  nlohmann::json j = nlohmann::json::array();
  for (const Row& r : rows) {
    char gp[32];
    std::snprintf(gp, sizeof gp, "%.1f Mb/s", r.goodput_bps / 1e6);
    std::printf("%7u %9.2f %9.0f %11.0f %11.0f %10.0f %10.0f %10.0f %10.0f %9.2f %9.2f %9.2f %9.3f %11s %8s\n", r.n,
                r.create_s, r.create_s * 1e6 / r.n, r.create_first_us, r.create_last_us, r.rss_a, r.rss_b, r.state_a,
                r.state_b, r.delete_s, r.job_s, r.setup_s, r.data_s, gp, r.verified ? "yes" : "NO");
    j.push_back({{"connections", r.n},
                 {"create_seconds", r.create_s},
                 {"create_us_per_connection", r.create_s * 1e6 / r.n},
                 {"create_first_tenth_us_per_connection", r.create_first_us},
                 {"create_last_tenth_us_per_connection", r.create_last_us},
                 {"rss_bytes_per_connection_requester", r.rss_a},
                 {"rss_bytes_per_connection_responder", r.rss_b},
                 {"state_bytes_per_connection_requester", r.state_a},
                 {"state_bytes_per_connection_responder", r.state_b},
                 {"delete_seconds", r.delete_s},
                 {"job_seconds", r.job_s},
                 {"job_setup_seconds", r.setup_s},
                 {"job_data_seconds", r.data_s},
                 {"job_goodput_bps", r.goodput_bps},
                 {"job_messages", r.messages},
                 {"job_verified", r.verified}});
  }
  std::printf("create: Connections.Create one after another (each a Peer.Accept); first/last 10%%: per connection.\n"
              "rss: VmRSS growth per idle connection; state: the daemon's own account (GetInfo "
              "connection_state_bytes / N).\njob: verified WRITE, %llu x 64 B per connection, Start to end; setup: its "
              "connections' set-up (8 at a time); data: its data phase; the rest is verification and teardown.\n",
              static_cast<unsigned long long>(iterations));
  if (!json.empty()) std::ofstream(json) << j.dump(2) << "\n";
  return 0;
}
