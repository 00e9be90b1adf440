#!/usr/bin/env bash
# Installs the Debian 12 packages metaroce-testbed builds and tests with.
# Idempotent; needs root (or sudo). Skips apt when everything is present.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git chromium
  # report.html embeds Chart.js from this package (scenario/CMakeLists.txt)
  libjs-chart.js
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libfmt-dev libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libcpp-httplib-dev
  # datapath and control plane (detected at configure time, reported if absent)
  libdpdk-dev libxdp-dev libbpf-dev clang llvm iproute2 iputils-ping iperf3 ethtool
  # packets: tshark checks the Wireshark dissector (wireshark/metaroce.lua)
  tshark
  # containers: podman on a locally built Debian base (containers/build-image.sh)
  podman mmdebstrap runc uidmap
  protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
