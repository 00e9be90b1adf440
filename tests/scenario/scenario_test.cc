// Scenario files: every key and unit, defaults, errors that name key and
// line, plan_runs and check_runnable; and every shipped scenario parses.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/scenario.h"
#include "parse_helpers.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::scenario {
namespace {

using test::error_of;
using test::parse_ok;



// Lines 1-6; tests append from line 7.
const std::string kMinimal = R"(name: t
description: test scenario
duration: 6s
jobs:
  - {name: a, from: h0, to: h1}
  - {name: b, from: h1, to: h0, transport: rocev2}
)";

const std::string kFull = R"(name: plane-failure
description: One plane of four fails and returns
seed: 7
topology: {hosts: 3, planes: 4, ecmp_links: 2, mtu_payload: 1024}
hosts:
  h0: unix:///run/metaroce/mrlab-h0.sock
  h1: unix:///run/metaroce/mrlab-h1.sock
  h2: unix:///run/metaroce/mrlab-h2.sock
fabric: unix:///run/metaroce/mrlab-fab.sock
base: {loss: 0.1%, delay: 5us, jitter: 0, duplicate: 0, corrupt: 0, reorder: 0, reorder_delay: 0, rate: 10G, ecn_threshold: 64K, queue_limit: 4M}
duration: 6s
interval: 250ms
jobs:
  - {name: metaroce, from: h0, to: h1, transport: metaroce, op: write, size: 16K, connections: 1, paths: 8, streams: 1, queue_depth: 16}
  - {name: rocev2, from: h0, to: h1, transport: rocev2, size: 16K, connections: 4}
  - {name: s1, from: h1, to: h0}
  - {name: s2, from: h2, to: h0, with: [s1]}
timeline:
  - {at: 2s, action: down, plane: 1, label: plane 1 down}
  - {at: 4s, action: up, plane: 1}
  - {at: 1s, action: set, plane: 0, ecmp: 0, direction: a_to_b, hosts: [0, 1], set: {loss: 10%}}
  - {at: 1s, action: flap, plane: 2, period: 200ms, down_for: 50ms}
  - {at: 1s, action: ramp, field: loss, from: 0, to: 10%, over: 4s, steps: 8}
assertions:
  - {metric: goodput_ratio, job: metaroce, window: [2s, 4s], baseline: [0.5s, 2s], min: 0.6}
  - {metric: recovery_time, job: metaroce, at: 2s, baseline: [0.5s, 2s], fraction: 0.9, max: 500ms}
  - {metric: data_errors, job: all, max: 0}
  - {metric: job_succeeded, job: all}
  - {metric: compare, job: metaroce, other: rocev2, window: [2s, 4s], min: 1.5}
  - {metric: retained, job: metaroce, min: 0.85}
sweep: {parameter: loss, values: [0, 0.1%, 1%, 5%, 10%]}
sim: {time_scale: 0.001}
)";

