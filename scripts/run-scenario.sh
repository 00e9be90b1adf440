#!/usr/bin/env bash
# Runs a scenario end to end on a network-namespace lab (root):
#   lab up (hosts and planes from the scenario's topology) -> one metaroced per
#   host namespace and one in the fabric namespace (AF_XDP; on a host with
#   fewer cores than hosts + 1, host 0's daemon runs the fabric node too) -> metarocectl
#   scenario run (addresses pointed at this lab's daemons) -> daemons stopped
#   -> lab down. Everything is removed on exit, also after Ctrl-C or a failure;
#   the daemons' configs and logs are kept in OUT/daemons/.
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
# The scenario's payload per packet (topology.mtu_payload, as in the
# simulator): the jobs ask for it, the endpoints' and the fabric node's frames
# hold it plus 128 bytes of headers, and the lab's IP MTU is that frame less
# the Ethernet header, so kernel traffic (ping, iperf3) never sends a frame
# the fabric node would have to drop.
mtu_payload="$(topo_key mtu_payload)"
frame_size=$((mtu_payload + 128))
names=($(python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["hosts"]))' <<<"$topo"))

work="$(mktemp -d /tmp/mrsc-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$build/lab/metaroce_lab" down --prefix "$lab" >/dev/null 2>&1 || true
  # The daemons' configs and logs go beside the report, for whoever reads it.
  mkdir -p "$out/daemons" 2>/dev/null && cp "$work"/*.yaml "$work"/*.log "$out/daemons/" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

printf 'name: %s\nhosts: %s\nplanes: %s\nmtu: %s\n' "$lab" "$hosts" "$planes" $((frame_size - 14)) > "$work/lab.yaml"
"$build/lab/metaroce_lab" up "$work/lab.yaml" >/dev/null
echo "run-scenario: lab $lab up ($hosts hosts, $planes planes); daemons in $work"

# One busy worker thread per daemon role. With fewer cores than hosts + 1
# those threads would wait for each other and the host's CPU, not the
# emulated fabric, would shape the results; then host 0's daemon takes both
# roles and runs the fabric node on its endpoint's worker thread
# (docs/architecture.md, "Threads and cores"). METAROCE_LAYOUT=separate or
# shared overrides the choice.
cores="$(nproc)"
layout="${METAROCE_LAYOUT:-}"
if [ -z "$layout" ]; then
  if [ "$cores" -lt $((hosts + 1)) ]; then layout=shared; else layout=separate; fi
fi
case "$layout" in
  separate|shared) ;;
  *) echo "run-scenario: METAROCE_LAYOUT must be separate or shared (got '$layout')" >&2; exit 2 ;;
esac
fabric_section="fabric:
  datapath: afxdp
  frame_size: $frame_size
  ecmp_links: $ecmp
  port: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}
  ecmp: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}"
sockets=()
if [ "$layout" = separate ]; then
  echo "run-scenario: layout separate: $hosts endpoint daemons + 1 fabric daemon, one worker thread each ($cores cores)"
  cat > "$work/fab.yaml" <<YAML
name: fabric
role: fabric
lab: {file: lab.yaml, fabric: true}
control: {unix_socket: fab.sock}
$fabric_section
YAML
  ip netns exec "$lab-fab" "$daemon" --config "$work/fab.yaml" > "$work/fab.log" 2>&1 &
  pids+=($!)
  sockets+=("$work/fab.sock")
  overrides=(--fabric "unix://$work/fab.sock")
else
  echo "run-scenario: layout shared: host 0's daemon also runs the fabric node on its worker thread ($hosts worker threads on $cores cores)"
  overrides=(--fabric "unix://$work/h0.sock")
fi
# Each endpoint sends at its host links' rate (port_rate_bps), as a NIC does
# and as the simulator's hosts do: its queue builds in the sender, not in
# the fabric's uplink (which would otherwise hold up to the queue limit).
for ((h = 0; h < hosts; h++)); do
  role=endpoint lab_key="host: $h" extra=""
  if [ "$layout" = shared ] && [ "$h" -eq 0 ]; then role=both lab_key="host: 0, fabric: true" extra="$fabric_section"; fi
  cat > "$work/h$h.yaml" <<YAML
name: ${names[$h]:-h$h}
role: $role
lab: {file: lab.yaml, $lab_key}
control: {unix_socket: h$h.sock}
endpoint: {datapath: afxdp, xdp_mode: skb, frame_size: $frame_size, mtu_payload: $mtu_payload, port_rate_bps: $rate}
$extra
YAML
  ip netns exec "$lab-h$h" "$daemon" --config "$work/h$h.yaml" > "$work/h$h.log" 2>&1 &
  pids+=($!)
  sockets+=("$work/h$h.sock")
  overrides+=(--host "${names[$h]:-h$h}=unix://$work/h$h.sock")
done
# Ready when every daemon answers (bounded).
for sock in "${sockets[@]}"; do
  for _ in $(seq 1 300); do
    "$ctl" --server "unix://$sock" status >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$ctl" --server "unix://$sock" status >/dev/null || { echo "run-scenario: daemon at $sock did not start:" >&2; cat "$work"/*.log >&2; exit 1; }
done

rc=0
"$ctl" scenario run "$scenario" --out "$out" "${overrides[@]}" || rc=$?
exit $rc
