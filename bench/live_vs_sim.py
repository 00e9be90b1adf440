#!/usr/bin/env python3
"""Live vs simulator: the same scenario files run on a live lab and in the
simulator, in one go, and the figures that answer "degrade or stop?" printed
side by side (a table, and JSON with --json).

    sudo python3 bench/live_vs_sim.py                     # loss-sweep and plane-failure
    sudo python3 bench/live_vs_sim.py configs/scenarios/gray-failure.yaml --json out/lvs.json

Figures compared, per job:
  - retained: goodput at each sweep value / goodput at the first value (sweeps),
    or goodput during the faults / before them (scenarios with a timeline);
  - every assertion's measured value (ratios, recovery seconds, counts).
Ratios (retained, goodput_ratio, compare) must agree within --tolerance
(default 0.05). A live run the fidelity guard found unfaithful is shown as
INCONCLUSIVE and not compared. Exit status: 0 all compared figures agree,
1 one does not, 6 a live run was INCONCLUSIVE (nothing else disagreed),
2 a run could not be made.

Each live run is scripts/run-scenario.sh (a lab of network namespaces, its
daemons, the run, everything removed), each simulator run metarocectl
scenario run --sim; reports stay in --out.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATIO_METRICS = ("retained", "goodput_ratio", "compare")
PROBABILITIES = ("loss", "duplicate", "corrupt", "reorder")  # sweep values shown as percentages


def run_modes(scenario, out, build, lab):
    name = os.path.splitext(os.path.basename(scenario))[0]
    reports = {}
    for mode in ("live", "sim"):
        dest = os.path.join(out, f"{mode}-{name}")
        if mode == "live":
            cmd = ["bash", os.path.join(ROOT, "scripts/run-scenario.sh"), scenario, dest, lab]
        else:
            cmd = [os.path.join(build, "cli/metarocectl"), "scenario", "run", scenario, "--out", dest, "--sim"]
        print(f"live-vs-sim: {name}: {mode} run ...", file=sys.stderr, flush=True)
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, env=dict(os.environ, BUILD_DIR=build)).returncode
        path = os.path.join(dest, "report.json")
        if rc not in (0, 1, 6) or not os.path.exists(path):
            raise RuntimeError(f"{name}: the {mode} run failed (exit {rc}); see {dest}")
        with open(path) as f:
            reports[mode] = json.load(f)
    return name, reports


def figures(report):
    """{key: (value, is_ratio)} for one report."""
    out = {}
    runs = report["runs"]
    derived = report.get("derived", {}).get("runs", [])
    first = {}
    for i, run in enumerate(runs):
        job = run["job"]
        if run.get("sweep_parameter"):
            v = run["sweep_value"]
            label = f"{run['sweep_parameter']} " + (f"{v * 100:g}%" if run["sweep_parameter"] in PROBABILITIES else f"{v:g}")
            base = first.setdefault(job, run["goodput_bps"])
            if base > 0:
                out[f"{job}: retained at {label}"] = (run["goodput_bps"] / base, True)
        elif i < len(derived) and derived[i].get("fault_retained") is not None:
            out[f"{job}: retained during the faults"] = (derived[i]["fault_retained"], True)
    for a in report["assertions"]:
        if "value" in a:
            out[a["text"]] = (a["value"], a["text"].split(" ", 1)[0] in RATIO_METRICS)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*",
                    default=[os.path.join(ROOT, "configs/scenarios", f) for f in ("loss-sweep.yaml", "plane-failure.yaml")])
    ap.add_argument("--out", default=os.path.join(ROOT, "out/live-vs-sim"), help="report directories (default out/live-vs-sim)")
    ap.add_argument("--json", help="also write the comparison as JSON here")
    ap.add_argument("--tolerance", type=float, default=0.05, help="largest |live - sim| for a ratio (default 0.05)")
    ap.add_argument("--lab", default="mrlvs", help="namespace prefix of the live lab (default mrlvs)")
    args = ap.parse_args()
    build = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
    if os.geteuid() != 0:
        print("live-vs-sim: live runs need root (network namespaces, AF_XDP)", file=sys.stderr)
        return 2

    rows, unfaithful = [], []
    for scenario in args.scenarios:
        try:
            name, reports = run_modes(os.path.abspath(scenario), args.out, build, args.lab)
        except RuntimeError as e:
            print(f"live-vs-sim: {e}", file=sys.stderr)
            return 2
        faithful = reports["live"].get("derived", {}).get("faithful", True)
        if not faithful:
            unfaithful.append(name)
        live, sim = figures(reports["live"]), figures(reports["sim"])
        for key in [k for k in sim if k in live]:
            (lv, ratio), (sv, _) = live[key], sim[key]
            diff = lv - sv
            agree = None if not ratio or not faithful else abs(diff) <= args.tolerance
            rows.append({"scenario": name, "figure": key, "live": lv, "sim": sv, "difference": diff,
                         "ratio": ratio, "live_faithful": faithful, "agree": agree})

    fig_w = max([len(r["figure"]) for r in rows] + [6])
    sc_w = max([len(r["scenario"]) for r in rows] + [8])
    print(f"{'scenario':<{sc_w}}  {'figure':<{fig_w}}  {'live':>9}  {'sim':>9}  {'live-sim':>9}  agree (+-{args.tolerance:g})")
    print("-" * (sc_w + fig_w + 52))
    for r in rows:
        verdict = ("INCONCLUSIVE (live run not faithful)" if not r["live_faithful"] and r["ratio"]
                   else "-" if r["agree"] is None else "yes" if r["agree"] else "NO")
        print(f"{r['scenario']:<{sc_w}}  {r['figure']:<{fig_w}}  {r['live']:>9.3f}  {r['sim']:>9.3f}  "
              f"{r['difference']:>+9.3f}  {verdict}")
    disagree = [r for r in rows if r["agree"] is False]
    compared = [r for r in rows if r["agree"] is not None]
    print(f"\n{len(compared) - len(disagree)} of {len(compared)} ratios agree within +-{args.tolerance:g}"
          + (f"; live runs not faithful: {', '.join(unfaithful)}" if unfaithful else ""))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"tolerance": args.tolerance, "rows": rows, "unfaithful_live_runs": unfaithful}, f, indent=2)
    return 1 if disagree else 6 if unfaithful else 0


if __name__ == "__main__":
    sys.exit(main())
