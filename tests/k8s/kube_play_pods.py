#!/usr/bin/env python3
"""Rendered manifests -> the Pods a cluster would run, for `podman kube play`.

podman 4.3 (Debian 12) plays Pods, Deployments, PersistentVolumeClaims and the
ConfigMaps they mount, and ignores the kinds it does not know (Namespace,
Service, NetworkAttachmentDefinition). What a cluster's control plane would do
for the rest, this does, and nothing else; every pod's spec is otherwise the
rendered one:
- controllers and scheduler: a DaemonSet's pod on every node its nodeSelector
  matches (named <daemonset>-<node>), a StatefulSet's pods <name>-0..N-1 on a
  matching node, a Job's pod (label job-name, as the Job controller sets it)
  for the Jobs named with --job;
- the kubelet's downward API (podman 4.3 takes no spec.nodeName and no
  status.podIP): each env fieldRef becomes its value; and its $(VAR)
  expansion in command and args (podman 4.3 leaves them as they are);
- cluster DNS: each pod's hostAliases carry the Services' names - a headless
  Service's name for every pod it selects, a StatefulSet pod's
  <pod>.<service> name for that pod;
- Secrets: podman 4.3 crashes on secret volumes (nil dereference in
  VolumeFromSecret), so each becomes a hostPath volume on a directory given
  with --secret NAME=DIR holding the Secret's keys as files;
- seccomp RuntimeDefault: podman 4.3 takes a pod's seccomp profile only from
  the annotation seccomp.security.alpha.kubernetes.io/pod, and its default
  profile (containers-common, Debian 12) allows bpf() only with SYS_ADMIN,
  where containerd's RuntimeDefault allows it with CAP_BPF as well
  (containerd pull request 7301, 2022); the pod gets that annotation,
  naming --seccomp-root's runtime-default.json, written here:
  containers-common's profile with containerd's rule for bpf();
- the image: --image (the test's own build) replaces the rendered one;
- containerPorts go: podman 4.3 publishes each on the host (Kubernetes does
  not), and two pods cannot both hold port 7443 there; pods reach each
  other's ports on the pod network as in a cluster;
- Multus: podman has no secondary networks; each pod's list of interfaces
  (annotation k8s.v1.cni.cncf.io/networks, taken out of the pod: podman 4.3
  refuses annotation values over 63 characters) goes into pods.json, and the
  caller moves those interfaces into the pod before its containers start (what
  the host-device CNI does).
Pod IPs are given out in order from --subnet (.10 up); podman names (pods,
and the volumes podman makes of the PVC and of each ConfigMap) get --prefix,
so that several runs cannot collide and the caller can remove them, while the
pod sees its Kubernetes name (hostname, downward API).
Writes OUT/<pod>.yaml (the pod with the ConfigMaps and PVCs it uses) and
OUT/pods.json (per pod: podman name, Kubernetes name, kind, node, IP, file,
interfaces, the capabilities each container adds).
Usage: kube_play_pods.py RENDERED.yaml OUT --node NAME=LABEL=VALUE... --subnet 10.231.7.0/24
       --image IMAGE --prefix P --secret NAME=DIR... --seccomp-root DIR [--job NAME...]
"""
import argparse
import copy
import ipaddress
import json
import re
import sys
from pathlib import Path

import yaml

ap = argparse.ArgumentParser()
ap.add_argument("rendered")
ap.add_argument("out")
ap.add_argument("--node", action="append", default=[], help="NAME=LABEL=VALUE (repeat per label)")
ap.add_argument("--subnet", required=True)
ap.add_argument("--image", required=True)
ap.add_argument("--prefix", required=True)
ap.add_argument("--secret", action="append", default=[], help="NAME=DIR")
ap.add_argument("--job", action="append", default=[])
ap.add_argument("--seccomp-root", required=True, help="podman kube play --seccomp-profile-root")
ap.add_argument("--podman-seccomp", default="/usr/share/containers/seccomp.json")
args = ap.parse_args()

