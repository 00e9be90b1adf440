#!/usr/bin/env bash
# Offline schema validation of the rendered manifests (validate_schemas.mjs).
# Its npm packages are pinned by package-lock.json and installed by
# scripts/install-deps.sh (npm ci in tests/k8s); SKIPPED (77) without node or
# without them.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "SKIPPED: needs node (scripts/install-deps.sh installs nodejs and npm)"; exit 77; }
[ -d node_modules/kubernetes-models ] || { echo "SKIPPED: npm packages missing: run 'npm ci --prefix tests/k8s' (scripts/install-deps.sh does)"; exit 77; }
exec node validate_schemas.mjs golden/*.yaml
