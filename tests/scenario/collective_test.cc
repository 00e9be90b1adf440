// Collective jobs (pattern: all_to_all | permutation | incast |
// ring_allreduce over a host set): the flows each expands to, the errors a
// bad one gets, and runs in the simulator with finite flows and their
// completion-time distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/scenario.h"
#include "parse_helpers.h"
#include "metaroce/scenario/sim_backend.h"

namespace metaroce::scenario {
namespace {

using test::error_of;
using test::parse_ok;

std::string scenario_with(const std::string& topology, const std::string& jobs, const std::string& rest = "") {
  return "name: c\ndescription: collective\nseed: 7\ntopology: " + topology +
         "\nbase: {delay: 2us, rate: 25G}\nduration: 1s\ninterval: 250ms\njobs:\n" + jobs + rest +
         "sim: {time_scale: 0.005}\n";
}



// Runs the scenario; every run must have ended done with its data verified.
Report run_all_done(const Scenario& s, size_t runs) {
  const Report rep = run_scenario_sim(s, {}, 1);
  EXPECT_EQ(rep.runs.size(), runs);
  for (const RunResult& run : rep.runs) {
    EXPECT_EQ(run.state, "done") << run.job << ": " << run.error;
    EXPECT_TRUE(run.verified) << run.job << ": " << run.verification;
  }
  return rep;
}

std::set<std::pair<uint32_t, uint32_t>> pairs(const std::vector<Flow>& flows) {
  std::set<std::pair<uint32_t, uint32_t>> out;
  for (const Flow& f : flows) out.insert({f.src, f.dst});
  return out;
}

TEST(CollectiveFlows, AllToAllIsEveryOrderedPairOnce) {
  const Scenario s = parse_ok(scenario_with("{hosts: 4, planes: 2, ecmp_links: 1}", "  - {name: a, pattern: all_to_all}\n"));
  const std::vector<Flow> f = job_flows(s, s.jobs[0]);
  ASSERT_EQ(f.size(), 12u);
  EXPECT_EQ(job_flow_count(s, s.jobs[0]), 12u);
  EXPECT_EQ(pairs(f).size(), 12u);
  for (const Flow& x : f) EXPECT_NE(x.src, x.dst);
  EXPECT_EQ(f.front().src, 0u);
  EXPECT_EQ(f.front().dst, 1u);
  EXPECT_EQ(f.back().src, 3u);
  EXPECT_EQ(f.back().dst, 2u);
}

TEST(CollectiveFlows, PermutationIsOneCycleFromTheSeedTheSameForEveryJob) {
  const std::string jobs =
      "  - {name: m, pattern: permutation}\n  - {name: r, pattern: permutation, transport: rocev2, connections: 2}\n";
  const Scenario s = parse_ok(scenario_with("{hosts: 9, planes: 2, ecmp_links: 1}", jobs));
  const std::vector<Flow> f = job_flows(s, s.jobs[0]);
  ASSERT_EQ(f.size(), 9u);
  std::map<uint32_t, uint32_t> next;
  std::set<uint32_t> receivers;
  for (const Flow& x : f) {
    EXPECT_NE(x.src, x.dst);
    next[x.src] = x.dst;
    receivers.insert(x.dst);
  }
  EXPECT_EQ(next.size(), 9u);       // every host sends once
  EXPECT_EQ(receivers.size(), 9u);  // and is written by one
  uint32_t h = 0, steps = 0;        // a single cycle through all nine
  do h = next[h], ++steps;
  while (h != 0 && steps < 20);
  EXPECT_EQ(steps, 9u);
  // Both transports get the same pairs; the same seed gives the same pairs.
  EXPECT_EQ(pairs(job_flows(s, s.jobs[1])), pairs(f));
  EXPECT_EQ(pairs(job_flows(parse_ok(scenario_with("{hosts: 9, planes: 2, ecmp_links: 1}", jobs)), s.jobs[0])), pairs(f));
  // Another seed, other pairs (for these two seeds; checked, not assumed).
  std::string other = scenario_with("{hosts: 9, planes: 2, ecmp_links: 1}", jobs);
  other.replace(other.find("seed: 7"), 7, "seed: 8");
  EXPECT_NE(pairs(job_flows(parse_ok(other), s.jobs[0])), pairs(f));
}

TEST(CollectiveFlows, IncastAndRingAndAHostSet) {
  const Scenario s = parse_ok(scenario_with("{hosts: 5, planes: 2, ecmp_links: 1}",
                                            "  - {name: i, pattern: incast, to: h2}\n"
                                            "  - {name: j, pattern: incast, to: h0, among: [h4, h1]}\n"
                                            "  - {name: r, pattern: ring_allreduce, among: [h3, h1, h4]}\n"
                                            "  - {name: a, pattern: all_to_all, among: all}\n"));
  EXPECT_EQ(pairs(job_flows(s, s.jobs[0])), (std::set<std::pair<uint32_t, uint32_t>>{{0, 2}, {1, 2}, {3, 2}, {4, 2}}));
  const std::vector<Flow> j = job_flows(s, s.jobs[1]);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].src, 4u);
  EXPECT_EQ(j[1].src, 1u);
  const std::vector<Flow> r = job_flows(s, s.jobs[2]);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(std::make_pair(r[0].src, r[0].dst), std::make_pair(3u, 1u));
  EXPECT_EQ(std::make_pair(r[1].src, r[1].dst), std::make_pair(1u, 4u));
  EXPECT_EQ(std::make_pair(r[2].src, r[2].dst), std::make_pair(4u, 3u));
  EXPECT_EQ(job_flows(s, s.jobs[3]).size(), 20u);
  // The engine hands every flow to the backend; a collective's src/dst are its first flow's.
  const std::vector<RunPlan> plans = plan_scenario(s);
  ASSERT_EQ(plans.size(), 4u);
  ASSERT_EQ(plans[2].jobs.size(), 1u);
  EXPECT_EQ(plans[2].jobs[0].flows.size(), 3u);
  EXPECT_EQ(plans[2].jobs[0].src, 3u);
  EXPECT_EQ(plans[2].jobs[0].dst, 1u);
}

