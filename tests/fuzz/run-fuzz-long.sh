#!/usr/bin/env bash
# make fuzz-long: every libFuzzer harness for SECONDS (wall time), JOBS at a
# time, each from its seed corpus (tests/fuzz/corpus/NAME) and its grown
# corpus (BUILD/fuzz-corpus/NAME, kept between runs). Prints one table
# row per harness: seconds, executions, executions per second, libFuzzer's
# coverage of the last status line (cov: edges, ft: features, corpus
# size) and the findings (crash-/leak-/timeout-/oom- files written under
# BUILD/fuzz-long/NAME/). Exits 1 on any finding or a harness that did not
# end cleanly.
#   run-fuzz-long.sh BUILD SECONDS JOBS NAME...
set -u
build=$1 seconds=$2 jobs=$3; shift 3
out="$build/fuzz-long"
mkdir -p "$out"

run_one() {
	local name=$1 dir="$out/$1" start end rc
	rm -rf "$dir"
	mkdir -p "$dir" "$build/fuzz-corpus/$name"
	start=$(date +%s)
	# -timeout: one input running 30 s is a hang (a finding); the limit
	# is generous because the machine is shared and the run is niced.
	"$build/fuzz/$name" -max_total_time="$seconds" -print_final_stats=1 -timeout=30 \
		-artifact_prefix="$dir/" "$build/fuzz-corpus/$name" "tests/fuzz/corpus/$name" \
		>"$dir/log" 2>&1
	rc=$?
	end=$(date +%s)
	echo "$rc $((end - start))" >"$dir/result"
	echo "fuzz-long: $name done (exit $rc, $((end - start)) s)"
}

running=0
for name in "$@"; do
	if [ ! -x "$build/fuzz/$name" ] || [ ! -d "tests/fuzz/corpus/$name" ]; then
		echo "fuzz-long: $name has no harness binary or no seed corpus" >&2
		exit 1
	fi
done
echo "fuzz-long: $# harnesses, ${seconds} s each, $jobs at a time (logs under $out)"
for name in "$@"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	run_one "$name" &
	running=$((running + 1))
done
wait

status=0
printf '\n%-16s %7s %12s %8s %7s %7s %7s %8s\n' harness seconds executions exec/s cov ft corpus findings
for name in "$@"; do
	dir="$out/$name"
	read -r rc secs <"$dir/result" 2>/dev/null || { rc=255 secs=0; }
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
	# The last status line: "#N <event> cov: C ft: F corp: K/SIZE ...".
	last=$(grep -E '^#[0-9]+[[:space:]]' "$dir/log" | grep ' cov: ' | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
	findings=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o \
		-name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	printf '%-16s %7s %12s %8s %7s %7s %7s %8s\n' "$name" "$secs" "${execs:-?}" "${eps:-?}" \
		"${cov:-?}" "${ft:-?}" "${corp:-?}" "$findings"
	if [ "$findings" -ne 0 ] || [ "$rc" -ne 0 ] || [ -z "$execs" ]; then
		echo "  $name: FAILED (exit $rc; see $dir/log and the files beside it)" >&2
		status=1
	fi
done
exit $status
