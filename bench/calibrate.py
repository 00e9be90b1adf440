#!/usr/bin/env python3
"""Calibration: the highest emulated link rate this host's datapath carries
faithfully, so that in a live run the emulated fabric, not the CPU, is the
bottleneck. Prints a table (and JSON with --json) and the rate to write as a
scenario's base.rate.

    sudo python3 bench/calibrate.py
    sudo python3 bench/calibrate.py --rates 200M,400M,800M --planes 4 --json out/calibrate.json

For each rate, in increasing order, a short fault-free scenario runs on a live
lab (scripts/run-scenario.sh: the same layout, port pacing and payload size as
every scenario run): a MetaRoCE job with two paths per plane, then a RoCEv2 job
with one QP per plane. A rate is sustained when both runs were faithful (the
fidelity guard: no worker saturated or kept waiting for a CPU, frames and timers
on time, no datapath drop), every worker stayed below --max-busy (headroom for
the extra work of loss and retransmission), and MetaRoCE filled at least
--min-utilisation of the fabric. The first rate that fails stops the search.
Recommended: the highest sustained rate. Exit status 0 when one was found,
1 when even the lowest rate was not sustained, 2 when a run could not be made.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OVERHEAD = 128 + 24  # headers in the frame (as run-scenario.sh sizes it) + Ethernet preamble/FCS/IFG


def parse_rate(text):
    units = {"K": 1e3, "M": 1e6, "G": 1e9}
    t = text.strip().upper().rstrip("BPS").rstrip("/")
    return float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)


def scenario_yaml(rate, args):
    return f"""name: calibrate
description: calibration at {rate / 1e6:g} Mb/s per link, no fault
seed: 1
topology: {{hosts: 2, planes: {args.planes}, ecmp_links: {args.ecmp_links}, mtu_payload: {args.mtu_payload}}}
hosts: {{h0: "unix:///run/metaroce/cal-h0.sock", h1: "unix:///run/metaroce/cal-h1.sock"}}
fabric: "unix:///run/metaroce/cal-fab.sock"
base: {{delay: 5us, rate: {rate / 1e6:g}M}}
duration: {args.seconds}s
interval: 250ms
jobs:
  - {{name: metaroce, from: h0, to: h1, transport: metaroce, size: 64K, paths: {2 * args.planes}}}
  - {{name: rocev2, from: h0, to: h1, transport: rocev2, size: 64K, connections: {args.planes}}}
assertions:
  - {{metric: data_errors, job: all, max: 0}}
