// The scenario engine: one meaning of a scenario file, two backends.
//
// The engine turns a Scenario into runs (plan_runs), each run into the fabric
// changes and job specs that make it (RunPlan: the base, the sweep value, the
// timeline with ramps expanded into steps, every job with its sweep value
// applied), drives a Backend through the run interval by interval, joins the
// fabric's samples to the jobs' intervals, and evaluates the assertions. The
// simulator (sim_backend.h) and the live daemons (cli/src/scenario_live.cc)
// are the two backends; they translate a RunPlan into their own terms and
// nothing else, so the same file means the same thing in both modes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/scenario/model.h"
#include "metaroce/scenario/scenario.h"

namespace metaroce::scenario {

// Link defaults a run sets explicitly (live daemons and the simulator would
// otherwise each use their own): the tail-drop limit and the ECN marking
// threshold of every emulated link, unless the scenario's base sets them.
constexpr uint32_t kDefaultQueueLimitBytes = 4u << 20;
constexpr uint32_t kDefaultEcnThresholdBytes = 256u << 10;

// What every emulated link of a run starts from: the scenario's base with the
// link rate and the two defaults above filled in (host ports take its rate,
// queue limit and ECN threshold; ECMP links all of it).
LinkSettings link_base(const Scenario& s);

// What live daemons were started with that a run cannot change: the fabric
// node's host links (daemon config fabric.port) and each endpoint's pacing
// (endpoint.port_rate_bps, what its NIC would send at). Read from the
// daemons' effective configurations (Daemon.GetConfig).
struct DeployedHostLinks {
  std::string daemon;                  // the fabric daemon's address, for messages
  double rate_bps = 0;
  uint32_t queue_limit_bytes = 0, ecn_threshold_bytes = 0;
};
struct DeployedEndpoint {
  std::string host;                    // the scenario's host name
  std::string daemon;                  // its daemon's address
  double port_rate_bps = 0;            // 0: not paced
};
// Where a live deployment differs from the fabric the simulator builds for
// this scenario (emulator_fabric with link_base's queue and ECN settings on
// host ports, endpoints sending at the host links' rate). A run sets every
// ECMP link itself, but host links and pacing are fixed when the daemons
// start, so a deployment with other values would run a different fabric
// under the same file. One message per difference, naming the daemon's
// config field, its value and the value the scenario needs; empty when they
// agree. A clos is simulator-only and has no live deployment.
std::vector<std::string> deployment_mismatches(const Scenario& s, const DeployedHostLinks& fabric,
                                               const std::vector<DeployedEndpoint>& endpoints);

// One change of the fabric: the links `selector` names get the fields of
// `set`, and/or go down or up, and/or start (period > 0) or stop (period 0,
// which also brings the links up) flapping. Instants are scenario time from
// the run's start; a backend scales them (the simulator) or not (live).
struct FabricChange {
  Nanos at_ns = 0;
  Selector selector;
  LinkSettings set;
  std::optional<bool> up;
  struct Flap {
    Nanos period_ns = 0, down_ns = 0;
  };
  std::optional<Flap> flap;
  std::string label;
};

// One job of a run as it is started: the sweep value applied, defaults resolved.
struct JobSpec {
  const Job* job = nullptr;
  size_t index = 0;               // in Scenario::jobs
  uint32_t src = 0, dst = 0;      // host indices (Scenario::host_order); a collective: its first flow's
  std::vector<Flow> flows;        // job_flows: a pair's one, a collective's every (sender, receiver)
  uint32_t message_bytes = 0;
  uint32_t connections = 0;       // per flow
  uint32_t paths = 0;             // MetaRoCE paths per connection (RoCEv2: 1)
  uint64_t seed = 0;
  bool rocev2() const { return job->transport == "rocev2"; }
};

// What a switch hashes for ECMP besides the source port: the job's source and
// destination endpoint addresses, the destination UDP port (RoCEv2 4791, or
// the MetaRoCE endpoint's), and the fabric's hash salt.
struct FlowEnds {
  uint32_t src_ip = 0, dst_ip = 0;
  uint16_t dst_port = 0;
  uint32_t hash_seed = 0;
};

// The UDP source port (ECMP entropy) of every path of every connection of a
// job, [c * paths + i], chosen so that flows sit on the same ECMP links in both
// backends whatever the hosts' addresses: MetaRoCE path i on link
// (i / planes + first_link) % ecmp_links, RoCEv2 connection c (one QP, one
// path) on link (c / planes + first_link) % ecmp_links. So a fault on one
// ECMP link hits a known share of each transport's flows, live as in the
// simulator. On a clos the links are the spines (ecmp_links = spines) and
// first_link is clos_first_spine's. Deterministic: each port is searched from
// a per-(job, connection, path) start.
std::vector<uint16_t> path_source_ports(const JobSpec& spec, uint32_t planes, uint32_t ecmp_links,
                                        const FlowEnds& ends, uint32_t first_link = 0);

// A clos job's first spine: its source host x its paths (RoCEv2: connections)
// per plane, so the jobs of consecutive hosts of a leaf take the spines in
// turn and fill them before any spine carries two of their paths. With one
// first spine for every job they would all crowd the same leaf-spine links;
// hashing random ports would collide on some (a real fabric's ECMP does):
// this placement is the balanced case, and a fault on one spine hits a known
// share of each transport's paths.
uint32_t clos_first_spine(const JobSpec& spec, uint32_t planes);

// A capture window of a run: from from_ns to to_ns (scenario time of the
// run), around the timeline event `event` (index in Scenario::timeline).
struct PlannedCapture {
  size_t event = 0;
  std::string label;              // the event's label
  Nanos at_ns = 0, from_ns = 0, to_ns = 0;
  CaptureWindow window;
  // Where the backend writes it, relative to the report's folder:
  // "captures/<run>-<run label>-<event label>.pcapng" (capture_file_name).
  std::string file;
};

// The file name of a run's capture window: letters, digits, '.', '_', '-' only,
// at most capture::kMaxFileNameChars, e.g. "01-metaroce-plane-1-down.pcapng".
std::string capture_file_name(size_t run, const std::string& run_label, const std::string& event_label);

struct RunPlan {
  size_t index = 0;               // 1-based, in plan order
  size_t count = 0;               // runs in the scenario
  size_t point = 0;               // sweep point: index of sweep_value in sweep.values (0 without a sweep)
  std::string label;              // "metaroce loss=1%"
  std::string sweep_parameter;
  double sweep_value = 0;
  uint32_t planes = 0;            // the run's planes (a planes sweep changes it)
  double link_rate_bps = 0;       // every emulated link: host ports and ECMP links
  std::vector<FabricChange> setup;     // after a reset, in order, at t = 0
  std::vector<FabricChange> timeline;  // in time order, from when every job sends
  std::vector<JobSpec> jobs;
  std::vector<Nanos> sample_at_ns;     // interval ends: interval, 2 x interval, ..., duration
  std::vector<PlannedCapture> captures; // in time order, never overlapping
};

// Every run of a scenario, in order. A sweep runs value by value, so a
// point's runs are consecutive.
std::vector<RunPlan> plan_scenario(const Scenario& s);

// Jain's fairness index of x ((sum x)^2 / (n sum x^2)): 1 when all are equal,
// 1/n when one has everything; NaN for no values, 1 when all are 0.
double jain_index(const std::vector<uint64_t>& x);

// The points of a sweep (one per sweep value); 0 without a sweep.
size_t sweep_points(const Scenario& s);
// "" when `point` is a sweep point of s, else what is wrong, naming `field`
// (e.g. "--point: must be in [0, 5], one per sweep.values entry (got 6)").
std::string sweep_point_error(const Scenario& s, size_t point, const std::string& field);

// A clos plane's links at an instant: each link's bytes forwarded so far, in
// a fixed order (host links: host by host, up then down; leaf-spine links:
// leaf by leaf, spine by spine, up then down).
struct TierBytes {
  std::vector<double> host_links, leaf_spine_links;
};

// Cumulative fabric counters at an instant of a run (scenario time).
struct FabricSample {
  double t_s = 0;                   // scenario seconds since the run's t = 0
  double clock_s = 0;               // the backend's own clock (simulated or wall seconds): rates
  std::vector<double> plane_bytes;  // forwarded on each plane's ECMP links (clos: delivered by its downlinks)
  double queue_bytes = 0;           // deepest backlog of any link now
  double ecn_marks = 0;
  std::vector<TierBytes> tier_bytes;  // clos only: per plane
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string mode() const = 0;      // "sim" | "live"
  virtual uint32_t planes() const = 0;       // the fabric's planes, for the report
  // Reset the fabric, then apply plan.setup in order.
  virtual void prepare(const RunPlan& plan) = 0;
  // Start plan.jobs; returns once every job sends (or has ended).
  virtual void start_jobs(const RunPlan& plan) = 0;
  // Replay plan.timeline from now on: its instants count from here (t = 0).
  virtual void start_timeline(const RunPlan& plan) = 0;
  // Let the run go on until scenario time t_ns; true once every job has ended.
  virtual bool run_until(Nanos t_ns) = 0;
  virtual FabricSample sample_fabric() = 0;
  // Ask every job still running to stop (it may take a moment to end).
  virtual void stop_jobs() = 0;
  // One result per job, in plan.jobs order: the jobs' own figures and
  // intervals (scenario time); the engine adds the fabric's columns and the
  // events.
  virtual std::vector<RunResult> results(const RunPlan& plan) = 0;
  // Printed while a run goes, one line per interval (live runs take seconds).
  virtual bool real_time() const = 0;