TEST(ScenarioParse, EveryKey) {
  const Scenario s = parse_ok(kFull);
  EXPECT_EQ(s.source, "f.yaml");
  EXPECT_EQ(s.yaml, kFull);
  EXPECT_EQ(s.name, "plane-failure");
  EXPECT_EQ(s.description, "One plane of four fails and returns");
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.hosts_count, 3u);
  EXPECT_EQ(s.planes, 4u);
  EXPECT_EQ(s.ecmp_links, 2u);
  EXPECT_EQ(s.host_order, (std::vector<std::string>{"h0", "h1", "h2"}));
  EXPECT_EQ(s.hosts.at("h2"), "unix:///run/metaroce/mrlab-h2.sock");
  EXPECT_EQ(s.fabric, "unix:///run/metaroce/mrlab-fab.sock");
  EXPECT_DOUBLE_EQ(*s.base.loss, 0.001);
  EXPECT_EQ(*s.base.delay_ns, 5000);
  EXPECT_EQ(*s.base.jitter_ns, 0);
  EXPECT_EQ(*s.base.duplicate, 0);
  EXPECT_EQ(*s.base.corrupt, 0);
  EXPECT_EQ(*s.base.reorder, 0);
  EXPECT_EQ(*s.base.reorder_delay_ns, 0);
  EXPECT_DOUBLE_EQ(*s.base.rate_bps, 10e9);
  EXPECT_EQ(*s.base.ecn_threshold_bytes, 65536u);
  EXPECT_EQ(*s.base.queue_limit_bytes, 4u << 20);
  EXPECT_EQ(s.duration_ns, 6'000'000'000);
  EXPECT_EQ(s.interval_ns, 250'000'000);

  ASSERT_EQ(s.jobs.size(), 4u);
  const Job& m = s.jobs[0];
  EXPECT_EQ(m.name, "metaroce");
  EXPECT_EQ(m.from, "h0");
  EXPECT_EQ(m.to, "h1");
  EXPECT_EQ(m.transport, "metaroce");
  EXPECT_EQ(m.op, "write");
  EXPECT_EQ(m.message_bytes, 16384u);
  EXPECT_EQ(m.connections, 1u);
  EXPECT_EQ(m.paths, 8u);
  EXPECT_EQ(m.streams, 1u);
  EXPECT_EQ(m.queue_depth, 16u);
  EXPECT_EQ(s.jobs[1].transport, "rocev2");
  EXPECT_EQ(s.jobs[1].connections, 4u);
  EXPECT_EQ(s.jobs[3].with, std::vector<std::string>{"s1"});

  ASSERT_EQ(s.timeline.size(), 5u);
  const auto& t = s.timeline;
  EXPECT_EQ(t[0].action, FaultEvent::Action::kDown);
  EXPECT_EQ(t[0].at_ns, 2'000'000'000);
  EXPECT_EQ(*t[0].selector.plane, 1u);
  EXPECT_EQ(t[0].label, "plane 1 down");
  EXPECT_EQ(t[1].action, FaultEvent::Action::kUp);
  EXPECT_EQ(t[1].label, "plane 1 up");  // default label
  EXPECT_EQ(t[2].action, FaultEvent::Action::kSet);
  EXPECT_EQ(*t[2].selector.plane, 0u);
  EXPECT_EQ(*t[2].selector.ecmp, 0u);
  EXPECT_EQ(t[2].selector.direction, "a_to_b");
  EXPECT_EQ(*t[2].selector.host_a, 0u);
  EXPECT_EQ(*t[2].selector.host_b, 1u);
  EXPECT_DOUBLE_EQ(*t[2].set.loss, 0.1);
  EXPECT_FALSE(t[2].set.delay_ns.has_value());
  EXPECT_EQ(t[2].label, "loss 10% on plane 0 ecmp 0 h0-h1 a_to_b");
  EXPECT_EQ(t[3].action, FaultEvent::Action::kFlap);
  EXPECT_EQ(t[3].flap_period_ns, 200'000'000);
  EXPECT_EQ(t[3].flap_down_ns, 50'000'000);
  EXPECT_EQ(t[3].label, "plane 2 flapping (down 50ms every 200ms)");
  EXPECT_EQ(t[4].action, FaultEvent::Action::kRamp);
  EXPECT_EQ(t[4].ramp_field, "loss");
  EXPECT_EQ(t[4].ramp_from, 0);
  EXPECT_DOUBLE_EQ(t[4].ramp_to, 0.1);
  EXPECT_EQ(t[4].ramp_duration_ns, 4'000'000'000);
  EXPECT_EQ(t[4].ramp_steps, 8u);
  EXPECT_EQ(t[4].label, "ramp loss 0 -> 10% over 4s on every link");

  ASSERT_EQ(s.assertions.size(), 6u);
  const auto& a = s.assertions;
  EXPECT_EQ(a[0].metric, Assertion::Metric::kGoodputRatio);
  EXPECT_EQ(a[0].job, "metaroce");
  EXPECT_EQ(a[0].window_from_ns, 2'000'000'000);
  EXPECT_EQ(a[0].window_to_ns, 4'000'000'000);
  EXPECT_EQ(a[0].baseline_from_ns, 500'000'000);
  EXPECT_EQ(a[0].baseline_to_ns, 2'000'000'000);
  EXPECT_DOUBLE_EQ(a[0].min, 0.6);
  EXPECT_EQ(a[0].text, "goodput_ratio metaroce [2s,4s]/[0.5s,2s] >= 0.6");
  EXPECT_EQ(a[1].metric, Assertion::Metric::kRecoveryTime);
  EXPECT_EQ(a[1].at_ns, 2'000'000'000);
  EXPECT_DOUBLE_EQ(a[1].fraction, 0.9);
  EXPECT_EQ(a[1].max_ns, 500'000'000);
  EXPECT_EQ(a[1].text, "recovery_time metaroce after 2s to 0.9 x [0.5s,2s] <= 500ms");
  EXPECT_EQ(a[2].metric, Assertion::Metric::kDataErrors);
  EXPECT_EQ(a[2].job, "all");
  EXPECT_EQ(a[2].max_value, 0);
  EXPECT_EQ(a[2].text, "data_errors all <= 0");
  EXPECT_EQ(a[3].metric, Assertion::Metric::kJobSucceeded);
  EXPECT_EQ(a[3].text, "job_succeeded all");
  EXPECT_EQ(a[4].metric, Assertion::Metric::kCompare);
  EXPECT_EQ(a[4].other, "rocev2");
  EXPECT_DOUBLE_EQ(a[4].min, 1.5);
  EXPECT_EQ(a[4].text, "compare metaroce/rocev2 [2s,4s] >= 1.5");
  EXPECT_EQ(a[5].metric, Assertion::Metric::kRetained);
  EXPECT_EQ(a[5].text, "retained metaroce >= 0.85");

  ASSERT_TRUE(s.sweep.has_value());
  EXPECT_EQ(s.sweep->parameter, "loss");
  ASSERT_EQ(s.sweep->values.size(), 5u);
  EXPECT_DOUBLE_EQ(s.sweep->values[1], 0.001);
  EXPECT_DOUBLE_EQ(s.sweep->values[4], 0.1);
  EXPECT_DOUBLE_EQ(s.sim.time_scale, 0.001);
  EXPECT_DOUBLE_EQ(s.link_rate_bps(), 10e9);  // base.rate, live and in the simulator
  EXPECT_EQ(s.mtu_payload, 1024u);  // topology.mtu_payload, live and in the simulator
}

TEST(ScenarioParse, Defaults) {
  const Scenario s = parse_ok(kMinimal);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.hosts_count, 2u);
  EXPECT_EQ(s.planes, 4u);
  EXPECT_EQ(s.ecmp_links, 2u);
  EXPECT_EQ(s.host_order, (std::vector<std::string>{"h0", "h1"}));  // names without addresses
  EXPECT_TRUE(s.hosts.empty());
  EXPECT_TRUE(s.fabric.empty());
  EXPECT_TRUE(s.base.empty());
  EXPECT_EQ(s.interval_ns, 250'000'000);
  const Job& j = s.jobs[0];
  EXPECT_EQ(j.transport, "metaroce");
  EXPECT_EQ(j.op, "write");
  EXPECT_EQ(j.message_bytes, 65536u);
  EXPECT_EQ(j.connections, 1u);
  EXPECT_EQ(j.paths, 0u);  // 2 per plane, decided at run time
  EXPECT_EQ(j.streams, 1u);
  EXPECT_EQ(j.queue_depth, 16u);
  EXPECT_TRUE(s.timeline.empty());
  EXPECT_TRUE(s.assertions.empty());
  EXPECT_FALSE(s.sweep.has_value());
  EXPECT_DOUBLE_EQ(s.sim.time_scale, 0.002);
  EXPECT_DOUBLE_EQ(s.link_rate_bps(), kDefaultLinkRateBps);
  EXPECT_EQ(s.fidelity.max_datapath_drops, 0u);
  EXPECT_EQ(s.fidelity.max_stall_ns, FidelityLimits{}.max_stall_ns);
  EXPECT_EQ(s.mtu_payload, kDefaultMtuPayload);
  // A short duration caps the default interval.
  std::string shorter = kMinimal;
  shorter.replace(shorter.find("6s"), 2, "200ms");
  EXPECT_EQ(parse_ok(shorter).interval_ns, 200'000'000);
  // Fewer host names than hosts: the rest are h<index>.
  // Mapping order is host order; a host without an address is named only.
  const Scenario p = parse_ok(kMinimal + "topology: {hosts: 3}\nhosts: {h1: unix:///x.sock, h0: ~}\n");
  EXPECT_EQ(p.host_order, (std::vector<std::string>{"h1", "h0", "h2"}));
  EXPECT_EQ(p.hosts.size(), 1u);
  EXPECT_EQ(p.hosts.at("h1"), "unix:///x.sock");
  // An atomic job defaults to 8-byte messages.
  const Scenario at = parse_ok(kMinimal + "  - {name: c, from: h0, to: h1, op: fetch_add}\n");
  EXPECT_EQ(at.jobs[2].message_bytes, 8u);
}

TEST(ScenarioParse, Units) {
  auto base = [](const std::string& settings) {
    return parse_ok(kMinimal + "base: {" + settings + "}\n").base;
  };
  EXPECT_EQ(*base("delay: 100ns").delay_ns, 100);
  EXPECT_EQ(*base("delay: 5us").delay_ns, 5000);
  EXPECT_EQ(*base("delay: 2.5ms").delay_ns, 2'500'000);
  EXPECT_EQ(*base("delay: 1s").delay_ns, 1'000'000'000);
  EXPECT_EQ(*base("delay: 0").delay_ns, 0);
  EXPECT_EQ(*base("queue_limit: 16K").queue_limit_bytes, 16384u);
  EXPECT_EQ(*base("queue_limit: 1M").queue_limit_bytes, 1u << 20);
  EXPECT_EQ(*base("queue_limit: 1MiB").queue_limit_bytes, 1u << 20);
  EXPECT_EQ(*base("queue_limit: 5000").queue_limit_bytes, 5000u);
  EXPECT_EQ(*base("ecn_threshold: 0").ecn_threshold_bytes, 0u);
  EXPECT_DOUBLE_EQ(*base("rate: 25G").rate_bps, 25e9);
  EXPECT_DOUBLE_EQ(*base("rate: 10M").rate_bps, 10e6);
  EXPECT_DOUBLE_EQ(*base("rate: 100Gbps").rate_bps, 100e9);
  EXPECT_DOUBLE_EQ(*base("rate: 1000000").rate_bps, 1e6);
  EXPECT_DOUBLE_EQ(*base("loss: 1%").loss, 0.01);
  EXPECT_DOUBLE_EQ(*base("loss: 0.1%").loss, 0.001);
  EXPECT_DOUBLE_EQ(*base("loss: 0.01").loss, 0.01);
  EXPECT_DOUBLE_EQ(*base("loss: 1").loss, 1.0);
  EXPECT_DOUBLE_EQ(*base("duplicate: 2%, corrupt: 0.5%, reorder: 3%").reorder, 0.03);
  EXPECT_EQ(*base("reorder_delay: 30us").reorder_delay_ns, 30'000);
  EXPECT_EQ(*base("jitter: 1us").jitter_ns, 1000);
  // Sizes in jobs, durations in assertions and timelines.
  const Scenario s = parse_ok(kMinimal + "  - {name: c, from: h0, to: h1, size: 1M}\n");
  EXPECT_EQ(s.jobs[2].message_bytes, 1u << 20);
  EXPECT_EQ(parse_ok(kMinimal + "interval: 10ms\n").interval_ns, 10'000'000);
  EXPECT_EQ(parse_ok(kMinimal + "sweep: {parameter: skew, values: [0, 20us, 1ms]}\n").sweep->values[2], 1e6);
  EXPECT_EQ(parse_ok(kMinimal + "sweep: {parameter: skew, values: [0, 20us]}\n").sweep->parameter, "skew_ns");
  EXPECT_EQ(parse_ok(kMinimal + "sweep: {parameter: message_bytes, values: [4K, 64K]}\n").sweep->values[1], 65536);
  EXPECT_EQ(parse_ok(kMinimal + "sweep: {parameter: connections, values: [1, 8]}\n").sweep->values[1], 8);
  EXPECT_EQ(parse_ok(kMinimal + "sweep: {parameter: planes, values: [1, 2, 4]}\n").sweep->values[0], 1);
  const Scenario r = parse_ok(kMinimal + "timeline:\n  - {at: 1s, action: ramp, field: delay, from: 0, to: 100us, over: 2s}\n"
                                         "  - {at: 1s, action: ramp, field: rate, from: 25G, to: 1G, over: 2s}\n");
  EXPECT_EQ(r.timeline[0].ramp_field, "delay_ns");
  EXPECT_EQ(r.timeline[0].ramp_to, 100'000);
  EXPECT_EQ(r.timeline[0].ramp_steps, 10u);  // default
  EXPECT_EQ(r.timeline[1].ramp_field, "rate_bps");
  EXPECT_EQ(r.timeline[1].ramp_from, 25e9);
}

TEST(ScenarioParse, HostSelectorsByIndexOrName) {
  const Scenario s = parse_ok(kMinimal +
                              "timeline:\n  - {at: 1s, action: down, hosts: [h1, 0]}\n"
                              "  - {at: 1s, action: set, hosts: [1], set: {delay: 1us}}\n");
  EXPECT_EQ(*s.timeline[0].selector.host_a, 1u);
  EXPECT_EQ(*s.timeline[0].selector.host_b, 0u);
  EXPECT_EQ(s.timeline[0].label, "h1-h0 down");
  EXPECT_EQ(*s.timeline[1].selector.host_a, 1u);
  EXPECT_FALSE(s.timeline[1].selector.host_b.has_value());
  EXPECT_EQ(s.timeline[1].label, "delay 1us on links of h1");
}

// Scenario files read values through the same units library as metarocectl's
// flags, so every spelling one accepts the other accepts too.
TEST(ScenarioUnits, TheCliSpellingsAreAccepted) {
  const Scenario s = parse_ok(kMinimal + "interval: 12.5ms\nbase: {rate: 250m, delay: 10\xc2\xb5s, jitter: 2US, "
                                         "queue_limit: 2mb, ecn_threshold: 64KiB, loss: 0.5%}\n");
  EXPECT_EQ(s.interval_ns, 12'500'000);
  EXPECT_DOUBLE_EQ(*s.base.rate_bps, 250e6);
  EXPECT_EQ(*s.base.delay_ns, 10'000);
  EXPECT_EQ(*s.base.jitter_ns, 2'000);
  EXPECT_EQ(*s.base.queue_limit_bytes, 2u << 20);
  EXPECT_EQ(*s.base.ecn_threshold_bytes, 64u << 10);
  EXPECT_DOUBLE_EQ(*s.base.loss, 0.005);
  std::string one_minute = kMinimal;
  one_minute.replace(one_minute.find("duration: 6s"), 12, "duration: 1min");
  EXPECT_EQ(parse_ok(one_minute).duration_ns, 60'000'000'000);
}

// ---------------------------------------------------------------- errors

TEST(ScenarioErrors, BadUnit) {
  EXPECT_EQ(error_of(kMinimal + "interval: 250xs\n"),
            "f.yaml:7: interval: unknown duration unit \"xs\" (allowed: a number with a unit ns, us, ms, s, m or h, e.g. 10us, 5ms, 2s, 1m, in [10ms, 1h]; got 250xs)");
  EXPECT_EQ(error_of(kMinimal + "interval: 250\n"),
            "f.yaml:7: interval: a duration needs a unit (allowed: a number with a unit ns, us, ms, s, m or h, e.g. 10us, 5ms, 2s, 1m, in [10ms, 1h]; got 250)");
  EXPECT_EQ(error_of(kMinimal + "base: {rate: 25Q}\n"),
            "f.yaml:7: base.rate: unknown rate unit \"Q\" (allowed: a number > 0 in bits/s with an optional K, M, G or T and an optional bit, bps or b/s, e.g. 25G, 100Gbit, 10Mbps, in (0, 1.6T]; got 25Q)");
  EXPECT_EQ(error_of(kMinimal + "base: {queue_limit: 16X}\n"),
            "f.yaml:7: base.queue_limit: unknown size unit \"X\" (allowed: a whole number of bytes with an optional K, M or G (x1024), e.g. 4096, 64K, 1M, in [1K, 1G]; got 16X)");
  EXPECT_EQ(error_of(kMinimal + "base: {loss: 150%}\n"), "f.yaml:7: base.loss: probability out of range (allowed: a probability in [0, 1] such as 0.01, or a percentage such as 1%; got 150%)");
  EXPECT_EQ(error_of(kMinimal + "base: {loss: lots}\n"),
            "f.yaml:7: base.loss: not a probability (allowed: a probability in [0, 1] such as 0.01, or a percentage such as 1%; got lots)");
  EXPECT_EQ(error_of(kMinimal + "seed: -1\n"), "f.yaml:7: seed: must be an integer in [0, 9223372036854775807] (got -1)");
  EXPECT_EQ(error_of(kMinimal + "topology: {planes: 2.5}\n"),
            "f.yaml:7: topology.planes: must be an integer in [1, 16] (got 2.5)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, size: 1.5}\n"),
            "f.yaml:7: jobs[2].size: not a whole number of bytes (allowed: a whole number of bytes with an optional K, M or G (x1024), e.g. 4096, 64K, 1M, in [1, 16M]; got 1.5)");
}

TEST(ScenarioErrors, Ranges) {
  EXPECT_EQ(error_of(kMinimal + "topology: {hosts: 17}\n"),
            "f.yaml:7: topology.hosts: must be in [2, 16] (got 17): the full mesh has a link per host pair on every "
            "plane (hosts x (hosts - 1) x ecmp_links), so its memory grows with hosts squared; topology.kind: clos "
            "takes up to 1024 hosts");
  EXPECT_EQ(error_of(kMinimal + "topology: {ecmp_links: 0}\n"),
            "f.yaml:7: topology.ecmp_links: must be in [1, 16] (got 0)");
  EXPECT_EQ(error_of(R"(name: t
description: d
duration: 50ms
jobs: [{name: a, from: h0, to: h1}]
)"),
            "f.yaml:3: duration: must be in [100ms, 1h] (got 50ms)");
  EXPECT_EQ(error_of(kMinimal + "interval: 7s\n"), "f.yaml:7: interval: must be in [10ms, duration] = [10ms, 6s] (got 7s)");
  EXPECT_EQ(error_of(kMinimal + "interval: 5ms\n"), "f.yaml:7: interval: must be in [10ms, 1h] (got 5ms)");
  EXPECT_EQ(error_of(kMinimal + "sim: {time_scale: 0}\n"), "f.yaml:7: sim.time_scale: must be in (0, 1] (got 0)");
  EXPECT_EQ(error_of(kMinimal + "topology: {mtu_payload: 1000}\n"),
            "f.yaml:7: topology.mtu_payload: must be a multiple of 64 (got 1000)");
  EXPECT_EQ(error_of(kMinimal + "topology: {mtu_payload: 16K}\n").rfind("f.yaml:7: topology.mtu_payload: must be in [256", 0), 0u)
      << error_of(kMinimal + "topology: {mtu_payload: 16K}\n");
  EXPECT_EQ(error_of(kMinimal + "sim: {mtu_payload: 2048}\n"),
            "f.yaml:7: sim.mtu_payload: removed: the payload per packet is topology.mtu_payload, the same live and in "
            "the simulator");
  // A job's connections take the range Traffic.Start and traffic --connections take (issue 12: 16,000).
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, connections: 16385}\n"),
            "f.yaml:7: jobs[2].connections: must be in [1, 16384] (got 16385)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, connections: 0}\n"),
            "f.yaml:7: jobs[2].connections: must be in [1, 16384] (got 0)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, size: 32M}\n"),
            "f.yaml:7: jobs[2].size: must be in [1, 16M] (got 32M)");
}

TEST(ScenarioErrors, OutOfRangeSelectors) {
  const std::string t = kMinimal + "timeline:\n  - {at: 1s, action: up, plane: 0}\n";
  EXPECT_EQ(error_of(t + "  - {at: 2s, action: down, plane: 4}\n"),
            "f.yaml:9: timeline[1].plane: must be in [0, 3] (got 4)");
  EXPECT_EQ(error_of(t + "  - {at: 2s, action: down, ecmp: 2}\n"), "f.yaml:9: timeline[1].ecmp: must be in [0, 1] (got 2)");
  EXPECT_EQ(error_of(t + "  - {at: 2s, action: down, hosts: [0, 2]}\n"),
            "f.yaml:9: timeline[1].hosts[1]: must be in [0, 1] (got 2)");
  EXPECT_EQ(error_of(t + "  - {at: 2s, action: down, hosts: [1, 1]}\n"),
            "f.yaml:9: timeline[1].hosts[1]: must differ from hosts[0]");
  EXPECT_EQ(error_of(t + "  - {at: 2s, action: down, direction: a_to_b}\n"),
            "f.yaml:9: timeline[1].direction: a_to_b / b_to_a need hosts: [a, b] (the pair they refer to)");
  EXPECT_EQ(error_of(t + "  - {at: 2s, action: down, direction: up}\n"),
            "f.yaml:9: timeline[1].direction: must be one of both | a_to_b | b_to_a (got 'up')");
}

TEST(ScenarioErrors, TimelineEvents) {
  const std::string t = kMinimal + "timeline:\n";
  EXPECT_EQ(error_of(t + "  - {at: 7s, action: down, plane: 1}\n"),
            "f.yaml:8: timeline[0].at: must be in [0, duration] = [0, 6s] (got 7s)");
  EXPECT_EQ(error_of(t + "  - {at: 1s, action: ramp, field: loss, from: 0, to: 10%}\n"),
            "f.yaml:8: timeline[0].over: is required for action ramp (how long the ramp takes, e.g. 4s)");
  EXPECT_EQ(error_of(t + "  - {at: 4s, action: ramp, field: loss, from: 0, to: 10%, over: 4s}\n"),
            "f.yaml:8: timeline[0].over: the ramp must end by the duration: at + over must be <= 6s (got 4s + 4s)");
  EXPECT_EQ(error_of(t + "  - {at: 1s, action: ramp, field: jitter, from: 0, to: 1, over: 1s}\n"),
            "f.yaml:8: timeline[0].field: must be one of loss | delay | rate | duplicate | corrupt (got 'jitter')");
  EXPECT_EQ(error_of(t + "  - {at: 1s, action: set}\n"),
            "f.yaml:8: timeline[0].set: is required for action set (e.g. set: {loss: 1%})");
  EXPECT_EQ(error_of(t + "  - {at: 1s, action: set, set: {}}\n"), "f.yaml:8: timeline[0].set: must change at least one setting");
  EXPECT_EQ(error_of(t + "  - {at: 1s, action: down, set: {loss: 1%}}\n"),
            "f.yaml:8: timeline[0].set: only used by action set (this is action down)");
  EXPECT_EQ(error_of(t + "  - {at: 1s, action: flap, period: 100ms, down_for: 100ms}\n"),
            "f.yaml:8: timeline[0].down_for: must be below the period 100ms (got 100ms)");
  EXPECT_EQ(error_of(t + "  - {at: 1s, action: explode}\n"),
            "f.yaml:8: timeline[0].action: must be one of set | down | up | flap | ramp (got 'explode')");
  EXPECT_EQ(error_of(t + "  - {action: down}\n"), "f.yaml:8: timeline[0].at: is required");
  // The timeline may run on several lines; the line is the key's.
  EXPECT_EQ(error_of(t + "  - at: 1s\n    action: set\n    set:\n      loss: 2x\n"),
            "f.yaml:11: timeline[0].set.loss: not a probability (allowed: a probability in [0, 1] such as 0.01, or a percentage such as 1%; got 2x)");
  const Scenario s = parse_ok(t + "  - {at: 1s, action: flap, plane: 0, period: 0}\n");
  EXPECT_EQ(s.timeline[0].flap_period_ns, 0);
  EXPECT_EQ(s.timeline[0].label, "plane 0 stops flapping");
}

TEST(ScenarioErrors, UnknownKeys) {
  EXPECT_EQ(error_of(kMinimal + "colour: blue\n"),
            "f.yaml:7: colour: unknown key (allowed: name, description, seed, topology, hosts, fabric, base, duration, "
            "interval, jobs, timeline, assertions, sweep, sim, fidelity)");
  EXPECT_EQ(error_of(kMinimal + "topology: {hosts: 2, switches: 1}\n"),
            "f.yaml:7: topology.switches: unknown key (allowed: kind, hosts, planes, ecmp_links, mtu_payload, "
            "hosts_per_leaf, spines, host_rate, host_delay, spine_rate, spine_delay, withdraw_after, "
            "remote_withdraw_after)");
  EXPECT_EQ(error_of(kMinimal + "base: {latency: 1us}\n"),
            "f.yaml:7: base.latency: unknown key (allowed: loss, delay, jitter, duplicate, corrupt, reorder, "
            "reorder_delay, rate, ecn_threshold, queue_limit)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, depth: 4}\n"),
            "f.yaml:7: jobs[2].depth: unknown key (allowed: name, pattern, from, to, among, transport, op, size, "
            "connections, messages, paths, streams, queue_depth, with)");
  EXPECT_EQ(error_of(kMinimal + "sim: {speed: 2}\n"),
            "f.yaml:7: sim.speed: unknown key (allowed: time_scale)");
  EXPECT_EQ(error_of(kMinimal + "sim: {plane_rate: 25G}\n"),
            "f.yaml:7: sim.plane_rate: removed: the fabric's rate is base.rate, the same live and in the simulator");
  EXPECT_EQ(error_of(kMinimal + "fidelity: {max_busy: 2}\n"),
            "f.yaml:7: fidelity.max_busy: probability out of range (allowed: a probability in [0, 1] such as 0.01, or a percentage such as 1%; got 2)");
  EXPECT_EQ(error_of(kMinimal + "fidelity: {max_frame_lateness_p99: 0}\n"),
            "f.yaml:7: fidelity.max_frame_lateness_p99: must be in [1us, 1s] (got 0)");
  EXPECT_EQ(error_of(kMinimal + "fidelity: {max_stall: 2s}\n"),
            "f.yaml:7: fidelity.max_stall: must be in [1us, 1s] (got 2s)");
  EXPECT_EQ(error_of(kMinimal + "seed: 1\nseed: 2\n"), "f.yaml:8: seed: duplicate key");
}

TEST(ScenarioErrors, Jobs) {
  EXPECT_EQ(error_of(kMinimal + "  - {name: a, from: h0, to: h1}\n"),
            "f.yaml:7: jobs[2].name: duplicate job name 'a' (also jobs[0])");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, with: [nope]}\n"),
            "f.yaml:7: jobs[2].with[0]: unknown job 'nope' (jobs: a, b, c)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, with: [c]}\n"),
            "f.yaml:7: jobs[2].with[0]: a job cannot run with itself");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, with: [d]}\n  - {name: d, from: h0, to: h1, with: [a]}\n"),
            "f.yaml:8: jobs[3].with: 'd' is itself listed in another job's with; nesting is not supported");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h5}\n"), "f.yaml:7: jobs[2].to: unknown host 'h5' (hosts: h0, h1)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h0}\n"), "f.yaml:7: jobs[2].to: must differ from from (h0)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0}\n"), "f.yaml:7: jobs[2].to: is required");
  EXPECT_EQ(error_of(kMinimal + "  - {name: all, from: h0, to: h1}\n"),
            "f.yaml:7: jobs[2].name: 'all' is reserved (it means every job in assertions)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, transport: rocev2, paths: 4}\n"),
            "f.yaml:7: jobs[2].paths: a RoCEv2 connection has one path; use connections (got 4)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, transport: rocev2, op: read}\n"),
            "f.yaml:7: jobs[2].op: rocev2 supports write | write_imm | send (got read)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, op: cmp_swap, size: 16}\n"),
            "f.yaml:7: jobs[2].size: cmp_swap messages are 8 bytes (got 16)");
  EXPECT_EQ(error_of(kMinimal + "  - {name: c, from: h0, to: h1, transport: tcp}\n"),
            "f.yaml:7: jobs[2].transport: must be one of metaroce | rocev2 (got 'tcp')");
  EXPECT_EQ(error_of("name: t\ndescription: d\njobs: []\n"), "f.yaml:3: jobs: must have 1 to 16 entries (got 0)");
}

