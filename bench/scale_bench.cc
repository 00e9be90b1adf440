// metaroce_scale_bench: the simulator at cluster scale. Each case is a
// scenario file's text run through the same engine as `metarocectl scenario
// run --sim`, on one thread, in its own process so that its peak RSS and CPU
// time are its own. events_per_s is per second of that CPU time (one core;
// other load on a shared machine does not count), wall_s is beside it. Prints
// a table and, with --json FILE, an array of objects: case, hosts, planes,
// connections, sim_ms, events, events_per_s, cpu_s, wall_s, peak_rss_bytes,
// rss_per_connection_bytes (peak RSS / connections: transport state, message
// buffers and fabric together), bytes_per_idle_connection (the engine's count),
// goodput_gbps, jain_fairness (across every connection of the case), verified.
//
// Cases: rings on the full mesh, a Clos permutation of 16 pair jobs, and
// issue 12's two reference cases as collective jobs: (a) 64 hosts x 8 planes,
// all-to-all, 4,032 connections, 10 ms; (b) 512 hosts x 4 planes, a
// permutation of 4,096 flows of 1 MiB each. Then plane scaling: the
// all-to-all of (a) on 1, 2, 4 and 8 planes for 2 ms, goodput per plane
// count. Rows also carry the message completion times (completion_p50_us,
// _p99_us, _max_us) and whether every finite flow finished (state).
#include <CLI/CLI.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/scenario.h"
#include "metaroce/transport/endpoint.h"

using namespace metaroce;
using nlohmann::json;