  // Capture windows. The engine arms each window ahead of it with
  // start_capture (the first when the timeline starts, each next one once the
  // one before it has stopped), so that a slow control plane cannot shorten
  // it; the backend keeps exactly the frames from c.from_ns to c.to_ns of the
  // run's time. stop_capture comes once the run has reached c.to_ns, or has
  // ended first; every armed window is stopped. After results(),
  // capture_results gives one result per plan.captures entry (in order) and
  // has written the files it names into the report's folder. A backend that
  // captures nothing says so in each result's note: a window is never
  // silently dropped.
  virtual void start_capture(const RunPlan& plan, const PlannedCapture& c) { (void)plan, (void)c; }
  virtual void stop_capture(const RunPlan& plan, const PlannedCapture& c) { (void)plan, (void)c; }
  virtual std::vector<CaptureResult> capture_results(const RunPlan& plan);
};

// A capture result with the window's facts filled in from the plan (run,
// labels, window, where, planes, snap length) and nothing captured yet.
CaptureResult capture_result_for(const RunPlan& plan, const PlannedCapture& c);

using Progress = std::function<void(const std::string&)>;

// How long after its duration a run's jobs may keep draining before they are
// asked to stop (a live job retransmitting under reordering).
constexpr Nanos kDrainGraceNs = 10'000'000'000;

// Runs every planned run of the scenario through the backend and evaluates
// the assertions. progress (may be empty) gets a line per run and, for a
// real-time backend, a line per interval.
// With `point`, only that sweep point's runs go (sweep_point_error must be
// ""), planned and seeded as in the whole sweep; the report carries the point
// (Report::point) and no assertions.
Report run_scenario(const Scenario& s, Backend& backend, const Progress& progress = {},
                    std::optional<size_t> point = std::nullopt);

// The same with up to `workers` runs at once, each on its own backend from
// make_backend (a real-time backend runs them one after another). Every run
// is deterministic from its plan, so the report is the same whatever the
// number of workers; progress lines come in plan order.
using BackendFactory = std::function<std::unique_ptr<Backend>()>;
Report run_scenario_parallel(const Scenario& s, const BackendFactory& make_backend, unsigned workers,
                             const Progress& progress = {}, std::optional<size_t> point = std::nullopt);

// Joins the reports of every point of one sweep (run_scenario with a point,
// in any order; names[i] says where points[i] came from, for messages) into
// the report the whole sweep gives: the runs in plan order, the assertions
// evaluated over all of them, started_at the earliest point's. Every point
// must come from the same scenario text, seed, mode and version, each point
// exactly once, and its runs must be the ones the plan gives that point (job,
// sweep value, seed). nullopt and *error ("<name>: point.index: ...") otherwise.
std::optional<Report> merge_sweep_points(const std::vector<Report>& points, const std::vector<std::string>& names,
                                         std::string* error);

}  // namespace metaroce::scenario