TEST(ScenarioErrors, Hosts) {
  EXPECT_EQ(error_of(kMinimal + "hosts:\n  h0: unix:///a.sock\n  h1: unix:///b.sock\n  h2: unix:///c.sock\n"),
            "f.yaml:10: hosts.h2: topology.hosts is 2, so at most 2 hosts may be listed (got 3)");
  EXPECT_EQ(error_of(kMinimal + "hosts:\n  h0: ''\n"), "f.yaml:8: hosts.h0: the daemon address is empty");
  // One printable word: a newline or a space in an address is refused, and so is an over-long one.
  EXPECT_EQ(error_of(kMinimal + "hosts:\n  h0: \"unix:///a.sock\\nforged\"\n"),
            "f.yaml:8: hosts.h0: a daemon address is one word of printable characters, e.g. "
            "unix:///run/metaroce/h0.sock");
  EXPECT_EQ(error_of(kMinimal + "fabric: \"unix:///a b\"\n"),
            "f.yaml:7: fabric: a daemon address is one word of printable characters, e.g. unix:///run/metaroce/h0.sock");
  EXPECT_EQ(error_of(kMinimal + "fabric: unix:///" + std::string(300, 'x') + "\n"),
            "f.yaml:7: fabric: a daemon address is at most 256 characters (got 308)");
}

