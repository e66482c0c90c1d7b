#!/usr/bin/env bash
# The test command: set up a fresh Debian machine, build, run every test.
#   scripts/test.sh                 all labels (netns once, in the second build)
#   scripts/test.sh -L unit         extra arguments go to ctest, in both builds
#
# Two builds:
#   ${BUILD_DIR:-build}            g++, as shipped: unit, bpf (and netns when
#                                  the second build is skipped or when
#                                  arguments choose the labels)
#   ${FUZZ_BUILD_DIR:-build-fuzz}  clang-16 with -DSLUICE_SANITIZE=ON
#                                  -DSLUICE_FUZZ=ON: the libFuzzer harnesses
#                                  (label fuzz, a fixed number of executions
#                                  each) and, under AddressSanitizer and
#                                  UndefinedBehaviorSanitizer, the unit and
#                                  netns tests again (the netns tests start
#                                  this build's sluiced and sluicectl). With
#                                  no arguments it runs -L 'unit|netns|fuzz'.
# Every sanitizer report, from any process of the second run (a test, sluiced,
# sluicectl, a fuzzer), is written under build-fuzz/sanitizer-reports/ and
# fails the run, printed, even when the test around it passed (a leak found
# as sluiced exits, say). SLUICE_SANITIZED=0 skips the second build.
#
# As root every label runs; in CI (CI=true) a bpf/netns/fuzz test that cannot
# run fails instead of skipping.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
fuzz_build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
rc=0

BUILD_DIR=$build "$root/scripts/build.sh"
first=("$@")
if [ $# -eq 0 ] && [ "${SLUICE_SANITIZED:-1}" != 0 ]; then
	# The netns suite runs once, in the sanitized build below: the same
	# sources, the same tests, and every sluiced/sluicectl they start is
	# watched by the sanitizers as well. Twice cost 16 minutes on 2 CPUs.
	first=(-L 'unit|bpf')
fi
(cd "$build" && ctest --output-on-failure --timeout 600 -j 2 "${first[@]}") || rc=$?

if [ "${SLUICE_SANITIZED:-1}" != 0 ]; then
	CC=clang-16 CXX=clang++-16 cmake -S "$root" -B "$fuzz_build" -DSLUICE_SANITIZE=ON -DSLUICE_FUZZ=ON >/dev/null
	if [ $# -eq 0 ]; then
		# What -L 'unit|netns|fuzz' runs, and no more (the bpf tests ran above)
		mapfile -t targets < <(cmake --build "$fuzz_build" --target help |
			sed -n 's/^\.\.\. \(ctl_[^ ]*\|sluice_unit_[^ ]*\|fuzz_[^ ]*\).*/\1/p')
		# sluice-bench: test_cookie_alternatives attaches its cookie_alt objects with it
		cmake --build "$fuzz_build" -j "$(nproc)" --target sluiced sluicectl sluice-traffic sluice-bench \
			xdp_pass_bpf_skel_gen "${targets[@]}"
	else
		cmake --build "$fuzz_build" -j "$(nproc)"
	fi
	reports=$fuzz_build/sanitizer-reports
	rm -rf "$reports"
	mkdir -p "$reports"
	symbolizer=$(command -v llvm-symbolizer || true)
	export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:log_path=$reports/asan${symbolizer:+:external_symbolizer_path=$symbolizer}"
	export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan${symbolizer:+:external_symbolizer_path=$symbolizer}"
	args=("$@")
	[ ${#args[@]} -gt 0 ] || args=(-L 'unit|netns|fuzz')
	(cd "$fuzz_build" && ctest --output-on-failure --timeout 900 -j 2 "${args[@]}") || rc=$?
	if compgen -G "$reports/*" >/dev/null; then
		echo "test.sh: sanitizer reports in the sanitized run ($reports):" >&2
		for f in "$reports"/*; do
			echo "---- $f" >&2
			head -n 60 "$f" >&2
		done
		rc=1
	else
		echo "test.sh: sanitized run: no sanitizer reports"
	fi
fi
exit "$rc"
