#!/usr/bin/env bash
# CTest k8s.kube_play_smoke: the afxdp overlay's rendered manifests
# (tests/k8s/golden/afxdp.yaml, which k8s.render_golden keeps equal to
# `kubectl kustomize deploy/k8s/overlays/afxdp`) run as pods with
# `podman kube play` on this machine:
# - the image is containers/build-image.sh's, of this build, under a tag of
#   this run's own;
# - kube_play_pods.py turns the DaemonSet, the StatefulSet and the scenario Job
#   into the pods a cluster would run (three "nodes": server-a and server-b
#   labelled metaroce.io/endpoint, server-f metaroce.io/fabric) and does what
#   podman 4.3 cannot: downward API, $(VAR) expansion, Service names
#   (hostAliases), Secrets (host directories; certificate and token made here
#   with openssl), seccomp RuntimeDefault as containerd has it (bpf() with
#   CAP_BPF), and says so in its header;
# - pods get their IPs on a podman network of this run; the per-plane
#   interfaces Multus would give them come from a netns lab (metaroce_lab,
#   as containers/run-lab.sh uses): each pod's are moved into it before its
#   containers start, as the host-device CNI moves a NIC;
# then checks that the daemons run with exactly the capabilities the manifests
# add, that `metarocectl discover metaroce-endpoint:7443` (the headless
# Service's name) finds both endpoint daemons by name, that a traffic job
# between them verifies, and that the scenario Job (plane-failure, found by
# --hosts-from) runs to a report: PASS, or INCONCLUSIVE when this host's
# datapath limited it (the daemons' workers are ordinary threads here, as the
# manifests leave them; the live scenario tests judge the figures), never
# FAIL. Everything it made is removed, also on failure.
# SKIPPED (77) without root, podman, catatonit, python3-yaml, openssl or
# network namespaces. A few minutes once the image's base exists.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
build="$(cd "${BUILD_DIR:-build}" && pwd)"
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, podman)"
command -v podman >/dev/null || skip "needs podman (scripts/install-deps.sh installs it)"
command -v catatonit >/dev/null || skip "needs catatonit, the init of podman's pod infra containers (scripts/install-deps.sh installs it)"
python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml (scripts/install-deps.sh installs it)"
command -v openssl >/dev/null || skip "needs openssl (scripts/install-deps.sh installs it)"
id="kp$(($$ % 100000))"   # lab prefix, podman names: unique per run
ip netns add "$id-probe" 2>/dev/null || skip "cannot create network namespaces here"
ip netns del "$id-probe"

