#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make check-host: boots the Debian 12 machine of tests/host/build-image.sh
# under QEMU TCG (systemd as PID 1, cgroup v2 only, libvirt inside), on a
# copy-on-write overlay of the cached image, with a 9p share holding
# vmact's packages (vmact's and vmact-cluster's .deb from make deb, and
# under next/ the same source built as a newer version, to upgrade to), a
# git bundle of this tree's HEAD (the clean clone the README's install
# section runs in), the test guest, the vm-monitor stand-in and in-vm.sh;
# the machine's vmact-check.service runs in-vm.sh and powers off. Its
# output is shown as it comes (the machine's serial console), then the
# report. Exit status 0 only if every check passed.
# Usage: tests/host/check-host.sh IMAGEDIR DEB GUESTDIR NODE_MODULES NEXTDIR
# (DEB: vmact's .deb, vmact-cluster's beside it; NEXTDIR: make deb
# DEB_BUMP's directory.)
# Environment: VMACT_HOST_TIMEOUT (seconds for the whole run, default 7200),
# VMACT_HOST_CPUS (default 2), VMACT_HOST_MEM (MiB, default 4096),
# VMACT_HOST_SCRIPT (another script to run in the machine instead of
# tests/host/in-vm.sh, e.g. to look into a failure; it must write
# report.txt and result into /mnt/host as in-vm.sh does), VMACT_HOST_LOCK
# (a lock file: once the machine has built and installed vmact by the
# README, a compile like any other, it waits for the host to hold this lock
# before it starts its guests and daemons; the lock is held to the end).
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
img=${1:?usage: check-host.sh IMAGEDIR DEB GUESTDIR NODE_MODULES NEXTDIR}
deb=${2:?} guest=${3:?} nodemod=${4:?} next=${5:?}
cluster_deb=$(dirname "$deb")/$(basename "$deb" | sed 's/^vmact_/vmact-cluster_/')
timeout=${VMACT_HOST_TIMEOUT:-7200}
die() { printf 'check-host: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root"
for f in "$img/rootfs.img" "$img/vmlinuz" "$img/initrd.img" "$deb" "$cluster_deb" \
	 "$(ls "$next"/vmact_*.deb 2>/dev/null | head -n 1)" "$(ls "$next"/vmact-cluster_*.deb 2>/dev/null | head -n 1)" \
	 "$guest/vmlinuz" "$guest/initrd.img" "$nodemod/ws"; do
	[ -e "$f" ] || die "$f is missing (make check-host builds the image, the .deb and the guest; tests/host/setup-host.sh installs ws)"
done
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing"

run=$img/run
rm -rf "$run"
mkdir -p "$run/share/guest" "$run/share/node_modules" "$run/share/next"
cp "$deb" "$cluster_deb" "$run/share/"
cp "$next"/vmact_*.deb "$next"/vmact-cluster_*.deb "$run/share/next/"
# The clean clone's source: this tree's HEAD, as committed.
git -C "$top" bundle create "$run/share/vmact.bundle" HEAD >/dev/null 2>&1 ||
	die "git bundle of $top's HEAD failed"
cp "$top/tests/guest/domain.xml.in" "$top/tests/peers/vm-monitor.js" "$run/share/"
cp "${VMACT_HOST_SCRIPT:-$top/tests/host/in-vm.sh}" "$run/share/in-vm.sh"
cp "$guest/vmlinuz" "$guest/initrd.img" "$run/share/guest/"
cp -r "$nodemod/ws" "$run/share/node_modules/"
qemu-img create -q -f qcow2 -F raw -b "$(cd "$img" && pwd)/rootfs.img" "$run/overlay.qcow2" ||
	die "qemu-img create failed"

qemu_pid=""
cleanup() {
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
	[ -n "${tail_pid:-}" ] && kill "$tail_pid" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
echo "check-host: booting the Debian 12 machine under QEMU TCG ($(nproc) host CPUs; console in $run/console.log)"
: >"$run/console.log"
# TCG: /dev/kvm does not run guests here (README "Limits"), so the test
# guest inside is TCG in TCG. No network device: nothing in the machine
# needs one.
qemu-system-x86_64 -name vmact-check-host -machine q35 -accel tcg,thread=multi,tb-size=512 \
	-cpu max -smp "${VMACT_HOST_CPUS:-2}" -m "${VMACT_HOST_MEM:-4096}" \
	-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
	-append "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 vmact.check=1 quiet systemd.show_status=error" \
	-drive "file=$run/overlay.qcow2,if=virtio,format=qcow2,cache=unsafe" \
	-virtfs "local,path=$run/share,mount_tag=host,security_model=none,id=host" \
	-nic none -display none -monitor none -serial "file:$run/console.log" -no-reboot \
	>"$run/qemu.log" 2>&1 &
qemu_pid=$!
# The machine's own report lines as they come (its console has the kernel's
# and systemd's too: kept in console.log).
tail -n +1 -F "$run/console.log" 2>/dev/null | grep --line-buffered -a '^check-host \|vmact-check.service' &
tail_pid=$!
done_at=""
locked=0
while kill -0 "$qemu_pid" 2>/dev/null; do
	# The machine asks for the go (share/ready) after the README's build;
	# with VMACT_HOST_LOCK, the go waits for the lock.
	if [ $locked = 0 ] && [ -e "$run/share/ready" ]; then
		if [ -n "${VMACT_HOST_LOCK:-}" ]; then
			echo "check-host: the machine has built vmact; waiting for $VMACT_HOST_LOCK"
			exec 9>"$VMACT_HOST_LOCK"
			flock 9
			echo "check-host: holding $VMACT_HOST_LOCK"
		fi
		locked=1
		touch "$run/share/go"
	fi
	if [ $(( $(date +%s) - t0 )) -ge "$timeout" ]; then
		echo "check-host: the machine did not finish within $timeout s: stopping it"
		kill "$qemu_pid"
		break
	fi
	# The report is complete once result is written: the machine powers
	# itself off then; one that has not 60 s later is stopped.
	if [ -s "$run/share/result" ]; then
		[ -n "$done_at" ] || done_at=$(date +%s)
		if [ $(( $(date +%s) - done_at )) -ge 60 ]; then
			echo "check-host: the machine did not power off after its report: stopping it"
			kill "$qemu_pid"
			break
		fi
	fi
	sleep 5
done
wait "$qemu_pid" 2>/dev/null
qemu_rc=$?
qemu_pid=""
sleep 1
kill "$tail_pid" 2>/dev/null
tail_pid=""
elapsed=$(( $(date +%s) - t0 ))
echo
echo "==== check-host report (machine run ${elapsed} s, QEMU exit $qemu_rc) ===="
if [ -s "$run/share/report.txt" ]; then
	cat "$run/share/report.txt"
else
	echo "check-host: no report from the machine; the end of its console:"
	tail -n 40 "$run/console.log"
	[ -s "$run/qemu.log" ] && cat "$run/qemu.log"
	exit 1
fi
[ -s "$run/share/vmactd.journal" ] && echo "(vmactd's journal from the machine: $run/share/vmactd.journal)"
read -r p f <"$run/share/result" 2>/dev/null || { echo "check-host: the machine's run did not finish"; exit 1; }
[ "$f" = 0 ] && [ "$p" -gt 0 ]