namespace {

struct Case {
  std::string name, what;
  uint32_t hosts = 0, planes = 0, connections = 0;
  double sim_ms = 0;
  std::string yaml;
};

// The scenario file of a case around its jobs: topology and base lines,
// duration, the data check. Scenario time is compressed 50x
// (sim.time_scale), so the file says 50x the simulated time.
std::string scenario_yaml_with_jobs(const Case& c, const std::string& topology_and_base, const std::string& jobs) {
  const double scale = 0.02;
  std::string y = "name: " + c.name + "\ndescription: \"" + c.what + "\"\nseed: 1\n" + topology_and_base;
  y += "duration: " + std::to_string(static_cast<int>(c.sim_ms / scale)) + "ms\n";
  y += "interval: " + std::to_string(static_cast<int>(c.sim_ms / scale / 4)) + "ms\n";
  y += "jobs:\n" + jobs;
  y += "assertions:\n  - {metric: data_errors, job: all, max: 0}\n";
  y += "sim: {time_scale: " + std::to_string(scale) + "}\n";
  return y;
}

// One job per (from, to) pair over `per_job` connections, all started at
// once (the last job is `with` every other).
std::string scenario_yaml(const Case& c, const std::string& topology_and_base,
                          const std::vector<std::pair<uint32_t, uint32_t>>& jobs, uint32_t per_job) {
  std::string y;
  for (size_t i = 0; i < jobs.size(); ++i) {
    y += "  - {name: j" + std::to_string(i) + ", from: h" + std::to_string(jobs[i].first) + ", to: h" +
         std::to_string(jobs[i].second) + ", transport: metaroce, size: 64K, connections: " + std::to_string(per_job);
    if (i + 1 == jobs.size() && jobs.size() > 1) {
      y += ", with: [";
      for (size_t k = 0; k + 1 < jobs.size(); ++k) y += (k ? ", j" : "j") + std::to_string(k);
      y += "]";
    }
    y += "}\n";
  }
  return scenario_yaml_with_jobs(c, topology_and_base, y);
}

// A ring: host i writes to host i+1 over `per_job` connections, every job at once.
Case ring(uint32_t hosts, uint32_t planes, uint32_t per_job, double sim_ms) {
  Case c;
  c.name = "ring-" + std::to_string(hosts) + "x" + std::to_string(planes) + "x" + std::to_string(hosts * per_job);
  c.what = std::to_string(hosts) + " hosts x " + std::to_string(planes) + " planes, ring, " +
           std::to_string(per_job) + " connections per host pair, 64 KiB WRITEs";
  c.hosts = hosts, c.planes = planes, c.connections = hosts * per_job, c.sim_ms = sim_ms;
  std::vector<std::pair<uint32_t, uint32_t>> jobs;
  for (uint32_t i = 0; i < hosts; ++i) jobs.emplace_back(i, (i + 1) % hosts);
  c.yaml = scenario_yaml(c,
                         "topology: {hosts: " + std::to_string(hosts) + ", planes: " + std::to_string(planes) +
                             ", ecmp_links: 1}\nbase: {delay: 5us, rate: 25G}\n",
                         jobs, per_job);
  return c;
}

// A Clos: `hosts` hosts on leaves of 8 per plane, 4 spines per plane (2:1
// oversubscribed at 25G), 16 senders (the scenario format's job limit), each
// writing over `per_job` connections to a host on the next leaf: a
// permutation across the leaves, every job at once.
Case clos(uint32_t hosts, uint32_t planes, uint32_t per_job, double sim_ms) {
  Case c;
  c.name = "clos-" + std::to_string(hosts) + "x" + std::to_string(planes) + "x" + std::to_string(16 * per_job);
  c.what = std::to_string(hosts) + " hosts x " + std::to_string(planes) + " planes, Clos (8 hosts per leaf, 4 spines), 16 senders x " +
           std::to_string(per_job) + " connections, permutation across leaves, 64 KiB WRITEs";
  c.hosts = hosts, c.planes = planes, c.connections = 16 * per_job, c.sim_ms = sim_ms;
  const uint32_t leaves = hosts / 8;
  std::vector<std::pair<uint32_t, uint32_t>> jobs;
  for (uint32_t i = 0; i < 16; ++i)  // spread over the leaves; same slot, next leaf
    jobs.emplace_back((i % leaves) * 8 + (i / leaves) % 8, ((i % leaves + 1) % leaves) * 8 + (i / leaves) % 8);
  c.yaml = scenario_yaml(c,
                         "topology: {kind: clos, hosts: " + std::to_string(hosts) + ", planes: " +
                             std::to_string(planes) + ", hosts_per_leaf: 8, spines: 4, host_rate: 25G, spine_rate: 25G}\n",
                         jobs, per_job);
  return c;
}

// Issue 12's case (a) and the plane scaling: 64 hosts, every host writing to
// every other over one MetaRoCE connection (4,032), 64 KiB WRITEs, two
// outstanding per connection, on a non-blocking Clos (8 hosts per leaf, 8
// spines per plane, 25G: 1:1), so the hosts' links and not the spines are
// what the connections share and fairness across them is the transport's.
Case all_to_all(uint32_t hosts, uint32_t planes, double sim_ms, const std::string& name) {
  Case c;
  c.name = name;
  c.what = std::to_string(hosts) + " hosts x " + std::to_string(planes) +
           " planes, Clos (8 hosts per leaf, 8 spines, 25G, 1:1), all-to-all, 1 connection per pair, 64 KiB WRITEs";
  c.hosts = hosts, c.planes = planes, c.connections = hosts * (hosts - 1), c.sim_ms = sim_ms;
  c.yaml = scenario_yaml_with_jobs(c,
                                   "topology: {kind: clos, hosts: " + std::to_string(hosts) + ", planes: " +
                                       std::to_string(planes) + ", hosts_per_leaf: 8, spines: 8, host_rate: 25G, spine_rate: 25G}\n",
                                   "  - {name: a2a, pattern: all_to_all, transport: metaroce, size: 64K, queue_depth: 2}\n");
  return c;
}

// Issue 12's case (b): 512 hosts x 4 planes, a permutation (each host writes
// to one other, a random cycle), 8 connections per pair each sending one
// 1 MiB message: 4,096 flows of 1 MiB, on a Clos of 16 hosts per leaf and 16
// spines per plane at 25G (1:1).
Case permutation(uint32_t hosts, uint32_t planes, uint32_t per_pair, double sim_ms) {
  Case c;
  c.name = "perm-" + std::to_string(hosts) + "x" + std::to_string(planes) + "x" + std::to_string(hosts * per_pair);
  c.what = std::to_string(hosts) + " hosts x " + std::to_string(planes) + " planes, Clos (16 hosts per leaf, 16 spines, 25G), "
           "permutation, " + std::to_string(per_pair) + " connections per pair, one 1 MiB message each";
  c.hosts = hosts, c.planes = planes, c.connections = hosts * per_pair, c.sim_ms = sim_ms;
  c.yaml = scenario_yaml_with_jobs(c,
                                   "topology: {kind: clos, hosts: " + std::to_string(hosts) + ", planes: " +
                                       std::to_string(planes) + ", hosts_per_leaf: 16, spines: 16, host_rate: 25G, spine_rate: 25G}\n",
                                   "  - {name: perm, pattern: permutation, transport: metaroce, size: 1M, messages: 1, "
                                   "queue_depth: 1, connections: " + std::to_string(per_pair) + "}\n");
  return c;
}

// Heap the engine counts for one idle MetaRoCE connection, with n of them.
double bytes_per_idle_connection(uint32_t n) {
  transport::EndpointConfig ec;
  ec.ip = 0x0a000001;
  transport::Endpoint ep(ec);
  for (uint32_t i = 0; i < n; ++i) {
    transport::ConnectionConfig c;
    c.transport = transport::TransportKind::kMetaRoCE;
    c.local_id = i + 1;
    c.remote_id = i + 1;
    c.peer_ip = 0x0a000002;
    for (uint8_t p = 0; p < 8; ++p) c.paths.push_back({static_cast<uint8_t>(p % 4), static_cast<uint16_t>(49152 + p)});
    std::string err;
    if (!ep.create_connection(c, &err)) {
      std::fprintf(stderr, "create_connection: %s\n", err.c_str());
      return -1;
    }
  }
  return static_cast<double>(ep.counters().connection_state_bytes) / n;
}

// Runs the case in this (child) process; the result as JSON text.
json run_case(const Case& c) {
  std::string err;
  auto s = scenario::parse_scenario_yaml(c.yaml, c.name, &err);
  if (!s) return json{{"error", err}};
  const auto t0 = std::chrono::steady_clock::now();
  const scenario::Report r = scenario::run_scenario_sim(*s, {}, 1);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t events = 0;
  double goodput = 0;
  bool verified = true;
  std::vector<uint64_t> bytes;
  std::string state = "done", error;
  for (const auto& run : r.runs) {
    events = std::max(events, run.sim_events);  // one run: every job reports its events
    goodput += run.goodput_bps;
    verified = verified && run.verified;
    bytes.insert(bytes.end(), run.connection_bytes.begin(), run.connection_bytes.end());
    if (run.state != "done") state = run.state, error = run.error;
  }
  // Completion times: the first run's (every case has one job, or pair jobs alike).
  const scenario::LatencySummary& l = r.runs.front().latency;
  return json{{"events", events}, {"wall_s", wall},
              {"goodput_gbps", goodput / 1e9}, {"jain_fairness", scenario::jain_index(bytes)},
              {"verified", verified}, {"connections_measured", bytes.size()}, {"state", state}, {"state_detail", error},
              {"completion_p50_us", l.median_us}, {"completion_p99_us", l.p99_us}, {"completion_max_us", l.max_us}};
}

// Forks, runs the case in the child, returns its JSON and its peak RSS.
json run_isolated(const Case& c) {
  int fds[2];
  if (pipe(fds) != 0) return json{{"error", "pipe failed"}};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string out = run_case(c).dump();
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  json j = text.empty() ? json{{"error", "the case's process ended without a result (status " +
                                             std::to_string(status) + ")"}}
                        : json::parse(text);
  j["peak_rss_bytes"] = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  // Per core: the case ran on one thread, so its CPU time is one core's, and
  // other load on a shared machine does not count against it.
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  j["cpu_s"] = cpu;
  if (j.contains("events")) j["events_per_s"] = cpu > 0 ? j["events"].get<double>() / cpu : 0;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"metaroce_scale_bench: simulator events/s, wall time, memory and fairness at scale"};
  std::string json_path;
  bool quick = false;
  std::string only;
  app.add_option("--json", json_path, "write the rows as a JSON array to this file");
  app.add_flag("--quick", quick, "small cases only (seconds), to check the benchmark runs");
  app.add_option("--only", only, "run only the cases whose name starts with this (e.g. a2a, perm, planes)");
  CLI11_PARSE(app, argc, argv);

