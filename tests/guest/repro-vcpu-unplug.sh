#!/usr/bin/env bash
# Reproducer for the vCPU-unplug finding (doc/notes/vcpu-unplug.md, issue 9 point 4).
#
# Runs three scenarios on throw-away transient guests named vmact-inv-repro-*
# (TCG, from tests/guest/domain.xml.in) and prints what libvirt, QEMU (QMP
# events, query-cpus-fast, info mtree) and the guest report:
#
#   A  plug 1->2, unplug 2->1 with `virsh setvcpus`, then plug again
#   B  the same, but the guest offlines the vCPU through sysfs first
#   C  the way back kept: the vCPUs stay plugged; scale down = offline in the
#      guest (sysfs) and/or a lower CFS quota; three down/up cycles, then
#      one more plug
#
# Scenario A/B end with QEMU gone ("crashed") on the re-plug: that is the
# finding, not a failure of this script. Exit status: 0 when every scenario
# behaved as documented, 1 when something differed (see the summary), 2 on a
# setup error.
#
# Usage (root, libvirtd running): tests/guest/repro-vcpu-unplug.sh [A] [B] [C]
# Environment: VMACT_GUEST_DIR (default build/guest; `make guest` builds it),
# VMACT_GUEST_TEMPLATE (default tests/guest/domain.xml.in), KEEP=1 keeps the
# work directory (logs) for inspection.
#
# The guest's own init is not changed: this script repacks a copy of the
# initramfs whose init understands three extra commands on the control port:
#   offline <n>   stop auto-onlining cpu<n> and offline it (sysfs)
#   online <n>    online cpu<n> and auto-online it again
#   klog          write the kernel's CPU/ACPI log lines to the report port
set -uo pipefail

