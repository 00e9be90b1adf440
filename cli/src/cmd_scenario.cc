// Registration of `metarocectl scenario validate|run|merge` and `metarocectl sweep`
// (add_scenario_commands); the commands themselves are in scenario_cmd.cc.
#include <CLI/CLI.hpp>

#include <string>

#include "commands.h"
#include "scenario_cmd.h"

namespace metarocectl {

void add_scenario_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;

  // Scenarios and sweeps
  CLI::App* scenario = commands.group(&app, "scenario", "scripted fault-injection runs with reports",
                                      "metarocectl scenario run configs/scenarios/plane-failure.yaml --out out/pf");
  ScenarioFlags& scenario_flags = ctx.keep<ScenarioFlags>();
  CLI::App* scenario_validate =
      commands.add(scenario, "validate", "check a scenario file (every key, unit and range)",
                   "metarocectl scenario validate configs/scenarios/plane-failure.yaml",
                   [&inv, &scenario_flags] { return cmd_scenario_validate(scenario_flags, inv.json); });
  scenario_validate->add_option("file", scenario_flags.file, "scenario YAML")->required()->check(CLI::ExistingFile);
  CLI::App* scenario_run = commands.add(
      scenario, "run", "run a scenario against live daemons (or --sim) and write the report",
      "metarocectl scenario run configs/scenarios/plane-failure.yaml --out out/pf --sim",
      [&inv, &scenario_flags] { return cmd_scenario_run(scenario_flags, inv.client_options, inv.json); });
  scenario_run->add_option("file", scenario_flags.file, "scenario YAML")->required()->check(CLI::ExistingFile);
  scenario_run->add_option("--out", scenario_flags.out, "report directory (report.json, timeseries.csv, report.html)")
      ->capture_default_str();
  scenario_run->add_flag("--sim", scenario_flags.sim, "run in the simulator (virtual time, same transport and emulator)");
  scenario_run->add_option("--threads", scenario_flags.sim_threads,
                           "simulator: independent runs at once (0: one per core; the report is the same)")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  scenario_run->add_option("--host", scenario_flags.host_overrides, "NAME=ADDRESS: override a host's daemon address");
  scenario_run->add_option("--hosts-from", scenario_flags.hosts_from,
                           "NAME:PORT: each host's daemon is the one of that name behind NAME (e.g. a headless "
                           "Service; see `metarocectl discover`); --host wins");
  scenario_run->add_option("--fabric", scenario_flags.fabric_override, "override the fabric daemon's address");
  scenario_run->add_option("--point", scenario_flags.point,
                           "I: run only sweep point I (0-based, the runs of sweep.values[I], seeded as in the whole "
                           "sweep) and write OUT/point.json for `scenario merge`");
  scenario_run->footer(scenario_run->get_footer() + R"(

Exit codes: 0 every assertion passed; 1 an assertion failed; 2 the file or a
flag is invalid; 3/4 a daemon refused or could not be reached; 6 INCONCLUSIVE:
a live run in which this host's datapath, not the emulated fabric, limited the
result (the report's fidelity section says why), whatever the assertions say.
With --point the run is one sweep point: nothing is judged, the exit code is 0
once OUT/point.json is written (2/3/4 as above), and `scenario merge` turns
every point's directory into the whole sweep's report and verdict.
The scenario format is documented in docs/scenarios.md.)");
  MergeFlags& merge_flags = ctx.keep<MergeFlags>();
  CLI::App* scenario_merge = commands.add(
      scenario, "merge", "join the points of a sweep (scenario run --point I) into the whole sweep's report",
      "metarocectl scenario merge out/point-0 out/point-1 out/point-2 --out out/sweep",
      [&inv, &merge_flags] { return cmd_scenario_merge(merge_flags, inv.json); });
  scenario_merge->add_option("points", merge_flags.inputs, "every point's directory (holding point.json), any order")
      ->required();
  scenario_merge->add_option("--out", merge_flags.out, "report directory (report.json, timeseries.csv, report.html)")
      ->capture_default_str();
  scenario_merge->footer(scenario_merge->get_footer() + R"(

The points must be of one scenario file and seed, run by one metarocectl
version, each point exactly once. The report is the one the whole sweep gives
(runs in plan order, assertions judged over all of them, started_at the
earliest point's). Exit codes as for scenario run: 0 PASS, 1 FAIL, 6
INCONCLUSIVE, 2 a missing, duplicate or foreign point.)");
  SweepFlags& sweep_flags = ctx.keep<SweepFlags>();
  CLI::App* sweep = commands.add(
      &app, "sweep", "parameter sweep, MetaRoCE and RoCEv2 side by side, with a report",
      "metarocectl sweep --param loss --values 0,1%,5%,10% --sim --out out/sweep",
      [&inv, &sweep_flags] { return cmd_sweep(sweep_flags, inv.client_options, inv.json); });
  sweep->add_option("--param", sweep_flags.parameter, "loss | skew | planes (sim only) | message_bytes | connections")
      ->capture_default_str();
  sweep->add_option("--values", sweep_flags.values, "comma-separated values (units allowed: 1%, 4us, 16K)")
      ->capture_default_str();
  sweep->add_option("--duration", sweep_flags.duration, "per run")->capture_default_str();
  sweep->add_option("--interval", sweep_flags.interval, "sampling interval")->capture_default_str();
  sweep->add_option("--size", sweep_flags.size, "message size")->capture_default_str();
  sweep->add_option("--planes", sweep_flags.planes, "planes (RoCEv2 gets one QP per plane)")->capture_default_str();
  sweep->add_option("--from", sweep_flags.from, "live: sending daemon address");
  sweep->add_option("--to", sweep_flags.to, "live: receiving daemon address");
  sweep->add_option("--fabric", sweep_flags.fabric, "live: fabric daemon address");
  sweep->add_flag("--sim", sweep_flags.sim, "run in the simulator");
  sweep->add_option("--threads", sweep_flags.sim_threads,
                    "simulator: sweep points at once (0: one per core; the report is the same)")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  sweep->add_option("--out", sweep_flags.out, "report directory")->capture_default_str();
  sweep->add_option("--seed", sweep_flags.seed, "seed")->capture_default_str();
}

}  // namespace metarocectl
