#!/usr/bin/env bash
# A scenario's capture window end to end: a plane fails at 2 s and the event
# asks for the frames 100 ms either side of it (capture-window.yaml). Runs it
# in the simulator or, as root, on a netns lab with live daemons, then reads
# the window's pcapng with tshark and the MetaRoCE dissector:
#   check_capture_window.sh sim|live SCENARIO OUT_DIR BUILD_DIR
# Checks: the report links the file with its window and frame count; tshark
# reads every frame; every frame is inside the window asked for (on the
# run's clock: the report's t0_unix_ns) and the capture covered all of it;
# the fault is inside it (frames before it, plane 1's link_down drops only
# from it on, frames after); the fabric's and the endpoints' frames are
# there, MetaRoCE decodes, nothing is flagged malformed. SKIPPED (77)
# without tshark, or live without root or netns.
set -euo pipefail
mode="$1" scenario="$2" out="$3" build="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
command -v tshark >/dev/null || { echo "SKIPPED: tshark is not installed"; exit 77; }
rm -rf "$out"
if [ "$mode" = live ]; then
  [ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root (network namespaces, AF_XDP)"; exit 77; }
  probe="mrcw$$"
  ip netns add "$probe" 2>/dev/null || { echo "SKIPPED: cannot create network namespaces here"; exit 77; }
  ip netns del "$probe"
  rc=0
  BUILD_DIR="$build" bash "$root/scripts/run-scenario.sh" "$scenario" "$out" "cw$(( $$ % 10000 ))" || rc=$?
  # 6: INCONCLUSIVE (this host's datapath limited the run): the frames are
  # still what the fabric did, which is what this test reads.
  [ "$rc" -eq 0 ] || [ "$rc" -eq 6 ] || { echo "scenario run failed ($rc)"; exit 1; }
else
  "$build/cli/metarocectl" scenario run "$scenario" --sim --out "$out"
fi
python3 - "$out" "$mode" "$root/wireshark/metaroce.lua" <<'PY'
import json, subprocess, sys
out, mode, lua = sys.argv[1:4]
r = json.load(open(out + "/report.json"))
assert r["mode"] == mode, r["mode"]
assert len(r["captures"]) == 1, r["captures"]
c = r["captures"][0]
assert c["event"] == "plane 1 down" and c["where"] == "both", c
frm, at, to = 1.9, 2.0, 2.1  # capture-window.yaml
assert (c["from_s"], c["at_s"], c["to_s"]) == (frm, at, to), c
assert c["file"] == "captures/01-metaroce-plane-1-down.pcapng", c
assert c["frames"] > 0, c
assert "captured_from_s" in c and "captured_to_s" in c, c
html = open(out + "/report.html").read()
assert '<a href="%s">' % c["file"] in html, "the page does not link the capture"

path = out + "/" + c["file"]
def tshark(*args):
    p = subprocess.run(["tshark", "-X", "lua_script:" + lua, "-r", path] + list(args),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout
rows = [l.split("\t") for l in tshark("-T", "fields", "-e", "frame.time_epoch", "-e", "frame.interface_name",
                                      "-e", "frame.comment", "-e", "metaroce.opcode").splitlines()]
assert len(rows) == c["frames"], "tshark read %d frames, the report says %d" % (len(rows), c["frames"])
# Frame times as the run's scenario time: (time - the run's t = 0 on the
# file's clock) / the clock's scale (the simulator's runs at sim.time_scale).
scale = 0.02 if mode == "sim" else 1.0
t0 = c["t0_unix_ns"]
assert (t0 > 0) == (mode == "live"), c
t = [(int(x[0].replace(".", "")) - t0) / 1e9 / scale for x in rows]  # the epoch's digits as ns, exact
assert t == sorted(t), "frames not in time order"
# Every frame inside the window asked for (the capture keeps nothing else),
# and the capture covered all of it (armed ahead, not started late).
eps = 1e-6 / scale
assert (c["captured_from_s"], c["captured_to_s"]) == (frm, to), (c["captured_from_s"], c["captured_to_s"], c["note"])
assert frm - eps <= t[0] and t[-1] <= to + eps, "frames from %.6f to %.6f s, window [%g, %g]" % (t[0], t[-1], frm, to)
# The fault inside it: frames before the plane fails, plane 1's frames
# dropped for link_down only from then on, and frames after.
drops = [i for i, x in enumerate(rows) if x[2].startswith("dropped by the emulator: link_down")]
assert drops, "no frame dropped for link_down in the window around the plane failing"
assert all(rows[i][1].endswith("plane1") for i in drops), "link_down drops off plane 1"
assert t[drops[0]] >= at - eps, "a link_down drop at %.6f s, before the fault at %g s" % (t[drops[0]], at)
before = sum(1 for x in t if x < at)
after = sum(1 for x in t if x >= at)
print("frames %d: %d before the fault, %d after; first at %.6f s, last at %.6f s, first link_down drop at %.6f s"
      % (len(t), before, after, t[0], t[-1], t[drops[0]]))
assert before > 0 and after > 0, "frames on one side of the fault only"
comments = [x[2] for x in rows]
for point in ("fabric in (before the emulator)", "fabric out (after the emulator)", "endpoint tx", "endpoint rx"):
    assert any(k.startswith(point) for k in comments), "no frame seen at " + point
assert sum(1 for x in rows if x[3]) > len(rows) // 2, "MetaRoCE frames do not decode"
flagged = tshark("-Y", '_ws.expert.severity == "Error"')
assert flagged == "", "frames the dissector flags as malformed:\n" + flagged[:2000]
print("capture window ok: %s, %d frames, %d link_down drops, %d not written" % (c["file"], len(rows), len(drops),
      c["frames_not_written"]))
PY