TEST(ScenarioErrors, TopLevel) {
  EXPECT_EQ(error_of("description: d\njobs: [{name: a, from: h0, to: h1}]\n"), "f.yaml:1: name: is required");
  EXPECT_EQ(error_of("name: Plane_Failure\ndescription: d\njobs: [{name: a, from: h0, to: h1}]\n"),
            "f.yaml:1: name: must match [a-z0-9-]{1,40} (got 'Plane_Failure')");
  EXPECT_EQ(error_of("name: t\ndescription: |\n  two\n  lines\njobs: [{name: a, from: h0, to: h1}]\n"),
            "f.yaml:2: description: must be one line");
  EXPECT_EQ(error_of("name: t\njobs: [{name: a, from: h0, to: h1}]\n"), "f.yaml:1: description: is required");
  EXPECT_EQ(error_of("name: [t\n"), "f.yaml:2: YAML syntax: end of sequence flow not found");
  EXPECT_EQ(error_of(""), "f.yaml: the file is empty (a scenario is a mapping)");
  EXPECT_EQ(error_of("- a\n- b\n"), "f.yaml:1: scenario: must be a mapping (got a list)");
}

TEST(ScenarioErrors, Assertions) {
  const std::string a = kMinimal + "assertions:\n";
  EXPECT_EQ(error_of(a + "  - {metric: job_succeeded, job: nope}\n"),
            "f.yaml:8: assertions[0].job: unknown job 'nope' (jobs: a, b, or all)");
  EXPECT_EQ(error_of(a + "  - {metric: compare, job: a, other: nope, min: 1}\n"),
            "f.yaml:8: assertions[0].other: unknown job 'nope' (jobs: a, b)");
  EXPECT_EQ(error_of(a + "  - {metric: compare, job: a, other: a, min: 1}\n"),
            "f.yaml:8: assertions[0].other: must differ from job (a)");
  EXPECT_EQ(error_of(a + "  - {metric: retained, job: a, min: 0.8}\n"),
            "f.yaml:8: assertions[0].metric: retained compares sweep values: the scenario needs a sweep");
  EXPECT_EQ(error_of(a + "  - {metric: goodput_ratio, job: a, window: [2s, 4s], min: 0.5}\n"),
            "f.yaml:8: assertions[0].baseline: is required for metric goodput_ratio");
  EXPECT_EQ(error_of(a + "  - {metric: goodput_ratio, job: a, window: [4s, 2s], baseline: [0, 1s], min: 0.5}\n"),
            "f.yaml:8: assertions[0].window: must be [from, to] with from < to (got [4s, 2s])");
  EXPECT_EQ(error_of(a + "  - {metric: goodput_ratio, job: a, window: [2s, 8s], baseline: [0, 1s], min: 0.5}\n"),
            "f.yaml:8: assertions[0].window[1]: must be in [0, 6s] (got 8s)");
  EXPECT_EQ(error_of(a + "  - {metric: data_errors, job: a, window: [2s, 4s]}\n"),
            "f.yaml:8: assertions[0].window: not used by metric data_errors (it uses: max)");
  EXPECT_EQ(error_of(a + "  - {metric: recovery_time, job: a, at: 2s, baseline: [0, 3s], max: 1s}\n"),
            "f.yaml:8: assertions[0].baseline: must end by at (2s): the baseline is the goodput before the fault");
  EXPECT_EQ(error_of(a + "  - {metric: recovery_time, job: a, at: 2s, baseline: [0, 1s], max: 1s, fraction: 0}\n"),
            "f.yaml:8: assertions[0].fraction: must be in (0, 1] (got 0)");
  EXPECT_EQ(error_of(a + "  - {metric: speed, job: a}\n"),
            "f.yaml:8: assertions[0].metric: must be one of goodput_ratio | recovery_time | data_errors | "
            "job_succeeded | compare | retained (got 'speed')");
  EXPECT_EQ(error_of(a + "  - {metric: compare, job: a, other: b, min: 1, live_min: 0.3}\n"),
            "f.yaml:8: assertions[0].live_min: removed: one threshold (min, max) holds live and in the simulator; a "
            "live run the host cannot measure faithfully is reported INCONCLUSIVE instead");
}