die() { printf 'repro: error: %s\n' "$*" >&2; exit 2; }
say() { printf '%s\n' "$*"; }

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
gdir=${VMACT_GUEST_DIR:-$top/build/guest}
tpl=${VMACT_GUEST_TEMPLATE:-$here/domain.xml.in}
scen=("$@")
[ ${#scen[@]} -gt 0 ] || scen=(A B C)

[ "$(id -u)" -eq 0 ] || die "run as root"
command -v virsh >/dev/null || die "virsh not found"
[ -f "$gdir/vmlinuz" ] && [ -f "$gdir/initrd.img" ] || die "no guest in $gdir (make guest)"
[ -f "$tpl" ] || die "no template $tpl"
for t in cpio gzip zcat sed; do command -v $t >/dev/null || die "$t not found"; done
if command -v python3 >/dev/null; then sender=python3
elif command -v perl >/dev/null; then sender=perl
else die "python3 or perl needed to write to the guest's control socket"; fi

work=$(mktemp -d /run/vmact-inv-repro.XXXXXX) || die "mktemp"
chmod 0755 "$work"
doms=()
pids=()
cleanup() {
	local d p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for d in "${doms[@]}"; do
		virsh destroy "$d" >/dev/null 2>&1
		virsh undefine "$d" >/dev/null 2>&1
	done
	if [ "${KEEP:-0}" = 1 ]; then say "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM

# --- guest image with the extra commands -------------------------------------
mkdir "$work/root" "$work/guest"
(cd "$work/root" && zcat "$gdir/initrd.img" | cpio -idm --quiet) || die "cannot unpack $gdir/initrd.img"
init="$work/root/init"
grep -q '^			idle)$' "$init" || die "unexpected init layout (no idle command)"
# New commands go before "idle)"; the auto-online loop skips CPUs listed in
# /run/keepoff. Everything the original init does stays as it is.
sed -i -e '/^			idle)$/i\
			offline)\
				echo "$arg" >> /run/keepoff\
				echo 0 > "/sys/devices/system/cpu/cpu$arg/online" ;;\
			online)\
				grep -vx "$arg" /run/keepoff > /run/keepoff.n; mv /run/keepoff.n /run/keepoff\
				echo 1 > "/sys/devices/system/cpu/cpu$arg/online" ;;\
			klog)\
				dmesg | grep -i -e cpu -e acpi -e smpboot | tail -n 12 |\
					while IFS= read -r l; do echo "KLOG $l"; done > $out ;;' \
	-e 's|^	for f in /sys/devices/system/cpu/cpu\*/online; do$|&\
		n=${f#/sys/devices/system/cpu/cpu}; n=${n%/online}\
		grep -qx "$n" /run/keepoff 2>/dev/null \&\& continue|' \
	-e 's|^echo 0 > /run/busy$|&\
: > /run/keepoff|' "$init"
grep -q 'keepoff' "$init" && grep -q 'klog)' "$init" || die "could not patch the init copy"
for a in dmesg tail mv; do [ -e "$work/root/bin/$a" ] || ln -s busybox "$work/root/bin/$a"; done
(cd "$work/root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) > "$work/guest/initrd.img"
cp "$gdir/vmlinuz" "$work/guest/vmlinuz"
chmod 0644 "$work/guest/"*

# --- helpers ----------------------------------------------------------------
start_guest() { # name
	local n=$1
	sed -e "s|@NAME@|$n|g" -e "s|@METADATA@||" -e "s|@GUEST@|$work/guest|g" \
		-e "s|@RUN@|$work|g" -e "s|@CMDLINE@||" "$tpl" > "$work/$n.xml"
	virsh create "$work/$n.xml" >/dev/null || die "virsh create $n failed"
	doms+=("$n")
	virsh qemu-monitor-event "$n" --loop --timestamp > "$work/$n.events" 2>&1 &
	pids+=($!)
	wait_report "$n" 'cpus=1 ' 120 || die "$n did not report within 120 s"
}
# Writes one command to the guest's second serial port. Byte by byte: the
# guest's UART drops characters of a long line written at once.
send() { # name command
	local sock=$work/$1.ctl
	if [ $sender = python3 ]; then
		python3 - "$sock" "$2" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
for b in (sys.argv[2] + "\n").encode():
    s.sendall(bytes([b]))
    time.sleep(0.005)
s.close()
EOF
	else
		perl -MIO::Socket::UNIX -MTime::HiRes=sleep -e '
			my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or exit 1;
			for my $c (split //, "$ARGV[1]\n") { print $s $c; $s->flush; sleep 0.005 }' \
			"$sock" "$2"
	fi
}
report() { grep -a 'VMACT seq=' "$work/$1.log" 2>/dev/null | tail -n 1; }
guest_cpus() { local r; r=$(report "$1"); r=${r#*cpus=}; echo "${r%% *}"; }
wait_report() { # name pattern timeout_s
	local i
	for ((i = 0; i < $3 * 5; i++)); do
		report "$1" | grep -q -- "$2" && return 0
		sleep 0.2
	done
	return 1
}
qemu_cpus() { # number of CPUs QEMU runs (query-cpus-fast), or "gone"
	local out
	out=$(virsh qemu-monitor-command "$1" '{"execute":"query-cpus-fast"}' 2>/dev/null) || { echo gone; return; }
	grep -o '"cpu-index"' <<<"$out" | wc -l
}
libvirt_cpus() {
	virsh vcpucount "$1" --live --active 2>/dev/null || echo gone
}
state() {
	local s
	s=$(virsh domstate "$1" 2>/dev/null) && [ -n "$s" ] && { echo "$s" | head -n 1; return; }
	echo "gone (crashed)"
}
mem_kb() { local r; r=$(report "$1"); r=${r#*memtotal_kb=}; echo "${r%% *}"; }
cpu_as() { # the per-CPU address spaces QEMU still has
	virsh qemu-monitor-command "$1" --hmp 'info mtree' 2>/dev/null |
		sed -n 's/^address-space: \(cpu-.*\)/\1/p' | sort | tr '\n' ' '
}
events() { # QMP events of interest since the guest started, shortened
	sed -n 's/^\([0-9-]* [0-9:.]*\)+0000: event \([A-Z_]*\) for domain [^:]*: /  \1 \2 /p' \
		"$work/$1.events" | grep -e ACPI_DEVICE_OST -e DEVICE_DELETED
}
klog() {
	local before
	before=$(grep -ac '^KLOG ' "$work/$1.log")
	send "$1" klog
	sleep 1.5
	grep -a '^KLOG ' "$work/$1.log" | tail -n +$((before + 1)) | sed 's/^KLOG /  guest: /'
}
timed() { # command...: prints "rc=<n> <seconds>s <message>"
	local t0 t1 msg rc
	t0=$(date +%s.%N)
	msg=$("$@" 2>&1)
	rc=$?
	t1=$(date +%s.%N)
	printf 'rc=%d %ss %s' "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" \
		"$(tr '\n' ' ' <<<"$msg" | sed 's/ *$//')"
}
qemu_log_tail() { tail -n 3 "/var/log/libvirt/qemu/$1.log" | sed 's/^/  qemu log: /'; }
counts() { # name label
	printf '  %-34s guest=%s qemu=%s libvirt=%s\n' "$2" "$(guest_cpus "$1")" \
		"$(qemu_cpus "$1")" "$(libvirt_cpus "$1")"
}

declare -A verdict

# --- A / B: unplug with setvcpus, then plug again --------------------------------
unplug_case() { # letter offline_first
	local c=$1 off=$2 n="vmact-inv-repro-$$-${1,,}" r ok=1 i
	say ""
	if [ "$off" = 1 ]; then
		say "== $c: plug 1->2, guest offlines cpu1 (sysfs), unplug 2->1, plug again =="
	else
		say "== $c: plug 1->2, unplug 2->1 with virsh setvcpus, plug again =="
	fi
	start_guest "$n"
	say "  plug:   virsh setvcpus $n 2 --live -> $(timed virsh setvcpus "$n" 2 --live)"
	wait_report "$n" 'cpus=2 ' 60 || { say "  guest never saw 2 CPUs"; ok=0; }
	counts "$n" "after plug:"
	say "  address spaces: $(cpu_as "$n")"
	if [ "$off" = 1 ]; then
		send "$n" "offline 1"
		wait_report "$n" 'cpus=1 ' 30 && say "  guest offlined cpu1 (sysfs)"
	fi
	r=$(timed virsh setvcpus "$n" 1 --live)
	say "  unplug: virsh setvcpus $n 1 --live -> $r"
	grep -q 'timed out' <<<"$r" || ok=0
	wait_report "$n" 'cpus=1 ' 30
	sleep 1
	counts "$n" "after unplug:"
	say "  address spaces: $(cpu_as "$n")   (cpu-*-1 still there: vCPU 1 never freed)"
	say "  QMP events:"
	events "$n"
	grep -q '"device":"vcpu1".*DEVICE_DELETED\|DEVICE_DELETED.*"device":"vcpu1"' "$work/$n.events" &&
		{ say "  (DEVICE_DELETED for vcpu1 did arrive)"; ok=0; }
	klog "$n" | tail -n 4
	if [ "$c" = A ]; then
		# Memory scaling is not affected by the broken vCPU unplug.
		local m0 m1
		m0=$(mem_kb "$n")
		virsh update-memory-device "$n" --alias virtiomem0 --requested-size 262144KiB --live >/dev/null 2>&1
		for ((i = 0; i < 100; i++)); do
			m1=$(mem_kb "$n"); [ "${m1:-0}" -gt "${m0:-0}" ] && break; sleep 0.2
		done
		virsh update-memory-device "$n" --alias virtiomem0 --requested-size 0 --live >/dev/null 2>&1
		say "  virtio-mem +256MiB after the unplug: guest MemTotal ${m0} -> ${m1} kB, domain $(state "$n")"
		[ "${m1:-0}" -gt "${m0:-0}" ] || ok=0
		sleep 2
	fi
	say "  re-plug, same count: virsh setvcpus $n 2 --live -> $(timed virsh setvcpus "$n" 2 --live)"
	say "  re-plug, by name:    virsh setvcpu $n 1 --enable --live -> $(timed virsh setvcpu "$n" 1 --enable --live)"
	r=$(timed virsh setvcpus "$n" 3 --live)
	say "  plug one more:       virsh setvcpus $n 3 --live -> $r"
	sleep 2
	say "  domain state: $(state "$n")"
	qemu_log_tail "$n"
	state "$n" | grep -q running && ok=0
	verdict[$c]=$([ $ok = 1 ] && echo "as documented (unplug timed out, QEMU died on the next plug)" ||
		echo "DIFFERS from doc/notes/vcpu-unplug.md")
}

# --- C: keep the vCPUs plugged ----------------------------------------------------
keep_case() {
	local n="vmact-inv-repro-$$-c" i ok=1 pid q
	say ""
	say "== C: vCPUs stay plugged; down = guest offline (sysfs) + lower quota; 3 cycles =="
	start_guest "$n"
	virsh setvcpus "$n" 3 --live >/dev/null 2>&1 || ok=0
	wait_report "$n" 'cpus=3 ' 60 || ok=0
	counts "$n" "plugged to 3:"
	for i in 1 2 3; do
		send "$n" "offline 2"
		send "$n" "offline 1"
		virsh schedinfo "$n" --live global_quota=100000 >/dev/null 2>&1 || ok=0
		wait_report "$n" 'cpus=1 ' 30 || ok=0
		q=$(virsh schedinfo "$n" --live | sed -n 's/^global_quota *: //p')
		counts "$n" "cycle $i down (quota $q):"
		send "$n" "online 1"
		send "$n" "online 2"
		virsh schedinfo "$n" --live global_quota=-1 >/dev/null 2>&1 || ok=0
		wait_report "$n" 'cpus=3 ' 30 || ok=0
		counts "$n" "cycle $i up:"
	done
	pid=$(cat "/run/libvirt/qemu/$n.pid" 2>/dev/null)
	say "  plug one more: virsh setvcpus $n 4 --live -> $(timed virsh setvcpus "$n" 4 --live)"
	wait_report "$n" 'cpus=4 ' 60 || ok=0
	counts "$n" "after plug:"
	say "  domain state: $(state "$n"); QEMU pid $pid"
	state "$n" | grep -q running || ok=0
	verdict[C]=$([ $ok = 1 ] && echo "way back kept (3 cycles down/up, then a plug)" ||
		echo "DIFFERS from doc/notes/vcpu-unplug.md")
}

say "vCPU unplug reproducer: $(virsh version 2>/dev/null | sed -n 's/^Running hypervisor: //p'), libvirt $(virsh version 2>/dev/null | sed -n 's/^Using library: libvirt //p'), guest kernel $(cat "$gdir/stamp" 2>/dev/null)"
for s in "${scen[@]}"; do
	case $s in
	A) unplug_case A 0 ;;
	B) unplug_case B 1 ;;
	C) keep_case ;;
	*) die "unknown scenario $s (A, B or C)" ;;
	esac
done

say ""
say "== summary =="
rc=0
for s in "${scen[@]}"; do
	say "  $s: ${verdict[$s]}"
	grep -q DIFFERS <<<"${verdict[$s]}" && rc=1
done
exit $rc