"""


def measure(rate, args, work):
    path = os.path.join(work, f"calibrate-{rate:.0f}.yaml")
    with open(path, "w") as f:
        f.write(scenario_yaml(rate, args))
    out = os.path.join(args.out, f"{rate / 1e6:g}M")
    print(f"calibrate: {rate / 1e6:g} Mb/s per link ...", file=sys.stderr, flush=True)
    rc = subprocess.run(["bash", os.path.join(ROOT, "scripts/run-scenario.sh"), path, out, "mrcal"],
                        stdout=subprocess.DEVNULL).returncode
    report = os.path.join(out, "report.json")
    if rc not in (0, 1, 6) or not os.path.exists(report):
        raise RuntimeError(f"the run at {rate / 1e6:g} Mb/s failed (exit {rc}); see {out}")
    with open(report) as f:
        r = json.load(f)
    row = {"rate_bps": rate, "report": report, "faithful": True, "problems": []}
    busy = frame_p99 = timer_p99 = receive_p99 = stall = 0.0
    for run in r["runs"]:
        fid = run.get("fidelity", {})
        row["faithful"] &= bool(fid.get("faithful", False))
        row["problems"] += fid.get("problems", [])
        for w in fid.get("workers", []):
            busy = max(busy, w["busy_fraction"])
            frame_p99 = max(frame_p99, w["frame_late_p99_us"])
            timer_p99 = max(timer_p99, w["timer_late_p99_us"])
            receive_p99 = max(receive_p99, w.get("receive_wait_p99_us", 0))
            stall = max(stall, w.get("stall_max_us", 0))
        row[f"{run['job']}_goodput_bps"] = run["goodput_bps"]
    # The fabric's payload capacity: every plane's link at the rate, less the headers.
    capacity = rate * args.planes * args.mtu_payload / (args.mtu_payload + OVERHEAD)
    row.update(max_busy=busy, frame_late_p99_us=frame_p99, timer_late_p99_us=timer_p99, receive_wait_p99_us=receive_p99,
               stall_max_us=stall,
               utilisation=row.get("metaroce_goodput_bps", 0) / capacity)
    row["sustained"] = (row["faithful"] and busy <= args.max_busy and row["utilisation"] >= args.min_utilisation)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="100M,200M,300M,400M,600M,800M", help="link rates to try, increasing")
    ap.add_argument("--planes", type=int, default=4)
    ap.add_argument("--ecmp-links", type=int, default=2)
    ap.add_argument("--mtu-payload", type=int, default=2048)
    ap.add_argument("--seconds", type=int, default=3, help="per job, [1, 60]")
    ap.add_argument("--max-busy", type=float, default=0.75, help="largest worker busy fraction that counts (default 0.75)")
    ap.add_argument("--min-utilisation", type=float, default=0.9,
                    help="smallest share of the fabric MetaRoCE must fill (default 0.9)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out/calibrate"))
    ap.add_argument("--json", help="also write the table as JSON here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("calibrate: live runs need root (network namespaces, AF_XDP)", file=sys.stderr)
        return 2
    try:
        rates = [parse_rate(x) for x in args.rates.split(",")]
    except (ValueError, IndexError):
        print(f"calibrate: --rates: a comma-separated list of rates such as 200M,1G (got '{args.rates}')", file=sys.stderr)
        return 2
    if sorted(rates) != rates or not all(1e6 <= r <= 100e9 for r in rates):
        print("calibrate: --rates: increasing, each in [1M, 100G]", file=sys.stderr)
        return 2
    if not 1 <= args.seconds <= 60 or not 1 <= args.planes <= 16:
        print("calibrate: --seconds must be in [1, 60] and --planes in [1, 16]", file=sys.stderr)
        return 2

    rows = []
    with tempfile.TemporaryDirectory(prefix="metaroce-calibrate-") as work:
        for rate in rates:
            try:
                row = measure(rate, args, work)
            except RuntimeError as e:
                print(f"calibrate: {e}", file=sys.stderr)
                return 2
            rows.append(row)
            if not row["sustained"]:
                break

    print(f"{'rate/link':>10}  {'MetaRoCE':>10}  {'RoCEv2':>10}  {'fabric use':>10}  {'busy max':>8}  "
          f"{'frame p99':>9}  {'timer p99':>9}  {'recv p99':>9}  {'stall':>8}  faithful  sustained")
    for r in rows:
        print(f"{r['rate_bps'] / 1e6:>8g}M  {r.get('metaroce_goodput_bps', 0) / 1e9:>6.3f} Gb/s  "
              f"{r.get('rocev2_goodput_bps', 0) / 1e9:>6.3f} Gb/s  {r['utilisation']:>10.2f}  {r['max_busy']:>8.2f}  "
              f"{r['frame_late_p99_us']:>6.0f} us  {r['timer_late_p99_us']:>6.0f} us  {r['receive_wait_p99_us']:>6.0f} us  "
              f"{r['stall_max_us'] / 1e3:>5.1f} ms  "
              f"{'yes' if r['faithful'] else 'NO':>8}  "
              f"{'yes' if r['sustained'] else 'NO'}")
        for p in r["problems"]:
            print(f"{'':>12}{p}")
    good = [r for r in rows if r["sustained"]]
    recommended = good[-1]["rate_bps"] if good else None
    if recommended:
        print(f"\nrecommended base.rate: {recommended / 1e6:g}M (the highest rate sustained with "
              f"busy <= {args.max_busy:g}, fabric use >= {args.min_utilisation:g}, faithful)")
    else:
        print(f"\nno rate was sustained; try lower --rates")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"recommended_rate_bps": recommended, "rows": rows}, f, indent=2)
    return 0 if recommended else 1


if __name__ == "__main__":
    sys.exit(main())
