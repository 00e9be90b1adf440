#!/usr/bin/env python3
"""The MetaRoCE Wireshark dissector against pcapng files from the project's encoders.

1. metaroce.pcapng: tshark's detail view of every packet type equals the golden
   text; every frame is decoded as MetaRoCE, none is flagged, every CRC32C is Good.
2. malformed.pcapng: every frame is flagged with an error (one per check of spec
   section 10), the detail view equals the golden text, and no Lua error occurs.
3. mutated.pcapng: 500 randomly changed packets are all dissected, without a
   Lua error.
4. rocev2.pcapng: Wireshark's own InfiniBand dissector decodes every RoCEv2
   frame of the baseline without a malformed or warning flag, and each frame's
   ICRC, recomputed here from the spec's definition (independently of the
   project's C++), matches the stored one.
Exit 77 (SKIPPED) without tshark. UPDATE_GOLDEN=1 rewrites the golden files.
Usage: check_dissector.py MAKE_SAMPLE_PCAPS LUA GOLDEN_DIR OUT_DIR
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    gen, lua, golden, out = sys.argv[1:5]
    if not shutil.which("tshark"):
        print("SKIPPED: tshark is not installed (apt-get install tshark)")
        sys.exit(77)
    os.makedirs(out, exist_ok=True)
    subprocess.run([gen, out], check=True)
    # A private home and config dir: the user's preferences or an installed copy
    # of the plugin must not change what is tested.
    home = tempfile.mkdtemp(prefix="mr-tshark-")
    env = dict(os.environ, HOME=home, WIRESHARK_CONFIG_DIR=os.path.join(home, "config"))

    def tshark(pcap, *args, lua_script=True):
        cmd = ["tshark", "-r", os.path.join(out, pcap)]
        if lua_script:
            cmd += ["-X", "lua_script:" + lua]
        r = subprocess.run(cmd + list(args), capture_output=True, text=True, env=env)
        noise = [l for l in r.stderr.splitlines() if l.strip() and "Running as user" not in l]
        if r.returncode != 0 or noise or "Lua Error" in r.stdout:
            fail("tshark %s %s: exit %d\n%s\n%s" % (pcap, " ".join(args), r.returncode, "\n".join(noise), r.stdout[-2000:]))
        return r.stdout

    def count(pcap, display_filter, **kw):
        return len([l for l in tshark(pcap, "-Y", display_filter, **kw).splitlines() if l.strip()])

    def golden_check(pcap, name):
        text = tshark(pcap, "-V", "-O", "metaroce")
        path = os.path.join(golden, name)
        if os.environ.get("UPDATE_GOLDEN") == "1":
            with open(path, "w") as f:
                f.write(text)
            print("updated " + path)
            return
        with open(path) as f:
            want = f.read()
        if text != want:
            got = os.path.join(out, name)
            with open(got, "w") as f:
                f.write(text)
            fail("%s differs from %s (diff %s %s; UPDATE_GOLDEN=1 after checking)" % (pcap, path, path, got))

    frames = count("metaroce.pcapng", "frame")
    if frames < 20:
        fail("metaroce.pcapng holds %d frames, expected every packet type (20)" % frames)
    if count("metaroce.pcapng", "metaroce") != frames:
        fail("not every frame of metaroce.pcapng was decoded as MetaRoCE")
    if count("metaroce.pcapng", '_ws.expert.severity == "Error" || metaroce.crc.status != "Good"') != 0:
        fail("a well-formed packet was flagged or had a bad CRC")
    golden_check("metaroce.pcapng", "metaroce.txt")
    print("metaroce.pcapng: %d frames decoded, none flagged, golden text equal" % frames)

    bad = count("malformed.pcapng", "frame")
    flagged = count("malformed.pcapng", '_ws.expert.severity == "Error"')
    if flagged != bad:
        fail("%d of %d malformed frames flagged with an error" % (flagged, bad))
    golden_check("malformed.pcapng", "malformed.txt")
    print("malformed.pcapng: %d of %d frames flagged, golden text equal" % (flagged, bad))

    mutated = count("mutated.pcapng", "frame")
    if count("mutated.pcapng", "metaroce") != mutated:
        fail("the dissector did not decode every mutated frame")
    print("mutated.pcapng: %d randomly changed frames dissected without a Lua error" % mutated)

    roce = count("rocev2.pcapng", "frame", lua_script=False)
    if count("rocev2.pcapng", "infiniband", lua_script=False) != roce:
        fail("not every RoCEv2 frame was decoded by Wireshark's InfiniBand dissector")
    if count("rocev2.pcapng", '_ws.malformed || _ws.expert.severity >= "Warning"', lua_script=False) != 0:
        fail("Wireshark flags a RoCEv2 frame of the baseline")
    checked = check_icrc(os.path.join(out, "rocev2.pcapng"))
    print("rocev2.pcapng: %d frames decoded by Wireshark's InfiniBand dissector, none flagged, %d ICRCs correct" % (roce, checked))


def pcapng_frames(path):
    data = open(path, "rb").read()
    off = 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if btype == 6:  # Enhanced Packet Block
            caplen = struct.unpack_from("<I", data, off + 20)[0]
            yield data[off + 28: off + 28 + caplen]
        off += blen


def check_icrc(path):
    n = 0
    for frame in pcapng_frames(path):
        ip = bytearray(frame[14:34])
        ip[1] = 0xFF           # TOS
        ip[8] = 0xFF           # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
        udp = bytearray(frame[34:42])
        udp[6:8] = b"\xff\xff"   # UDP checksum
        bth = bytearray(frame[42:54])
        bth[4] = 0xFF            # resv8a
        rest = frame[54:-4]
        want = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + rest) & 0xFFFFFFFF
        stored = struct.unpack("<I", frame[-4:])[0]  # least significant byte first
        if want != stored:
            fail("RoCEv2 frame %d: ICRC 0x%08x, computed 0x%08x" % (n + 1, stored, want))
        n += 1
    return n


if __name__ == "__main__":
    main()
