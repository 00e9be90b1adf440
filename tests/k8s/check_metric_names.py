#!/usr/bin/env python3
"""Every metric name the shipped monitoring files use is one metaroced exports.

The names come from daemon/src/counters.cc, the one list that renders both
GetCounters and /metrics (parsing the source, not a running daemon, because a
daemon shows link, path and connection metrics only with a fabric and live
connections, which need root and AF_XDP). Checked: every PromQL expression of
the Grafana dashboard and of the recording rules; recording-rule names (with
a colon) must be recorded in the rules file. Exit 0 ok, 1 a name is unknown.
Usage: check_metric_names.py COUNTERS_CC MONITORING_DIR
"""
import json
import re
import sys
from pathlib import Path

counters_cc, monitoring = Path(sys.argv[1]), Path(sys.argv[2])
src = counters_cc.read_text()

# add("name", ...) and add_lateness("name", ...) (a histogram: name_bucket, name_count).
exported = set()
for m in re.finditer(r'\badd\(\s*"([a-z0-9_]+)"', src):
    exported.add("metaroce_" + m.group(1))
for m in re.finditer(r'\badd_lateness\(\s*"([a-z0-9_]+)"', src):
    exported |= {f"metaroce_{m.group(1)}_bucket", f"metaroce_{m.group(1)}_count"}
# Every other add( call must be one this parser knows, or names could be missed.
unparsed = [
    line.strip()
    for line in src.splitlines()
    if re.search(r'\badd\(', line)
    and not re.search(r'\badd\(\s*"', line)
    and 'std::string(name) + "_bucket"' not in line
    and 'std::string(name) + "_count"' not in line
]
if unparsed:
    print("FAIL: counters.cc has add( calls whose metric name this check cannot read:\n  " + "\n  ".join(unparsed))
    sys.exit(1)
if len(exported) < 40 or "metaroce_link_drops_total" not in exported:
    print(f"FAIL: read only {len(exported)} names from {counters_cc}: the parser no longer matches the source")
    sys.exit(1)

# PromQL expressions: (where, expr)
exprs = []
dashboard = json.loads((monitoring / "metaroce-dashboard.json").read_text())
for panel in dashboard["panels"]:
    for t in panel.get("targets", []):
        exprs.append((f'dashboard panel "{panel["title"]}"', t["expr"]))
for var in dashboard.get("templating", {}).get("list", []):
    if var.get("type") == "query":
        exprs.append((f'dashboard variable "{var["name"]}"', var["query"]))
rules_text = (monitoring / "metaroce.rules.yml").read_text()
recorded = set(re.findall(r"^\s*- record:\s*(\S+)", rules_text, re.M))
for m in re.finditer(r"^\s*expr:\s*(.+)$", rules_text, re.M):
    exprs.append(("metaroce.rules.yml", m.group(1)))

# The check must catch an unknown name, or a pass means nothing.
probe = ("self-test", "sum by (plane) (rate(metaroce_no_such_metric_total{pod=~\"$pod\"}[1m]))")
exprs.append(probe)

# Identifiers that are metric names: not a label name (before = or =~ inside
# braces), not a function or keyword (followed by "(" or in the list), not a
# string, not a Grafana variable.
keywords = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
failures, used = [], set()
for where, e in exprs:
    e = re.sub(r'"[^"]*"', '""', e)          # strings (label values, regexes)
    e = re.sub(r"\$\{?\w+\}?", "", e)         # Grafana variables
    e = re.sub(r"label_values\(([^,)]*),[^)]*\)", r"label_values(\1)", e)  # Grafana: (metric, label)
    e = re.sub(r"\{[^}]*\}", "{}", e)          # label matchers
    e = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", e)  # grouping label lists
    e = re.sub(r"\[[^\]]*\]", "", e)        # range selectors
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        name, rest = m.group(0), e[m.end():].lstrip()
        if name in keywords or rest.startswith("("):
            continue
        used.add(name)
        if ":" in name:
            if name not in recorded:
                failures.append(f"{where}: {name} is no recording rule of metaroce.rules.yml")
        elif name not in exported:
            failures.append(f"{where}: {name} is not a metric metaroced exports")
probe_failure = f"{probe[0]}: metaroce_no_such_metric_total is not a metric metaroced exports"
if probe_failure not in failures:
    print("FAIL: the check did not flag an unknown metric name")
    sys.exit(1)
failures.remove(probe_failure)
exprs.remove(probe)
used.discard("metaroce_no_such_metric_total")
for f in failures:
    print("FAIL:", f)
print(f"{len(exprs)} expressions use {len(used)} names; metaroced exports {len(exported)} (daemon/src/counters.cc)")
sys.exit(1 if failures else 0)
