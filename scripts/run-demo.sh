#!/usr/bin/env bash
# The main job: install, build, then run the simulated loss sweep
# (MetaRoCE vs RoCEv2 over 4 planes at 0-10% loss, plus a delay-skew case),
# printing the table and writing out/loss_sweep.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
mkdir -p out
./build/bench/metaroce_loss_sweep --json out/loss_sweep.json "$@"
