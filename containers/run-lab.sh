#!/usr/bin/env bash
# Three containers on the default lab (configs/labs/default.yaml): the fabric
# daemon in mrlab-fab and an endpoint daemon in each host namespace, each
# container joined to its namespace (AF_XDP on the lab's veths) and sharing
# /run/metaroce, so daemons set up connections over each other's Unix sockets
# across containers. Then one verified traffic job and a fabric change, through
# metarocectl in a fourth container. Everything is removed at the end.
#   sudo bash containers/build-image.sh && sudo bash containers/run-lab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="$PWD/containers/containers.conf"
image="${IMAGE:-localhost/metaroce-testbed:dev}"   # as containers/build-image.sh names it
lab=configs/labs/default.yaml
sock=/run/metaroce
build="${BUILD_DIR:-build}"
cleanup() {
  for c in mr-fab mr-h0 mr-h1; do podman stop -t 20 "$c" >/dev/null 2>&1 || true; podman rm -f "$c" >/dev/null 2>&1 || true; done
  "$build/lab/metaroce_lab" down "$lab" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM
"$build/lab/metaroce_lab" up "$lab" >/dev/null
mkdir -p "$sock"
run() {  # name netns config
  podman run -d --name "$1" --privileged --network "ns:/run/netns/$2" -v "$sock:$sock" "$image" \
    --config "/usr/share/metaroce/configs/daemon/$3" >/dev/null
}
run mr-fab mrlab-fab lab-fabric.yaml
run mr-h0 mrlab-h0 lab-h0.yaml
run mr-h1 mrlab-h1 lab-h1.yaml
ctl() { podman run --rm --network none -v "$sock:$sock" --entrypoint /usr/local/bin/metarocectl "$image" "$@"; }
for s in mrlab-fab mrlab-h0 mrlab-h1; do
  for _ in $(seq 1 100); do ctl --server "unix://$sock/$s.sock" status >/dev/null 2>&1 && break; sleep 0.2; done
done
ctl --server "unix://$sock/mrlab-h0.sock" status
ctl --server "unix://$sock/mrlab-fab.sock" fabric set --loss 1%
ctl --server "unix://$sock/mrlab-h0.sock" traffic run --peer "unix://$sock/mrlab-h1.sock" --size 16K --duration 3s --paths 8
rc=$?
podman logs mr-h0 2>&1 | tail -3
exit $rc
