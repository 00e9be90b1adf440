#!/usr/bin/env bash
# Installs the MetaRoCE Wireshark dissector (wireshark/metaroce.lua) into this
# user's personal Lua plugin folder, where Wireshark and tshark load it at start.
# Needs tshark or wireshark (Debian: apt-get install tshark).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tshark >/dev/null || { echo "install-dissector: tshark is not installed (apt-get install tshark)" >&2; exit 1; }
dir="$(tshark -G folders 2>/dev/null | awk -F'\t' '/^Personal Lua Plugins/ {print $2}')"
[ -n "$dir" ] || { echo "install-dissector: tshark did not report its personal Lua plugin folder" >&2; exit 1; }
mkdir -p "$dir"
install -m 0644 wireshark/metaroce.lua "$dir/metaroce.lua"
echo "install-dissector: installed $dir/metaroce.lua; MetaRoCE on UDP port 4794 decodes in Wireshark and tshark"
