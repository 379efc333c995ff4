#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make check-ui: vmact's Cockpit page (cockpit/) in headless Chromium
# against cockpit-ws and a real vmactd managing a real TCG guest
# (tests/ui/cockpit-test.js says what it checks). Needs root, libvirtd, the
# test guest (VMACT_GUEST_DIR), Debian's chromium, cockpit-ws and
# cockpit-bridge, and playwright-core under build/npm (all from
# tests/host/setup-host.sh). Screenshots: $VMACT_UI_ARTIFACTS (default
# VMACT_BUILD/ui). About a minute here.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
export VMACT_BUILD=${1:-${VMACT_BUILD:-build}}
export VMACT_GUEST_DIR=${VMACT_GUEST_DIR:-build/guest}
for f in /usr/bin/chromium /usr/lib/cockpit/cockpit-ws /usr/bin/cockpit-bridge \
	"$VMACT_BUILD/vmactd" "$VMACT_GUEST_DIR/vmlinuz" build/npm/node_modules/playwright-core; do
	[ -e "$f" ] || { echo "check-ui: $f is missing (tests/host/setup-host.sh, make, make guest)"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "check-ui: needs root (libvirt's system domains, BPF, cgroups)"; exit 1; }
exec timeout --kill-after=10 600 node tests/ui/cockpit-test.js
