#!/usr/bin/env bash
# A live scenario whose daemons are reached over TCP with mutual TLS between
# network namespaces (no Unix socket anywhere):
#   check_mtls_multihost.sh SCENARIO OUT_DIR BUILD_DIR
# SCENARIO's hosts and fabric are TCP addresses on 192.0.2.0/24 (TEST-NET-1,
# tests/scenario/mtls-multihost.yaml). This script brings up a lab with a
# unique prefix, a control namespace with a bridge that each host namespace
# joins by a veth (address 192.0.2.<host + 1>), a CA with a certificate per
# daemon (server and client use, the daemon's address as IP SAN) and one for
# metarocectl (client use), all made here with openssl; starts one metaroced
# per host (host 0's also runs the fabric node) listening only on TCP+TLS that
# requires client certificates, daemon-to-daemon calls with their own
# certificates (peer_tls); then checks that
#   - metarocectl with its client certificate completes the mTLS handshake,
#   - a client without a certificate, one with a certificate of another CA and
#     a plain-TCP client are refused,
#   - the scenario, run from the control namespace with --tls flags, gives a
#     report with a verdict and no data errors.
# A verdict of INCONCLUSIVE (the fidelity guard: this host's datapath limited
# the run) is an honest outcome here and passes, with its reasons printed:
# what this test proves is the TLS plumbing. Without root or network
# namespaces it prints SKIPPED and exits 77. Everything it creates is removed
# on exit (trap).
set -euo pipefail
scenario="$1" out="$2" build="$3"
ctl="$build/cli/metarocectl"
daemon="$build/daemon/metaroced"
labtool="$build/lab/metaroce_lab"
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root (network namespaces, AF_XDP)"; exit 77; }
probe="mrtp$$"
ip netns add "$probe" 2>/dev/null || { echo "SKIPPED: cannot create network namespaces here"; exit 77; }
ip netns del "$probe"
command -v openssl >/dev/null || { echo "SKIPPED: needs openssl to make the certificates"; exit 77; }
rm -rf "$out"
mkdir -p "$out"

