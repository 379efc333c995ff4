#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build-node-image.sh OUT KUBELET: the node image of make check-k8s, a
# Debian 12 machine from Debian's packages (systemd, cgroup v2, containerd
# and runc, the CNI plugins) with the kubelet and kubeadm given (tests/k8s/
# build-bins.sh: kubeadm from the kubelet's directory) and vmact-node (make
# install-node), as an operator's node image would be (README, "A node
# image"): its kubelet.service laid out as kubeadm's packages lay it out, so
# that one image joins by a claim's kubeconfig or by kubeadm join. No TCG:
# the tree is made in a chroot here. Two stages, each kept while its inputs
# stay the same: the root file system (this script's stage 1 block,
# tests/lib/debootstrap.sh), then the image (this script, the binaries,
# vmact-node and its units).
# Writes OUT/node.qcow2 (3 GiB virtual), OUT/vmlinuz, OUT/initrd.img.
# Usage (root): tests/k8s/build-node-image.sh OUT KUBELET [BUILD]
# (KUBELET "-": the first stage alone.)
set -euo pipefail

out=${1:?usage: build-node-image.sh OUT KUBELET [BUILD]}
kubelet=${2:?usage: build-node-image.sh OUT KUBELET [BUILD]}
say() { printf 'node image: %s\n' "$*"; }
die() { printf 'node image: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot)"
for c in debootstrap mkfs.ext4 qemu-img; do
	command -v "$c" >/dev/null || die "$c missing: tests/host/setup-host.sh installs it"
done
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${3:-$top/build}
# shellcheck source=tests/lib/debootstrap.sh
. "$top/tests/lib/debootstrap.sh"

packages=(
	systemd systemd-sysv udev dbus kmod iproute2 util-linux mount procps ca-certificates
	linux-image-cloud-amd64 initramfs-tools
	containerd runc containernetworking-plugins
	libjansson4 libsystemd0
)
mkdir -p "$out"
base=$out/rootfs-base
stamp1=$( (sed -n '/^# stage 1 {/,/^# } stage 1/p' "$0"; cat "$top/tests/lib/debootstrap.sh") |
	sha256sum | cut -d' ' -f1)

# stage 1 {
if [ "$(cat "$base.stamp" 2>/dev/null)" != "$stamp1" ] || [ ! -d "$base" ]; then
	deb_mirror
	deb_unmount "$base"
	rm -rf "$base" "$base.stamp"
	deb_bootstrap "$base" "$out/debootstrap.log" "${packages[@]}"
	say "configuring the machine"
	echo vmact-node >"$base/etc/hostname"
	printf '127.0.0.1 localhost\n' >"$base/etc/hosts"
	printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$base/etc/fstab"
	chroot "$base" passwd -d root >/dev/null
	ln -sf /lib/systemd/system/multi-user.target "$base/etc/systemd/system/default.target"
	# QEMU's user network, without waiting for DHCP: the guest is
	# 10.0.2.15, the host's loopback is 10.0.2.2, its DNS 10.0.2.3.
	mkdir -p "$base/etc/systemd/network"
	printf '[Match]\nName=en* eth*\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\nDNS=10.0.2.3\n' \
		>"$base/etc/systemd/network/10-user.network"
	ln -sf /lib/systemd/system/systemd-networkd.service \
		"$base/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
	rm -f "$base/etc/resolv.conf"
	echo 'nameserver 10.0.2.3' >"$base/etc/resolv.conf"
	# Nothing that reaches for the network or runs late timers; the
	# console is the health check's line, no getty on it.
	for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
		 man-db.timer dpkg-db-backup.timer; do
		rm -f "$base/etc/systemd/system/timers.target.wants/$u"
	done
	ln -sf /dev/null "$base/etc/systemd/system/serial-getty@ttyS0.service"
	ln -sf /dev/null "$base/etc/systemd/system/systemd-timesyncd.service"
	# containerd with systemd's cgroups, the CNI plugins where Debian puts
	# them.
	mkdir -p "$base/etc/containerd" "$base/etc/cni/net.d" "$base/etc/kubernetes"
	cat >"$base/etc/containerd/config.toml" <<'TOML'
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "/etc/cni/net.d"
TOML
	# A point-to-point network without a bridge or iptables: enough for
	# the runtime's network to be ready, and so the Node.
	cat >"$base/etc/cni/net.d/10-vmact.conflist" <<'JSON'
{"cniVersion": "1.0.0", "name": "vmact", "plugins": [
 {"type": "ptp", "ipMasq": false, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]]}},
 {"type": "loopback"}]}