  std::vector<Case> cases;
  // Plane scaling: the same all-to-all on 1, 2, 4 and 8 planes.
  const std::vector<uint32_t> scaling_planes = quick ? std::vector<uint32_t>{1, 2} : std::vector<uint32_t>{1, 2, 4, 8};
  if (quick) {
    cases.push_back(ring(4, 4, 16, 2));
    cases.push_back(all_to_all(16, 2, 2, "a2a-16x2x240"));
    cases.push_back(permutation(32, 2, 2, 2));
  } else {
    cases.push_back(ring(8, 8, 64, 2));
    cases.push_back(ring(16, 8, 64, 2));
    cases.push_back(clos(64, 8, 64, 2));
    cases.push_back(all_to_all(64, 8, 10, "a2a-64x8x4032"));  // (a)
    cases.push_back(permutation(512, 4, 8, 4));               // (b)
  }
  for (uint32_t p : scaling_planes)
    cases.push_back(all_to_all(quick ? 16 : 64, p, 2, "planes-" + std::to_string(p)));
  if (!only.empty()) {
    std::erase_if(cases, [&](const Case& c) { return c.name.rfind(only, 0) != 0; });
    if (cases.empty()) {
      std::fprintf(stderr, "--only %s: no case's name starts with it\n", only.c_str());
      return 2;
    }
  }
  const double idle = bytes_per_idle_connection(quick ? 1000 : 16000);

