#!/usr/bin/env bash
# check-unit.sh: vmactd.service as `make install` writes it, scored by
# systemd-analyze security --offline=yes (systemd's own exposure score, 0
# best, 10 worst). Passes below 5.0 ("OK"), doc/reliability.md, "Sandbox". What each
# restriction costs vmactd is shown by test_sandbox, not by this score.
set -euo pipefail
cd "$(dirname "$0")/../.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Not the parent make's jobserver flags (make check runs this).
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory install DESTDIR="$tmp" PREFIX=/usr >"$tmp.log" 2>&1 || {
	cat "$tmp.log"; rm -f "$tmp.log"; exit 1
}
rm -f "$tmp.log"
unit=$tmp/usr/lib/systemd/system/vmactd.service
grep -q '^ExecStart=/usr/sbin/vmactd\b' "$unit"

out=$(systemd-analyze security --offline=yes --no-pager "$unit" 2>&1) || true
line=$(grep 'Overall exposure level for vmactd.service:' <<<"$out" || true)
if [ -z "$line" ]; then
	echo "$out"
	echo "check-unit: no exposure level from systemd-analyze"
	exit 1
fi
# What is still exposed, then the score.
grep '✗' <<<"$out" || true
echo "$line"
score=$(sed -n 's/.*vmactd.service: \([0-9.]*\) .*/\1/p' <<<"$line")
if ! awk -v s="$score" 'BEGIN { exit !(s < 5.0) }'; then
	echo "check-unit: exposure $score, not below 5.0"
	exit 1
fi
echo "check-unit: exposure $score < 5.0"