docs = [d for d in yaml.safe_load_all(Path(args.rendered).read_text()) if d]
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)

nodes = {}
for n in args.node:
    name, label, value = n.split("=", 2)
    nodes.setdefault(name, {})[label] = value
secrets = dict(s.split("=", 1) for s in args.secret)
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
namespace = next(iter(by_kind.get("Namespace", {"default": None})))
hosts = ipaddress.ip_network(args.subnet).hosts()
for _ in range(9):
    next(hosts)  # .1 is the bridge; pods from .10


def fail(msg):
    sys.exit(f"kube_play_pods: {msg}")


def matching_nodes(pod_spec):
    sel = pod_spec.get("nodeSelector", {})
    return [n for n, labels in nodes.items() if all(labels.get(k) == v for k, v in sel.items())]


# ---- RuntimeDefault as containerd has it: bpf() with CAP_SYS_ADMIN or CAP_BPF --
RUNTIME_DEFAULT = "runtime-default.json"
profile = json.loads(Path(args.podman_seccomp).read_text())
for rule in profile["syscalls"]:
    rule["names"] = [n for n in rule["names"] if n != "bpf"]
profile["syscalls"] = [r for r in profile["syscalls"] if r["names"]] + [
    {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_BPF"]}, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["bpf"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_ADMIN", "CAP_BPF"]}},
]
Path(args.seccomp_root).mkdir(parents=True, exist_ok=True)
(Path(args.seccomp_root) / RUNTIME_DEFAULT).write_text(json.dumps(profile))

# ---- the pods the controllers and the scheduler would make -------------------
pods = []  # dicts: name, kind, owner, node, template (metadata+spec), labels


def add_pod(name, kind, owner, node, template, extra_labels=None):
    t = copy.deepcopy(template)
    labels = dict(t.get("metadata", {}).get("labels", {}))
    labels.update(extra_labels or {})
    pods.append({"name": name, "kind": kind, "owner": owner, "node": node, "ip": str(next(hosts)),
                 "labels": labels, "annotations": dict(t.get("metadata", {}).get("annotations", {})),
                 "spec": t["spec"]})


for name, ds in by_kind.get("DaemonSet", {}).items():
    for node in matching_nodes(ds["spec"]["template"]["spec"]):
        add_pod(f"{name}-{node}", "DaemonSet", name, node, ds["spec"]["template"])
for name, sts in by_kind.get("StatefulSet", {}).items():
    candidates = matching_nodes(sts["spec"]["template"]["spec"])
    if not candidates:
        fail(f"StatefulSet {name}: no node matches its nodeSelector")
    for i in range(sts["spec"].get("replicas", 1)):
        add_pod(f"{name}-{i}", "StatefulSet", name, candidates[0], sts["spec"]["template"])
for name in args.job:
    job = by_kind.get("Job", {}).get(name) or fail(f"no Job {name} in {args.rendered}")
    candidates = matching_nodes(job["spec"]["template"]["spec"])
    add_pod(f"{name}-play", "Job", name, candidates[0] if candidates else None, job["spec"]["template"],
            {"job-name": name, "batch.kubernetes.io/job-name": name})

# ---- cluster DNS: Service names as hostAliases ------------------------------
aliases = {}  # ip -> [names]
for svc_name, svc in by_kind.get("Service", {}).items():
    if svc["spec"].get("clusterIP") != "None":
        fail(f"Service {svc_name}: only headless Services are emulated (a ClusterIP needs kube-proxy)")
    sel = svc["spec"].get("selector", {})
    for p in pods:
        if p["kind"] != "Job" and all(p["labels"].get(k) == v for k, v in sel.items()):
            aliases.setdefault(p["ip"], []).append(svc_name)
            sts = by_kind.get("StatefulSet", {}).get(p["owner"]) if p["kind"] == "StatefulSet" else None
            if sts and sts["spec"].get("serviceName") == svc_name:
                aliases[p["ip"]].append(f"{p['name']}.{svc_name}")
