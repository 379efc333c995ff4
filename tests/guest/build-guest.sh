#!/usr/bin/env bash
# Builds vmact's test guest from Debian packages only:
#   OUT/vmlinuz     the Debian cloud kernel (linux-image-*-cloud-amd64)
#   OUT/initrd.img  a busybox-static initramfs (tests/guest/init, with
#                   cpu-online and mem-load built static) carrying
#                   the virtio-mem/virtio-pci/virtio-balloon/virtio-console
#                   modules of that same kernel (the balloon only for its
#                   memory statistics, the console for vmact-groupd's claim)
#                   and Debian's own qemu-ga (qemu-guest-agent) with the
#                   shared libraries and ELF interpreter ldd names: the
#                   real agent behind vmact-groupd's "agent" health check
#                   (doc/cluster.md). init starts it only when the domain
#                   has the org.qemu.guest_agent.0 port: other guests
#                   start nothing more; it adds about 2.9 MiB to the
#                   gzipped initramfs (2.0 -> 4.9 MB), which here (TCG)
#                   costs a boot about 0.2-0.3 s of unpacking (to "VMACT
#                   ready" in 2.0-2.3 s before, 2.2-2.6 s after).
#   OUT/node-base.qcow2  an empty 64 MiB qcow2 disk: the base image of the
#                   node groups' copy-on-write overlays (doc/cluster.md; the
#                   guest runs from its initramfs and leaves the disk alone)
#   OUT/stamp       the kernel version, written last; its presence means done
# Usage: build-guest.sh OUT_DIR. Quick no-op when OUT/stamp is newer than
# this script, init, the two programs and qemu-ga. Needs apt-get (download only), dpkg-deb, objcopy,
# cpio, busybox-static, qemu-guest-agent.
set -euo pipefail

die() { printf 'build-guest: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'build-guest: %s\n' "$*"; }

[ $# -eq 1 ] || die "usage: $0 OUT_DIR"
out=$1
here=$(cd "$(dirname "$0")" && pwd)

if [ -f "$out/stamp" ] && [ "$out/stamp" -nt "$here/build-guest.sh" ] &&
   [ "$out/stamp" -nt "$here/init" ] && [ "$out/stamp" -nt "$here/cpu-online.c" ] &&
   [ "$out/stamp" -nt "$here/mem-load.c" ] && [ "$out/stamp" -nt /usr/sbin/qemu-ga ]; then
	exit 0
fi

for t in apt-get apt-cache dpkg-deb objcopy cpio gzip qemu-img ldd; do
	command -v "$t" >/dev/null || die "$t not found (run tests/host/setup-host.sh)"
done
bb=/bin/busybox
[ -x "$bb" ] && file_is_static=$(ldd "$bb" 2>&1 || true)
case "${file_is_static:-}" in
*"not a dynamic"*|*"statically linked"*) ;;
*) die "$bb is missing or not static (install busybox-static)" ;;
esac
qga=/usr/sbin/qemu-ga
[ -x "$qga" ] || die "$qga is missing (install qemu-guest-agent)"

# The meta-package names the current ABI; download the concrete image so
# the guest kernel follows Debian point releases without edits here.
meta=linux-image-cloud-amd64
find_pkg() {
	apt-cache depends "$meta" 2>/dev/null |
		awk '/Depends: linux-image-[0-9].*-cloud-amd64$/ {print $2; exit}'
}
pkg=$(find_pkg)
if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
	# A fresh machine may have no package lists yet.
	apt-get update -qq
	pkg=$(find_pkg)
fi
[ -n "$pkg" ] || die "apt-cache does not know $meta (run apt-get update)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "downloading $pkg"
# apt drops privileges to _apt for the download; the temporary directory
# must be writable for it, otherwise it warns and downloads as root.
chmod 0777 "$work"
(cd "$work" && apt-get download -q "$pkg" >/dev/null) ||
	die "apt-get download $pkg failed"
dpkg-deb -x "$work"/"$pkg"_*.deb "$work/pkg"
kver=$(ls "$work/pkg/lib/modules")
moddir="$work/pkg/lib/modules/$kver"
[ -f "$work/pkg/boot/vmlinuz-$kver" ] || die "no vmlinuz in $pkg"

# Module closure of what the init loads, ordered so that dependencies come
# first; dependencies come from each module's own .modinfo (the package
# ships no modules.dep: depmod runs at install time).
declare -A path seen
while IFS= read -r ko; do
	path[$(basename "$ko" .ko)]=$ko
done < <(find "$moddir/kernel" -name '*.ko')
order=()
visit() {
	local m=$1 d deps
	[ -n "${seen[$m]:-}" ] && return
	seen[$m]=1
	[ -n "${path[$m]:-}" ] || die "module $m not in $pkg"
	deps=$(objcopy -O binary --only-section=.modinfo "${path[$m]}" /dev/stdout |
		tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' ')
	for d in $deps; do visit "$d"; done
	order+=("$m")
}
for m in virtio_pci virtio_mem virtio_balloon virtio_console virtio_blk; do visit "$m"; done

root="$work/root"
mkdir -p "$root"/{bin,dev,proc,sys,run,tmp,lib/modules}
cp "$bb" "$root/bin/busybox"
for a in sh mount echo cat sleep usleep dd grep insmod stty kill seq mkfifo rm ln mkdir; do
	ln -s busybox "$root/bin/$a"
done
for m in "${order[@]}"; do
	cp "${path[$m]}" "$root/lib/modules/$m.ko"
	echo "$m" >> "$root/lib/modules/load-order"
done
install -m 0755 "$here/init" "$root/init"
# qemu-ga is dynamic (glib): the host's own libraries go in at the paths
# ldd resolves them to, and the interpreter at the path the ELF header
# names (/lib64/...), so the guest's loader finds them without a cache.
mkdir -p "$root/usr/sbin"
cp "$qga" "$root/usr/sbin/qemu-ga"
while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done < <(ldd "$qga" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
[ -n "$(ls "$root"/lib64/ld-linux-* 2>/dev/null)" ] ||
	die "no ELF interpreter for qemu-ga from ldd"
# The guest's udev: onlines hot-plugged vCPUs as the kernel announces them.
${CC:-gcc} -static -O2 -Wall -Wextra -Werror -o "$root/bin/cpu-online" "$here/cpu-online.c" ||
	die "cannot build cpu-online (static glibc: libc6-dev)"
# The guest's memory load ("alloc N [RATE]", "free").
${CC:-gcc} -static -O2 -Wall -Wextra -Werror -o "$root/bin/mem-load" "$here/mem-load.c" ||
	die "cannot build mem-load (static glibc: libc6-dev)"

mkdir -p "$out"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$out/initrd.img.tmp"
cp "$work/pkg/boot/vmlinuz-$kver" "$out/vmlinuz.tmp"
qemu-img create -q -f qcow2 "$out/node-base.qcow2.tmp" 64M
mv "$out/node-base.qcow2.tmp" "$out/node-base.qcow2"
mv "$out/initrd.img.tmp" "$out/initrd.img"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
# The QEMU process (user libvirt-qemu) reads both files.
chmod 0644 "$out/vmlinuz" "$out/initrd.img" "$out/node-base.qcow2"
echo "$kver" > "$out/stamp"
say "guest ready in $out (kernel $kver, modules: ${order[*]})"
