#!/usr/bin/env python3
"""The daemon configs in the rendered manifests are ones metaroced accepts.

For every rendered ConfigMap metaroce-daemon-config-* (tests/k8s/golden/*.yaml),
each file passes `metaroced --config FILE --check-config`, and every pod of a
StatefulSet that reads /etc/metaroce/config/$(POD_NAME).yaml finds its file.
The configs name the Secret mounts under /etc/metaroce/; check-config reads
those files, so they are made here (a throw-away self-signed certificate and
token) under a temporary root and that one prefix is rewritten.
Usage: check_daemon_configs.py METAROCED GOLDEN.yaml...   (77: SKIPPED)
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import yaml
except ImportError:
    print("SKIPPED: needs python3-yaml (scripts/install-deps.sh installs it)")
    sys.exit(77)
if not shutil.which("openssl"):
    print("SKIPPED: needs openssl (scripts/install-deps.sh installs it)")
    sys.exit(77)

metaroced, goldens = sys.argv[1], sys.argv[2:]
failures, checked = [], 0
with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp) / "etc-metaroce"
    (root / "tls").mkdir(parents=True)
    (root / "token").mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", root / "tls/tls.key", "-out", root / "tls/tls.crt", "-subj", "/CN=metaroce", "-days", "1"],
                   check=True, capture_output=True)
    shutil.copy(root / "tls/tls.crt", root / "tls/ca.crt")
    (root / "token/token").write_text("k8s-config-check-token-0123456789\n")
    for golden in goldens:
        objs = [o for o in yaml.safe_load_all(Path(golden).read_text()) if o]
        configs = {}
        for o in objs:
            if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("metaroce-daemon-config"):
                configs[o["metadata"]["name"]] = o["data"]
        for cm, data in configs.items():
            for key, text in data.items():
                f = Path(tmp) / f"{Path(golden).stem}-{key}"
                f.write_text(text.replace("/etc/metaroce/", f"{root}/"))
                r = subprocess.run([metaroced, "--config", str(f), "--check-config"], capture_output=True, text=True)
                checked += 1
                if r.returncode != 0:
                    failures.append(f"{golden}: {cm}/{key}: {r.stderr.strip() or r.stdout.strip()}")
        for o in objs:
            if o["kind"] != "StatefulSet":
                continue
            pod = o["spec"]["template"]["spec"]
            for c in pod["containers"]:
                if "/etc/metaroce/config/$(POD_NAME).yaml" not in c.get("args", []):
                    continue
                vol = next(m["name"] for m in c["volumeMounts"] if m["mountPath"] == "/etc/metaroce/config")
                cm = next(v["configMap"]["name"] for v in pod["volumes"] if v["name"] == vol)
                for i in range(o["spec"].get("replicas", 1)):
                    key = f'{o["metadata"]["name"]}-{i}.yaml'
                    if key not in configs.get(cm, {}):
                        failures.append(f"{golden}: pod {key[:-5]} reads {key}, which ConfigMap {cm} does not have")
for f in failures:
    print("FAIL:", f)
print(f"{checked} daemon configs checked with {metaroced} --check-config")
sys.exit(1 if failures or checked == 0 else 0)