host_aliases = [{"ip": ip, "hostnames": names} for ip, names in sorted(aliases.items())]


# ---- the kubelet: downward API and $(VAR) expansion ---------------------------
def field_value(pod, path):
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return pod[m.group(1)].get(m.group(2)) or fail(f"{pod['name']}: no {path}")
    values = {"metadata.name": pod["name"], "metadata.namespace": namespace, "spec.nodeName": pod["node"],
              "status.podIP": pod["ip"]}
    if path not in values or values[path] is None:
        fail(f"{pod['name']}: fieldRef {path} is not emulated")
    return values[path]


def expand(text, env):
    # $(VAR) -> its value when VAR is defined; $$ -> $ (Kubernetes' rules).
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


manifest = []
for p in pods:
    spec = p["spec"]
    podman_name = args.prefix + p["name"]
    spec["hostname"] = p["name"]
    if spec.get("securityContext", {}).get("seccompProfile", {}).get("type") == "RuntimeDefault":
        p["annotations"]["seccomp.security.alpha.kubernetes.io/pod"] = "localhost/" + RUNTIME_DEFAULT
    spec["hostAliases"] = host_aliases
    capabilities = {}
    for c in spec.get("initContainers", []) + spec["containers"]:
        c["image"] = args.image
        c.pop("ports", None)
        env = {}
        for e in c.get("env", []):
            if "valueFrom" in e:
                ref = e.pop("valueFrom").get("fieldRef") or fail(f"{p['name']}: env {e['name']}: only fieldRef")
                e["value"] = field_value(p, ref["fieldPath"])
            env[e["name"]] = expand(e.get("value", ""), env)
            e["value"] = env[e["name"]]
        for key in ("command", "args"):
            if key in c:
                c[key] = [expand(a, env) for a in c[key]]
        capabilities[c["name"]] = c.get("securityContext", {}).get("capabilities", {}).get("add", [])
    used = []
    for v in spec.get("volumes", []):
        if "secret" in v:
            name = v.pop("secret")["secretName"]
            v["hostPath"] = {"path": secrets.get(name) or fail(f"no --secret for {name}"), "type": "Directory"}
        elif "configMap" in v:
            cm = copy.deepcopy(by_kind["ConfigMap"].get(v["configMap"]["name"]) or fail(f"no ConfigMap {v['configMap']}"))
            cm["metadata"] = {"name": args.prefix + cm["metadata"]["name"]}
            v["configMap"]["name"] = cm["metadata"]["name"]
            used.append(cm)
        elif "persistentVolumeClaim" in v:
            claim = v["persistentVolumeClaim"]["claimName"]
            pvc = copy.deepcopy(by_kind["PersistentVolumeClaim"][claim])
            pvc["metadata"] = {"name": args.prefix + claim}
            v["persistentVolumeClaim"]["claimName"] = args.prefix + claim
            used.append(pvc)
    # Multus' annotation is for the caller (pods.json); podman 4.3 refuses any annotation
    # value over 63 characters (a label's rule), and this one is longer.
    networks = json.loads(p["annotations"].pop("k8s.v1.cni.cncf.io/networks", "[]"))
    pod_doc = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": podman_name, "labels": p["labels"], "annotations": p["annotations"]},
               "spec": spec}
    path = out / f"{p['name']}.yaml"
    path.write_text(yaml.safe_dump_all(used + [pod_doc], sort_keys=False))
    manifest.append({"podman_name": podman_name, "name": p["name"], "kind": p["kind"], "owner": p["owner"],
                     "node": p["node"], "ip": p["ip"], "file": str(path),
                     "interfaces": [n["interface"] for n in networks], "capabilities": capabilities})
(out / "pods.json").write_text(json.dumps(manifest, indent=2) + "\n")
for m in manifest:
    print(f"{m['kind']:<11} {m['name']:<32} node {m['node'] or '-':<10} ip {m['ip']:<14} "
          f"interfaces {','.join(m['interfaces']) or '-'}")
