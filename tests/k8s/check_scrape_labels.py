#!/usr/bin/env python3
"""Every metaroced series is labelled by host, pod and role, alike in both scrape configs.

The endpoints are a DaemonSet, one pod per test host, so results are read per
host: servicemonitor.yaml (Prometheus Operator) and prometheus.yml (a plain
Prometheus) must give each target `node` (its pod's node), `pod` and `role`
(its Service's app.kubernetes.io/component), and the same labels in both.
Checked by applying each file's relabeling rules, as Prometheus does, to the
discovery labels (role endpoints) of the metrics port of every Service in the
rendered base; prometheus.yml must also drop the other ports. The Grafana
dashboard selects by those labels: it has a variable over `node`, and each
matcher `L=~"$V"` names a variable V whose values are label L's.
Usage: check_scrape_labels.py MONITORING_DIR GOLDEN_BASE.yaml   (77: SKIPPED)
"""
import copy
import json
import re
import sys
from pathlib import Path

try:
    import yaml
except ImportError:
    print("SKIPPED: needs python3-yaml (scripts/install-deps.sh installs it)")
    sys.exit(77)

monitoring, golden_base = Path(sys.argv[1]), Path(sys.argv[2])
METRICS_PORT = "metrics"
HOST_LABEL = "node"


def relabel(labels, rules):
    """Prometheus relabel_config semantics (replace, keep, drop); None when the target is dropped."""
    labels = dict(labels)
    for r in rules:
        action = r.get("action", "replace").lower()
        value = r.get("separator", ";").join(labels.get(s, "") for s in r.get("source_labels", []))
        m = re.fullmatch(r.get("regex", "(.*)"), value)
        if action == "keep" and not m or action == "drop" and m:
            return None
        if action == "replace" and m:
            out = re.sub(r"\$\{?(\w+)\}?", lambda g: m.group(int(g.group(1)) if g.group(1).isdigit() else g.group(1)) or "",
                         r.get("replacement", "$1"))
            if out:
                labels[r["target_label"]] = out
            else:
                labels.pop(r["target_label"], None)
        elif action not in ("replace", "keep", "drop"):
            raise SystemExit(f"FAIL: relabel action {action} is not one this check applies; extend relabel()")
    return {k: v for k, v in labels.items() if not k.startswith("__")}


def snake(rules):
    """The operator's relabelings (sourceLabels, targetLabel) as Prometheus' relabel_configs."""
    return [{re.sub(r"[A-Z]", lambda c: "_" + c.group(0).lower(), k): v for k, v in r.items()} for r in rules]


def k8s_label(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


# Discovery labels of each Service's targets, one pod per Service (names made up).
targets = []
for o in yaml.safe_load_all(golden_base.read_text()):
    if not o or o["kind"] != "Service":
        continue
    svc = o["metadata"]
    for port in o["spec"]["ports"]:
        meta = {"__meta_kubernetes_namespace": svc.get("namespace", ""),
                "__meta_kubernetes_service_name": svc["name"],
                "__meta_kubernetes_endpoint_port_name": port["name"],
                "__meta_kubernetes_pod_name": f"{svc['name']}-x7k2p",
                "__meta_kubernetes_pod_node_name": f"server-of-{svc['name']}"}
        meta |= {f"__meta_kubernetes_service_label_{k8s_label(k)}": v for k, v in svc.get("labels", {}).items()}
        expected = {"node": meta["__meta_kubernetes_pod_node_name"], "pod": meta["__meta_kubernetes_pod_name"],
                    "role": svc.get("labels", {}).get("app.kubernetes.io/component", "")}
        targets.append((f"Service {svc['name']} port {port['name']}", port["name"], meta, expected))

service_monitor = yaml.safe_load((monitoring / "servicemonitor.yaml").read_text())
prometheus = yaml.safe_load((monitoring / "prometheus.yml").read_text())


def check(service_monitor, prometheus):
    failures = []
    # The operator itself keeps only the endpoint's port; the relabelings come after.
    sm = {e["port"]: snake(e.get("relabelings", [])) for e in service_monitor["spec"]["endpoints"]}
    jobs = [j for j in prometheus["scrape_configs"] if j["job_name"] == "metaroce"]
    if not jobs or METRICS_PORT not in sm:
        return [f"no ServiceMonitor endpoint on port {METRICS_PORT} or no prometheus.yml job metaroce"]
    metrics_targets = 0
    for where, port, meta, expected in targets:
        plain = relabel(meta, jobs[0].get("relabel_configs", []))
        if port != METRICS_PORT:
            if plain is not None:
                failures.append(f"prometheus.yml scrapes {where}")
            continue
        metrics_targets += 1
        operator = relabel(meta, sm[METRICS_PORT])
        for name, labels in (("servicemonitor.yaml", operator), ("prometheus.yml", plain)):
            if labels is None:
                failures.append(f"{name} drops {where}")
                continue
            for k, v in expected.items():
                if labels.get(k) != v:
                    failures.append(f"{name}: {where} gets {k}={labels.get(k)!r}, not {v!r}")
        if operator is not None and plain is not None and operator != plain:
            failures.append(f"{where}: servicemonitor.yaml gives {operator}, prometheus.yml {plain}")
    if metrics_targets == 0:
        failures.append(f"{golden_base} has no Service with a port {METRICS_PORT}")
    return failures


failures = check(service_monitor, prometheus)

# The check must catch a missing host label, or a pass means nothing.
probe = copy.deepcopy(service_monitor)
for e in probe["spec"]["endpoints"]:
    e["relabelings"] = [r for r in e.get("relabelings", []) if r.get("targetLabel") != HOST_LABEL]
if not any(f"gets {HOST_LABEL}=None" in f for f in check(probe, prometheus)):
    print(f"FAIL: the check did not flag a ServiceMonitor without the {HOST_LABEL} label")
    sys.exit(1)

# The dashboard selects by labels its variables enumerate, and per host.
dashboard = json.loads((monitoring / "metaroce-dashboard.json").read_text())
variables = {}
for var in dashboard.get("templating", {}).get("list", []):
    m = re.fullmatch(r"label_values\(\s*[^,()]*,\s*(\w+)\s*\)", var.get("query", "")) if var.get("type") == "query" else None
    if m:
        variables[var["name"]] = m.group(1)
if HOST_LABEL not in variables.values():
    failures.append(f"metaroce-dashboard.json has no variable over label {HOST_LABEL} (label_values(..., {HOST_LABEL}))")
matchers = 0
for panel in dashboard["panels"]:
    for t in panel.get("targets", []):
        for label, var in re.findall(r'(\w+)\s*=~\s*"\$\{?(\w+)\}?"', t["expr"]):
            matchers += 1
            if variables.get(var) != label:
                failures.append(f'dashboard panel "{panel["title"]}": {label}=~"${var}", but ${var} is '
                                + (f"label {variables[var]}'s values" if var in variables else "no label_values variable"))

for f in failures:
    print("FAIL:", f)
print(f"{len(targets)} Service ports relabelled by servicemonitor.yaml and prometheus.yml; "
      f"{matchers} dashboard matchers on variables {sorted(variables)}")
sys.exit(1 if failures else 0)
