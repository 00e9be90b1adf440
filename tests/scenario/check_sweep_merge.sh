#!/usr/bin/env bash
# A shipped sweep run point by point and merged is the whole sweep, through
# metarocectl:
#   check_sweep_merge.sh SCENARIO OUT_DIR BUILD_DIR
# runs SCENARIO --sim whole and once per point (--point I), merges the points
# (in reverse order) and checks that report.json, timeseries.csv and
# report.html equal the whole run's apart from started_at, that the exit codes
# agree, and that bad input (a point out of range, missing, twice, of another
# seed, a whole report, a scenario without a sweep) is refused with exit 2 and
# a message naming the field.
set -euo pipefail
scenario="$1" out="$2" build="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
ctl="$build/cli/metarocectl"
rm -rf "$out"
mkdir -p "$out"
n="$("$ctl" -o json scenario validate "$scenario" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sweep_points"])')"
[ "$n" -ge 2 ] || { echo "FAIL: $scenario has $n sweep points, the test needs at least 2"; exit 1; }

rc_full=0
"$ctl" scenario run "$scenario" --sim --out "$out/full" > "$out/full.log" || rc_full=$?
points=()
for ((i = 0; i < n; i++)); do
  "$ctl" scenario run "$scenario" --sim --point "$i" --out "$out/point-$i" > "$out/point-$i.log"
  [ "$(ls "$out/point-$i")" = point.json ] || { echo "FAIL: point $i wrote $(ls "$out/point-$i"), not only point.json"; exit 1; }
  points=("$out/point-$i" "${points[@]}")   # reverse order: merge takes any
done
rc_merged=0
"$ctl" scenario merge "${points[@]}" --out "$out/merged" > "$out/merged.log" || rc_merged=$?
[ "$rc_full" -eq "$rc_merged" ] || { echo "FAIL: the whole run exited $rc_full, the merge $rc_merged"; exit 1; }
python3 - "$out/full" "$out/merged" <<'PY'
import json, sys
full, merged = sys.argv[1], sys.argv[2]
a, b = json.load(open(full + "/report.json")), json.load(open(merged + "/report.json"))
started = (a.pop("started_at"), b.pop("started_at"))
assert a == b, "report.json differs: " + ", ".join(k for k in a if a[k] != b.get(k))
assert open(full + "/timeseries.csv").read() == open(merged + "/timeseries.csv").read(), "timeseries.csv differs"
ha = open(full + "/report.html").read().replace(started[0], "STARTED")
hb = open(merged + "/report.html").read().replace(started[1], "STARTED")
assert ha == hb, "report.html differs"
print("merge ok: %d runs, %d assertions, verdict %s; report.json, timeseries.csv and report.html equal the whole run's "
      "apart from started_at (%s whole, %s merged)" % (len(a["runs"]), len(a["assertions"]), a["derived"]["verdict"],
                                                       started[0], started[1]))
PY

# Bad input: exit 2 and a message naming the field.
expect_error() {  # expect_error WHAT TEXT COMMAND...
  local what="$1" text="$2"; shift 2
  local rc=0
  "$@" > "$out/error.out" 2> "$out/error.err" || rc=$?
  [ "$rc" -eq 2 ] || { echo "FAIL: $what: exit $rc, not 2"; cat "$out/error.err"; exit 1; }
  grep -qF -- "$text" "$out/error.err" || { echo "FAIL: $what: no '$text' in: $(cat "$out/error.err")"; exit 1; }
  echo "refused ok: $what: $(head -1 "$out/error.err")"
}
last=$((n - 1))
expect_error "--point out of range" "--point: must be in [0, $last], one point per sweep.values entry (got $n)" \
  "$ctl" scenario run "$scenario" --sim --point "$n" --out "$out/bad"
expect_error "--point not a number" "--point: must be a sweep point's index, in [0, $last] (got '-1')" \
  "$ctl" scenario run "$scenario" --sim --point=-1 --out "$out/bad"
expect_error "--point without a sweep" "has no sweep, so it has no points" \
  "$ctl" scenario run "$root/configs/scenarios/plane-failure.yaml" --sim --point 0 --out "$out/bad"
expect_error "a point missing" "point $last missing: point.index must cover [0, $last]" \
  "$ctl" scenario merge "${points[@]:1}" --out "$out/bad"
expect_error "a point twice" "point.index: point 0 given twice" \
  "$ctl" scenario merge "${points[@]}" "$out/point-0/point.json" --out "$out/bad"
expect_error "a whole report" "holds a whole run's report.json" \
  "$ctl" scenario merge "${points[@]}" "$out/full" --out "$out/bad"
# A point of another seed: the same sweep with seed 2 instead of 1.
sed 's/^seed: .*/seed: 2/' "$scenario" > "$out/reseeded.yaml"
grep -q '^seed: 2$' "$out/reseeded.yaml" || { echo "FAIL: $scenario has no seed line to change"; exit 1; }
"$ctl" scenario run "$out/reseeded.yaml" --sim --point 0 --out "$out/reseeded-0" > /dev/null
expect_error "a point of another scenario file or seed" "scenario_yaml: differs from" \
  "$ctl" scenario merge "${points[@]:0:$last}" "$out/reseeded-0" --out "$out/bad"
[ ! -e "$out/bad" ] || { echo "FAIL: a refused command wrote $out/bad"; exit 1; }
echo "sweep merge ok"