  json rows = json::array();
  int failed = 0;
  std::printf("%-16s %6s %6s %6s %8s %12s %12s %8s %10s %10s %8s %6s\n", "case", "hosts", "planes", "conns", "sim_ms",
              "events", "events/s/core", "wall_s", "peak_MB", "rss/conn", "Gb/s", "jain");
  for (const Case& c : cases) {
    json j = run_isolated(c);
    j["case"] = c.name;
    j["description"] = c.what;
    j["hosts"] = c.hosts, j["planes"] = c.planes, j["connections"] = c.connections, j["sim_ms"] = c.sim_ms;
    j["bytes_per_idle_connection"] = idle;
    if (j.contains("error")) {
      std::printf("%-16s error: %s\n", c.name.c_str(), j["error"].get<std::string>().c_str());
      ++failed;
    } else if (!j.contains("events")) {
      std::printf("%-16s error: %s\n", c.name.c_str(), j.value("error", std::string("no result")).c_str());
      ++failed;
    } else {
      if (!j["verified"].get<bool>()) {
        std::printf("%-16s data check FAILED: a connection's bytes differed or a WRITE failed\n", c.name.c_str());
        ++failed;
      }
      const double rss = j["peak_rss_bytes"].get<double>();
      j["rss_per_connection_bytes"] = rss / c.connections;
      std::printf("%-16s %6u %6u %6u %8.2f %12llu %12.0f %8.2f %10.1f %10.0f %8.1f %6.3f\n", c.name.c_str(), c.hosts,
                  c.planes, c.connections, c.sim_ms, static_cast<unsigned long long>(j["events"].get<uint64_t>()),
                  j["events_per_s"].get<double>(), j["wall_s"].get<double>(), rss / 1e6, rss / c.connections,
                  j["goodput_gbps"].get<double>(), j["jain_fairness"].get<double>());
    }
    rows.push_back(j);
  }
  auto row = [&](const std::string& name) -> const json* {
    for (const json& r : rows)
      if (r.value("case", "") == name && r.contains("events")) return &r;
    return nullptr;
  };
  std::printf("\nbytes per idle MetaRoCE connection (8 paths, engine's count, %u connections): %.0f (goal <= 2048)\n",
              quick ? 1000u : 16000u, idle);
  const std::string a = quick ? "a2a-16x2x240" : "a2a-64x8x4032";
  if (const json* r = row(a))
    std::printf("case (a) %s: %.0f events/s on one core (goal >= 1,000,000), %.1f s wall (goal <= 60), Jain %.4f across "
                "%llu connections (goal >= 0.98), message completion p50 %.0f us, p99 %.0f us\n",
                a.c_str(), (*r)["events_per_s"].get<double>(), (*r)["wall_s"].get<double>(), (*r)["jain_fairness"].get<double>(),
                static_cast<unsigned long long>((*r)["connections_measured"].get<uint64_t>()),
                (*r)["completion_p50_us"].get<double>(), (*r)["completion_p99_us"].get<double>());
  for (const json& r : rows)
    if (r.value("case", "").rfind("perm-", 0) == 0 && r.contains("events"))
      std::printf("case (b) %s: flows %s (%s), 1 MiB completion p50 %.0f us, p99 %.0f us, max %.0f us; %.1f s wall, "
                  "peak RSS %.0f MB\n",
                  r["case"].get<std::string>().c_str(), r["state"].get<std::string>() == "done" ? "all finished" : "NOT all finished",
                  r["state_detail"].get<std::string>().empty() ? "every byte checked" : r["state_detail"].get<std::string>().c_str(),
                  r["completion_p50_us"].get<double>(), r["completion_p99_us"].get<double>(),
                  r["completion_max_us"].get<double>(), r["wall_s"].get<double>(), r["peak_rss_bytes"].get<double>() / 1e6);
  std::printf("plane scaling (the same all-to-all):");
  for (uint32_t p : scaling_planes)
    if (const json* r = row("planes-" + std::to_string(p))) std::printf(" %u planes %.1f Gb/s;", p, (*r)["goodput_gbps"].get<double>());
  std::printf("\n");
  const uint32_t hi = scaling_planes.back(), lo = scaling_planes[scaling_planes.size() - 2];
  if (const json *rh = row("planes-" + std::to_string(hi)), *rl = row("planes-" + std::to_string(lo)); rh && rl)
    std::printf("goodput %u planes / %u planes: %.3f (goal >= 0.95 x 2 = 1.90)\n", hi, lo,
                (*rh)["goodput_gbps"].get<double>() / std::max(1e-9, (*rl)["goodput_gbps"].get<double>()));
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << rows.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return failed ? 1 : 0;
}
