#!/usr/bin/env bash
# check-daemon-link.sh: the mirror of check-worker-link.sh. vmactd, the
# root daemon, contains no parser of a guest's bytes (doc/privsep.md): no
# global symbol of the objects Kbuild's guest-parsers-y names (the
# websocket, the vm-monitor, informant and exporter clients and codecs,
# the Prometheus text reader, the approvers over them) is defined in it,
# and it imports nothing of libwslay. As a control, vmact-guestd, which
# runs them, must contain every one of those objects.
# VMACT_BUILD: the build directory (make check passes build/san).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${VMACT_BUILD:-build}
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "print-$1"; }

objs=$(mk guest-parsers-y) || { echo "check-daemon-link: make print-guest-parsers-y failed"; exit 1; }
[ -n "$objs" ] || { echo "check-daemon-link: Kbuild's guest-parsers-y is empty"; exit 1; }
for p in vmactd vmact-guestd; do
	[ -f "$build/$p" ] || { echo "check-daemon-link: $build/$p missing (build first)"; exit 1; }
done

defined() { nm --defined-only -g "$1" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u; }
daemon=$(defined "$build/vmactd")
worker=$(defined "$build/vmact-guestd")

bad=0 n=0
for o in $objs; do
	f=$build/$o
	[ -f "$f" ] || { echo "check-daemon-link: $f missing (build first)"; exit 1; }
	syms=$(defined "$f")
	[ -n "$syms" ] || { echo "check-daemon-link: $o defines nothing: the check is blind"; exit 1; }
	in_daemon=$(comm -12 <(printf '%s\n' "$syms") <(printf '%s\n' "$daemon"))
	if [ -n "$in_daemon" ]; then
		echo "check-daemon-link: vmactd contains $o, a guest-facing parser:"
		printf '  %s\n' $in_daemon | head -5
		bad=1
	fi
	# The control: the worker does hold it.
	if [ -z "$(comm -12 <(printf '%s\n' "$syms") <(printf '%s\n' "$worker"))" ]; then
		echo "check-daemon-link: vmact-guestd does not contain $o: the list or the check is wrong"
		bad=1
	fi
	n=$((n + 1))
done
imports=$(nm -D --undefined-only "$build/vmactd" | awk '{ print $2 }' | grep -E '^wslay_' || true)
if [ -n "$imports" ]; then
	echo "check-daemon-link: vmactd imports the websocket library:"
	printf '  %s\n' $imports
	bad=1
fi
[ $bad -eq 0 ] || exit 1
echo "check-daemon-link: vmactd holds none of the $n guest-facing parsers (vmact-guestd holds all), imports no libwslay"
