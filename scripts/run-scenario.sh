#!/usr/bin/env bash
# Runs a scenario end to end on a network-namespace lab (root):
#   lab up (hosts and planes from the scenario's topology) -> one metaroced per
#   host namespace and one in the fabric namespace (AF_XDP) -> metarocectl
#   scenario run (addresses pointed at this lab's daemons) -> daemons stopped
#   -> lab down. Everything is removed on exit, also after Ctrl-C or a failure.
#
#   sudo bash scripts/run-scenario.sh configs/scenarios/plane-failure.yaml out/plane-failure [LAB]
#
# LAB is the namespace prefix ([a-z0-9]{1,8}, default "mrsc"). The exit status
# is metarocectl's: 0 when every assertion passed, 1 when one failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="$1"
out="${2:-out/$(basename "$scenario" .yaml)}"
lab="${3:-mrsc}"
build="${BUILD_DIR:-build}"
ctl="$build/cli/metarocectl"
daemon="$build/daemon/metaroced"
[ -x "$ctl" ] && [ -x "$daemon" ] || { echo "run-scenario: build first (bash scripts/build.sh)" >&2; exit 2; }

topo="$("$ctl" -o json scenario validate "$scenario")"
hosts="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["topology"]["hosts"])' <<<"$topo")"
planes="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["topology"]["planes"])' <<<"$topo")"
ecmp="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["topology"]["ecmp_links"])' <<<"$topo")"
# The scenario's link rate, queue limit and ECN threshold on host ports and
# ECMP links alike, as in the simulator (metarocectl sets the ECMP links again
# per run, with base.delay and the rest of the base).
topo_key() { python3 -c 'import json,sys; print(json.load(sys.stdin)["topology"][sys.argv[1]])' "$1" <<<"$topo"; }
rate="$(python3 -c 'import json,sys; print(repr(float(json.load(sys.stdin)["topology"]["link_rate_bps"])))' <<<"$topo")"
qlimit="$(topo_key link_queue_limit_bytes)"
ecn="$(topo_key link_ecn_threshold_bytes)"
names=($(python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["hosts"]))' <<<"$topo"))

work="$(mktemp -d /tmp/mrsc-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$build/lab/metaroce_lab" down --prefix "$lab" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The datapath carries frames up to 2048 bytes (frame_size below), so the
# lab's IP MTU is 2034: kernel traffic (ping, iperf3) never sends a frame
# the fabric node would have to drop.
printf 'name: %s\nhosts: %s\nplanes: %s\nmtu: 2034\n' "$lab" "$hosts" "$planes" > "$work/lab.yaml"
"$build/lab/metaroce_lab" up "$work/lab.yaml" >/dev/null
echo "run-scenario: lab $lab up ($hosts hosts, $planes planes); daemons in $work"

cat > "$work/fab.yaml" <<YAML
name: fabric
role: fabric
lab: {file: lab.yaml, fabric: true}
control: {unix_socket: fab.sock}
fabric:
  datapath: afxdp
  frame_size: 2048
  ecmp_links: $ecmp
  port: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}
  ecmp: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}
YAML
ip netns exec "$lab-fab" "$daemon" --config "$work/fab.yaml" > "$work/fab.log" 2>&1 &
pids+=($!)
overrides=(--fabric "unix://$work/fab.sock")
for ((h = 0; h < hosts; h++)); do
  cat > "$work/h$h.yaml" <<YAML
name: ${names[$h]:-h$h}
role: endpoint
lab: {file: lab.yaml, host: $h}
control: {unix_socket: h$h.sock}
endpoint: {datapath: afxdp, xdp_mode: skb, frame_size: 2048, mtu_payload: 1024, min_rto_ns: 2ms}
YAML
  ip netns exec "$lab-h$h" "$daemon" --config "$work/h$h.yaml" > "$work/h$h.log" 2>&1 &
  pids+=($!)
  overrides+=(--host "${names[$h]:-h$h}=unix://$work/h$h.sock")
done
# Ready when every daemon answers (bounded).
for sock in "$work/fab.sock" $(for ((h = 0; h < hosts; h++)); do echo "$work/h$h.sock"; done); do
  for _ in $(seq 1 300); do
    "$ctl" --server "unix://$sock" status >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$ctl" --server "unix://$sock" status >/dev/null || { echo "run-scenario: daemon at $sock did not start:" >&2; cat "$work"/*.log >&2; exit 1; }
done

rc=0
"$ctl" scenario run "$scenario" --out "$out" "${overrides[@]}" || rc=$?
exit $rc