TEST(ScenarioErrors, Sweeps) {
  EXPECT_EQ(error_of(kMinimal + "sweep: {parameter: colour, values: [1]}\n"),
            "f.yaml:7: sweep.parameter: must be one of loss | skew | planes | message_bytes | connections (got 'colour')");
  EXPECT_EQ(error_of(kMinimal + "sweep: {parameter: loss, values: []}\n"),
            "f.yaml:7: sweep.values: must have 1 to 64 entries (got 0)");
  EXPECT_EQ(error_of(kMinimal + "sweep: {parameter: planes, values: [1, 17]}\n"),
            "f.yaml:7: sweep.values[1]: must be in [1, 16] (got 17)");
  EXPECT_EQ(error_of(kMinimal + "timeline:\n  - {at: 1s, action: down, plane: 3}\nsweep: {parameter: planes, values: [2, 4]}\n"),
            "f.yaml:9: sweep.values[0]: timeline[0] names plane 3, so at least 4 planes are needed (got 2)");
}

TEST(ScenarioErrors, LoadFile) {
  std::string err;
  EXPECT_FALSE(load_scenario_file("/nonexistent/x.yaml", &err).has_value());
  EXPECT_EQ(err, "/nonexistent/x.yaml: cannot read the file (No such file or directory)");
  EXPECT_FALSE(load_scenario_file("/dev/zero", &err)) << "a device never ends: refused, not read";
  EXPECT_EQ(err, "/dev/zero: is not a regular file (a device, FIFO or socket could block or never end)");
}

