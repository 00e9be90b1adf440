// Scenario files (YAML): parsing and validation, and the simulator runner.
// The file format is documented in docs/scenarios.md and by the shipped
// scenarios in configs/scenarios/. Every error names the key, its line and
// what is allowed: "plane-failure.yaml:23: timeline[1].plane: must be in [0, 3] (got 4)".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/scenario/model.h"

namespace metaroce::scenario {

std::optional<Scenario> parse_scenario_yaml(const std::string& text, const std::string& source, std::string* error);
std::optional<Scenario> load_scenario_file(const std::string& path, std::string* error);
// A daemon's gRPC address as a scenario (or --host/--fabric) may give it: one
// word of at most 256 printable characters. "" when fine, else what is wrong.
std::string daemon_address_error(const std::string& address);

// A sweep value as the file would write it: "1%" (loss), "20us" (skew_ns),
// "16K" (message_bytes), else the number ("4").
std::string format_sweep_value(const std::string& parameter, double v);

// A job's limits beyond one connection's (transport/connection_params.h):
// messages per connection (a finite flow), and connections over all of a
// collective's flows, which the simulator holds at once. 16 jobs of the
// largest stay under the simulator's responder ids (a 24-bit RoCEv2 QPN
// space from 0x100000, sim_backend.cc).
inline constexpr uint64_t kMaxJobMessages = 1ull << 30;
inline constexpr uint64_t kMaxJobConnectionsTotal = 32768;
// Message buffers the simulator may allocate for the jobs of one run (every
// byte written is real and checked): 8 GiB, a third of the 24 GiB machines it
// runs on, leaves room for the transport state and the fabric.
inline constexpr double kMaxSimBufferBytes = 8.0 * (1ull << 30);

// The host indices (Scenario::host_order) a collective job spreads over: its
// `among` in order, or every host (incast: but its receiver); a pair's
// sender and receiver.
std::vector<uint32_t> job_hosts(const Scenario& s, const Job& j);
// How many (sender, receiver) flows job_flows gives, without building them.
uint64_t job_flow_count(const Scenario& s, const Job& j);
struct Flow {
  uint32_t src = 0, dst = 0;  // host indices
};
// A job's flows, each `connections` connections from src to dst, in a fixed
// order: a pair's one; all_to_all sender by sender, receivers in set order;
// permutation: host k writes to the k-th of a random cycle over the set
// (Sattolo's shuffle from the scenario's seed, so every job over the same set
// gets the same pairs and the transports are compared on the same traffic);
// incast: the senders in set order; ring_allreduce: the ring's hops, host k
// to host k + 1 of the set.
std::vector<Flow> job_flows(const Scenario& s, const Job& j);

// Checks the scenario against a simulator or live run (e.g. "sweep.parameter:
// planes can only be swept in the simulator"); "" when it can run.
std::string check_runnable(const Scenario& s, bool live);
// Why the scenario can run in the simulator only, whatever daemons there are
// ("topology.kind: not run live: needs 32 hosts in a clos topology ..."), or
// "". check_runnable(live) says it first; `scenario validate -o json` gives it
// as sim_only / sim_only_reason, which the live runners (run-scenario.sh, the
// scenario_live.* CI tests) report instead of running.
std::string sim_only_reason(const Scenario& s);

// The runs a scenario expands to, in order: one per job, or one per job and
// sweep value; jobs listed in another job's `with` run inside that job's run.
struct PlannedRun {
  std::vector<const Job*> jobs;     // jobs[0] is the run's name; the rest run concurrently
  std::string sweep_parameter;
  double sweep_value = 0;
};
std::vector<PlannedRun> plan_runs(const Scenario& s);

// Runs the whole scenario in the simulator (virtual time, scaled by
// sim.time_scale; the same transport engine and emulator as the daemons) and
// evaluates its assertions. progress (may be empty) gets a line per run.
// Independent runs (sweep points, transports) go on up to `workers` threads
// at once (0: one per core); the report is the same whatever the number.
// With `point`, only that sweep point (run_scenario in engine.h). The
// scenario's capture windows are written under out_dir (the report's folder:
// out_dir/captures/*.pcapng, from the simulator's own frames on its clock);
// with no out_dir the report says no file was written.
Report run_scenario_sim(const Scenario& s, const std::function<void(const std::string&)>& progress = {},
                        unsigned workers = 0, std::optional<size_t> point = std::nullopt,
                        const std::string& out_dir = {});

// Assertions over finished runs (the same thresholds live and in the simulator).
std::vector<AssertionResult> evaluate_assertions(const Scenario& s, const std::vector<RunResult>& runs);

}  // namespace metaroce::scenario
