#!/usr/bin/env bash
# Renders every kustomization under deploy/k8s with `kubectl kustomize` and
# compares it with the golden file committed in tests/k8s/golden/. After a
# deliberate change to the manifests, regenerate the golden files with
#   bash tests/k8s/check_render.sh --update
# and review the diff. SKIPPED (77) without kubectl or with a kustomize older
# than v5 (Debian 12's kubernetes-client embeds kustomize v2, which renders
# differently).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v kubectl >/dev/null || { echo "SKIPPED: needs kubectl with kustomize v5 (e.g. from google-cloud-cli or the Kubernetes apt repository)"; exit 77; }
kustomize_version="$(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: //p')"
case "$kustomize_version" in
  v5.*) ;;
  *) echo "SKIPPED: kubectl's kustomize is '${kustomize_version:-unknown}', the golden files are rendered by v5"; exit 77 ;;
esac
# name of the golden file = last path element
kustomizations=(base overlays/afxdp overlays/dpdk monitoring sweep-merge)
status=0
diff_file="$(mktemp)"
trap 'rm -f "$diff_file"' EXIT
for k in "${kustomizations[@]}"; do
  golden="tests/k8s/golden/$(basename "$k").yaml"
  rendered="$(kubectl kustomize "deploy/k8s/$k")"
  if [ "${1:-}" = "--update" ]; then
    printf '%s\n' "$rendered" > "$golden"
    echo "updated $golden"
  elif ! diff -u "$golden" <(printf '%s\n' "$rendered") > "$diff_file"; then
    echo "FAIL: deploy/k8s/$k renders differently from $golden:"
    head -60 "$diff_file"
    status=1
  else
    echo "ok: deploy/k8s/$k ($(grep -c '^kind:' "$golden") objects) matches $golden"
  fi
done
# Every kustomization in deploy/k8s has a golden file (a new overlay is not left out).
while read -r file; do
  dir="${file#deploy/k8s/}"; dir="${dir%/kustomization.yaml}"
  printf '%s\n' "${kustomizations[@]}" | grep -qx "$dir" || { echo "FAIL: deploy/k8s/$dir has no golden file (add it to kustomizations in $0)"; status=1; }
done < <(find deploy/k8s -name kustomization.yaml | sort)
exit $status
