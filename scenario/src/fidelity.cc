// assess_fidelity: the difference of every daemon's counters over one live
// run, turned into per-worker figures, frames lost by named cause, and the
// reasons (if any) the run does not measure the emulated fabric.
#include "metaroce/scenario/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace metaroce::scenario {
namespace {

using Labels = std::map<std::string, std::string>;

double value_of(const DaemonCounters& d, const std::string& name, const Labels& labels) {
  for (const auto& c : d.counters)
    if (c.name == name && c.labels == labels) return c.value;
  return 0;
}

double delta(const DaemonCounters& before, const DaemonCounters& after, const std::string& name, const Labels& l) {
  return std::max(0.0, value_of(after, name, l) - value_of(before, name, l));
}

// Sum of a counter's increase over every label set (optionally only those
// whose `key` label equals `want`).
double delta_sum(const DaemonCounters& before, const DaemonCounters& after, const std::string& name,
                 const std::string& key = "", const std::string& want = "") {
  double sum = 0;
  for (const auto& c : after.counters) {
    if (c.name != name) continue;
    if (!key.empty()) {
      auto it = c.labels.find(key);
      if (it == c.labels.end() || it->second != want) continue;
    }
    sum += std::max(0.0, c.value - value_of(before, name, c.labels));
  }
  return sum;
}

// A cumulative Prometheus-style histogram's increase over the run (buckets
// `<name>_bucket{worker, le}`), gathered once and asked for several quantiles.
struct HistogramIncrease {
  std::vector<std::pair<double, double>> buckets;  // le (s), cumulative increase, by le
  double count = 0;

