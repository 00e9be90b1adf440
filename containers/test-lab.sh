#!/usr/bin/env bash
# CTest entry: build the image from BUILD_DIR and run containers/run-lab.sh.
# SKIPPED (exit 77) without root, network namespaces or podman.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root (network namespaces, podman)"; exit 77; }
command -v podman >/dev/null || { echo "SKIPPED: needs podman (apt-get install podman mmdebstrap runc)"; exit 77; }
probe="mrct$$"
ip netns add "$probe" 2>/dev/null || { echo "SKIPPED: cannot create network namespaces here"; exit 77; }
ip netns del "$probe"
bash containers/build-image.sh >/dev/null
out="$(bash containers/run-lab.sh 2>&1)" || { echo "$out"; exit 1; }
echo "$out"
grep -q "verification          passed" <<<"$out" || { echo "the job across containers did not verify"; exit 1; }
