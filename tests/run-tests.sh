#!/usr/bin/env bash
# Runs vmact's test programs and prints one closing line "N passed, M failed"
# summed over every cmocka test, every wirecheck vector and every fuzz seed
# replay. A program that crashes or times out counts as one failure.
set -u

build=build/san fuzzdir=build/fuzz vectors="../shared/vectors/wire.json tests/conformance/agent-eras.json"
unit="" loopback="" integration="" fuzzers="" layers="" install="" scripts="" upstream=""
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--fuzz) fuzzdir=$2; shift 2 ;;
	--vectors) vectors=$2; shift 2 ;;
	--unit) unit=$2; shift 2 ;;
	--loopback) loopback=$2; shift 2 ;;
	--integration) integration=$2; shift 2 ;;
	--fuzzers) fuzzers=$2; shift 2 ;;
	--layers) layers=$2; shift 2 ;;
	--install) install=$2; shift 2 ;;
	--scripts) scripts=$2; shift 2 ;;
	--upstream) upstream=$2; shift 2 ;;
	*) echo "run-tests: unknown argument $1" >&2; exit 2 ;;
	esac
done

passed=0 failed=0
failures=()
# Each program's wall time, printed slowest first at the end: make check
# has a 30-minute budget (doc/testing.md), and this says where it goes.
timings=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# run NAME TIMEOUT CMD...: runs a cmocka program and adds its counts.
run_cmocka() {
	local name=$1 limit=$2; shift 2
	echo "=== $name"
	local t0=$EPOCHREALTIME
	timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	timings+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') $name")
	local p f
	# cmocka writes parts of its summary to stdout and parts to stderr, so
	# the two can share a line: match anywhere, not at line starts.
	p=$(grep -o '\[  PASSED  \] [0-9]* test(s)\.' "$log" | awk '{s+=$4} END {print s+0}')
	f=$(grep -o '\[  FAILED  \] [0-9]* test(s), listed below:' "$log" | awk '{s+=$4} END {print s+0}')
	passed=$((passed + p)); failed=$((failed + f))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# Crashed, sanitizer report, timeout: not a cmocka-counted failure.
		failed=$((failed + 1))
		failures+=("$name (exit $rc)")
	elif [ "$f" -ne 0 ]; then
		failures+=("$name")
	fi
}

# The layering rule: the tree passes, and a planted upward include (a
# copy of base/ that includes actuator/) is refused, so the check itself
# is known to work.
if [ -n "$layers" ]; then
	echo "=== layering"
	# shellcheck disable=SC2086
	if tests/checks/check-layers.sh $layers; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1)); failures+=("layering")
	fi
	planted=$(mktemp -d)
	mkdir -p "$planted/base" "$planted/actuator"
	printf '#include "actuator/runner/runner.h"\n' >"$planted/base/upward.c"
	# shellcheck disable=SC2086
	if tests/checks/check-layers.sh --root "$planted" $layers 2>"$log"; then
		echo "check-layers accepted base/ including actuator/"
		failed=$((failed + 1)); failures+=("layering (planted violation accepted)")
	elif grep -q 'base/upward.c:1: base includes actuator/' "$log"; then
		echo "planted violation refused: $(head -n1 "$log")"
		passed=$((passed + 1))
	else
		cat "$log"
		failed=$((failed + 1)); failures+=("layering (planted violation: wrong message)")
	fi
	rm -rf "$planted"
	# ...and a planted source file at the top of cluster/, which holds
	# vmact-groupd's main alone (+main= in the specs).
	planted=$(mktemp -d)
	mkdir -p "$planted/cluster"
	printf 'int x;\n' >"$planted/cluster/stray.c"
	: >"$planted/cluster/vmact-groupd.c"
	# shellcheck disable=SC2086
	if tests/checks/check-layers.sh --root "$planted" $layers 2>"$log"; then
		echo "check-layers accepted a source file at cluster/'s top"
		failed=$((failed + 1)); failures+=("layering (planted stray file accepted)")
	elif grep -q '^check-layers: cluster/stray.c: cluster/ holds only' "$log" &&
		! grep -q '^check-layers: cluster/vmact-groupd.c:' "$log"; then
		echo "planted stray file refused: $(head -n1 "$log")"
		passed=$((passed + 1))
	else
		cat "$log"
		failed=$((failed + 1)); failures+=("layering (planted stray file: wrong message)")
	fi
	rm -rf "$planted"
fi

# make install into a scratch DESTDIR, every installed file checked
# (tests/checks/check-install.sh); $install: the make variables of the build.
if [ -n "$install" ]; then
	echo "=== install"
	# shellcheck disable=SC2086
	tests/checks/check-install.sh $install 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n1)
	p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed}
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ]; then
		[ -z "$line" ] && failed=$((failed + 1))
		failures+=("install")
	fi
fi
for t in $scripts; do
	echo "=== script $t"
	if VMACT_BUILD=$build timeout --kill-after=10 600 "tests/checks/$t.sh"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1)); failures+=("script $t")
	fi
done

for t in $unit; do
	run_cmocka "unit/$t" 600 "$build/tests/unit/$t"
done

for t in $loopback; do
	run_cmocka "loopback/$t" 600 "$build/tests/loopback/$t"
done

if [ -n "$vectors" ]; then
	for v in $vectors; do
		echo "=== wirecheck $v"
		if [ ! -r "$v" ]; then
			echo "wirecheck: cannot read $v (the shared/ checkout must sit beside this repository)"
			failed=$((failed + 1)); failures+=("wirecheck $v (missing)")
			continue
		fi
		"$build/wirecheck" "$v" 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n1)
		p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed}
		passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
		if [ "$rc" -ne 0 ]; then
			[ -z "$line" ] && failed=$((failed + 1))
			failures+=("wirecheck $v")
		fi
	done
fi

for z in $fuzzers; do
	echo "=== fuzz replay $z"
	seeds=(tests/fuzz/corpus/"$z"/*)
	if [ ! -e "${seeds[0]}" ]; then
		echo "no seed corpus in tests/fuzz/corpus/$z"
		failed=$((failed + 1)); failures+=("fuzz $z (no seeds)")
		continue
	fi
	if timeout 300 "$fuzzdir/$z" -runs=1 "${seeds[@]}" >"$log" 2>&1; then
		passed=$((passed + 1))
		echo "replayed ${#seeds[@]} seeds"
	else
		cat "$log"
		failed=$((failed + 1)); failures+=("fuzz $z")
	fi
done

for t in $integration; do
	run_cmocka "integration/$t" 1800 "$build/tests/integration/$t"
done

# Upstream's own Go modules against vmact-cloudprovider
# (tests/checks/check-upstream.sh): its per-module lines summed.
if [ -n "$upstream" ]; then
	echo "=== upstream"
	timeout --kill-after=10 1200 tests/checks/check-upstream.sh "$build" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n1)
	p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed}
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ]; then
		[ -z "$line" ] && failed=$((failed + 1))
		failures+=("upstream")
	fi
fi

if [ ${#timings[@]} -gt 0 ]; then
	echo "slowest programs (s):"
	printf '%s\n' "${timings[@]}" | sort -rn | head -n 15 | sed 's/^/  /'
fi
if [ ${#failures[@]} -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
