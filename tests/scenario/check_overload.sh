#!/usr/bin/env bash
# A deliberately overloaded live run is reported INCONCLUSIVE (exit 6), never
# PASS: a short scenario on a netns lab while CPU burners (one more than the
# host has cores) compete with the daemons, whose workers run as ordinary
# threads (realtime_share 0; real-time workers would preempt the burners). Needs root, netns and AF_XDP;
# without them it prints SKIPPED with the reason and exits 77.
#   check_overload.sh OUT_DIR BUILD_DIR
set -euo pipefail
out="$1" build="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root (network namespaces, AF_XDP)"; exit 77; }
probe="mrov$$"
ip netns add "$probe" 2>/dev/null || { echo "SKIPPED: cannot create network namespaces here"; exit 77; }
ip netns del "$probe"
rm -rf "$out"
mkdir -p "$out"
cat > "$out/overloaded.yaml" <<'YAML'
name: overloaded
description: MetaRoCE under 1% loss while CPU burners compete with the daemons
topology: {hosts: 2, planes: 2, ecmp_links: 1}
hosts: {h0: unix:///run/metaroce/unused-h0.sock, h1: unix:///run/metaroce/unused-h1.sock}
fabric: unix:///run/metaroce/unused-fab.sock
base: {loss: 1%, delay: 5us, rate: 250M}
duration: 2s
interval: 250ms
jobs:
  - {name: metaroce, from: h0, to: h1, transport: metaroce, size: 64K, paths: 4}
assertions:
  - {metric: data_errors, job: all, max: 0}
  - {metric: job_succeeded, job: metaroce}
YAML
burners=()
cleanup() { for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
# Bounded: each burner ends by itself after 120 s even if this script is killed.
for _ in $(seq 0 "$(nproc)"); do
  timeout 120 sh -c 'while :; do :; done' &
  burners+=($!)
done
rc=0
METAROCE_REALTIME_SHARE=0 BUILD_DIR="$build" bash "$root/scripts/run-scenario.sh" "$out/overloaded.yaml" "$out/report" "ov$(( $$ % 10000 ))" || rc=$?
cleanup
[ "$rc" -eq 6 ] || { echo "expected exit 6 (INCONCLUSIVE) from an overloaded run, got $rc"; exit 1; }
python3 - "$out/report" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
assert r["derived"]["verdict"] == "INCONCLUSIVE", r["derived"]["verdict"]
problems = [p for run in r["runs"] for p in run["fidelity"]["problems"]]
assert any("waited for a CPU" in p for p in problems), problems
assert all("ran as an ordinary thread" in p for p in problems if "worker" in p), problems
html = open(sys.argv[1] + "/report.html").read()
assert "INCONCLUSIVE" in html and "Fidelity" in html, "the page must say INCONCLUSIVE and show the fidelity section"
print("overloaded run reported INCONCLUSIVE: " + "; ".join(problems[:3]))
PY