export CONTAINERS_CONF="$root/containers/containers.conf"
image="localhost/metaroce-testbed:$id"
tmp="$(mktemp -d)"
net="$id"
rendered="$root/tests/k8s/golden/afxdp.yaml"
job=metaroce-scenario-plane-failure
remove_all() {
  for p in $(podman pod ls --format '{{.Name}}' | grep "^$id-" || true); do podman pod rm -f -t 20 "$p" >/dev/null 2>&1 || true; done
  for v in $(podman volume ls --format '{{.Name}}' | grep "^$id-" || true); do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
  podman network rm -f "$net" >/dev/null 2>&1 || true
  [ -f "$tmp/lab.yaml" ] && "$build/lab/metaroce_lab" down "$tmp/lab.yaml" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
}
leftovers() {  # what remains of this run, if anything
  podman pod ls --format '{{.Name}}' | grep "^$id-" || true
  podman volume ls --format '{{.Name}}' | grep "^$id-" || true
  podman network ls --format '{{.Name}}' | grep -x "$net" || true
  ip netns list | grep -o "^$id-[a-z0-9]*" || true
  podman image ls --format '{{.Repository}}:{{.Tag}}' | grep -x "$image" || true
}
cleanup() {
  local status=$?
  remove_all
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM
t0=$(date +%s)
since() { echo "$(( $(date +%s) - t0 )) s"; }

echo "== image $image (containers/build-image.sh)"
IMAGE="$image" BUILD_DIR="$build" bash containers/build-image.sh >/dev/null
echo "   built ($(since))"

# The plane NICs' MTU: the daemons' frame (endpoint.frame_size in the rendered configs) less
# the Ethernet header, as deploy/k8s/README.md asks of a server's NICs.
mtu="$(python3 -c '
import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o and o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("metaroce-endpoint-config"):
        print(min(yaml.safe_load(t)["endpoint"]["frame_size"] for t in o["data"].values()) - 14)' "$rendered")"
echo "== netns lab $id (2 hosts x 4 planes, MTU $mtu): the nodes' plane NICs"
cat > "$tmp/lab.yaml" <<EOF
name: $id
hosts: 2
planes: 4
mtu: $mtu
EOF
"$build/lab/metaroce_lab" up "$tmp/lab.yaml" >/dev/null
declare -A lab_ns=([server-a]="$id-h0" [server-b]="$id-h1" [server-f]="$id-fab")

echo "== pod network $net"
subnet=""
for x in $(seq $((20 + $$ % 200)) 254) $(seq 20 254); do
  if [ -z "$(ip -4 route show "10.231.$x.0/24")" ] && podman network create --subnet "10.231.$x.0/24" "$net" >/dev/null 2>&1; then
    subnet="10.231.$x.0/24"
    break
  fi
done
[ -n "$subnet" ] || { echo "no free 10.231.x.0/24 for the pod network"; exit 1; }
echo "   $subnet"

echo "== Secrets metaroce-tls and metaroce-token (openssl, as cert-manager would lay them out)"
tls="$tmp/secret-tls" token="$tmp/secret-token"
mkdir -p "$tls" "$token"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=metaroce-smoke-ca" \
  -keyout "$tmp/ca.key" -out "$tls/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=metaroce" \
  -keyout "$tls/tls.key" -out "$tmp/tls.csr" 2>/dev/null
printf '%s\n' "subjectAltName=DNS:metaroce-endpoint,DNS:metaroce-fabric" \
  "extendedKeyUsage=serverAuth,clientAuth" > "$tmp/ext.cnf"
openssl x509 -req -in "$tmp/tls.csr" -CA "$tls/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial -days 1 \
  -extfile "$tmp/ext.cnf" -out "$tls/tls.crt" 2>/dev/null
openssl rand -hex 32 > "$token/token"
# The Secret volumes' defaultMode 0440 and the Jobs' fsGroup 10001.
chgrp 10001 "$tls"/* "$token"/*
chmod 0440 "$tls"/* "$token"/*
chmod 0755 "$tmp" "$tls" "$token"

echo "== the pods a cluster would run (kube_play_pods.py)"
python3 tests/k8s/kube_play_pods.py "$rendered" "$tmp/pods" \
  --node server-a=metaroce.io/endpoint=true --node server-b=metaroce.io/endpoint=true \
  --node server-f=metaroce.io/fabric=true --subnet "$subnet" --image "$image" --prefix "$id-" \
  --secret "metaroce-tls=$tls" --secret "metaroce-token=$token" --seccomp-root "$tmp/seccomp" --job "$job"
pods="$tmp/pods/pods.json"
field() { python3 -c 'import json,sys; print(" ".join(str(p[sys.argv[2]]) for p in json.load(open(sys.argv[1])) if p["kind"] in sys.argv[3].split(",")))' "$pods" "$@"; }

echo "== podman kube play: daemons, each pod's plane interfaces moved in before it starts"
for name in $(field name DaemonSet,StatefulSet); do
  read -r podman_name ip file node ifs < <(python3 -c '
import json, sys
p = next(p for p in json.load(open(sys.argv[1])) if p["name"] == sys.argv[2])
print(p["podman_name"], p["ip"], p["file"], p["node"], ",".join(p["interfaces"]))' "$pods" "$name")
  podman kube play --start=false --network "$net" --ip "$ip" --seccomp-profile-root "$tmp/seccomp" "$file" >/dev/null
  infra="$(podman pod inspect "$podman_name" --format '{{.InfraContainerID}}')"
  podman start "$infra" >/dev/null
  pid="$(podman inspect "$infra" --format '{{.State.Pid}}')"
  for ifc in ${ifs//,/ }; do
    ip -n "${lab_ns[$node]}" link set "$ifc" netns "$pid"
    nsenter -t "$pid" -n ip link set "$ifc" up
  done
  podman pod start "$podman_name" >/dev/null
  echo "   $podman_name on $node: $ip, interfaces $ifs"
done

ctl_in="$id-metaroce-endpoint-server-a-metaroced"   # metarocectl from the image, in an endpoint pod
ctl() {
  podman exec "$ctl_in" /usr/local/bin/metarocectl --tls --tls-ca /etc/metaroce/tls/ca.crt \
    --tls-cert /etc/metaroce/tls/tls.crt --tls-key /etc/metaroce/tls/tls.key \
    --token-file /etc/metaroce/token/token "$@"
}
logs() { for c in $(podman ps -a --format '{{.Names}}' | grep "^$id-.*-metaroced$"); do echo "--- $c"; podman logs --tail 30 "$c" 2>&1; done; }

echo "== daemons found by the Service name metaroce-endpoint"
deadline=$(( $(date +%s) + 90 ))
until found="$(ctl -o json discover metaroce-endpoint:7443 2>&1)" && python3 -c '
import json, sys
names = sorted(d["name"] for d in json.loads(sys.argv[1])["daemons"] if not d["error"])
sys.exit(0 if names == ["h0", "h1"] else 1)' "$found" 2>/dev/null && ctl --server metaroce-fabric:7443 status >/dev/null 2>&1; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "FAIL: endpoint daemons h0 and h1 and the fabric daemon not all answering within 90 s:"
    echo "$found"; logs; exit 1
  fi
  sleep 0.5
done
ctl discover metaroce-endpoint:7443
ctl --server metaroce-fabric:7443 status | grep -E "name|role|planes"
echo "   up ($(since))"

echo "== capabilities: exactly what the manifests add"
for name in $(field name DaemonSet,StatefulSet); do
  python3 - "$pods" "$name" "$(podman exec "$id-$name-metaroced" grep -E '^Cap(Eff|Bnd):' /proc/1/status)" <<'EOF'
import json, sys
bits = {"NET_ADMIN": 12, "NET_RAW": 13, "IPC_LOCK": 14, "SYS_NICE": 23, "SYS_ADMIN": 21, "BPF": 39, "PERFMON": 38}
pod = next(p for p in json.load(open(sys.argv[1])) if p["name"] == sys.argv[2])
want = sum(1 << bits[c] for c in pod["capabilities"]["metaroced"])
got = {l.split(":")[0]: int(l.split()[1], 16) for l in sys.argv[3].splitlines()}
names = lambda mask: [n for n, b in sorted(bits.items(), key=lambda x: x[1]) if mask >> b & 1] + (
    [f"other bits {mask & ~sum(1 << b for b in bits.values()):#x}"] if mask & ~sum(1 << b for b in bits.values()) else [])
ok = got["CapEff"] == want and got["CapBnd"] == want
print(f"   {sys.argv[2]}: effective {', '.join(names(got['CapEff']))} (bounding set the same: {got['CapBnd'] == got['CapEff']})"
      + ("" if ok else f"  FAIL: the manifest adds {', '.join(pod['capabilities']['metaroced'])}"))
sys.exit(0 if ok else 1)
EOF
done

echo "== traffic job h0 -> h1 (addresses from discover), verified"
read -r h0 h1 < <(python3 -c '
import json, sys
d = {x["name"]: x["address"] for x in json.loads(sys.argv[1])["daemons"]}
print(d["h0"], d["h1"])' "$found")
traffic="$(ctl --tls-server-name metaroce-endpoint --server "$h0" traffic run --peer "$h1" --size 16K --duration 3s --paths 8 2>&1)" \
  || { echo "$traffic"; logs; echo "FAIL: traffic run exited non-zero"; exit 1; }
grep -E "^ *#bytes|^ *16384 |retransmits|verification" <<<"$traffic" || true
grep -q "verification          passed" <<<"$traffic" || { echo "$traffic"; echo "FAIL: the job across the pods did not verify"; exit 1; }

echo "== the scenario Job $job (podman kube play)"
read -r podman_name ip file < <(python3 -c '
import json, sys
p = next(p for p in json.load(open(sys.argv[1])) if p["kind"] == "Job")
print(p["podman_name"], p["ip"], p["file"])' "$pods")
podman kube play --network "$net" --ip "$ip" --seccomp-profile-root "$tmp/seccomp" "$file" >/dev/null
container="$podman_name-metarocectl"
deadline=$(( $(date +%s) + 300 ))
while [ "$(podman inspect "$container" --format '{{.State.Status}}')" != exited ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { podman logs "$container"; logs; echo "FAIL: the scenario Job still runs after 300 s"; exit 1; }
  sleep 1
done
rc="$(podman inspect "$container" --format '{{.State.ExitCode}}')"
podman logs "$container" 2>&1 | grep -vE "^ *[0-9.]+ s " | tail -25
reports="$(podman volume inspect "$id-metaroce-reports" --format '{{.Mountpoint}}')/$job"
[ -f "$reports/report.json" ] || { echo "FAIL: no $job/report.json on the reports volume (exit $rc)"; ls -la "$reports" 2>&1 || true; logs; exit 1; }
# Every run ran to its end across the pods with its data verified; the verdict is the report's.
python3 - "$reports/report.json" "$rc" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
rc, verdict = int(sys.argv[2]), r["derived"]["verdict"]
for run in r["runs"]:
    print(f"   run {run['job']} ({run['transport']}): {run['state']}, {run['goodput_bps'] / 1e9:.3f} Gb/s, "
          f"{run['messages']} messages, verified {run['verified']}, faithful {run['fidelity']['faithful']}")
print(f"   report: {verdict} (exit {rc}), {r['derived']['assertions_failed']} of {r['derived']['assertions_total']} "
      f"assertions failed")
bad = [run["job"] for run in r["runs"] if run["state"] != "done" or not run["verified"]]
if bad:
    sys.exit(f"FAIL: runs not done or not verified: {bad}")
if (verdict, rc) not in (("PASS", 0), ("INCONCLUSIVE", 6)):
    sys.exit(f"FAIL: verdict {verdict}, exit {rc} (PASS or INCONCLUSIVE expected)")
EOF
case "$rc" in
  0) echo "   scenario PASS ($(since))" ;;
  *) echo "   scenario INCONCLUSIVE: this host's datapath limited the runs (the report's fidelity section); they ran across the pods ($(since))" ;;
esac
remove_all
left="$(leftovers)"
[ -z "$left" ] || { echo "FAIL: left behind after removing everything:"; echo "$left"; exit 1; }
echo "kube play smoke: passed in $(since); pods, volumes, pod network, lab and image removed"
