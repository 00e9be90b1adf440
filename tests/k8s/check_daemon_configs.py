#!/usr/bin/env python3
"""The daemon configs in the rendered manifests are ones metaroced accepts.

For every rendered workload (DaemonSet, StatefulSet) that runs metaroced with
--config /etc/metaroce/config/$(VAR).yaml, each file of the ConfigMap mounted
there passes `metaroced --config FILE --check-config` (with the workload's
other flags, e.g. --peer-host), and the file each pod reads exists:
- a StatefulSet's pod reads $(POD_NAME).yaml: one file per replica;
- a DaemonSet's pod reads $(NODE_NAME).yaml (spec.nodeName): a file per
  server; which nodes exist only a cluster knows, so the endpoint files are
  checked against the fabric's config instead: one per fabric host, each
  endpoint MAC a different one of the fabric's host_macs, names unique, and
  each endpoint sending at the fabric's host-link rate (endpoint.port_rate_bps
  equal to fabric.port.rate_bps, as the values metaroced resolves them, so a
  rate left to its default counts as that default).
Every $(VAR) in a container's command and args is one of its env entries
(Kubernetes leaves an unknown reference as it is, silently).
The configs name the Secret mounts under /etc/metaroce/; check-config reads
those files, so they are made here (a throw-away self-signed certificate and
token) under a temporary root and that one prefix is rewritten.
Usage: check_daemon_configs.py METAROCED GOLDEN.yaml...   (77: SKIPPED)
"""
import re
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

CONFIG_DIR = "/etc/metaroce/config/"
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
        config_maps = {o["metadata"]["name"]: o["data"] for o in objs if o["kind"] == "ConfigMap"}
        endpoint_configs, fabric_configs = {}, []
        for o in objs:
            if o["kind"] not in ("DaemonSet", "StatefulSet", "Job"):
                continue
            where = f"{golden}: {o['kind']} {o['metadata']['name']}"
            pod = o["spec"]["template"]["spec"]
            for c in pod.get("initContainers", []) + pod["containers"]:
                env = [e["name"] for e in c.get("env", [])]
                for arg in c.get("command", []) + c.get("args", []):
                    for var in re.findall(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg):
                        if var not in env:
                            failures.append(f"{where}: {arg} names $({var}), which is not in the container's env")
                args = c.get("args", [])
                if o["kind"] == "Job" or "--config" not in args:
                    continue
                path = args[args.index("--config") + 1]
                m = re.fullmatch(re.escape(CONFIG_DIR) + r"\$\((POD_NAME|NODE_NAME)\)\.yaml", path)
                if not m:
                    failures.append(f"{where}: --config {path} is not {CONFIG_DIR}$(POD_NAME|NODE_NAME).yaml")
                    continue
                field = next((e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"] if e["name"] == m.group(1)), "")
                expected_field = {"POD_NAME": "metadata.name", "NODE_NAME": "spec.nodeName"}[m.group(1)]
                if field != expected_field:
                    failures.append(f"{where}: env {m.group(1)} is {field or 'not a fieldRef'}, not {expected_field}")
                vol = next(v["name"] for v in c["volumeMounts"] if v["mountPath"] == CONFIG_DIR.rstrip("/"))
                cm = next(v["configMap"]["name"] for v in pod["volumes"] if v["name"] == vol)
                data = config_maps.get(cm, {})
                extra = [a.replace("$(POD_IP)", "10.0.0.7") for a in args[args.index("--config") + 2:]]
                for key, text in data.items():
                    f = Path(tmp) / f"{Path(golden).stem}-{key}"
                    f.write_text(text.replace("/etc/metaroce/", f"{root}/"))
                    r = subprocess.run([metaroced, "--config", str(f), *extra, "--check-config"],
                                       capture_output=True, text=True)
                    checked += 1
                    if r.returncode != 0:
                        failures.append(f"{golden}: {cm}/{key}: {r.stderr.strip() or r.stdout.strip()}")
                        continue
                    config = yaml.safe_load(r.stdout)
                    if m.group(1) == "NODE_NAME":
                        endpoint_configs[key] = config
                    else:
                        fabric_configs.append(config)
                if m.group(1) == "POD_NAME":
                    for i in range(o["spec"].get("replicas", 1)):
                        key = f'{o["metadata"]["name"]}-{i}.yaml'
                        if key not in data:
                            failures.append(f"{golden}: pod {key[:-5]} reads {key}, which ConfigMap {cm} does not have")
        # The endpoint servers' configs against the fabric's: one per host, each its own MAC and name,
        # each paced at the fabric's host-link rate.
        for fabric in (c["fabric"] for c in fabric_configs if c.get("fabric")):
            macs = [m.lower() for m in fabric["host_macs"]]
            host_link_bps = float(fabric["port"]["rate_bps"])
            if len(endpoint_configs) != fabric["hosts"]:
                failures.append(f"{golden}: {len(endpoint_configs)} endpoint server configs, the fabric has "
                                f"{fabric['hosts']} hosts")
            seen_macs, seen_names = {}, {}
            for key, ep in endpoint_configs.items():
                mac = ep["endpoint"]["mac"].lower()
                if mac not in macs:
                    failures.append(f"{golden}: {key}: endpoint.mac {mac} is none of the fabric's host_macs {macs}")
                if mac in seen_macs:
                    failures.append(f"{golden}: {key} and {seen_macs[mac]} have one endpoint.mac {mac}")
                if ep["name"] in seen_names:
                    failures.append(f"{golden}: {key} and {seen_names[ep['name']]} have one name {ep['name']}")
                seen_macs[mac], seen_names[ep["name"]] = key, key
                if float(ep["endpoint"]["port_rate_bps"]) != host_link_bps:
                    failures.append(f"{golden}: {key}: endpoint.port_rate_bps {ep['endpoint']['port_rate_bps']} is not "
                                    f"the fabric's host-link rate port.rate_bps {fabric['port']['rate_bps']}")
for f in failures:
    print("FAIL:", f)
print(f"{checked} daemon configs checked with {metaroced} --check-config")
sys.exit(1 if failures or checked == 0 else 0)
