// The fidelity guard (scenario/src/fidelity.cc) on synthetic daemon counters:
// a run whose datapath kept up is faithful and keeps its PASS/FAIL verdict; a
// deliberately overloaded one (workers waiting for a CPU, saturated, frames
// and timers late, frames lost in rings) is INCONCLUSIVE, never PASS, and
// every reason is named.
#include <gtest/gtest.h>

#include <cstdio>

#include "metaroce/scenario/fidelity.h"

namespace ms = metaroce::scenario;

namespace {

std::string le_text(double le) {  // as counters.cc prints it
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", le);
  return b;
}

struct WorkerLoad {
  double wall_s = 1, busy_s = 0.2, cpu_s = 0.3, wait_s = 0.01;
  uint64_t frames_late_1us = 1000, frames_late_1ms = 0;  // frames handled within ~1 us / ~1 ms of due
  uint64_t timers_late_1us = 100, timers_late_4ms = 0;
  uint64_t received_1us = 5000, received_2ms = 0;  // frames taken from the ports within ~1 us / ~2 ms
  double realtime_share = 0.85;                     // worker_realtime_share (a gauge)
  uint64_t realtime_demotions = 3;
};

// Counters as a daemon reports them after `load` (all zero before).
ms::DaemonCounters daemon(const std::string& name, const std::string& worker, const WorkerLoad& load,
                          uint64_t rx_dropped = 0, uint64_t random_loss = 0) {
  ms::DaemonCounters d;
  d.daemon = name;
  auto add = [&](std::string n, std::map<std::string, std::string> l, double v) {
    d.counters.push_back({std::move(n), std::move(l), v});
  };
  const std::map<std::string, std::string> w = {{"worker", worker}};
  add("worker_wall_seconds_total", w, load.wall_s);
  add("worker_busy_seconds_total", w, load.busy_s);
  add("worker_cpu_seconds_total", w, load.cpu_s);
  add("worker_run_delay_seconds_total", w, load.wait_s);
  add("worker_realtime_share", w, load.realtime_share);
  add("worker_realtime_demotions_total", w, static_cast<double>(load.realtime_demotions));
  // Cumulative buckets, le in seconds, as counters.cc writes them.
  auto hist = [&](const std::string& n, uint64_t fast, uint64_t slow, double slow_le) {
    for (double le : {1.024e-6, 2.048e-6, 1.048576e-3, 2.097152e-3, 4.194304e-3})
      add(n + "_bucket", {{"worker", worker}, {"le", le_text(le)}},
          static_cast<double>(fast + (le >= slow_le ? slow : 0)));
    add(n + "_count", w, static_cast<double>(fast + slow));
  };
  hist("worker_frame_lateness_seconds", load.frames_late_1us, load.frames_late_1ms, 1.048576e-3);
  hist("worker_timer_lateness_seconds", load.timers_late_1us, load.timers_late_4ms, 4.194304e-3);
  hist("worker_receive_wait_seconds", load.received_1us, load.received_2ms, 2.097152e-3);
  add("port_rx_dropped_total", {{"port", "plane0"}, {"use", worker}}, static_cast<double>(rx_dropped));
  add("worker_emulator_drops_total", {{"worker", worker}, {"reason", "random_loss"}}, static_cast<double>(random_loss));
  return d;
}

ms::DaemonCounters zero(const ms::DaemonCounters& after) {
  ms::DaemonCounters d = after;
  for (auto& c : d.counters) c.value = 0;
  return d;
}

ms::Report report_with(const ms::Fidelity& f, bool assertions_pass) {
  ms::Report r;
  r.mode = "live";
  ms::RunResult run;
  run.fidelity = f;
  r.runs.push_back(run);
  r.assertions.push_back({"goodput_ratio metaroce >= 0.7", assertions_pass, ""});
  return r;
}

}  // namespace

