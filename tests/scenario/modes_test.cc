// One scenario, two backends, one meaning: every shipped scenario (and one
// that uses every kind of change) planned once, translated by the live
// backend into Fabric API requests and read back through the daemon's own
// conversion, and translated by the simulator backend; the two must make the
// same change to the same links, change by change, at the same (scaled)
// instants.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "metaroce/daemon/config.h"
#include "metaroce/daemon/fabric_api.h"
#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/scenario.h"
#include "metaroce/scenario/sim_backend.h"
#include "scenario_requests.h"

namespace metaroce::scenario {
namespace {

namespace v1 = metaroce::v1;

// Every field of a change in the emulator's terms, so two can be compared and a difference read.
std::string describe(const emulator::LinkSelector& s, const emulator::LinkPatch& p) {
  std::ostringstream o;
  auto opt = [&](const char* name, const auto& v) {
    if (v) o << ' ' << name << '=' << *v;
  };
  opt("plane", s.plane);
  opt("ecmp", s.ecmp);
  opt("host_a", s.host_a);
  opt("host_b", s.host_b);
  o << " dir=" << static_cast<int>(s.direction) << " |";
  opt("rate", p.rate_bps);
  opt("prop", p.prop_delay_ns);
  opt("qlimit", p.queue_limit_bytes);
  opt("qpkts", p.queue_limit_packets);
  opt("ecn", p.ecn_threshold_bytes);
  if (p.loss) o << " loss=" << static_cast<int>(p.loss->kind) << '/' << p.loss->probability;
  if (p.delay)
    o << " delay=" << p.delay->delay_ns << '+' << p.delay->jitter_ns << '/' << static_cast<int>(p.delay->distribution)
      << '/' << p.delay->correlation << '/' << p.delay->allow_reorder;
  if (p.reorder) o << " reorder=" << p.reorder->probability << '/' << p.reorder->gap;
  opt("hold", p.reorder_probability);
  opt("hold_ns", p.reorder_delay_ns);
  opt("dup", p.duplicate_probability);
  opt("corrupt", p.corrupt_probability);
  opt("up", p.up);
  if (p.flap) o << " flap=" << p.flap->period_ns << '/' << p.flap->down_ns << '@' << p.flap->start_ns;
  return o.str();
}

// The simulator runs scenario time scaled; a flap's period and outage scale with it.
emulator::LinkPatch scale_flap(emulator::LinkPatch p, double ts) {
  if (p.flap && p.flap->period_ns > 0) {
    p.flap->period_ns = std::max<Nanos>(2, std::llround(static_cast<double>(p.flap->period_ns) * ts));
    p.flap->down_ns = std::min<Nanos>(std::llround(static_cast<double>(p.flap->down_ns) * ts), p.flap->period_ns - 1);
  }
  return p;
}

void expect_same_meaning(const Scenario& s) {
  daemon::FabricSection fabric;
  fabric.hosts = s.hosts_count;
  fabric.planes = s.planes;
  fabric.ecmp_links = s.ecmp_links;
  const double ts = s.sim.time_scale;
  const std::vector<RunPlan> plans = plan_scenario(s);
  ASSERT_EQ(plans.size(), plan_runs(s).size());
  for (const RunPlan& plan : plans) {
    SCOPED_TRACE(plan.label);
    // The setup after a reset: the same changes, in order.
    const auto requests = metarocectl::live_setup(plan);
    ASSERT_EQ(requests.size(), plan.setup.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      emulator::LinkSelector sel;
      emulator::LinkPatch patch;
      ASSERT_TRUE(daemon::to_emulator_selector(requests[i].selector(), fabric, &sel).ok());
      const grpc::Status st = daemon::to_emulator_patch(requests[i].patch(), &patch);
      ASSERT_TRUE(st.ok()) << st.error_message();
      EXPECT_EQ(describe(sel, patch), describe(emulator_selector(plan.setup[i].selector), emulator_patch(plan.setup[i], ts)))
          << "setup change " << i << " (" << plan.setup[i].label << ")";
    }
    // The timeline: the same changes at the same instants (scaled in the simulator).
    std::vector<emulator::TimelineEvent> live;
    const grpc::Status st = daemon::to_emulator_timeline(metarocectl::live_timeline(plan), fabric, &live);
    ASSERT_TRUE(st.ok()) << st.error_message();
    const emulator::Timeline sim = sim_timeline(plan, ts);
    ASSERT_EQ(live.size(), sim.events().size());
    for (size_t i = 0; i < live.size(); ++i) {
      const emulator::TimelineEvent& l = live[i];
      const emulator::TimelineEvent& m = sim.events()[i];
      SCOPED_TRACE("timeline event " + std::to_string(i) + " (" + l.label + ")");
      EXPECT_EQ(std::llround(static_cast<double>(l.at_ns) * ts), m.at_ns);
      EXPECT_EQ(l.label, m.label);
      EXPECT_EQ(describe(l.selector, scale_flap(l.patch, ts)), describe(m.selector, m.patch));
    }
  }
}

TEST(ScenarioModes, EveryShippedScenarioMeansTheSameLiveAndSimulated) {
  const std::filesystem::path dir = std::filesystem::path(METAROCE_SOURCE_DIR) / "configs" / "scenarios";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << dir;
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    std::string err;
    const auto s = load_scenario_file(f.string(), &err);
    ASSERT_TRUE(s.has_value()) << err;
    if (s->clos) {  // simulator only: there is no live meaning to compare
      EXPECT_NE(check_runnable(*s, /*live=*/true), "");
      continue;
    }
    expect_same_meaning(*s);
  }
}

// Every kind of change and both sweeps that change the fabric.
constexpr const char* kEveryChange = R"(name: every-change
description: every action of the timeline
seed: 7
topology: {hosts: 3, planes: 4, ecmp_links: 2}
hosts: {a: "unix:///a", b: "unix:///b", c: "unix:///c"}
fabric: "unix:///f"
base: {rate: 250M, delay: 20us, jitter: 5us, queue_limit: 1M}
duration: 2s
interval: 250ms
jobs:
  - {name: m, from: a, to: b}
timeline:
  - {at: 100ms, action: set, set: {loss: 1%, duplicate: 0.1%, corrupt: 0.1%, reorder: 1%, reorder_delay: 50us}, plane: 1, label: mess}
  - {at: 200ms, action: down, plane: 2, ecmp: 1, label: down}
  - {at: 300ms, action: up, plane: 2, ecmp: 1, label: up}
  - {at: 400ms, action: flap, period: 100ms, down_for: 30ms, hosts: [a, b], direction: a_to_b, label: flap}
  - {at: 800ms, action: flap, period: 0, hosts: [a, b], label: flap stop}
  - {at: 900ms, action: ramp, field: delay, from: 0, to: 333us, over: 300ms, steps: 3, plane: 3, label: ramp}
sweep: {parameter: skew, values: [0, 7us]}
)";

