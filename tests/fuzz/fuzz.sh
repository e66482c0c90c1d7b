#!/usr/bin/env bash
# fuzz.sh - run one libFuzzer harness from its seed corpus and regression inputs.
#
#   tests/fuzz/fuzz.sh [--build DIR | --bin PATH] [--runs N | --time SECONDS]
#                      [--max-len BYTES] [--jobs N] NAME [libFuzzer flags...]
#
#   NAME      xdp | protocol | control_server | options | policy_file
#   --build   the build directory with -DSLUICE_FUZZ=ON (default: build-fuzz
#             beside this checkout's build/); the binary is
#             DIR/tests/fuzz/fuzz_NAME
#   --runs    stop after N executions (ctest: 30,000 to 200,000, tests/fuzz/CMakeLists.txt)
#   --time    stop after SECONDS (a long run: --time 3600)
#   --jobs    N fuzzing processes in parallel (libFuzzer -fork=N)
#
# Inputs: tests/fuzz/corpus/NAME and tests/fuzz/regressions/NAME (read only);
# what the run finds is kept in a work corpus under
# ${SLUICE_FUZZ_WORK:-DIR/tests/fuzz}/work/NAME (emptied first). A crash
# leaves crash-<sha1> (or timeout-, leak-, oom-) under .../artifacts/NAME/ and fails the run: copy it to
# tests/fuzz/regressions/NAME/<what-it-was> and fix the bug; fuzz.NAME.replay
# replays it from then on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build-fuzz bin='' runs='' time='' max_len='' jobs=''
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--bin) bin=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--time) time=$2; shift 2 ;;
	--max-len) max_len=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
	-*) echo "fuzz.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	*) break ;;
	esac
done
name=${1:?fuzz.sh: which harness? xdp, protocol, control_server, options or policy_file}
shift
bin=${bin:-$build/tests/fuzz/fuzz_$name}
[ -x "$bin" ] || { echo "fuzz.sh: no $bin (configure with CC=clang-16 CXX=clang++-16 -DSLUICE_FUZZ=ON -DSLUICE_SANITIZE=ON and build)" >&2; exit 2; }
if [ -z "$max_len" ]; then
	case $name in
	xdp) max_len=1632 ;; # "SP" + policy (27) + 3 + kMaxFrame (xdp_fuzz.cpp)
	control_server) max_len=8192 ;;
	*) max_len=4096 ;;
	esac
fi
base=${SLUICE_FUZZ_WORK:-$(dirname "$bin")}
work=$base/work/$name
artifacts=$base/artifacts/$name
rm -rf "$work"
mkdir -p "$work" "$artifacts"
dirs=("$work" "$here/corpus/$name")
[ -d "$here/regressions/$name" ] && dirs+=("$here/regressions/$name")
flags=(-max_len="$max_len" -timeout=30 -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$artifacts/" -print_final_stats=1)
[ -n "$runs" ] && flags+=(-runs="$runs")
[ -n "$time" ] && flags+=(-max_total_time="$time")
[ -n "$jobs" ] && flags+=(-fork="$jobs")
[ -n "${SLUICE_FUZZ_SEED:-}" ] && flags+=(-seed="$SLUICE_FUZZ_SEED")
if [ -z "$runs" ] && [ -z "$time" ]; then
	echo "fuzz.sh: give --runs N or --time SECONDS" >&2
	exit 2
fi
start=$(date +%s.%N)
rc=0
"$bin" "${flags[@]}" "$@" "${dirs[@]}" || rc=$?
end=$(date +%s.%N)
echo "fuzz.sh: $name: exit $rc after $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s" \
	"(${runs:+$runs runs}${time:+$time s}); artifacts in $artifacts"
exit "$rc"