TEST(CollectiveErrors, NameTheFieldAndWhatIsAllowed) {
  const std::string t = "{hosts: 4, planes: 2, ecmp_links: 1}";
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: gather}\n")),
            "f.yaml:9: jobs[0].pattern: must be one of pair | all_to_all | permutation | incast | ring_allreduce (got 'gather')");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, from: h0, to: h1, among: [h0, h1]}\n")),
            "f.yaml:9: jobs[0].among: not used by pattern pair (a pair writes from `from` to `to`; all_to_all, permutation, "
            "incast and ring_allreduce take a host set)");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: all_to_all, from: h0}\n")),
            "f.yaml:9: jobs[0].from: not used by pattern all_to_all (its senders are the hosts in among)");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: permutation, to: h0}\n")),
            "f.yaml:9: jobs[0].to: not used by pattern permutation (its receivers are the hosts in among)");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: incast}\n")), "f.yaml:9: jobs[0].to: is required");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: incast, to: h1, among: [h0, h1]}\n")),
            "f.yaml:9: jobs[0].among[1]: host h1 is the incast's receiver (to), not a sender");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: all_to_all, among: [h0, h0]}\n")),
            "f.yaml:9: jobs[0].among[1]: host h0 is listed twice");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: all_to_all, among: [h0, h9]}\n")),
            "f.yaml:9: jobs[0].among[1]: unknown host 'h9' (hosts: h0, h1, h2, h3)");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: ring_allreduce, among: [h2]}\n")),
            "f.yaml:9: jobs[0].among: pattern ring_allreduce needs at least 2 hosts (got 1)");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: all_to_all, among: h0}\n")),
            "f.yaml:9: jobs[0].among: must be all or a list of host names, e.g. [h0, h1, h2] (got h0)");
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: all_to_all, messages: -1}\n")).substr(0, 36),
            "f.yaml:9: jobs[0].messages: must be ");
  // 4 hosts all-to-all: 12 flows x 4096 connections is more than one job may hold.
  EXPECT_EQ(error_of(scenario_with(t, "  - {name: a, pattern: all_to_all, connections: 4096}\n")),
            "f.yaml:9: jobs[0].connections: pattern all_to_all makes 12 flows x 4096 connections = 49152, at most 32768 per job");
}

TEST(CollectiveErrors, ACollectiveRunsInTheSimulatorOnly) {
  const Scenario s = parse_ok(scenario_with("{hosts: 3, planes: 2, ecmp_links: 1}", "  - {name: a, pattern: all_to_all}\n"));
  EXPECT_EQ(sim_only_reason(s),
            "jobs[0].pattern: not run live: all_to_all over 3 hosts; a live scenario starts one from -> to traffic job per "
            "job, so a collective runs in the simulator (--sim)");
  EXPECT_EQ(check_runnable(s, true), sim_only_reason(s));
  EXPECT_EQ(check_runnable(s, false), "");
}

TEST(CollectiveErrors, TheSimulatorsBuffersAreCountedOverEveryFlow) {
  // 8 hosts all-to-all, 56 flows x 16 connections x 16 outstanding x 1 MiB: 14 GiB.
  const Scenario s = parse_ok(
      scenario_with("{hosts: 8, planes: 2, ecmp_links: 1}", "  - {name: a, pattern: all_to_all, connections: 16, size: 1M}\n"));
  EXPECT_EQ(check_runnable(s, false).rfind("jobs[0] (a): the simulator would need 14392 MiB of message buffers at once", 0), 0u)
      << check_runnable(s, false);
  // The same flows sending 2 messages each hold 2 slots, not 16.
  const Scenario f = parse_ok(scenario_with("{hosts: 8, planes: 2, ecmp_links: 1}",
                                            "  - {name: a, pattern: all_to_all, connections: 16, size: 1M, messages: 2}\n"));
  EXPECT_EQ(check_runnable(f, false), "");
}