JSON
	mount -t proc proc "$base/proc"
	trap 'umount -l "$base/proc" 2>/dev/null || true' EXIT
	chroot "$base" update-initramfs -u -k all >"$out/initramfs.log" 2>&1 ||
		{ tail -n 20 "$out/initramfs.log" >&2; die "update-initramfs failed"; }
	umount -l "$base/proc"
	trap - EXIT
	chroot "$base" apt-get clean
	chroot "$base" dpkg-query -W -f='${Package} ${Version}\n' >"$out/packages.txt"
	echo "$stamp1" >"$base.stamp"
fi
# } stage 1

# KUBELET "-": the base alone (made while the kubelet compiles).
[ "$kubelet" != - ] || { say "base up to date ($base)"; exit 0; }
[ -x "$kubelet" ] || die "no kubelet at $kubelet (tests/k8s/build-bins.sh)"
kubeadm=$(dirname "$kubelet")/kubeadm
[ -x "$kubeadm" ] || die "no kubeadm at $kubeadm (tests/k8s/build-bins.sh)"
# The image: the base, the kubelet, kubeadm and vmact-node.
stamp2=$( (echo "$stamp1"; cat "$0"; sha256sum <"$kubelet"; sha256sum <"$kubeadm";
	sha256sum <"$build/vmact-node";
	cat "$top/node/vmact-node.service" "$top/node/kubelet-vmact-node.conf") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp2" ] && [ -f "$out/node.qcow2" ]; then
	say "up to date ($out)"
	exit 0
fi
root=$out/rootfs
rm -rf "$root"
cp -a "$base" "$root"
install -m 0755 "$kubelet" "$root/usr/bin/kubelet"
install -m 0755 "$kubeadm" "$root/usr/bin/kubeadm"
# The kubelet's configuration where kubeadm keeps it (a join by kubeadm
# replaces it with the cluster's), and its unit laid out as kubeadm's
# packages lay it out: the flags in a drop-in, from variables that kubeadm's
# files (kubeadm-flags.env) and vmact-node's (20-vmact-node.conf) set.
mkdir -p "$root/var/lib/kubelet" "$root/etc/systemd/system/kubelet.service.d"
cat >"$root/var/lib/kubelet/config.yaml" <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
authorization: {mode: Webhook}
readOnlyPort: 0
rotateCertificates: false
resolvConf: /etc/resolv.conf
YAML
# Started by vmact-node (or kubeadm join) at the claim, never at boot
# (vmact-node's drop-in's ConditionPathExists keeps it from starting before).
cat >"$root/etc/systemd/system/kubelet.service" <<'UNIT'
[Unit]
Description=kubelet
After=containerd.service
Wants=containerd.service

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
RestartSec=2
UNIT
cat >"$root/etc/systemd/system/kubelet.service.d/10-kubeadm.conf" <<'UNIT'
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
UNIT
make -s -C "$top" install-node BUILD="$build" DESTDIR="$root" PREFIX=/usr UNITDIR=/lib/systemd/system
ln -sf /lib/systemd/system/vmact-node.service \
	"$root/etc/systemd/system/multi-user.target.wants/vmact-node.service"
# A claimed node's state never ships in the image (vmact-node(8)).
[ ! -e "$root/var/lib/vmact-node/claim.json" ] || die "the image holds a claim"
cp -L "$root/vmlinuz" "$out/vmlinuz.new" && mv "$out/vmlinuz.new" "$out/vmlinuz"
cp -L "$root/initrd.img" "$out/initrd.img.new" && mv "$out/initrd.img.new" "$out/initrd.img"
rm -f "$out/stamp"
mkfs.ext4 -q -F -L vmact-node -d "$root" "$out/node.raw" 3G
qemu-img convert -O qcow2 "$out/node.raw" "$out/node.qcow2.new"
mv "$out/node.qcow2.new" "$out/node.qcow2"
rm -rf "$root" "$out/node.raw"
chmod 0644 "$out/node.qcow2" "$out/vmlinuz" "$out/initrd.img"
echo "$stamp2" >"$out/stamp"
say "done: $out/node.qcow2 ($(du -h "$out/node.qcow2" | cut -f1) used of 3 GiB)"
