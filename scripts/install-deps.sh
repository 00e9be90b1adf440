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
  # containers: podman on a locally built Debian base (containers/build-image.sh);
  # catatonit is the init of the pods' infra containers (podman kube play, tests/k8s)
  podman mmdebstrap runc uidmap catatonit
  protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc
  libabsl-dev
  # deploy/k8s checks (tests/k8s): rendered daemon configs and a throw-away certificate
  python3-yaml openssl
)
# tests/k8s validates the manifests with npm packages: Debian's nodejs and npm
# unless a Node.js with npm is already installed (another nodejs package would
# conflict). kubectl is not installed here: Debian 12's kubernetes-client
# embeds kustomize v2, which does not render like the v5 of the golden files
# (tests/k8s/check_render.sh SKIPs without a v5).
command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi
# The npm packages of tests/k8s, exactly as package-lock.json pins them (again
# only when the lock file changed since the last install).
k8s_tests="$(cd "$(dirname "$0")/../tests/k8s" && pwd)"
if [ ! -f "$k8s_tests/node_modules/.package-lock.json" ] || [ "$k8s_tests/package-lock.json" -nt "$k8s_tests/node_modules/.package-lock.json" ]; then
  echo "install-deps: npm ci in tests/k8s"
  npm ci --prefix "$k8s_tests" --no-audit --no-fund --loglevel=error >/dev/null
fi
