#!/usr/bin/env bash
# Runs one shipped scenario and checks its report, in the simulator or on a
# netns lab with live daemons:
#   check_report.sh sim|live SCENARIO OUT_DIR BUILD_DIR
# live needs root, netns and AF_XDP; without them it prints SKIPPED with the
# reason and exits 77 (CTest's SKIP_RETURN_CODE). A simulator-only scenario
# (`scenario validate` says sim_only, e.g. a clos topology) is reported the
# same way live: "SKIPPED: not run live (simulator only): <why>".
set -euo pipefail
mode="$1" scenario="$2" out="$3" build="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$out"
if [ "$mode" = live ]; then
  # A scenario the live daemons cannot run (a clos topology: the live fabric
  # node emulates the full mesh) says why; CTest shows it as skipped with that
  # reason, never as passed.
  sim_only="$("$build/cli/metarocectl" -o json scenario validate "$scenario" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["sim_only_reason"] if j["sim_only"] else "")')"
  [ -z "$sim_only" ] || { echo "SKIPPED: not run live (simulator only): $sim_only"; exit 77; }
  [ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root (network namespaces, AF_XDP)"; exit 77; }
  probe="mrck$$"
  ip netns add "$probe" 2>/dev/null || { echo "SKIPPED: cannot create network namespaces here"; exit 77; }
  ip netns del "$probe"
  lab="s$(( $$ % 100000 ))"
  rc=0
  BUILD_DIR="$build" bash "$root/scripts/run-scenario.sh" "$scenario" "$out" "$lab" || rc=$?
  if [ "$rc" -eq 6 ]; then
    # INCONCLUSIVE: this host's datapath, not the emulated fabric, limited the
    # run, or an assertion was within its measurement's resolution of the
    # threshold. That is not a pass: CTest shows it as skipped, with the reasons.
    # Data integrity is no fidelity question: a data error still fails.
    python3 - "$out" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
assert r["derived"]["verdict"] == "INCONCLUSIVE", r["derived"]["verdict"]
bad = [a for a in r["assertions"] if a["text"].startswith("data_errors") and not a["passed"]]
assert not bad, "data errors: %s" % bad
problems = sorted({p for run in r["runs"] for p in run.get("fidelity", {}).get("problems", [])})
problems += ["too close to call: %s (%s)" % (a["text"], a["detail"]) for a in r["assertions"] if a.get("inconclusive")]
assert problems, "INCONCLUSIVE without a named reason"
failed = [a["text"] for a in r["assertions"] if not a["passed"] and not a.get("inconclusive")]
print("SKIPPED: INCONCLUSIVE on this host (%d assertions failed, not judged): %s" % (len(failed), "; ".join(problems)))
PY
    exit 77
  fi
  [ "$rc" -eq 0 ] || exit "$rc"
else
  "$build/cli/metarocectl" scenario run "$scenario" --sim --out "$out"
fi
# The report: three files, JSON that parses with runs and assertions, a page with plots.
for f in report.json timeseries.csv report.html; do
  [ -s "$out/$f" ] || { echo "missing $out/$f"; exit 1; }
done
python3 - "$out" "$mode" <<'PY'
import json, sys
out, mode = sys.argv[1], sys.argv[2]
r = json.load(open(out + "/report.json"))
assert r["mode"] == mode, r["mode"]
assert r["runs"], "no runs"
assert r["scenario_yaml"], "scenario text missing"
for run in r["runs"]:
    assert run["intervals"], "run without intervals: " + run["job"]
    assert run["verify_failures"] == 0, "%s: %d messages failed verification" % (run["job"], run["verify_failures"])
html = open(out + "/report.html").read()
# The plots: Chart.js specs (JSON in the page) for at least three canvases,
# every plotted value its report.json number in the plot's unit.
spec_tag = '<script type="application/json" id="report-plots">'
assert spec_tag in html, "plots missing"
begin = html.index(spec_tag) + len(spec_tag)
charts = json.loads(html[begin:html.index("</script>", begin)])
assert len(charts) >= 3 and html.count("<canvas") == len(charts), "plots missing"
def at(pointer):
    v = r
    for part in pointer.split("/")[1:]:
        v = v[int(part)] if isinstance(v, list) else v[part]
    return v
for c in charts:
    values = [(p, ds["from_json"]) for ds in c["datasets"] for p in ds["points"] if "p" in p]
    assert values, "plot %s is empty" % c["canvas"]
    value = "x" if c["kind"] == "cdf" else "y"  # a completion-time CDF's value is its x (time), y its share
    for p, f in values:
        want = at(p["p"])
        want = want / f["div"] if "div" in f else want * f["mul"] if "mul" in f else want
        assert p[value] == want, "%s: plotted %r, report.json %r" % (p["p"], p[value], want)
# Simulated runs carry their completion-time distribution, and the page plots it.
if mode == "sim" and any(run["latency"]["samples"] > 0 for run in r["runs"]):
    assert any(c["kind"] == "cdf" for c in charts), "no completion-time CDF plotted"
rows = open(out + "/timeseries.csv").read().splitlines()
assert len(rows) > len(r["runs"]), "time series too short"
print("report ok: %d runs, %d assertions, all passed: %s" % (len(r["runs"]), len(r["assertions"]),
      all(a["passed"] for a in r["assertions"])))
PY