TEST(Fidelity, AQuietHostIsFaithfulAndKeepsItsVerdict) {
  const std::vector<ms::DaemonCounters> after = {daemon("fabric", "fabric", {}, 0, 40),
                                                  daemon("h0", "endpoint", {})};
  const std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  const ms::Fidelity f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  EXPECT_TRUE(f.measured);
  EXPECT_TRUE(f.faithful()) << (f.problems.empty() ? "" : f.problems[0]);
  ASSERT_EQ(f.workers.size(), 2u);
  EXPECT_EQ(f.workers[0].daemon, "fabric");
  EXPECT_NEAR(f.workers[0].busy_fraction, 0.2, 1e-9);
  EXPECT_NEAR(f.workers[0].cpu_fraction, 0.3, 1e-9);
  EXPECT_NEAR(f.workers[0].run_delay_fraction, 0.01, 1e-9);
  EXPECT_EQ(f.workers[0].frames_timed, 1000u);
  EXPECT_NEAR(f.workers[0].frame_late_p99_us, 1.024, 1e-6);
  EXPECT_EQ(f.drops.at("emulator random_loss"), 40u);  // the fabric at work: no problem
  EXPECT_EQ(f.datapath_drops, 0u);
  EXPECT_EQ(report_with(f, true).verdict(), ms::Report::Verdict::kPass);
  EXPECT_EQ(report_with(f, false).verdict(), ms::Report::Verdict::kFail);
}

// Frames reordered within their path are counted over the run (the receiver's
// endpoint_rx_reordered_in_path_total) and shown; the run is not judged on them.
TEST(Fidelity, FramesReorderedWithinAPathAreCountedOverTheRun) {
  std::vector<ms::DaemonCounters> after = {daemon("h0", "endpoint", {}), daemon("h1", "endpoint", {})};
  std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  after[1].counters.push_back({"endpoint_rx_reordered_in_path_total", {}, 10});
  before[1].counters.push_back({"endpoint_rx_reordered_in_path_total", {}, 3});
  const ms::Fidelity f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  EXPECT_EQ(f.reordered_in_path, 7u);
  EXPECT_TRUE(f.faithful());
}

