#!/usr/bin/env bash
# bench.sh - sluice's benchmarks (docs/benchmarks.md says what each figure
# measures and how).
#
#   scripts/bench.sh [--quick] [--json FILE] [--update-docs] [--only LIST]
#
#   --quick        every figure, shorter and fewer repeats (about 6 minutes on
#                  a 2-CPU machine; the smoke test of this script)
#   --json FILE    also write the results there (they always go to
#                  bench/results/<time>/results.json)
#   --update-docs  rewrite the generated part of docs/benchmarks.md and
#                  docs/benchmarks.png from this run (only if it completed)
#   --only LIST    only these figures, by number or name (e.g. --only 2,
#                  --only 1,6, --only standing), for working on one; not
#                  with --update-docs
#
# As root: installs what it needs from Debian's packages (scripts/setup.sh,
# plus gnuplot-nox for the chart, nginx and iperf3 for figures 8 and 10), builds into
# ${BUILD_DIR:-build}, brings up a testbed of namespaces (scripts/testbed.sh)
# and runs the driver in it, the Python package scripts/bench/ (python3 -m
# bench; it shares the netns tests' harness, tests/netns/sluice_netns.py).
# Prints a table, writes bench/results/<time>/{results.json,results.md,
# benchmarks.png}. Everything it makes (namespaces, veths, XDP programs,
# daemons, nftables/iptables rules, which live only inside the testbed's
# namespaces) is removed on every exit path. Benchmarks are not part of ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}

quick=() json=() update=() only=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=(--quick) ;;
	--json)
		[ $# -ge 2 ] || { echo "bench.sh: --json needs a file" >&2; exit 2; }
		json=(--json "$(realpath -m "$2")")
		shift
		;;
	--update-docs) update=(--update-docs) ;;
	--only)
		[ $# -ge 2 ] || { echo "bench.sh: --only needs a list of figures" >&2; exit 2; }
		only=(--only "$2")
		shift
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "bench.sh: unknown argument '$1' (--quick, --json FILE, --update-docs, --only LIST)" >&2
		exit 2
		;;
	esac
	shift
done
if [ ${#only[@]} -gt 0 ] && [ ${#update[@]} -gt 0 ]; then
	echo "bench.sh: --update-docs needs every figure (no --only)" >&2
	exit 2
fi
command="${BUILD_DIR:+BUILD_DIR=$BUILD_DIR }scripts/bench.sh${quick:+ --quick}${update:+ --update-docs}"

if [ "$(id -u)" -ne 0 ]; then
	echo "bench.sh: needs root (namespaces, XDP, BPF_PROG_TEST_RUN, nftables)" >&2
	exit 2
fi

start=$(date +%s)
"$root/scripts/setup.sh"
# gnuplot-nox: the chart; nginx and iperf3: figures 8 and 10 (servers, bulk TCP).
# (Debian's nginx package starts no daemon where there is no init system to
# start it with; the figure runs its own, in the testbed's host namespace.)
extra=()
command -v gnuplot >/dev/null || extra+=(gnuplot-nox)
command -v nginx >/dev/null || extra+=(nginx)
command -v iperf3 >/dev/null || extra+=(iperf3)
if [ ${#extra[@]} -gt 0 ]; then
	echo "bench.sh: installing ${extra[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${extra[@]}" >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${extra[@]}" >/dev/null; }
fi

echo "bench.sh: building in $build"
# Configured every time (quick when nothing changed): a build directory only
# reconfigures itself inside the build, too late for a target that a changed
# CMakeLists added ("No rule to make target").
cmake -S "$root" -B "$build" >/dev/null
targets=(sluiced sluicectl sluice-traffic sluice-bench sluice-standing-matches netrx_clock_bpf_skel_gen
	xdp_drop_bpf_skel_gen xdp_pass_bpf_skel_gen sluice_bpf_skel_gen sluice_fineclock_bpf_skel_gen sluice_coarseclock_bpf_skel_gen
	sluice_sip24_bpf_skel_gen
	lru_limiter_bpf_skel_gen lru_limiter_fineclock_bpf_skel_gen new_source_bpf_skel_gen)
# The cut-point builds, as many as CMakeLists.txt defines (not built by default)
mapfile -t cuts < <(cmake --build "$build" --target help | sed -n 's/^\.\.\. \(sluice_cut_[a-z]*_bpf_skel_gen\).*/\1/p')
[ ${#cuts[@]} -gt 0 ] || { echo "bench.sh: no cut-point targets in $build" >&2; exit 1; }
targets+=("${cuts[@]}")
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null

# shellcheck source=scripts/testbed.sh
. "$root/scripts/testbed.sh"
driver=""
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$driver" ] && kill -0 "$driver" 2>/dev/null; then
		kill -TERM "$driver" 2>/dev/null || true
		wait "$driver" 2>/dev/null || true
	fi
	tb_down || rc=1
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
tb_up bench || exit 1

out=$root/bench/results/$(date -u +%Y%m%d-%H%M%S)
# (No __pycache__ left in the tree by a root run.)
PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
	python3 -m bench --build "$build" --out "$out" --command "$command" \
	"${quick[@]}" "${json[@]}" "${update[@]}" "${only[@]}" &
driver=$!
rc=0
wait "$driver" || rc=$?
driver=""
echo "bench.sh: $(($(date +%s) - start)) s in all; results in ${out#"$root"/}"
exit "$rc"
