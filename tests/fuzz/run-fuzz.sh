#!/usr/bin/env bash
# make fuzz: runs each libFuzzer harness for SECONDS, starting from its seed
# corpus and growing a working corpus under BUILD/fuzz-corpus/NAME.
set -u
build=$1 seconds=$2; shift 2
status=0
for name in "$@"; do
	work="$build/fuzz-corpus/$name"
	mkdir -p "$work"
	echo "=== fuzz $name for ${seconds}s"
	if ! "$build/fuzz/$name" -max_total_time="$seconds" -print_final_stats=1 \
		-artifact_prefix="$build/fuzz-$name-" "$work" "tests/fuzz/corpus/$name"; then
		echo "fuzz $name: FAILED (artifact under $build/fuzz-$name-*)"
		status=1
	fi
done
exit $status