// ---------------------------------------------------------------- plan_runs

TEST(ScenarioPlan, OneRunPerJobWithJoinsConcurrentJobs) {
  const Scenario s = parse_ok(kFull);
  const auto runs = plan_runs(s);
  // 3 groups (metaroce, rocev2, s2+s1) x 5 loss values, value by value.
  ASSERT_EQ(runs.size(), 15u);
  EXPECT_EQ(runs[0].jobs.size(), 1u);
  EXPECT_EQ(runs[0].jobs[0]->name, "metaroce");
  EXPECT_EQ(runs[1].jobs[0]->name, "rocev2");
  ASSERT_EQ(runs[2].jobs.size(), 2u);
  EXPECT_EQ(runs[2].jobs[0]->name, "s2");
  EXPECT_EQ(runs[2].jobs[1]->name, "s1");
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].sweep_parameter, "loss");
    EXPECT_DOUBLE_EQ(runs[i].sweep_value, s.sweep->values[i / 3]);
  }
  const Scenario m = parse_ok(kMinimal);
  const auto plain = plan_runs(m);
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[1].jobs[0]->name, "b");
  EXPECT_TRUE(plain[1].sweep_parameter.empty());
}

// ---------------------------------------------------------------- check_runnable

TEST(ScenarioRunnable, LiveNeedsAddressesAndNoPlaneSweep) {
  EXPECT_EQ(check_runnable(parse_ok(kFull), true), "");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal), true),
            "jobs[0].from: host h0 has no daemon address (list it under hosts: h0: unix:///run/metaroce/...)");
  const std::string hosts = "hosts: {h0: unix:///a.sock, h1: unix:///b.sock}\n";
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + hosts), true),
            "fabric: a live run needs the fabric daemon's address (fabric: unix:///run/metaroce/...)");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + hosts + "fabric: unix:///f.sock\n"), true), "");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + hosts + "fabric: unix:///f.sock\nsweep: {parameter: planes, values: [2, 4]}\n"),
                           true),
            "sweep.parameter: planes can only be swept in the simulator");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + "  - {name: c, from: h0, to: h1, op: read}\n"), true).substr(0, 13),
            "jobs[0].from:");
}

TEST(ScenarioRunnable, SimulatorRunsWritesOnly) {
  EXPECT_EQ(check_runnable(parse_ok(kFull), false), "");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal), false), "");  // no addresses needed
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + "sweep: {parameter: planes, values: [2, 4]}\n"), false), "");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + "  - {name: c, from: h0, to: h1, op: read}\n"), false),
            "jobs[2].op: the simulator runs write only (got read)");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + "  - {name: c, from: h0, to: h1, size: 16M, connections: 64}\n"), false),
            "jobs[2] (c): the simulator would need 16400 MiB of message buffers at once (flows x connections x "
            "streams x min(queue_depth, messages) x size), at most 8192");
  EXPECT_EQ(check_runnable(parse_ok(kMinimal + "interval: 10ms\nsim: {time_scale: 0.00005}\n"), false),
            "sim.time_scale: interval x time_scale must be at least 1us of simulated time (got 500ns)");
}

