#!/usr/bin/env bash
# check-unit.sh: vmactd.service and vmact-cloudprovider.service as `make
# install` writes them, scored by systemd-analyze security --offline=yes
# (systemd's own exposure score, 0 best, 10 worst). vmactd.service passes
# below 5.0 ("OK"), doc/reliability.md, "Sandbox"; what each restriction costs vmactd is
# shown by test_sandbox, not by this score. vmact-cloudprovider.service,
# unprivileged and with nothing to do but serve, below 2.0
# (doc/cloudprovider.md, "Running it").
set -euo pipefail
cd "$(dirname "$0")/../.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Not the parent make's jobserver flags (make check runs this).
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory install DESTDIR="$tmp" PREFIX=/usr >"$tmp.log" 2>&1 || {
	cat "$tmp.log"; rm -f "$tmp.log"; exit 1
}
rm -f "$tmp.log"
# score UNIT MAX EXEC: the unit's exposure, below MAX, its ExecStart EXEC.
score() {
	local name=$1 max=$2 exec=$3 unit out line score
	unit=$tmp/usr/lib/systemd/system/$name
	grep -q "^ExecStart=$exec\b" "$unit"

	out=$(systemd-analyze security --offline=yes --no-pager "$unit" 2>&1) || true
	line=$(grep "Overall exposure level for $name:" <<<"$out" || true)
	if [ -z "$line" ]; then
		echo "$out"
		echo "check-unit: no exposure level from systemd-analyze for $name"
		return 1
	fi
	# What is still exposed, then the score.
	grep '✗' <<<"$out" || true
	echo "$line"
	score=$(sed -n "s/.*$name: \([0-9.]*\) .*/\1/p" <<<"$line")
	if ! awk -v s="$score" -v m="$max" 'BEGIN { exit !(s < m) }'; then
		echo "check-unit: $name exposure $score, not below $max"
		return 1
	fi
	echo "check-unit: $name exposure $score < $max"
}

score vmactd.service 5.0 /usr/sbin/vmactd
score vmact-cloudprovider.service 2.0 /usr/sbin/vmact-cloudprovider