lab="t$(( $$ % 10000000 ))"   # [a-z0-9]{1,8}, unique per run
ctlns="$lab-ctl"
work="$(mktemp -d /tmp/mrtls-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$ctlns" 2>/dev/null || true
  "$labtool" down --prefix "$lab" >/dev/null 2>&1 || true
  mkdir -p "$out/daemons" && cp "$work"/*.yaml "$work"/*.log "$out/daemons/" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

topo="$("$ctl" -o json scenario validate "$scenario")"
key() { python3 -c 'import json,sys; print(json.load(sys.stdin)["topology"][sys.argv[1]])' "$1" <<<"$topo"; }
hosts="$(key hosts)" planes="$(key planes)" ecmp="$(key ecmp_links)" mtu_payload="$(key mtu_payload)"
qlimit="$(key link_queue_limit_bytes)" ecn="$(key link_ecn_threshold_bytes)"
rate="$(python3 -c 'import json,sys; print(repr(float(json.load(sys.stdin)["topology"]["link_rate_bps"])))' <<<"$topo")"
[ "$hosts" -eq 2 ] || { echo "FAIL: $scenario: this test builds 2 hosts, the scenario has $hosts"; exit 1; }
frame_size=$((mtu_payload + 128))
addr() { echo "192.0.2.$(($1 + 1))"; }
port=7443

# Certificates: a CA; per daemon a key and certificate for both server and
# client use (it serves its address and presents the same certificate to its
# peers); one client certificate for metarocectl; and a rogue CA's client
# certificate, which the daemons must refuse.
pki="$work/pki"
mkdir -p "$pki"
ossl() { openssl "$@" 2>>"$pki/openssl.log"; }
newca() {  # newca NAME
  ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=$1" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$pki/$1.key" -out "$pki/$1.crt"
}
issue() {  # issue CA NAME EXTENSIONS
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" -keyout "$pki/$2.key" -out "$pki/$2.csr"
  printf '%b' "$3" > "$pki/$2.ext"
  ossl x509 -req -in "$pki/$2.csr" -CA "$pki/$1.crt" -CAkey "$pki/$1.key" -CAcreateserial -days 1 \
    -extfile "$pki/$2.ext" -out "$pki/$2.crt"
}
newca ca
newca rogue-ca
for ((h = 0; h < hosts; h++)); do
  issue ca "h$h" "basicConstraints=CA:FALSE\nsubjectAltName=IP:$(addr $h)\nextendedKeyUsage=serverAuth,clientAuth\n"
done
issue ca client "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
issue rogue-ca rogue-client "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
openssl verify -CAfile "$pki/ca.crt" "$pki/h0.crt" "$pki/h1.crt" "$pki/client.crt" >/dev/null

# The lab, and the control network: a bridge in $ctlns, a veth per host namespace.
printf 'name: %s\nhosts: %s\nplanes: %s\nmtu: %s\n' "$lab" "$hosts" "$planes" $((frame_size - 14)) > "$work/lab.yaml"
"$labtool" up "$work/lab.yaml" >/dev/null
ip netns add "$ctlns"
ip -n "$ctlns" link set lo up
ip -n "$ctlns" link add br0 type bridge
ip -n "$ctlns" addr add 192.0.2.254/24 dev br0
ip -n "$ctlns" link set br0 up
for ((h = 0; h < hosts; h++)); do
  ip -n "$ctlns" link add "c$h" type veth peer name ctl0 netns "$lab-h$h"
  ip -n "$ctlns" link set "c$h" master br0 up
  ip -n "$lab-h$h" addr add "$(addr $h)/24" dev ctl0
  ip -n "$lab-h$h" link set ctl0 up
done
echo "mtls: lab $lab up ($hosts hosts, $planes planes), control network 192.0.2.0/24 in $ctlns"

# Daemons: TCP+TLS only (no Unix socket), client certificates required,
# peers dialled over TCP+TLS with the daemon's own certificate. Host 0's
# daemon runs the fabric node too (two worker threads in all).
for ((h = 0; h < hosts; h++)); do
  role=endpoint lab_key="host: $h" fabric=""
  if [ "$h" -eq 0 ]; then
    role=both lab_key="host: 0, fabric: true"
    fabric="fabric:
  datapath: afxdp
  frame_size: $frame_size
  ecmp_links: $ecmp
  port: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}
  ecmp: {rate_bps: $rate, prop_delay_ns: 0, queue_limit_bytes: $qlimit, ecn_threshold_bytes: $ecn}"
  fi
  cat > "$work/h$h.yaml" <<YAML
name: h$h
role: $role
lab: {file: lab.yaml, $lab_key}
control:
  unix_socket: ""
  tcp: "$(addr $h):$port"
  tls: {cert: pki/h$h.crt, key: pki/h$h.key, client_ca: pki/ca.crt}
  peer_address: "$(addr $h):$port"
  peer_tls: {ca: pki/ca.crt, cert: pki/h$h.crt, key: pki/h$h.key}
endpoint: {datapath: afxdp, xdp_mode: skb, frame_size: $frame_size, mtu_payload: $mtu_payload, port_rate_bps: $rate}
$fabric
YAML
  ip netns exec "$lab-h$h" "$daemon" --config "$work/h$h.yaml" > "$work/h$h.log" 2>&1 &
  pids+=($!)
done

# metarocectl, from the control namespace, with the client certificate.
tls=(--tls --tls-ca "$pki/ca.crt" --tls-cert "$pki/client.crt" --tls-key "$pki/client.key")
inctl() { ip netns exec "$ctlns" "$@"; }
for ((h = 0; h < hosts; h++)); do
  a="$(addr $h):$port"
  for _ in $(seq 1 300); do
    inctl "$ctl" "${tls[@]}" --server "$a" status >/dev/null 2>&1 && break
    kill -0 "${pids[$h]}" 2>/dev/null || break
    sleep 0.1
  done
  inctl "$ctl" "${tls[@]}" --server "$a" status > "$out/status-h$h.txt" 2>&1 || {
    echo "FAIL: h$h at $a did not answer over mutual TLS:"; cat "$out/status-h$h.txt" "$work/h$h.log"; exit 1; }
  echo "ok: h$h at $a: mTLS handshake with metarocectl's client certificate, status answered"
done

# Refused: no client certificate, a certificate of another CA, plain TCP.
refused() {  # refused WHAT ADDRESS FLAGS...
  local what="$1" a="$2"; shift 2
  local rc=0
  inctl "$ctl" --timeout 5s "$@" --server "$a" status > "$out/refused.txt" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || { echo "FAIL: $what: $a answered"; cat "$out/refused.txt"; exit 1; }
  [ "$rc" -eq 4 ] || { echo "FAIL: $what: exit $rc, not 4 (cannot reach or authenticate)"; cat "$out/refused.txt"; exit 1; }
  echo "ok: $what refused by $a (exit $rc: $(head -c 160 "$out/refused.txt" | tr '\n' ' '))"
}
for ((h = 0; h < hosts; h++)); do
  a="$(addr $h):$port"
  refused "a client without a certificate" "$a" --tls --tls-ca "$pki/ca.crt"
  refused "a client certificate of another CA" "$a" --tls --tls-ca "$pki/ca.crt" --tls-cert "$pki/rogue-client.crt" --tls-key "$pki/rogue-client.key"
  refused "a plain-TCP client" "$a"
done
# No daemon listens anywhere but its TLS port (no Unix socket, no plain TCP).
for ((h = 0; h < hosts; h++)); do
  listeners="$(ip netns exec "$lab-h$h" ss -Hlnp -t -u -x | grep metaroced || true)"
  grep -q . <<<"$listeners" && ! grep -v -- " $(addr $h):$port " <<<"$listeners" >/dev/null || {
    echo "FAIL: h$h: metaroced listens on more than its TLS port $(addr $h):$port:"; echo "$listeners"; exit 1; }
done

# The scenario over mutual TLS.
rc=0
inctl "$ctl" "${tls[@]}" scenario run "$scenario" --out "$out/report" > "$out/scenario.log" 2>&1 || rc=$?
cat "$out/scenario.log"
case "$rc" in
  0|1|6) ;;
  *) echo "FAIL: scenario run exited $rc (2 invalid, 3/4 a daemon refused or was unreachable)"; exit 1 ;;
esac
python3 - "$out/report" "$rc" <<'PY'
import json, sys
out, rc = sys.argv[1], int(sys.argv[2])
r = json.load(open(out + "/report.json"))
verdict = r["derived"]["verdict"]
assert r["mode"] == "live", r["mode"]
assert r["runs"] and all(run["intervals"] for run in r["runs"]), "runs without intervals"
assert {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 6}[verdict] == rc, "verdict %s but exit %d" % (verdict, rc)
errors = [a for a in r["assertions"] if a["text"].startswith("data_errors") and not a["passed"]]
assert not errors, "data errors: %s" % errors
bad = [run["job"] for run in r["runs"] if run["messages"] == 0]
assert not bad, "no message completed over the TLS-configured connections: %s" % bad
if verdict == "FAIL":
    sys.exit("FAIL: the scenario failed: %s" % "; ".join(a["text"] + " (" + a["detail"] + ")" for a in r["assertions"] if not a["passed"]))
reasons = sorted({p for run in r["runs"] for p in run.get("fidelity", {}).get("problems", [])})
print("mtls scenario: verdict %s, %d runs, %s messages%s" % (verdict, len(r["runs"]), sum(run["messages"] for run in r["runs"]),
      (" (INCONCLUSIVE by the fidelity guard: " + "; ".join(reasons) + ")") if verdict == "INCONCLUSIVE" else ""))
PY
echo "mtls multi-host ok"
