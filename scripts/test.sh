#!/usr/bin/env bash
# The test command: set up a fresh Debian machine, build, run every test.
#   scripts/test.sh                 all labels
#   scripts/test.sh -L unit         extra arguments go to ctest
# As root every label runs; in CI (CI=true) a bpf/netns/fuzz test that cannot
# run fails instead of skipping.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
BUILD_DIR=$build "$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure --timeout 600 -j 2 "$@"
