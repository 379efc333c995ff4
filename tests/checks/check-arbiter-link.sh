#!/usr/bin/env bash
# check-arbiter-link.sh: vmact-arbiter runs as any user and listens on the
# network, so what it may contain is written down and checked
# (doc/ARCHITECTURE.md, "Programs"): its link list in Kbuild names none of
# the archives that reach libvirt, BPF or cgroups (hotplug, bpf,
# actuator/*) and none of their packages, and the binary needs none of
# those libraries nor defines a symbol of those archives. As a control,
# vmactd must need both libraries.
# VMACT_BUILD: the build directory (make check passes build/san).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${VMACT_BUILD:-build}
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "print-$1"; }

libs=$(mk vmact-arbiter-libs) && pkgs=$(mk vmact-arbiter-pkgs) ||
	{ echo "check-arbiter-link: make print-* failed"; exit 1; }
[ -n "$libs" ] && [ -n "$pkgs" ] || { echo "check-arbiter-link: vmact-arbiter has no link list"; exit 1; }
bad=0
for c in $libs; do
	case "$c" in
	hotplug | bpf | actuator/*)
		echo "check-arbiter-link: Kbuild's vmact-arbiter-libs names $c"
		bad=1
		;;
	esac
done
for p in $pkgs; do
	case "$p" in
	libvirt* | libbpf)
		echo "check-arbiter-link: Kbuild's vmact-arbiter-pkgs names $p"
		bad=1
		;;
	esac
done

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
for p in vmact-arbiter vmactd; do
	[ -f "$build/$p" ] || { echo "check-arbiter-link: $build/$p missing (build first)"; exit 1; }
done
libre='^lib(virt|bpf)\.so'
found=$(needed "$build/vmact-arbiter" | grep -E "$libre" || true)
if [ -n "$found" ]; then
	echo "check-arbiter-link: vmact-arbiter needs $(echo $found)"
	bad=1
fi
defined() { nm --defined-only -g "$1" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u; }
arb=$(defined "$build/vmact-arbiter")
for c in hotplug bpf $(mk COMPONENTS | tr ' ' '\n' | grep '^actuator/'); do
	a=$build/lib${c//\//-}.a
	[ -f "$a" ] || { echo "check-arbiter-link: $a missing (build first)"; exit 1; }
	in=$(comm -12 <(defined "$a") <(printf '%s\n' "$arb") | head -3)
	if [ -n "$in" ]; then
		echo "check-arbiter-link: vmact-arbiter contains $c: $(echo $in)"
		bad=1
	fi
done
# The control: the check sees these libraries where they are.
n=$(needed "$build/vmactd" | grep -cE "$libre" || true)
if [ "$n" -lt 2 ]; then
	echo "check-arbiter-link: vmactd needs only $n of libvirt, libbpf: the check is blind"
	bad=1
fi
[ $bad -eq 0 ] || exit 1
echo "check-arbiter-link: vmact-arbiter links $(echo $libs | tr ' ' ','): no libvirt or libbpf (vmactd needs both)"
