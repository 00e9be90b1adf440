// Where and how a worker thread is scheduled: the CPU it is pinned to, and
// its real-time budget (SCHED_FIFO for at most a share of every window, an
// ordinary thread for the rest of it).
//
// Why: on a host with few cores, a worker that blocks when idle and wakes on
// a frame waits behind whatever ordinary thread holds the CPU (on the 2-core
// CI VM: the kernel's DAMON monitor, rcu_preempt, the other daemons) for up to
// a scheduler slice, 1-6 ms, and the frames in its ring wait with it. As a
// SCHED_FIFO thread its wake-up preempts them at once. Unbounded, a busy
// SCHED_FIFO worker reaches the kernel's RT throttle (95 % of a CPU per
// second), which then stops it for the rest of that second; and it would
// starve the softirq and gRPC threads the datapath needs. So the worker drops
// to an ordinary thread once it has been awake `share` of the current window,
// and takes SCHED_FIFO back in the next window (docs/architecture.md,
// "Threads and cores").
#pragma once

#include <pthread.h>

#include <cstdint>
#include <string>

#include "metaroce/transport/types.h"

namespace metaroce::datapath {

using transport::Nanos;

// The one definition of the real-time share's range and default (the daemon's
// endpoint.realtime_share and fabric.realtime_share read them from here). Off
// by default: real-time workers belong pinned, one CPU's share split among the
// workers on it, and only whoever places the workers knows that (for the lab,
// scripts/run-scenario.sh, which gives each CPU 0.85).
inline constexpr double kRealtimeShareMax = 0.9;      // leaves the kernel's RT throttle (0.95) a margin
inline constexpr double kRealtimeShareDefault = 0;
inline constexpr Nanos kRealtimeWindowNs = 10'000'000;  // short: a demoted worker is ordinary only until it ends
inline constexpr int kRealtimePriority = 1;            // the lowest: kernel RT threads keep precedence

// Pins a thread to one CPU. The kernel's RT throttle counts each
// CPU's real-time time, so real-time workers that may migrate can add up past
// it on one CPU although each keeps its share; pinned, the shares of the
// workers on a CPU are what it runs. Returns "" or why not.
std::string pin_thread(pthread_t thread, int cpu);
// "" if this process may run on cpu, else a message naming the CPUs it may use.
std::string check_cpu_available(int cpu);

class RealtimeBudget {
 public:
  // Switches the calling thread: true -> SCHED_FIFO, false -> ordinary; returns
  // whether the kernel allowed it. Tests pass their own.
  using Switch = bool (*)(bool realtime);
  static bool switch_calling_thread(bool realtime);

  // share in [0, kRealtimeShareMax]; 0 leaves the thread ordinary. If the
  // first switch is refused (no CAP_SYS_NICE) the budget stays disabled.
  RealtimeBudget(double share, Nanos now, Switch sw = &switch_calling_thread, Nanos window_ns = kRealtimeWindowNs);
  ~RealtimeBudget();
  RealtimeBudget(const RealtimeBudget&) = delete;
  RealtimeBudget& operator=(const RealtimeBudget&) = delete;

  // The thread has run from the previous call (or resumed()) until now.
  // True when this call used the window's share up (demotions() grew).
  bool running_until(Nanos now);
  // The thread blocked and woke at now; the block is not counted as running.
  void resumed(Nanos now) { last_seen_ = now; }

  // The share in effect: the one asked for, or 0 if the kernel refused it.
  double share() const { return enabled_ ? share_ : 0; }
  bool realtime() const { return realtime_; }
  uint64_t demotions() const { return demotions_; }

 private:
  double share_;
  Nanos budget_ns_, window_ns_;
  Switch switch_;
  Nanos window_end_, last_seen_;
  Nanos used_ns_ = 0;
  bool enabled_ = false, realtime_ = false;
  uint64_t demotions_ = 0;
};

}  // namespace metaroce::datapath