TEST(ScenarioModes, EveryKindOfChangeMeansTheSameLiveAndSimulated) {
  std::string err;
  const auto s = parse_scenario_yaml(kEveryChange, "every-change.yaml", &err);
  ASSERT_TRUE(s.has_value()) << err;
  const auto plans = plan_scenario(*s);
  ASSERT_EQ(plans.size(), 2u);
  // The ramp is its steps, rounded once for both modes (111 us, 222 us, 333 us).
  size_t steps = 0;
  for (const FabricChange& c : plans[0].timeline)
    if (c.label.rfind("ramp", 0) == 0) {
      ASSERT_TRUE(c.set.delay_ns);
      EXPECT_EQ(*c.set.delay_ns, 111'000 * static_cast<Nanos>(steps));
      ++steps;
    }
  EXPECT_EQ(steps, 4u);
  // The skew sweep keeps the base jitter on every plane.
  ASSERT_EQ(plans[1].setup.size(), 4u);
  EXPECT_EQ(*plans[1].setup[3].set.delay_ns, 20'000 + 3 * 7'000);
  EXPECT_EQ(*plans[1].setup[3].set.jitter_ns, 5'000);
  // Stopping a flap leaves the links up in both modes.
  const auto stop = std::find_if(plans[0].timeline.begin(), plans[0].timeline.end(),
                                 [](const FabricChange& c) { return c.label == "flap stop"; });
  ASSERT_NE(stop, plans[0].timeline.end());
  EXPECT_EQ(stop->up, std::optional<bool>(true));
  expect_same_meaning(*s);
}

TEST(ScenarioModes, RunsShareSeedsSizesPathsAndSampleInstants) {
  std::string err;
  auto s = parse_scenario_yaml(kEveryChange, "every-change.yaml", &err);
  ASSERT_TRUE(s.has_value()) << err;
  s->duration_ns = 1'100'000'000;  // not a multiple of the interval: the last interval ends at the duration
  const auto plans = plan_scenario(*s);
  for (const RunPlan& p : plans) {
    ASSERT_EQ(p.jobs.size(), 1u);
    EXPECT_EQ(p.jobs[0].seed, s->seed + p.index);
    EXPECT_EQ(p.jobs[0].paths, 2 * s->planes);  // MetaRoCE default: two per plane
    EXPECT_EQ(p.sample_at_ns.back(), s->duration_ns);
    EXPECT_EQ(p.sample_at_ns.size(), 5u);  // 250, 500, 750, 1000, 1100 ms
    // The base sets the link defaults both modes share.
    ASSERT_FALSE(p.setup.empty());
    EXPECT_EQ(p.setup[0].set.ecn_threshold_bytes, std::optional<uint32_t>(kDefaultEcnThresholdBytes));
    EXPECT_EQ(p.setup[0].set.queue_limit_bytes, std::optional<uint32_t>(1u << 20));  // the file's
    EXPECT_EQ(p.setup[0].set.rate_bps, std::optional<double>(250e6));
  }
}

// The job a live run starts carries what the simulator's connections are
// built from: the topology's payload per packet (both modes), the job's
// transport, paths, streams, depth, size and seed, and the source ports.
TEST(ScenarioModes, LiveJobsCarryTheScenariosTransportParameters) {
  std::string err;
  std::string yaml = kEveryChange;
  yaml.replace(yaml.find("ecmp_links: 2}"), 14, "ecmp_links: 2, mtu_payload: 1024}");
  yaml.replace(yaml.find("  - {name: m, from: a, to: b}"), 29,
               "  - {name: m, from: a, to: b, size: 16K, streams: 2, queue_depth: 8}\n"
               "  - {name: r, from: c, to: b, transport: rocev2, connections: 3}");
  const auto s = parse_scenario_yaml(yaml, "jobs.yaml", &err);
  ASSERT_TRUE(s.has_value()) << err;
  const auto plans = plan_scenario(*s);
  ASSERT_FALSE(plans.empty());
  for (const JobSpec& js : plans[0].jobs) {
    SCOPED_TRACE(js.job->name);
    std::vector<uint16_t> ports(js.connections * js.paths);
    for (size_t i = 0; i < ports.size(); ++i) ports[i] = static_cast<uint16_t>(50000 + i);
    const v1::StartJobRequest req = metarocectl::live_job(*s, js, ports);
    const v1::JobSpec& spec = req.spec();
    EXPECT_EQ(spec.params().mtu_payload_bytes(), 1024u) << "topology.mtu_payload, as the simulator uses";
    EXPECT_EQ(spec.params().transport(), js.rocev2() ? v1::TRANSPORT_ROCEV2 : v1::TRANSPORT_METAROCE);
    EXPECT_EQ(spec.params().paths(), js.paths);
    EXPECT_EQ(spec.params().streams(), js.job->streams);
    EXPECT_EQ(spec.params().queue_depth(), js.job->queue_depth);
    EXPECT_EQ(spec.connections(), js.connections);
    ASSERT_EQ(spec.message_bytes_size(), 1);
    EXPECT_EQ(spec.message_bytes(0), js.message_bytes);
    EXPECT_EQ(spec.seed(), js.seed);
    EXPECT_EQ(spec.duration_ns(), s->duration_ns);
    ASSERT_EQ(spec.peers_size(), 1);
    EXPECT_EQ(spec.peers(0), "unix:///b");
    ASSERT_EQ(static_cast<size_t>(spec.path_src_ports_size()), ports.size());
    for (size_t i = 0; i < ports.size(); ++i) EXPECT_EQ(spec.path_src_ports(static_cast<int>(i)), ports[i]);
  }
}

// A capture window as the live backend asks for it: Capture.Start on each
// daemon the window involves, with that daemon's points (one request with
// every point for a daemon that is a host and the fabric node), the window's
// planes and snap length, a file name of its own, and the window on the
// daemons' wall clock from the fabric timeline's origin, which also ends it
// if nobody stops it.
TEST(ScenarioModes, CaptureWindowRequestsPerDaemon) {
  std::string err;
  const std::string yaml = R"(name: cw
description: capture requests
topology: {hosts: 3, planes: 4}
hosts: {a: "unix:///a", b: "unix:///b", c: "unix:///c"}
fabric: "unix:///a"
duration: 3s
jobs:
  - {name: m, from: a, to: b}
  - {name: r, from: c, to: b}
timeline:
  - {at: 1s, action: down, plane: 2, label: plane 2 down, capture: {before: 20ms, after: 80ms, where: both, planes: [2, 3], snaplen: 128}}
  - {at: 2s, action: up, plane: 2, label: plane 2 up, capture: {}}
)";
  const auto s = parse_scenario_yaml(yaml, "cw.yaml", &err);
  ASSERT_TRUE(s.has_value()) << err;
  const auto plans = plan_scenario(*s);
  ASSERT_EQ(plans.size(), 2u);
  const RunPlan& p = plans[0];  // job m: hosts a (also the fabric) and b
  ASSERT_EQ(p.captures.size(), 2u);
  const uint64_t origin = 1'700'000'000'000'000'000ull;
  const auto both = metarocectl::live_capture_requests(*s, p, p.captures[0], origin);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].daemon, "a+fabric");
  EXPECT_EQ(both[0].address, "unix:///a");
  EXPECT_EQ(both[1].daemon, "b");
  const v1::CaptureSpec& a = both[0].start.spec();
  EXPECT_EQ(a.file(), "01-m-plane-2-down-a-fabric.pcapng");
  ASSERT_EQ(a.points_size(), 5);
  EXPECT_EQ(a.points(0), v1::CAPTURE_POINT_FABRIC_IN);
  EXPECT_EQ(a.points(1), v1::CAPTURE_POINT_FABRIC_OUT);
  EXPECT_EQ(a.points(2), v1::CAPTURE_POINT_FABRIC_DROPPED);
  EXPECT_EQ(a.points(3), v1::CAPTURE_POINT_ENDPOINT_RX);
  EXPECT_EQ(a.points(4), v1::CAPTURE_POINT_ENDPOINT_TX);
  ASSERT_EQ(a.planes_size(), 2);
  EXPECT_EQ(a.planes(0), 2u);
  EXPECT_EQ(a.planes(1), 3u);
  EXPECT_EQ(a.snap_length(), 128u);
  EXPECT_EQ(a.start_unix_ns(), origin + 980'000'000u) << "at - before";
  EXPECT_EQ(a.stop_unix_ns(), origin + 1'080'000'000u) << "at + after";
  EXPECT_EQ(a.max_duration_ns(), 0u);
  EXPECT_EQ(a.max_bytes(), kMaxCaptureBytesPerDaemon);
  const v1::CaptureSpec& b = both[1].start.spec();
  EXPECT_EQ(b.file(), "01-m-plane-2-down-b.pcapng");
  ASSERT_EQ(b.points_size(), 2);
  EXPECT_EQ(b.points(0), v1::CAPTURE_POINT_ENDPOINT_RX);
  // The default window: the fabric node only, every plane, whole frames.
  const auto fabric = metarocectl::live_capture_requests(*s, p, p.captures[1], origin);
  ASSERT_EQ(fabric.size(), 1u);
  EXPECT_EQ(fabric[0].daemon, "fabric");
  EXPECT_EQ(fabric[0].start.spec().points_size(), 3);
  EXPECT_EQ(fabric[0].start.spec().planes_size(), 0);
  EXPECT_EQ(fabric[0].start.spec().snap_length(), 0u);
  EXPECT_EQ(fabric[0].start.spec().start_unix_ns(), origin + 1'950'000'000u);
  EXPECT_EQ(fabric[0].start.spec().stop_unix_ns(), origin + 2'050'000'000u);
  // Run 2 (job r: hosts c and b): the run's hosts, not the scenario's.
  const auto second = metarocectl::live_capture_requests(*s, plans[1], plans[1].captures[0], origin);
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[0].daemon, "fabric");
  EXPECT_EQ(second[1].daemon, "b");
  EXPECT_EQ(second[2].daemon, "c");
  EXPECT_EQ(second[2].start.spec().file(), "02-r-plane-2-down-c.pcapng");
}

// Host links and pacing are fixed when live daemons start: a deployment with
// other values is refused, every field named with both values.
TEST(ScenarioModes, DeploymentWithOtherHostLinksIsNamedFieldByField) {
  std::string err;
  const auto s = parse_scenario_yaml(R"(name: d
description: host links at 200M, marking at 64K
topology: {hosts: 2, planes: 4}
hosts: {a: "unix:///a", b: "unix:///b"}
fabric: "unix:///f"
base: {rate: 200M, ecn_threshold: 64K}
duration: 1s
jobs: [{name: m, from: a, to: b}]
)", "d.yaml", &err);
  ASSERT_TRUE(s.has_value()) << err;
  const DeployedHostLinks agreeing{"fabric:7443", 200e6, kDefaultQueueLimitBytes, 64u << 10};
  EXPECT_TRUE(deployment_mismatches(*s, agreeing, {{"a", "a:7443", 200e6}, {"b", "b:7443", 200e6}}).empty());

  const DeployedHostLinks other{"fabric:7443", 10e9, 1u << 20, 0};
  const auto problems = deployment_mismatches(*s, other, {{"a", "a:7443", 200e6}, {"b", "b:7443", 0}});
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0], "fabric daemon fabric:7443: fabric.port.rate_bps is 10G, the scenario's host links run at 200M (base.rate)");
  EXPECT_EQ(problems[1], "fabric daemon fabric:7443: fabric.port.queue_limit_bytes is 1048576, the scenario's links drop above "
                         "4194304 (base.queue_limit)");
  EXPECT_EQ(problems[2], "fabric daemon fabric:7443: fabric.port.ecn_threshold_bytes is 0, the scenario's links mark at 65536 "
                         "(base.ecn_threshold)");
  EXPECT_EQ(problems[3], "host b (b:7443): endpoint.port_rate_bps is 0 (not paced), it must be the host links' rate 200M "
                         "(an endpoint sends at its NIC's rate, as in the simulator)");
}