// All-to-all among 4 hosts, finite flows: every flow finishes, every byte is
// checked, and the completion-time distribution spans what the messages took.
TEST(CollectiveSim, AllToAllFiniteFlowsCompleteAndReportTheirDistribution) {
  const Scenario s = parse_ok(scenario_with(
      "{hosts: 4, planes: 2, ecmp_links: 1}",
      "  - {name: m, pattern: all_to_all, size: 64K, messages: 20, queue_depth: 4, connections: 2}\n"
      "  - {name: r, pattern: all_to_all, transport: rocev2, size: 64K, messages: 20, queue_depth: 4, connections: 2}\n"));
  const Report rep = run_all_done(s, 2);
  for (const RunResult& run : rep.runs) {
    SCOPED_TRACE(run.job);
    EXPECT_EQ(run.messages, 12u * 2 * 20);
    EXPECT_EQ(run.bytes, 12ull * 2 * 20 * 65536);
    EXPECT_EQ(run.connection_bytes.size(), 24u);
    EXPECT_NEAR(run.jain_fairness, 1.0, 1e-9);  // every connection sent exactly its 20 messages
    ASSERT_EQ(run.latency.cdf_us.size(), kLatencyCdfPoints);
    EXPECT_EQ(run.latency.samples, run.messages);
    EXPECT_DOUBLE_EQ(run.latency.cdf_us.front(), run.latency.min_us);
    EXPECT_DOUBLE_EQ(run.latency.cdf_us.back(), run.latency.max_us);
    EXPECT_DOUBLE_EQ(run.latency.cdf_us[50], run.latency.median_us);
    EXPECT_TRUE(std::is_sorted(run.latency.cdf_us.begin(), run.latency.cdf_us.end()));
    // A 64 KiB message takes at least its serialisation on one 25G link.
    EXPECT_GT(run.latency.min_us, 65536 * 8 / 25e9 * 1e6);
  }
}

// A flow the run ends before it finishes is not a success, and says so.
TEST(CollectiveSim, AFiniteJobThatDoesNotFinishIsStoppedWithTheCount) {
  const Scenario s = parse_ok(scenario_with("{hosts: 3, planes: 1, ecmp_links: 1}",
                                            "  - {name: p, pattern: permutation, size: 1M, messages: 100000, queue_depth: 1}\n"));
  const Report rep = run_scenario_sim(s, {}, 1);
  ASSERT_EQ(rep.runs.size(), 1u);
  const RunResult& run = rep.runs[0];
  EXPECT_EQ(run.state, "stopped");
  EXPECT_TRUE(run.verified) << run.verification;
  EXPECT_GT(run.messages, 0u);
  EXPECT_EQ(run.error, std::to_string(run.messages) +
                           " of 300000 messages completed before the run's end (duration): not every flow finished");
}

// A ring all-reduce: its iterations complete step by step, and its
// completion times are per iteration.
TEST(CollectiveSim, RingAllReduceIterationsCompleteWithTheirTimes) {
  const Scenario s = parse_ok(scenario_with("{hosts: 4, planes: 2, ecmp_links: 1}",
                                            "  - {name: m, pattern: ring_allreduce, size: 1M, messages: 5, connections: 2}\n"
                                            "  - {name: r, pattern: ring_allreduce, transport: rocev2, size: 1M, messages: 5, "
                                            "connections: 2}\n"));
  const Report rep = run_all_done(s, 2);
  for (const RunResult& run : rep.runs) {
    SCOPED_TRACE(run.job);
    // 5 iterations x 4 hosts x 2 (n - 1) steps x a 256 KiB chunk, over 2 connections per hop.
    EXPECT_EQ(run.bytes, 5ull * 4 * 6 * (256 << 10));
    EXPECT_EQ(run.messages, 5ull * 4 * 6 * 2);
    EXPECT_EQ(run.connection_bytes.size(), 8u);
    EXPECT_EQ(run.latency.samples, 5u);
    // An iteration is at least its 6 steps of a 256 KiB chunk over the hop's 2 x 25G.
    EXPECT_GT(run.latency.min_us, 6 * (256 << 10) * 8 / 50e9 * 1e6);
  }
}

// Incast: every sender's flow into one receiver, sharing its downlinks.
TEST(CollectiveSim, IncastSharesTheReceiversLinksFairly) {
  const Scenario s = parse_ok(scenario_with("{hosts: 5, planes: 2, ecmp_links: 1}",
                                            "  - {name: i, pattern: incast, to: h0, size: 16K, paths: 2}\n"));
  const Report rep = run_all_done(s, 1);
  ASSERT_EQ(rep.runs.size(), 1u);
  const RunResult& run = rep.runs[0];
  ASSERT_EQ(run.connection_bytes.size(), 4u);
  const double capacity = 2 * 25e9;  // the receiver's two downlinks
  EXPECT_GT(run.goodput_bps / capacity, 0.8) << run.goodput_bps;
  EXPECT_LE(run.goodput_bps / capacity, 1.0);
  EXPECT_GT(run.jain_fairness, 0.9);
}

}  // namespace
}  // namespace metaroce::scenario