// ---------------------------------------------------------------- clos topology

// Lines 1-6; tests append from line 7.
const std::string kClos = R"(name: c
description: clos test
duration: 6s
topology: {kind: clos, hosts: 32, planes: 4, hosts_per_leaf: 8, spines: 4, host_rate: 1G, spine_rate: 2G, host_delay: 500ns, spine_delay: 700ns, withdraw_after: 2ms, remote_withdraw_after: 20ms}
jobs:
  - {name: a, from: h0, to: h9}
)";

// A scenario whose topology mapping (line 4) holds keys.
std::string clos_topology(const std::string& keys) {
  return "name: c\ndescription: clos test\nduration: 6s\ntopology: {" + keys + "}\njobs:\n  - {name: a, from: h0, to: h1}\n";
}

TEST(ScenarioClos, TopologyAndSelectors) {
  const Scenario s = parse_ok(kClos + R"(timeline:
  - {at: 1s, action: down, plane: 1, spine: 2}
  - {at: 2s, action: up, plane: 1, spine: 2}
  - {at: 2s, action: set, set: {loss: 1%}, plane: 0, leaf: 3, spine: 0, direction: upward}
  - {at: 3s, action: down, hosts: h5, plane: 2}
  - {at: 3s, action: down, leaf: 1, plane: 3}
  - {at: 4s, action: set, set: {loss: 2%}, tier: leaf_spine}
  - {at: 4s, action: flap, period: 100ms, down_for: 10ms, tier: host, direction: downward, plane: 0}
  - {at: 5s, action: down, plane: 2}
)");
  ASSERT_TRUE(s.clos);
  EXPECT_EQ(s.hosts_count, 32u);
  EXPECT_EQ(s.clos->hosts_per_leaf, 8u);
  EXPECT_EQ(s.clos->leaves(s.hosts_count), 4u);
  EXPECT_EQ(s.clos->spines, 4u);
  EXPECT_DOUBLE_EQ(s.clos->host_rate_bps, 1e9);
  EXPECT_DOUBLE_EQ(s.clos->leaf_spine_rate_bps(), 2e9);
  EXPECT_EQ(s.clos->host_delay_ns, 500);
  EXPECT_EQ(s.clos->spine_delay_ns, 700);
  EXPECT_EQ(s.clos->withdraw_after_ns, 2'000'000);
  EXPECT_EQ(s.clos->remote_withdraw_after_ns, 20'000'000);
  EXPECT_DOUBLE_EQ(s.clos->oversubscription(), 8 * 1e9 / (4 * 2e9));
  EXPECT_DOUBLE_EQ(s.link_rate_bps(), 1e9);            // the host links'
  EXPECT_DOUBLE_EQ(s.plane_capacity_bps(), 32 * 1e9);  // every host's link into a plane
  EXPECT_EQ(s.ecmp_width(), 4u);                       // the leaves hash over the spines
  ASSERT_EQ(s.timeline.size(), 8u);
  EXPECT_EQ(s.timeline[0].selector.spine, 2u);
  EXPECT_EQ(s.timeline[0].label, "plane 1 spine 2 down");
  EXPECT_EQ(s.timeline[2].selector.leaf, 3u);
  EXPECT_EQ(s.timeline[2].selector.direction, "upward");
  EXPECT_EQ(s.timeline[2].label, "loss 1% on plane 0 leaf 3 spine 0 upward");
  EXPECT_EQ(s.timeline[3].selector.host_a, 5u);
  EXPECT_FALSE(s.timeline[3].selector.host_b);
  EXPECT_EQ(s.timeline[3].label, "plane 2 links of h5 down");
  EXPECT_EQ(s.timeline[4].label, "plane 3 leaf 1 down");
  EXPECT_EQ(s.timeline[5].selector.tier, "leaf_spine");
  EXPECT_EQ(s.timeline[5].label, "loss 2% on leaf-spine links");
  EXPECT_EQ(s.timeline[6].selector.tier, "host");
  EXPECT_EQ(s.timeline[7].label, "plane 2 down");
  // The simulator runs it; the live fabric node emulates the full mesh only.
  EXPECT_EQ(check_runnable(s, false), "");
  EXPECT_EQ(check_runnable(s, true),
            "topology.kind: not run live: needs 32 hosts in a clos topology (4 leaves and 4 spines on each of 4 planes); "
            "the live fabric node emulates the full mesh only, so a clos runs in the simulator (--sim)");
  // Defaults: the spine links at the host rate, 1 us per hop, the emulator's withdrawal delays.
  const Scenario d = parse_ok(clos_topology("kind: clos, hosts: 1024, hosts_per_leaf: 32, spines: 8"));
  ASSERT_TRUE(d.clos);
  EXPECT_EQ(d.hosts_count, 1024u);
  EXPECT_DOUBLE_EQ(d.clos->host_rate_bps, kDefaultLinkRateBps);
  EXPECT_DOUBLE_EQ(d.clos->leaf_spine_rate_bps(), kDefaultLinkRateBps);
  EXPECT_EQ(d.clos->host_delay_ns, 1000);
  EXPECT_EQ(d.clos->withdraw_after_ns, emulator::kDefaultWithdrawAfterNs);
  EXPECT_EQ(d.clos->remote_withdraw_after_ns, emulator::kDefaultRemoteWithdrawAfterNs);
  EXPECT_DOUBLE_EQ(d.clos->oversubscription(), 4.0);
  // A partly filled last leaf is fine: 10 hosts on leaves of 4 are 3 leaves.
  EXPECT_EQ(parse_ok(clos_topology("kind: clos, hosts: 10, hosts_per_leaf: 4, spines: 2")).clos->leaves(10), 3u);
  EXPECT_FALSE(parse_ok(kMinimal).clos);  // the full mesh by default
}

