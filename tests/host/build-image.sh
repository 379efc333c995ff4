#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds make check-host's Debian 12 machine from Debian packages: a root
# file system by debootstrap (bookworm, from the Debian mirror the host's
# own apt sources name, through its apt proxy if it has one) with systemd
# as PID 1, libvirt and QEMU inside, written into an ext4 image, and the
# kernel and initrd it boots (QEMU -kernel, tests/host/check-host.sh).
# Nothing of vmact is in the image: check-host installs vmact's .deb into
# each run's copy-on-write overlay, and builds it there from a clean clone
# by the README's install section, whose apt-get lines then find every
# package installed (the machine has no network): the build dependencies
# of debian/control, dpkg-dev, lintian, git, sudo. The image is rebuilt
# only when this script or debian/control changes.
# Usage: tests/host/build-image.sh OUTDIR   (root)
# Environment: VMACT_HOST_MIRROR, a Debian mirror to use instead of the
# host's.
# Writes OUTDIR/rootfs.img, OUTDIR/vmlinuz, OUTDIR/initrd.img, OUTDIR/stamp.
set -euo pipefail

out=${1:?usage: build-image.sh OUTDIR}
say() { printf 'check-host image: %s\n' "$*"; }
die() { printf 'check-host image: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot)"
for c in debootstrap mkfs.ext4; do
	command -v "$c" >/dev/null || die "$c missing: tests/host/setup-host.sh installs it"
done

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib/debootstrap.sh
. "$top/tests/lib/debootstrap.sh"
deb_mirror
# What a stock Debian 12 hypervisor host runs, plus what the test drives
# it with. vmact's own run-time libraries (its .deb's Depends) are here so
# that dpkg -i needs no network inside the machine.
packages=(
	systemd systemd-sysv libpam-systemd udev dbus kmod procps iproute2 util-linux
	linux-image-amd64 initramfs-tools
	libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
	apparmor bpftool socat nodejs less
	libbpf1 libcurl3-gnutls libjansson4 libmicrohttpd12 libnettle8
	libnl-3-200 libnl-genl-3-200 libseccomp2 libsystemd0 libvirt0
	libwslay1 libxml2
)

mkdir -p "$out"
root=$out/rootfs
# A half-built tree from an interrupted run is unmounted and started over.
deb_unmount "$root"
# The image in use stays until the new one is complete.
rm -rf "$root"
deb_bootstrap "$root" "$out/debootstrap.log" "${packages[@]}"

say "configuring the machine"
echo vmact-host >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 vmact-host\n' >"$root/etc/hosts"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$root/etc/fstab"
# Root logs in on the serial console without a password (a throw-away test
# machine with no network); the run is driven by vmact-check.service.
chroot "$root" passwd -d root >/dev/null
ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
# 9p for the share with the host (the .deb, the test guest, the scripts).
printf '9p\n9pnet\n9pnet_virtio\n' >>"$root/etc/initramfs-tools/modules"
# Nothing that reaches for the network or runs late timers during a test.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
	 man-db.timer dpkg-db-backup.timer; do
	rm -f "$root/etc/systemd/system/timers.target.wants/$u"
done
# libvirt's default network needs dnsmasq and a bridge: not what the test
# guest uses (it has no NIC).
rm -f "$root/etc/libvirt/qemu/networks/autostart/default.xml"

# The run's driver: mounts the host's share and runs its script, with the
# output on the console and in the journal, then powers the machine off.
cat >"$root/etc/systemd/system/vmact-check.service" <<'UNIT'
[Unit]
Description=vmact check-host driver (tests/host/in-vm.sh from the host's share)
After=multi-user.target
ConditionKernelCommandLine=vmact.check=1

[Service]
Type=oneshot
ExecStartPre=/bin/mkdir -p /mnt/host
ExecStartPre=/bin/mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /mnt/host
ExecStart=/bin/bash /mnt/host/in-vm.sh
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/vmact-check.service \
	"$root/etc/systemd/system/multi-user.target.wants/vmact-check.service"

mount -t proc proc "$root/proc"
trap 'umount -l "$root/proc" 2>/dev/null || true' EXIT
# What the README's install section installs, so that it runs in the
# machine without a network: debian/control's Build-Depends (apt-get
# build-dep of a copy of it), then what the section and a clone need.
say "the README's install section's packages: debian/control's build dependencies, dpkg-dev, lintian, git, sudo"
mkdir -p "$root/tmp/vmact-src/debian"
cp "$top/debian/control" "$root/tmp/vmact-src/debian/"
[ -z "${http_proxy:-}" ] || echo "Acquire::http::Proxy \"$http_proxy\";" >"$root/etc/apt/apt.conf.d/90vmact-proxy"
{
	chroot "$root" apt-get update &&
	DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y --no-install-recommends \
		dpkg-dev lintian git sudo build-essential &&
	DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get build-dep -y --no-install-recommends /tmp/vmact-src
} >"$out/build-deps.log" 2>&1 || { tail -n 30 "$out/build-deps.log" >&2; die "installing the build dependencies failed ($out/build-deps.log)"; }
rm -rf "$root/tmp/vmact-src" "$root/etc/apt/apt.conf.d/90vmact-proxy"
chroot "$root" apt-get clean
chroot "$root" update-initramfs -u -k all >"$out/initramfs.log" 2>&1 ||
	{ tail -n 20 "$out/initramfs.log" >&2; die "update-initramfs failed"; }
umount -l "$root/proc"
trap - EXIT

cp -L "$root/vmlinuz" "$out/vmlinuz.new" && mv "$out/vmlinuz.new" "$out/vmlinuz"
cp -L "$root/initrd.img" "$out/initrd.img.new" && mv "$out/initrd.img.new" "$out/initrd.img"
chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' >"$out/packages.txt"
rm -rf "$root/var/cache/apt/archives"/*.deb

say "writing the ext4 image"
rm -f "$out/stamp"
mkfs.ext4 -q -F -L vmact-host -d "$root" "$out/rootfs.img.new" 10G
mv "$out/rootfs.img.new" "$out/rootfs.img"
rm -rf "$root"
cat "$0" "$top/tests/lib/debootstrap.sh" "$top/debian/control" | sha256sum | cut -d' ' -f1 >"$out/stamp"
say "done: $(grep -c . "$out/packages.txt") packages, $(grep '^libvirt-daemon \|^qemu-system-x86 \|^systemd \|^linux-image-amd64 ' "$out/packages.txt" | tr '\n' ' ')"