// The Kubernetes deployment's daemon configs are set up for the scenario its
// Job runs, so that Job runs the simulator's fabric and is not refused.
TEST(ScenarioModes, KubernetesDaemonsAgreeWithTheirScenarioJob) {
  const std::filesystem::path root(METAROCE_SOURCE_DIR);
  const auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string job = read(root / "deploy/k8s/base/scenario-job.yaml");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(job, m, std::regex(R"(/usr/share/metaroce/(configs/scenarios/[a-z0-9-]+\.yaml))")));
  std::string err;
  const auto s = load_scenario_file((root / m[1].str()).string(), &err);
  ASSERT_TRUE(s.has_value()) << err;
  for (const char* dir : {"deploy/k8s/base/config", "deploy/k8s/overlays/dpdk/config"}) {
    std::optional<DeployedHostLinks> fabric;
    std::vector<DeployedEndpoint> endpoints;
    for (const auto& e : std::filesystem::directory_iterator(root / dir)) {
      const auto c = daemon::parse_daemon_yaml(read(e.path()), e.path().string(), &err);
      ASSERT_TRUE(c.has_value()) << err;
      if (c->fabric)
        fabric = DeployedHostLinks{e.path().filename().string(), c->fabric->port.rate_bps, c->fabric->port.queue_limit_bytes,
                                   c->fabric->port.ecn_threshold_bytes};
      if (c->endpoint) endpoints.push_back({c->name, e.path().filename().string(), c->endpoint->port_rate_bps});
    }
    ASSERT_TRUE(fabric.has_value()) << dir;
    ASSERT_EQ(endpoints.size(), 2u) << dir;
    for (const std::string& p : deployment_mismatches(*s, *fabric, endpoints)) ADD_FAILURE() << dir << ": " << p;
  }
}

}  // namespace
}  // namespace metaroce::scenario
