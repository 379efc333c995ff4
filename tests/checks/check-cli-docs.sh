#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The manual pages and the bash completion against the programs' own
# --help: every command vmactl lists, and every option that vmactl,
# `vmactl COMMAND --help`, vmactd and vmact-arbiter print, must appear in
# the program's man page and be offered by its completion (after the
# command, for vmactl's). A new option missing from either fails here.
# Usage: tests/checks/check-cli-docs.sh [BUILD]   (default $VMACT_BUILD, else
# build/; make unit and make check pass their build/san). Prints
# "N passed, M failed"; exit status 0 only when nothing failed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
build=${1:-${VMACT_BUILD:-build}}
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "check-cli-docs: $*"; failed=$((failed + 1)); }

for p in vmactl vmactd vmact-arbiter; do
	[ -x "$build/$p" ] || { echo "check-cli-docs: $build/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
# The page as a reader sees it, in ASCII (\- as "-"), without hyphenation
# breaks in long lines.
page() { LC_ALL=C MANWIDTH=250 man -l "man/$1" 2>/dev/null | col -b; }
# What completing the last word offers.
comp() {
	bash --norc --noprofile -c '
		source man/vmact.bash-completion
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		case $1 in vmactl) _vmactl ;; vmactd) _vmactd ;; vmact-arbiter) _vmact_arbiter ;; esac
		printf "%s\n" "${COMPREPLY[@]}"' comp "$@"
}
opts() { grep -oE -- '(^|[^a-z-])--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*' | sort -u; }
# in_page TEXT OPTION: the option as a word of the page.
in_page() { grep -qE -- "(^|[^a-z-])$2([^a-z-]|$)" <<<"$1"; }
has() { grep -qxF -- "$2" <<<"$1"; }

# vmactl: its commands and global options.
help=$("$build/vmactl" --help)
commands=$(awk '/^Commands:/ { c = 1; next } c && /^$/ { exit } c && /^  [a-z]/ { print $1 }' <<<"$help")
global=$(awk '/^Options:/ { o = 1; next } o' <<<"$help" | opts)
[ -n "$commands" ] && [ -n "$global" ] || bad "no commands or options read from vmactl --help"
man_ctl=$(page vmactl.8)
top_comp=$(comp vmactl "")
for c in $commands; do
	if in_page "$man_ctl" "$c"; then ok; else bad "vmactl(8) does not describe the command $c"; fi
	if has "$top_comp" "$c"; then ok; else bad "the completion does not offer vmactl $c"; fi
done
glob_comp=$(comp vmactl --)
for o in $global; do
	if in_page "$man_ctl" "$o"; then ok; else bad "vmactl(8) does not describe $o"; fi
	# --version is answered only before a command; the rest everywhere.
	if has "$glob_comp" "$o"; then ok; else bad "the completion does not offer vmactl $o"; fi
done
for c in $commands; do
	if ! chelp=$("$build/vmactl" "$c" --help 2>&1); then
		bad "vmactl $c --help failed: $chelp"
		continue
	fi
	got=$(comp vmactl "$c" x --)
	for o in $(opts <<<"$chelp"); do
		if in_page "$man_ctl" "$o"; then ok; else bad "vmactl(8) does not describe $c's $o"; fi
		if has "$got" "$o"; then ok; else bad "the completion of 'vmactl $c ... --' does not offer $o"; fi
	done
done

# vmactd and vmact-arbiter: their options.
for p in vmactd vmact-arbiter; do
	man_p=$(page "$p.8")
	got=$(comp "$p" --)
	for o in $("$build/$p" --help | opts); do
		if in_page "$man_p" "$o"; then ok; else bad "$p(8) does not describe $o"; fi
		if has "$got" "$o"; then ok; else bad "the completion of $p does not offer $o"; fi
	done
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
