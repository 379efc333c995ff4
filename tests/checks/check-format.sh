#!/usr/bin/env bash
# check-format.sh: every C file of the tree is as clang-format leaves it
# with the repository's .clang-format (doc/CODING_STYLE.md). Lists the
# files it would change, with the first lines of the difference, and fails.
# --fix rewrites them instead (make format). The BPF programs are left as
# they are: vmlinux.h must come before everything else.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed"; exit 1; }

mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v '\.bpf\.c$' | grep -v '^bpf/vmlinux/')
if [ "${1:-}" = --fix ]; then
	clang-format -i "${files[@]}"
	exit 0
fi
bad=0
for f in "${files[@]}"; do
	if ! diff -q "$f" <(clang-format "$f") >/dev/null; then
		echo "check-format: $f is not formatted (make format):"
		diff -u "$f" <(clang-format "$f") | sed -n '3,12p'
		bad=$((bad + 1))
	fi
done
if [ $bad -ne 0 ]; then
	echo "check-format: $bad of ${#files[@]} files"
	exit 1
fi
echo "check-format: ${#files[@]} files as clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1) leaves them"
