#!/usr/bin/env bash
# Configures and builds into BUILD_DIR (default: build). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$@"
# Ninja's line per step stays on stdout (callers may hide it); every tenth of
# the steps is also said on stderr, so a long build shows that it moves, and
# every other line (a warning, a FAILED step and its compiler errors) goes to
# stderr, so that hiding stdout never hides why a build failed.
cmake --build "$build_dir" --parallel "$(nproc)" | awk -v dir="$build_dir" '
  /^\[[0-9]+\/[0-9]+\]/ {
    print; fflush()
    split(substr($1, 2), step, "/"); done = step[1] + 0; total = step[2] + 0
    tenth = total > 0 ? int(done * 10 / total) : 0
    if (tenth > said) { said = tenth; printf "build (%s): %d of %d steps\n", dir, done, total > "/dev/stderr"; fflush("/dev/stderr") }
    next
  }
  { print > "/dev/stderr"; fflush("/dev/stderr") }'
