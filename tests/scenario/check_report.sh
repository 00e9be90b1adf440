#!/usr/bin/env bash
# Runs one shipped scenario and checks its report, in the simulator or on a
# netns lab with live daemons:
#   check_report.sh sim|live SCENARIO OUT_DIR BUILD_DIR
# live needs root, netns and AF_XDP; without them it prints SKIPPED with the
# reason and exits 77 (CTest's SKIP_RETURN_CODE).
set -euo pipefail
mode="$1" scenario="$2" out="$3" build="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$out"
if [ "$mode" = live ]; then
  [ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root (network namespaces, AF_XDP)"; exit 77; }
  probe="mrck$$"
  ip netns add "$probe" 2>/dev/null || { echo "SKIPPED: cannot create network namespaces here"; exit 77; }
  ip netns del "$probe"
  lab="s$(( $$ % 100000 ))"
  BUILD_DIR="$build" bash "$root/scripts/run-scenario.sh" "$scenario" "$out" "$lab"
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
html = open(out + "/report.html").read()
assert html.count("<svg") >= 3, "plots missing"
rows = open(out + "/timeseries.csv").read().splitlines()
assert len(rows) > len(r["runs"]), "time series too short"
print("report ok: %d runs, %d assertions, all passed: %s" % (len(r["runs"]), len(r["assertions"]),
      all(a["passed"] for a in r["assertions"])))
PY
