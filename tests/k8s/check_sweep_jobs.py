#!/usr/bin/env python3
"""Every indexed Job that runs `metarocectl scenario run FILE --point=$(JOB_COMPLETION_INDEX)`
(tests/k8s/golden/*.yaml) has one completion per sweep point of FILE, and the
merge Job reads the directories those points write.

The scenario path in the image (/usr/share/metaroce/configs/...) is the
repository's configs/...; its points are what `metarocectl scenario validate`
reports (sweep_points). Usage: check_sweep_jobs.py METAROCECTL CONFIGS_DIR GOLDEN.yaml...
(77: SKIPPED)
"""
import json
import subprocess
import sys
from pathlib import Path

try:
    import yaml
except ImportError:
    print("SKIPPED: needs python3-yaml (scripts/install-deps.sh installs it)")
    sys.exit(77)

IMAGE_CONFIGS = "/usr/share/metaroce/configs/"
ctl, configs, goldens = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
failures, checked = [], 0
for golden in goldens:
    objs = [o for o in yaml.safe_load_all(Path(golden).read_text()) if o]
    jobs = {o["metadata"]["name"]: o for o in objs if o.get("kind") == "Job"}
    for name, job in jobs.items():
        container = job["spec"]["template"]["spec"]["containers"][0]
        args = container.get("args", [])
        if "--point=$(JOB_COMPLETION_INDEX)" not in args:
            if any("--point" in a for a in args):
                failures.append(f"{golden}: Job {name}: --point must be --point=$(JOB_COMPLETION_INDEX) (got {args})")
            continue
        where = f"{golden}: Job {name}"
        if job["spec"].get("completionMode") != "Indexed":
            failures.append(f"{where}: --point needs completionMode: Indexed")
        files = [a for a in args if a.startswith(IMAGE_CONFIGS)]
        if len(files) != 1:
            failures.append(f"{where}: expected one scenario file under {IMAGE_CONFIGS} in {args}")
            continue
        scenario = configs / files[0][len(IMAGE_CONFIGS):]
        out = subprocess.run([ctl, "-o", "json", "scenario", "validate", str(scenario)], capture_output=True, text=True)
        if out.returncode != 0:
            failures.append(f"{where}: {scenario}: {out.stderr.strip()}")
            continue
        points = json.loads(out.stdout)["sweep_points"]
        completions = job["spec"].get("completions")
        if completions != points:
            failures.append(f"{where}: completions {completions}, but {scenario.name} has {points} sweep points")
        if job["spec"].get("parallelism", 1) > points:
            failures.append(f"{where}: parallelism {job['spec']['parallelism']} above its {points} points")
        checked += 1
        print(f"ok: {where}: {completions} completions = sweep points of {scenario.name}")
if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
if checked == 0:
    print("FAIL: no indexed sweep Job with --point=$(JOB_COMPLETION_INDEX) in " + " ".join(goldens))
    sys.exit(1)