TEST(ScenarioClos, ErrorsNameTheKeyLineAndRange) {
  EXPECT_EQ(error_of(clos_topology("kind: torus")), "f.yaml:4: topology.kind: must be one of mesh | clos (got 'torus')");
  EXPECT_EQ(error_of(clos_topology("kind: clos, hosts: 1025, hosts_per_leaf: 1, spines: 1")),
            "f.yaml:4: topology.hosts: must be in [2, 1024] (got 1025)");
  EXPECT_EQ(error_of(clos_topology("kind: clos, hosts: 8, spines: 2")),
            "f.yaml:4: topology.hosts_per_leaf: is required for kind: clos (hosts on each leaf)");
  EXPECT_EQ(error_of(clos_topology("kind: clos, hosts: 8, hosts_per_leaf: 4")),
            "f.yaml:4: topology.spines: is required for kind: clos (spines per plane)");
  EXPECT_EQ(error_of(clos_topology("kind: clos, hosts: 8, hosts_per_leaf: 9, spines: 2")),
            "f.yaml:4: topology.hosts_per_leaf: must be in [1, 8] (got 9)");
  EXPECT_EQ(error_of(clos_topology("kind: clos, hosts: 8, hosts_per_leaf: 4, spines: 65")),
            "f.yaml:4: topology.spines: must be in [1, 64] (got 65)");
  EXPECT_EQ(error_of(clos_topology("kind: clos, hosts: 8, hosts_per_leaf: 4, spines: 2, spine_rate: 0")),
            "f.yaml:4: topology.spine_rate: a rate must be > 0 (allowed: a number > 0 in bits/s with an optional K, M, "
            "G or T and an optional bit, bps or b/s, e.g. 25G, 100Gbit, 10Mbps, in (0, 1.6T]; got 0)");
  EXPECT_EQ(error_of(clos_topology("kind: clos, hosts: 8, hosts_per_leaf: 4, spines: 2, ecmp_links: 2")),
            "f.yaml:4: topology.ecmp_links: a clos topology's ECMP group is its spines (topology.spines), not ECMP links");
  EXPECT_EQ(error_of(clos_topology("hosts: 8, spines: 2")),
            "f.yaml:4: topology.spines: only a clos topology has it (topology.kind: clos)");
  // Rates and delays are per tier in a clos: base.rate and base.delay are the mesh's.
  EXPECT_EQ(error_of(kClos + "base: {rate: 1G}\n"),
            "f.yaml:7: base.rate: a clos topology sets its links' rate per tier: topology.host_rate and "
            "topology.spine_rate (base.rate is the full mesh's)");
  EXPECT_EQ(error_of(kClos + "base: {loss: 1%, delay: 5us}\n"),
            "f.yaml:7: base.delay: a clos topology sets its links' delay per tier: topology.host_delay and "
            "topology.spine_delay (base.delay is the full mesh's)");
  // Selectors: ranges from the topology, and what the clos has not got.
  const auto timeline = [](const std::string& event) { return error_of(kClos + "timeline:\n  - " + event + "\n"); };
  EXPECT_EQ(timeline("{at: 1s, action: down, leaf: 4}"), "f.yaml:8: timeline[0].leaf: must be in [0, 3] (got 4)");
  EXPECT_EQ(timeline("{at: 1s, action: down, spine: 4}"), "f.yaml:8: timeline[0].spine: must be in [0, 3] (got 4)");
  EXPECT_EQ(timeline("{at: 1s, action: down, ecmp: 0}"),
            "f.yaml:8: timeline[0].ecmp: a clos topology has no ECMP link index: its leaves' ECMP group is the spines "
            "(name a spine)");
  EXPECT_EQ(timeline("{at: 1s, action: down, hosts: [h0, h1]}"),
            "f.yaml:8: timeline[0].hosts: a clos topology has no links between two hosts: name one host (its host "
            "links), a leaf or a spine");
  EXPECT_EQ(timeline("{at: 1s, action: down, direction: a_to_b}"),
            "f.yaml:8: timeline[0].direction: must be one of both | upward | downward (got 'a_to_b')");
  EXPECT_EQ(timeline("{at: 1s, action: down, tier: spine}"),
            "f.yaml:8: timeline[0].tier: must be one of all | host | leaf_spine (got 'spine')");
  EXPECT_EQ(timeline("{at: 1s, action: down, hosts: h3, spine: 1}"),
            "f.yaml:8: timeline[0].spine: a host names its own two host links; leave out leaf and spine");
  EXPECT_EQ(timeline("{at: 1s, action: down, spine: 1, tier: host}"),
            "f.yaml:8: timeline[0].tier: a spine's links are leaf-spine links (got tier host)");
  // And the full mesh refuses the clos's selectors and directions.
  EXPECT_EQ(error_of(kMinimal + "timeline:\n  - {at: 1s, action: down, spine: 0}\n"),
            "f.yaml:8: timeline[0].spine: only a clos topology has leaves, spines and tiers (topology.kind: clos)");
  EXPECT_EQ(error_of(kMinimal + "timeline:\n  - {at: 1s, action: down, direction: upward, hosts: [h0, h1]}\n"),
            "f.yaml:8: timeline[0].direction: must be one of both | a_to_b | b_to_a (got 'upward')");
}

// Each job's paths start on a spine of their own (clos_first_spine, through
// path_source_ports' first_link): the jobs of consecutive hosts of a leaf
// take the spines in turn instead of crowding one.
TEST(ScenarioClos, PathsStartOnTheSourceHostsSpine) {
  const Scenario s = parse_ok(kClos + "  - {name: b, from: h1, to: h9}\n  - {name: r, from: h1, to: h9, transport: rocev2, connections: 4}\n");
  const std::vector<RunPlan> plans = plan_scenario(s);
  ASSERT_EQ(plans.size(), 3u);
  const JobSpec& js = plans[0].jobs[0];
  EXPECT_EQ(js.paths, 4u * 2);  // kDefaultPathsPerPlane per plane
  EXPECT_EQ(clos_first_spine(js, 4), 0u);                 // h0
  EXPECT_EQ(clos_first_spine(plans[1].jobs[0], 4), 2u);   // h1, 2 paths per plane
  EXPECT_EQ(clos_first_spine(plans[2].jobs[0], 4), 1u);   // h1, RoCEv2: 1 QP per plane
  FlowEnds ends;
  ends.src_ip = 0x0A000001, ends.dst_ip = 0x0A00000A, ends.dst_port = 4794;
  for (uint32_t first : {0u, 1u, 3u}) {
    const std::vector<uint16_t> ports = path_source_ports(js, 4, 4, ends, first);
    for (uint32_t i = 0; i < js.paths; ++i) {
      wire::UdpFlow flow;
      flow.src_ip = ends.src_ip, flow.dst_ip = ends.dst_ip, flow.src_port = ports[i], flow.dst_port = ends.dst_port;
      EXPECT_EQ(emulator::ecmp_link_of(flow, 0, 4), (i / 4 + first) % 4) << "path " << i;
    }
  }
}

// ---------------------------------------------------------------- shipped files

TEST(ScenarioShipped, EveryFileParsesAndIsRunnable) {
  const std::filesystem::path dir = std::filesystem::path(METAROCE_SOURCE_DIR) / "configs" / "scenarios";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " does not exist yet";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) GTEST_SKIP() << "no scenario files in " << dir;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    std::string err;
    const auto s = load_scenario_file(f.string(), &err);
    ASSERT_TRUE(s.has_value()) << err;
    EXPECT_EQ(s->source, f.string());
    EXPECT_FALSE(s->yaml.empty());
    EXPECT_EQ(check_runnable(*s, false), "") << "simulator";
    EXPECT_FALSE(plan_runs(*s).empty());
    if (const std::string why = sim_only_reason(*s); !why.empty()) {  // a clos or a collective, and it says so
      EXPECT_NE(why.find(": not run live: "), std::string::npos) << why;
      EXPECT_EQ(check_runnable(*s, true), why);
    } else if (!s->hosts.empty()) {
      const std::string live = check_runnable(*s, true);
      EXPECT_TRUE(live.empty() || live.rfind("sweep.parameter", 0) == 0) << live;
    }
  }
}

}  // namespace
}  // namespace metaroce::scenario
