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
# A scenario only the simulator runs (a clos topology: the live fabric node
# emulates the full mesh) is refused before any lab is built, with the reason.
sim_only="$(python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["sim_only_reason"] if j["sim_only"] else "")' <<<"$topo")"
if [ -n "$sim_only" ]; then
  echo "run-scenario: not run live: $sim_only" >&2
  echo "run-scenario: in the simulator: $ctl scenario run $scenario --sim --out $out" >&2
  exit 2
fi
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

# The kernel's RT throttle (kernel.sched_rt_runtime_us) stops a CPU's
# real-time threads for tens of milliseconds at a time although each worker
# here keeps itself below 90 % of every 10 ms (measured: workers runnable,
# CPU idle, 20-45 ms; the fidelity guard then calls the run INCONCLUSIVE). The
# workers' own budget already leaves every CPU to ordinary threads for part of
# every 10 ms, so for the run the throttle is turned off, as realtime tuning
# profiles do, and put back afterwards; concurrent runs count themselves in
# /run/metaroce so that the last one restores it. METAROCE_RT_THROTTLE=keep
# leaves it alone. docs/architecture.md, "Threads and cores".
rt_state=/run/metaroce/rt-throttle
rt_held=0
rt_throttle_hold() {
  [ "${METAROCE_RT_THROTTLE:-off}" = keep ] && return 0
  [ -w /proc/sys/kernel/sched_rt_runtime_us ] || { echo "run-scenario: cannot turn the kernel's RT throttle off (not root?)"; return 0; }
  mkdir -p /run/metaroce
  (
    flock 9
    users=$(cat "$rt_state.users" 2>/dev/null || echo 0)
    [ "$users" -eq 0 ] && cat /proc/sys/kernel/sched_rt_runtime_us > "$rt_state.saved"
    echo $((users + 1)) > "$rt_state.users"
    echo -1 > /proc/sys/kernel/sched_rt_runtime_us
  ) 9> "$rt_state.lock"
  rt_held=1
  echo "run-scenario: kernel RT throttle off for this run (was $(cat "$rt_state.saved") us per second; METAROCE_RT_THROTTLE=keep leaves it)"
}
rt_throttle_release() {
  [ "$rt_held" -eq 1 ] || return 0
  rt_held=0
  (
    flock 9
    users=$(( $(cat "$rt_state.users" 2>/dev/null || echo 1) - 1 ))
    if [ "$users" -le 0 ]; then
      cat "$rt_state.saved" > /proc/sys/kernel/sched_rt_runtime_us && rm -f "$rt_state.users" "$rt_state.saved"
    else
      echo "$users" > "$rt_state.users"
    fi
  ) 9> "$rt_state.lock"
}

work="$(mktemp -d /tmp/mrsc-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$build/lab/metaroce_lab" down --prefix "$lab" >/dev/null 2>&1 || true
  # The daemons' configs and logs go beside the report, for whoever reads it.
  mkdir -p "$out/daemons" 2>/dev/null && cp "$work"/*.yaml "$work"/*.log "$out/daemons/" 2>/dev/null || true
  rm -rf "$work"
  rt_throttle_release
}
trap cleanup EXIT INT TERM
rt_throttle_hold

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
# Workers run SCHED_FIFO for part of every 10 ms so that their wake-ups do
# not queue behind the host's ordinary threads (datapath/scheduling.h). The
# kernel's RT throttle counts each CPU, so each worker is pinned to a CPU (the
# fabric node's alone on the first, the others spread over the rest) and the
# workers on a CPU split its real-time share: 0.85 of every 10 ms, measured
# best on a 2-core VM (docs/architecture.md, "Threads and cores"); the
# fidelity section shows each worker's share. METAROCE_REALTIME_SHARE sets the
# share per CPU instead; 0 makes the workers ordinary threads.
cpus=($(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))'))
per_cpu_share="${METAROCE_REALTIME_SHARE:-0.85}"
workers=()  # one name per worker thread, in placement order
[ "$layout" = separate ] && workers+=(fab)
for ((h = 0; h < hosts; h++)); do workers+=("h$h"); done
declare -A worker_cpu worker_share
# The first worker (the fabric node's) carries every frame twice.
worker_cpu[${workers[0]}]=${cpus[0]}
for ((k = 1; k < ${#workers[@]}; k++)); do
  if [ ${#cpus[@]} -gt 1 ]; then worker_cpu[${workers[$k]}]=${cpus[$((1 + (k - 1) % (${#cpus[@]} - 1)))]}
  else worker_cpu[${workers[$k]}]=${cpus[0]}; fi
done
for w in "${workers[@]}"; do
  same=0
  for v in "${workers[@]}"; do [ "${worker_cpu[$v]}" = "${worker_cpu[$w]}" ] && same=$((same + 1)); done
  worker_share[$w]=$(awk -v s="$per_cpu_share" -v n="$same" 'BEGIN {printf "%.3f", int(s / n * 1000) / 1000}')
done
echo "run-scenario: workers pinned (name:cpu:real-time share): $(for w in "${workers[@]}"; do printf '%s:%s:%s ' "$w" "${worker_cpu[$w]}" "${worker_share[$w]}"; done)"
# placement NAME: the worker_cpu and realtime_share keys of one worker, for a flow map.
placement() { printf ', worker_cpu: %s, realtime_share: %s' "${worker_cpu[$1]}" "${worker_share[$1]}"; }
fabric_section="fabric:
  datapath: afxdp
  frame_size: $frame_size
  worker_cpu: ${worker_cpu[${workers[0]}]}
  realtime_share: ${worker_share[${workers[0]}]}
  ecmp_links: $ecmp
  port: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}
  ecmp: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}"
# Captures (a scenario's capture windows) are written by the daemons here and
# fetched by metarocectl into OUT/captures/ after each run; the work folder
# goes at the end.
export METAROCE_CAPTURE_DIR="$work/captures"
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
endpoint: {datapath: afxdp, xdp_mode: skb, frame_size: $frame_size, mtu_payload: $mtu_payload, port_rate_bps: $rate$(placement "h$h")}
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