TEST(Fidelity, AnOverloadedRunIsInconclusiveNeverPass) {
  WorkerLoad hog;
  hog.busy_s = 0.97;            // saturated
  hog.wait_s = 0.30;            // waited for a CPU 30% of the run
  hog.frames_late_1ms = 100;    // 9% of frames about 1 ms late
  hog.timers_late_4ms = 50;     // a third of the timers ~4 ms late
  const std::vector<ms::DaemonCounters> after = {daemon("fabric", "fabric", hog, 12), daemon("h0", "endpoint", {})};
  const std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  const ms::Fidelity f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  EXPECT_FALSE(f.faithful());
  EXPECT_EQ(f.datapath_drops, 12u);
  EXPECT_EQ(f.drops.at("port rx_dropped"), 12u);
  std::string all;
  for (const auto& p : f.problems) all += p + "\n";
  EXPECT_NE(all.find("fabric fabric worker: waited for a CPU 30.0% of the run (limit 5.0%)"), std::string::npos) << all;
  EXPECT_NE(all.find("busy 97% of the run (limit 90%)"), std::string::npos) << all;
  EXPECT_NE(all.find("p99 of frames leaving the emulator late by up to 1049 us (limit 250 us)"), std::string::npos) << all;
  EXPECT_NE(all.find("p99 of transport timers late by up to 4194 us (limit 1000 us)"), std::string::npos) << all;
  EXPECT_NE(all.find("12 frames lost in the host's datapath, not by the emulator (port rx_dropped 12; limit 0)"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("h0 endpoint"), std::string::npos) << "the quiet worker is not blamed: " << all;
  // Whatever the assertions say.
  EXPECT_EQ(report_with(f, true).verdict(), ms::Report::Verdict::kInconclusive);
  EXPECT_EQ(report_with(f, false).verdict(), ms::Report::Verdict::kInconclusive);
  EXPECT_STREQ(ms::verdict_name(report_with(f, true).verdict()), "INCONCLUSIVE");
}

// The case the timer figures cannot see: the receiving endpoint has no
// timers, yet when it stalls the sender's ACKs come late as if the fabric had
// held them. 2% of its frames waited ~2 ms: INCONCLUSIVE, and it is named.
TEST(Fidelity, AStalledReceiverIsInconclusiveThoughItHasNoTimers) {
  WorkerLoad receiver;
  receiver.timers_late_1us = 0;
  receiver.received_1us = 4900;
  receiver.received_2ms = 100;
  const std::vector<ms::DaemonCounters> after = {daemon("h0", "endpoint", {}), daemon("h1", "endpoint", receiver)};
  const std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  const ms::Fidelity f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  ASSERT_EQ(f.workers.size(), 2u);
  EXPECT_EQ(f.workers[1].timers_timed, 0u);
  EXPECT_EQ(f.workers[1].frames_received, 5000u);
  EXPECT_NEAR(f.workers[1].receive_wait_p50_us, 1.024, 1e-6);
  EXPECT_NEAR(f.workers[1].receive_wait_p99_us, 2097.152, 1e-3);
  ASSERT_EQ(f.problems.size(), 1u);
  EXPECT_EQ(f.problems[0], "h1 endpoint worker: p99 of received frames waited up to 2097 us for the worker (limit 250 us)");
  EXPECT_EQ(report_with(f, true).verdict(), ms::Report::Verdict::kInconclusive);
  // Below 1% of the frames, the same stall is within the limit.
  receiver.received_1us = 49'900;
  const std::vector<ms::DaemonCounters> fewer = {daemon("h1", "endpoint", receiver)};
  EXPECT_TRUE(ms::assess_fidelity({zero(fewer[0])}, fewer, ms::FidelityLimits{}).faithful());
}

// A single stall of the whole datapath: one timer in 10,001 fired ~4 ms late.
// Every p99 is ~1 us, yet the longest wait is the stall, and a run whose
// limit it breaks is INCONCLUSIVE.
TEST(Fidelity, OneStallUnderEveryP99IsStillSeen) {
  WorkerLoad once;
  once.timers_late_1us = 10'000;
  once.timers_late_4ms = 1;
  const std::vector<ms::DaemonCounters> after = {daemon("h0", "endpoint", once)};
  const std::vector<ms::DaemonCounters> before = {zero(after[0])};
  const ms::Fidelity loose = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  ASSERT_EQ(loose.workers.size(), 1u);
  EXPECT_NEAR(loose.workers[0].timer_late_p99_us, 1.024, 1e-6);
  EXPECT_NEAR(loose.workers[0].stall_max_us, 4194.304, 1e-3);
  EXPECT_TRUE(loose.faithful()) << "4.2 ms is within the default limit";
  ms::FidelityLimits strict;
  strict.max_stall_ns = 2'000'000;
  const ms::Fidelity f = ms::assess_fidelity(before, after, strict);
  ASSERT_EQ(f.problems.size(), 1u);
  EXPECT_EQ(f.problems[0],
            "h0 endpoint worker: left a frame or timer waiting up to 4.2 ms (limit 2.0 ms): the host's datapath "
            "stalled, an outage the fabric was not told to make");
  EXPECT_EQ(report_with(f, true).verdict(), ms::Report::Verdict::kInconclusive);
  // With nothing late at all, the longest wait is the first bucket's bound.
  const std::vector<ms::DaemonCounters> quiet = {daemon("h0", "endpoint", {})};
  EXPECT_NEAR(ms::assess_fidelity({zero(quiet[0])}, quiet, strict).workers[0].stall_max_us, 1.024, 1e-6);
}

// A fabric node that held frames as long as the transports' shortest timeout
// delayed them past every timer waiting on them: within max_stall for
// goodput, yet the run's timeouts are the host's. An endpoint's own stall is
// not judged by it (its late timers wait one more round trip), nor is a run
// whose daemons did not report their minimum RTO.
TEST(Fidelity, AFabricStallAsLongAsTheMinimumRtoIsInconclusive) {
  WorkerLoad stalled;
  stalled.received_2ms = 1;  // one frame waited ~2.1 ms in the fabric node's ring
  const std::vector<ms::DaemonCounters> after = {daemon("fabric", "fabric", stalled), daemon("h0", "endpoint", stalled)};
  const std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  ms::FidelityLimits limits;
  ASSERT_GT(limits.max_stall_ns, 2'097'152) << "the stall is within max_stall";
  EXPECT_TRUE(ms::assess_fidelity(before, after, limits).faithful()) << "minimum RTO not known";

  limits.transport_min_rto_ns = 2'000'000;
  const ms::Fidelity f = ms::assess_fidelity(before, after, limits);
  ASSERT_EQ(f.problems.size(), 1u) << "the endpoint's own stall is not judged by the RTO";
  EXPECT_EQ(f.problems[0],
            "fabric fabric worker: held frames up to 2.1 ms (a bound within 12.5%), as long as the transports' "
            "minimum RTO (2.0 ms, endpoint.min_rto_ns): their timers could fire on the host's stall, not the fabric's");
  EXPECT_EQ(report_with(f, true).verdict(), ms::Report::Verdict::kInconclusive);

  limits.transport_min_rto_ns = 3'000'000;
  EXPECT_TRUE(ms::assess_fidelity(before, after, limits).faithful()) << "2.1 ms is shorter than a 3 ms minimum RTO";
  limits.transport_min_rto_ns = 2'000'000;
  limits.max_stall_ns = 1'000'000;
  const ms::Fidelity both = ms::assess_fidelity(before, after, limits);
  ASSERT_EQ(both.problems.size(), 2u) << "max_stall names the stall once per worker";
  EXPECT_NE(both.problems[0].find("(limit 1.0 ms)"), std::string::npos) << both.problems[0];
}

// A worker that could not run real-time (no CAP_SYS_NICE, or realtime_share
// 0) has its problems say so: that is what to change on such a host. The
// share is the gauge's value at the end, the demotions the run's increase.
TEST(Fidelity, ProblemsOfAWorkerThatWasNotRealtimeSaySo) {
  WorkerLoad ordinary;
  ordinary.received_1us = 4900;
  ordinary.received_2ms = 100;
  ordinary.realtime_share = 0;
  WorkerLoad realtime = ordinary;
  realtime.realtime_share = 0.85;
  const std::vector<ms::DaemonCounters> after = {daemon("h0", "endpoint", realtime), daemon("h1", "endpoint", ordinary)};
  const std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  const ms::Fidelity f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  ASSERT_EQ(f.workers.size(), 2u);
  EXPECT_EQ(f.workers[0].realtime_share, 0.85);
  EXPECT_EQ(f.workers[0].realtime_demotions, 3u);
  EXPECT_EQ(f.workers[1].realtime_share, 0.0);
  ASSERT_EQ(f.problems.size(), 2u);
  EXPECT_EQ(f.problems[0], "h0 endpoint worker: p99 of received frames waited up to 2097 us for the worker (limit 250 us)");
  EXPECT_EQ(f.problems[1],
            "h1 endpoint worker: p99 of received frames waited up to 2097 us for the worker (limit 250 us) (it ran as "
            "an ordinary thread: realtime_share is 0 or the daemon lacks CAP_SYS_NICE)");
}

TEST(Fidelity, FramesTooLargeForTheNodeAreTheDatapathsLossNotTheFabrics) {
  std::vector<ms::DaemonCounters> after = {daemon("fabric", "fabric", {}), daemon("h0", "endpoint", {})};
  after[0].counters.push_back({"worker_frames_too_large_total", {{"worker", "fabric"}}, 3});
  const std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  const ms::Fidelity f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  EXPECT_FALSE(f.faithful());
  EXPECT_EQ(f.datapath_drops, 3u);
  EXPECT_EQ(f.drops.at("worker frames_too_large"), 3u);
  EXPECT_EQ(report_with(f, true).verdict(), ms::Report::Verdict::kInconclusive);
}

TEST(Fidelity, OnlyTheRunsIncreaseCountsAndLimitsComeFromTheScenario) {
  // Before the run the worker had already waited a lot; during it, little.
  WorkerLoad earlier;
  earlier.wall_s = 10, earlier.wait_s = 5;
  WorkerLoad later = earlier;
  later.wall_s = 11, later.wait_s = 5.02;  // 2% over the run's 1 s
  const ms::Fidelity ok = ms::assess_fidelity({daemon("h1", "endpoint", earlier)}, {daemon("h1", "endpoint", later)},
                                              ms::FidelityLimits{});
  ASSERT_EQ(ok.workers.size(), 1u);
  EXPECT_NEAR(ok.workers[0].run_delay_fraction, 0.02, 1e-9);
  EXPECT_TRUE(ok.faithful());
  ms::FidelityLimits strict;
  strict.max_run_delay_fraction = 0.01;
  EXPECT_FALSE(ms::assess_fidelity({daemon("h1", "endpoint", earlier)}, {daemon("h1", "endpoint", later)}, strict)
                   .faithful());
  // A daemon that reports no loop time (an old daemon, a stuck worker) cannot vouch for its run.
  ms::DaemonCounters silent = daemon("h1", "endpoint", later);
  for (auto& c : silent.counters)
    if (c.name == "worker_wall_seconds_total") c.value = earlier.wall_s;
  EXPECT_FALSE(ms::assess_fidelity({daemon("h1", "endpoint", earlier)}, {silent}, ms::FidelityLimits{}).faithful());
  // The simulator's runs are not measured and stay faithful.
  EXPECT_TRUE(ms::Fidelity{}.faithful());
}

// The hypervisor's steal over the run (host_cpu_steal_seconds_total, the same
// on every daemon of one host) is shown, and named as the likely cause when
// the datapath stalled; on its own it changes no verdict.
TEST(Fidelity, StealTimeIsShownAndNamedOnlyBesideStalls) {
  auto with_steal = [](ms::DaemonCounters d, double steal_s) {
    d.counters.push_back({"host_cpu_steal_seconds_total", {}, steal_s});
    d.counters.push_back({"host_cpus", {}, 2});
    return d;
  };
  std::vector<ms::DaemonCounters> after = {with_steal(daemon("h0", "endpoint", {}), 10.25),
                                           with_steal(daemon("h1", "endpoint", {}), 10.25)};
  std::vector<ms::DaemonCounters> before = {zero(after[0]), zero(after[1])};
  for (auto* d : {&before[0], &before[1]}) {
    d->counters[d->counters.size() - 2].value = 10.0;  // 250 ms of steal during the run
    d->counters.back().value = 2;
  }
  ms::Fidelity f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  EXPECT_NEAR(f.host_steal_s, 0.25, 1e-9) << "one host's figure, not the sum over its daemons";
  EXPECT_EQ(f.host_cpus, 2u);
  EXPECT_TRUE(f.faithful()) << "steal that stalled nothing is no reason";

  WorkerLoad stalled;
  stalled.received_2ms = 5000;  // half the frames waited ~2 ms: the p99 is over its limit
  after[1] = with_steal(daemon("h1", "endpoint", stalled), 10.25);
  before[1] = zero(after[1]);
  before[1].counters[before[1].counters.size() - 2].value = 10.0;
  f = ms::assess_fidelity(before, after, ms::FidelityLimits{});
  ASSERT_FALSE(f.faithful());
  ASSERT_GE(f.problems.size(), 2u);
  EXPECT_NE(f.problems.back().find("the hypervisor took 250 ms of this host's 2 CPUs"), std::string::npos)
      << f.problems.back();
}
