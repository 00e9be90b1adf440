#!/usr/bin/env bash
# Builds the container image metaroce-testbed:dev from the local build
# (BUILD_DIR, default build) on a Debian 12 base made here with mmdebstrap
# (no image registry needed; the base is made once and kept). IMAGE names the
# result (default localhost/metaroce-testbed:dev; a test's own tag keeps
# concurrent runs apart). Needs root, podman and mmdebstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="$PWD/containers/containers.conf"
build="${BUILD_DIR:-build}"
image="${IMAGE:-localhost/metaroce-testbed:dev}"
[ -x "$build/daemon/metaroced" ] || { echo "build-image: build first (bash scripts/build.sh)" >&2; exit 2; }
for tool in podman mmdebstrap runc; do
  command -v "$tool" >/dev/null || { echo "build-image: needs $tool (apt-get install podman mmdebstrap runc uidmap)" >&2; exit 2; }
done
runtime_packages=(
  libabsl20220623 libbpf1 libbrotli1 libc-ares2 libcpp-httplib0.11 libelf1 libfmt9 libgrpc++1.51 libgrpc29
  libnuma1 libprotobuf32 libre2-9 librte-eal23 librte-ethdev23 librte-net-af-packet23 librte-net-af-xdp23
  libspdlog1.10 libssl3 libxdp1 libyaml-cpp0.7 iproute2 ca-certificates
)
if ! podman image exists localhost/metaroce-base:bookworm; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  include="$(IFS=,; echo "${runtime_packages[*]}")"
  mmdebstrap --variant=apt --include="$include" bookworm "$tmp/rootfs.tar"
  podman import "$tmp/rootfs.tar" localhost/metaroce-base:bookworm
fi
# Only what the image needs goes into the build context.
ctx="$(mktemp -d)"
mkdir -p "$ctx/build/daemon" "$ctx/build/cli" "$ctx/build/lab"
cp "$build/daemon/metaroced" "$ctx/build/daemon/"
cp "$build/cli/metarocectl" "$ctx/build/cli/"
cp "$build/lab/metaroce_lab" "$ctx/build/lab/"
cp -r configs "$ctx/configs"
podman build -f containers/Containerfile -t "$image" "$ctx"
rm -rf "$ctx"
podman image ls "$image"
