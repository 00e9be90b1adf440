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
// Cases are what the scenario format can express: rings on the full mesh and
// a Clos permutation at 16 jobs (its job limit). Issue 12's two reference
// cases (64 hosts x 8 planes x 4,000 connections all-to-all; 512 hosts x 4
// planes, 4,000 flows, permutation) need collective jobs over host sets and
// are listed as not run until those exist.
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

// The scenario file of a case: its topology and base lines, then one job
// per (from, to) pair over `per_job` connections, all started at once (the
// last job is `with` every other), and the data check. Scenario time is
// compressed 50x (sim.time_scale), so the file says 50x the simulated time.
std::string scenario_yaml(const Case& c, const std::string& topology_and_base,
                          const std::vector<std::pair<uint32_t, uint32_t>>& jobs, uint32_t per_job) {
  const double scale = 0.02;
  std::string y = "name: " + c.name + "\ndescription: \"" + c.what + "\"\nseed: 1\n" + topology_and_base;
  y += "duration: " + std::to_string(static_cast<int>(c.sim_ms / scale)) + "ms\n";
  y += "interval: " + std::to_string(static_cast<int>(c.sim_ms / scale / 4)) + "ms\n";
  y += "jobs:\n";
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
  y += "assertions:\n  - {metric: data_errors, job: all, max: 0}\n";
  y += "sim: {time_scale: " + std::to_string(scale) + "}\n";
  return y;
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
  for (const auto& run : r.runs) {
    events = std::max(events, run.sim_events);  // one run: every job reports its events
    goodput += run.goodput_bps;
    verified = verified && run.verified;
    bytes.insert(bytes.end(), run.connection_bytes.begin(), run.connection_bytes.end());
  }
  return json{{"events", events}, {"wall_s", wall},
              {"goodput_gbps", goodput / 1e9}, {"jain_fairness", scenario::jain_index(bytes)},
              {"verified", verified}, {"connections_measured", bytes.size()}};
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
  app.add_option("--json", json_path, "write the rows as a JSON array to this file");
  app.add_flag("--quick", quick, "small cases only (seconds), to check the benchmark runs");
  CLI11_PARSE(app, argc, argv);

  std::vector<Case> cases;
  if (quick) {
    cases.push_back(ring(4, 4, 16, 2));
  } else {
    cases.push_back(ring(8, 8, 64, 2));
    cases.push_back(ring(16, 8, 64, 2));
    cases.push_back(clos(64, 8, 64, 2));
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
    } else {
      const double rss = j["peak_rss_bytes"].get<double>();
      j["rss_per_connection_bytes"] = rss / c.connections;
      std::printf("%-16s %6u %6u %6u %8.2f %12llu %12.0f %8.2f %10.1f %10.0f %8.1f %6.3f\n", c.name.c_str(), c.hosts,
                  c.planes, c.connections, c.sim_ms, static_cast<unsigned long long>(j["events"].get<uint64_t>()),
                  j["events_per_s"].get<double>(), j["wall_s"].get<double>(), rss / 1e6, rss / c.connections,
                  j["goodput_gbps"].get<double>(), j["jain_fairness"].get<double>());
    }
    rows.push_back(j);
  }
  const double events_per_s = rows.empty() || !rows.back().contains("events_per_s") ? 0 : rows.back()["events_per_s"].get<double>();
  std::printf("\nbytes per idle MetaRoCE connection (8 paths, engine's count, %u connections): %.0f (goal <= 2048)\n",
              quick ? 1000u : 16000u, idle);
  std::printf("events per second on one core, largest case: %.0f (goal >= 1,000,000)\n", events_per_s);
  std::printf("not run: issue 12's cases (a) 64 hosts x 8 planes x 4,000 connections all-to-all and (b) 512 hosts x 4 "
              "planes, 4,000 flows, permutation: scenarios have at most 16 jobs and no collective jobs yet\n");
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