  HistogramIncrease(const DaemonCounters& before, const DaemonCounters& after, const std::string& name,
                    const std::string& worker) {
    for (const auto& c : after.counters) {
      if (c.name != name + "_bucket") continue;
      auto w = c.labels.find("worker");
      auto le = c.labels.find("le");
      if (w == c.labels.end() || w->second != worker || le == c.labels.end()) continue;
      buckets.emplace_back(std::strtod(le->second.c_str(), nullptr),
                           std::max(0.0, c.value - value_of(before, c.name, c.labels)));
    }
    std::sort(buckets.begin(), buckets.end());
    count = delta(before, after, name + "_count", {{"worker", worker}});
  }
  uint64_t total() const { return static_cast<uint64_t>(count); }
  // Quantile q: the upper bound, in us, of the bucket holding it (q = 1: the
  // highest bucket that gained a value).
  double quantile_us(double q) const {
    if (count <= 0 || buckets.empty()) return 0;
    for (const auto& [le, cum] : buckets)
      if (cum >= q * count) return le * 1e6;
    return buckets.back().first * 1e6;  // beyond the last bucket: at least this late
  }
};

std::string fmt(const char* f, double a, double b = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

}  // namespace

Fidelity assess_fidelity(const std::vector<DaemonCounters>& before, const std::vector<DaemonCounters>& after,
                         const FidelityLimits& limits) {
  Fidelity f;
  f.measured = true;
  for (size_t i = 0; i < after.size() && i < before.size(); ++i) {
    const DaemonCounters& b = before[i];
    const DaemonCounters& a = after[i];
    std::set<std::string> workers;
    for (const auto& c : a.counters)
      if (c.name == "worker_wall_seconds_total") workers.insert(c.labels.count("worker") ? c.labels.at("worker") : "");
    for (const std::string& w : workers) {
      const Labels l = {{"worker", w}};
      WorkerFidelity wf;
      wf.daemon = a.daemon;
      wf.worker = w;
      wf.wall_s = delta(b, a, "worker_wall_seconds_total", l);
      if (wf.wall_s > 0) {
        wf.busy_fraction = delta(b, a, "worker_busy_seconds_total", l) / wf.wall_s;
        wf.cpu_fraction = delta(b, a, "worker_cpu_seconds_total", l) / wf.wall_s;
        wf.run_delay_fraction = delta(b, a, "worker_run_delay_seconds_total", l) / wf.wall_s;
      }
      const HistogramIncrease frame_late(b, a, "worker_frame_lateness_seconds", w),
          timer_late(b, a, "worker_timer_lateness_seconds", w), receive_wait(b, a, "worker_receive_wait_seconds", w);
      wf.frames_timed = frame_late.total();
      wf.frame_late_p50_us = frame_late.quantile_us(0.5);
      wf.frame_late_p99_us = frame_late.quantile_us(0.99);
      wf.timers_timed = timer_late.total();
      wf.timer_late_p50_us = timer_late.quantile_us(0.5);
      wf.timer_late_p99_us = timer_late.quantile_us(0.99);
      wf.frames_received = receive_wait.total();
      wf.receive_wait_p50_us = receive_wait.quantile_us(0.5);
      wf.receive_wait_p99_us = receive_wait.quantile_us(0.99);
      for (const HistogramIncrease* h : {&frame_late, &timer_late, &receive_wait})
        wf.stall_max_us = std::max(wf.stall_max_us, h->quantile_us(1.0));
      wf.realtime_share = value_of(a, "worker_realtime_share", l);
      wf.realtime_demotions = static_cast<uint64_t>(delta(b, a, "worker_realtime_demotions_total", l));
      const std::string who = a.daemon + " " + w + " worker";
      const size_t problems_before = f.problems.size();
      if (wf.wall_s <= 0)
        f.problems.push_back(who + ": did not report its loop time (daemon too old, or the worker is stuck)");
      if (wf.run_delay_fraction > limits.max_run_delay_fraction)
        f.problems.push_back(who + fmt(": waited for a CPU %.1f%% of the run (limit %.1f%%): the host's cores are "
                                       "oversubscribed",
                                       100 * wf.run_delay_fraction, 100 * limits.max_run_delay_fraction));
      if (wf.busy_fraction > limits.max_busy_fraction)
        f.problems.push_back(who + fmt(": busy %.0f%% of the run (limit %.0f%%): the datapath, not the fabric, set "
                                       "the pace",
                                       100 * wf.busy_fraction, 100 * limits.max_busy_fraction));
      if (wf.frames_timed > 0 && wf.frame_late_p99_us * 1e3 > static_cast<double>(limits.max_frame_lateness_p99_ns))
        f.problems.push_back(who + fmt(": p99 of frames leaving the emulator late by up to %.0f us (limit %.0f us)",
                                       wf.frame_late_p99_us, limits.max_frame_lateness_p99_ns / 1e3));
      if (wf.timers_timed > 0 && wf.timer_late_p99_us * 1e3 > static_cast<double>(limits.max_timer_lateness_p99_ns))
        f.problems.push_back(who + fmt(": p99 of transport timers late by up to %.0f us (limit %.0f us)",
                                       wf.timer_late_p99_us, limits.max_timer_lateness_p99_ns / 1e3));
      if (wf.frames_received > 0 && wf.receive_wait_p99_us * 1e3 > static_cast<double>(limits.max_receive_wait_p99_ns))
        f.problems.push_back(who + fmt(": p99 of received frames waited up to %.0f us for the worker (limit %.0f us)",
                                       wf.receive_wait_p99_us, limits.max_receive_wait_p99_ns / 1e3));
      if (wf.stall_max_us * 1e3 > static_cast<double>(limits.max_stall_ns))
        f.problems.push_back(who + fmt(": left a frame or timer waiting up to %.1f ms (limit %.1f ms): the host's "
                                       "datapath stalled, an outage the fabric was not told to make",
                                       wf.stall_max_us / 1e3, limits.max_stall_ns / 1e6));
      // Only the fabric node's stalls: an endpoint's own timers that fire late
      // wait one more round trip before they count (late_timeouts_deferred).
      else if (w == "fabric" && limits.transport_min_rto_ns > 0 &&
               wf.stall_max_us * 1e3 >= static_cast<double>(limits.transport_min_rto_ns))
        f.problems.push_back(who + fmt(": held frames up to %.1f ms (a bound within 12.5%%), as long as the "
                                       "transports' minimum RTO (%.1f ms, endpoint.min_rto_ns): their timers could "
                                       "fire on the host's stall, not the fabric's",
                                       wf.stall_max_us / 1e3, limits.transport_min_rto_ns / 1e6));
      // Where the worker could not preempt ordinary threads, say so: that is
      // the first thing to change on such a host (scheduling.h).
      if (wf.realtime_share <= 0)
        for (size_t k = problems_before; k < f.problems.size(); ++k)
          f.problems[k] += " (it ran as an ordinary thread: realtime_share is 0 or the daemon lacks CAP_SYS_NICE)";
      f.workers.push_back(wf);
    }
    // Frames lost by cause. Emulator causes are the fabric doing its job;
    // everything else is the host's datapath losing frames.
    for (const auto& c : a.counters) {
      if (c.name != "worker_emulator_drops_total" || !c.labels.count("reason")) continue;
      const double n = std::max(0.0, c.value - value_of(b, c.name, c.labels));
      if (n > 0) f.drops["emulator " + c.labels.at("reason")] += static_cast<uint64_t>(n);
    }
    const std::pair<const char*, const char*> datapath_causes[] = {
        {"port_rx_dropped_total", "port rx_dropped"},
        {"port_rx_truncated_total", "port rx_truncated"},
        // Counted once, by the worker whose tx_burst the port refused.
        {"worker_tx_dropped_ring_full_total", "worker tx_ring_full"},
        {"worker_delay_line_full_total", "worker delay_line_full"},
        {"worker_frames_too_large_total", "worker frames_too_large"},
    };
    for (const auto& [name, cause] : datapath_causes) {
      const double n = delta_sum(b, a, name);
      if (n <= 0) continue;
      f.drops[cause] += static_cast<uint64_t>(n);
      f.datapath_drops += static_cast<uint64_t>(n);
    }
    f.reordered_in_path += static_cast<uint64_t>(std::max(0.0, delta_sum(b, a, "endpoint_rx_reordered_in_path_total")));
    // Daemons on one host see the same figure; on several, the largest.
    f.host_steal_s = std::max(f.host_steal_s, delta(b, a, "host_cpu_steal_seconds_total", {}));
    f.host_cpus = std::max(f.host_cpus, static_cast<uint32_t>(value_of(a, "host_cpus", {})));
  }
  if (f.datapath_drops > limits.max_datapath_drops) {
    std::string causes;
    for (const auto& [cause, n] : f.drops)
      if (cause.rfind("emulator ", 0) != 0) causes += (causes.empty() ? "" : ", ") + cause + " " + std::to_string(n);
    f.problems.push_back(std::to_string(f.datapath_drops) + " frames lost in the host's datapath, not by the emulator (" +
                         causes + "; limit " + std::to_string(limits.max_datapath_drops) + ")");
  }
  // Not a reason of its own (a faithful run keeps its verdict): where the
  // datapath did stall, the likely cause, which no setting of the testbed's
  // removes.
  if (!f.problems.empty() && f.host_steal_s > 0)
    f.problems.push_back(fmt("the hypervisor took %.0f ms of this host's %.0f CPUs during the run (steal time in "
                             "/proc/stat, counted in clock ticks): on a virtual machine stalls like the ones above "
                             "are often its, and no setting of the testbed removes them; dedicated CPUs do",
                             f.host_steal_s * 1e3, f.host_cpus));
  return f;
}

}  // namespace metaroce::scenario
