#!/usr/bin/env bash
# Prepares a Debian 12 host for building and testing vmact: packages,
# libvirt daemons, bpffs, the npm test peer. Idempotent and quick when
# everything is already in place. Needs root.
set -euo pipefail

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (installs packages, starts libvirtd, mounts bpffs)"

top=$(cd "$(dirname "$0")/../.." && pwd)

# Build and test dependencies (Debian package names).
packages=(
	make gcc pkg-config clang llvm libclang-rt-14-dev clang-format
	libvirt-dev libjansson-dev libxml2-dev libcurl4-gnutls-dev libmicrohttpd-dev
	libwslay-dev libsystemd-dev libnl-3-dev libnl-genl-3-dev libbpf-dev bpftool
	libcmocka-dev nettle-dev
	libseccomp-dev systemd util-linux
	libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
	busybox-static binutils cpio xz-utils zstd curl procps iproute2 libbpf-tools
	# qemu-ga and its libraries go into the test guest's initramfs
	# (tests/guest/build-guest.sh: vmact-groupd's agent health check)
	qemu-guest-agent
	nodejs npm
	prometheus
	# make demo's plot (demo/vmact-demo.sh: vmactl --json through jq, gnuplot's
	# PNG); check-monitoring reads the Grafana dashboard with jq
	gnuplot-nox jq
	# the Cockpit page (cockpit/) and its test in a real browser (make check-ui)
	cockpit-ws cockpit-bridge chromium
	tmux
	# virt-xml: vmactl check --fix prints its commands, which
	# test_operator applies to a real domain
	virtinst
	# man(1) and groff render the manual pages in tests/checks/check-install.sh
	man-db
	socat
	# vmact-cloudprovider: gRPC core, protobuf-c and its compiler, the
	# well-known types' .proto files; openssl makes the mTLS tests' keys
	libgrpc-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev openssl
	# make deb (debian/; lintian checks its packages) and make check-host's
	# Debian 12 image (tests/host/)
	debhelper dpkg-dev lintian debootstrap e2fsprogs
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
# A node from outside Debian (already on PATH) is as good as Debian's.
if command -v node >/dev/null && command -v npm >/dev/null; then
	keep=()
	for p in "${missing[@]}"; do
		case "$p" in nodejs|npm) ;; *) keep+=("$p") ;; esac
	done
	missing=("${keep[@]+"${keep[@]}"}")
fi
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# libvirt runs QEMU as libvirt-qemu; the package normally creates it.
if ! getent passwd libvirt-qemu >/dev/null; then
	say "creating user libvirt-qemu"
	getent group kvm >/dev/null || groupadd --system kvm
	useradd --system --no-create-home --home-dir /var/lib/libvirt --gid kvm \
		--shell /usr/sbin/nologin libvirt-qemu
fi

# vmactd's guest workers (doc/privsep.md) run as the system user vmact;
# without it they fall back to nobody, which other daemons share.
if ! getent passwd vmact >/dev/null; then
	say "creating user vmact (guest workers)"
	useradd --system --no-create-home --home-dir / --user-group \
		--shell /usr/sbin/nologin vmact
fi

# The cluster layer (vmact-groupd, doc/cluster.md) runs as the system user
# vmact-cluster, in libvirt's group, with a home for its qemu:///session
# (the second host of the cluster tests).
if ! getent passwd vmact-cluster >/dev/null; then
	say "creating user vmact-cluster (node groups)"
	getent group libvirt >/dev/null || groupadd --system libvirt
	useradd --system --create-home --home-dir /var/lib/vmact-cluster --user-group \
		--groups libvirt --shell /usr/sbin/nologin vmact-cluster
fi
id -nG vmact-cluster | grep -qw libvirt || usermod -a -G libvirt vmact-cluster

# libvirt's group reaches qemu:///system through polkit, which needs the
# system D-Bus. Without one (no systemd here), give the read-write socket
# to group libvirt instead, as libvirtd.conf documents; libvirtd reads
# this at start, so a running one is restarted once, when it changes.
libvirt_conf_changed=0
if [ ! -S /run/dbus/system_bus_socket ]; then
	conf=/etc/libvirt/libvirtd.conf
	for kv in 'unix_sock_group = "libvirt"' 'unix_sock_rw_perms = "0770"' 'auth_unix_rw = "none"'; do
		if ! grep -qxF "$kv" "$conf"; then
			say "libvirtd.conf: $kv"
			printf '%s\n' "$kv" >> "$conf"
			libvirt_conf_changed=1
		fi
	done
fi

# Without udev /dev/kvm stays root-only. libvirt probes QEMU with KVM as
# root but then finds KVM unusable for libvirt-qemu, declares its capability
# cache stale and re-probes QEMU on every domain start (~50 s per start
# here). Debian's udev rule gives it to group kvm; do the same.
if [ -c /dev/kvm ] && [ "$(stat -c %G:%a /dev/kvm)" != kvm:660 ]; then
	say "giving /dev/kvm to group kvm (as udev would)"
	getent group kvm >/dev/null || groupadd --system kvm
	chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
fi

# Starts a daemon that detaches itself with none of our descriptors but
# the standard streams: one inherited from whoever runs this script (a lock
# taken with flock(1), say) would stay open as long as the daemon runs.
start_daemon() {
	(
		for fd in /proc/"$BASHPID"/fd/*; do
			fd=${fd##*/}
			if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
		done
		exec "$@"
	)
}

# Daemons: through systemd when it runs the machine, by hand otherwise.
if [ -d /run/systemd/system ]; then
	systemctl start virtlogd.socket libvirtd.socket libvirtd.service 2>/dev/null ||
		systemctl start virtlogd libvirtd
	[ "$libvirt_conf_changed" = 1 ] && systemctl restart libvirtd
else
	# -u root: the system daemons, not a user's session ones
	# (vmact-cluster's qemu:///session runs its own of both).
	if ! pgrep -x -u root virtlogd >/dev/null; then
		say "starting virtlogd"
		start_daemon virtlogd -d
	fi
	pid=$(pgrep -x -u root libvirtd || true)
	if [ -n "$pid" ] && [ "$libvirt_conf_changed" = 1 ]; then
		say "restarting libvirtd (libvirtd.conf changed)"
		kill "$pid"
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		pid=
	fi
	if [ -z "$pid" ]; then
		say "starting libvirtd"
		start_daemon libvirtd -d
	fi
fi
for _ in $(seq 1 50); do
	virsh -c qemu:///system version >/dev/null 2>&1 && break
	sleep 0.2
done
virsh -c qemu:///system version >/dev/null 2>&1 || die "libvirtd does not answer on qemu:///system"

# bpffs for pinned maps.
if ! mountpoint -q /sys/fs/bpf; then
	say "mounting bpffs on /sys/fs/bpf"
	mkdir -p /sys/fs/bpf
	mount -t bpf bpf /sys/fs/bpf
fi

# npm packages for the independent protocol peers (tests/peers), installed
# under build/ so the source tree stays clean.
if [ -f "$top/tests/peers/package.json" ]; then
	npmdir="$top/build/npm"
	if ! cmp -s "$top/tests/peers/package.json" "$npmdir/package.json" ||
	   [ ! -d "$npmdir/node_modules" ]; then
		say "installing npm packages for test peers"
		mkdir -p "$npmdir"
		cp "$top/tests/peers/package.json" "$npmdir/package.json"
		[ -f "$top/tests/peers/package-lock.json" ] && cp "$top/tests/peers/package-lock.json" "$npmdir/"
		(cd "$npmdir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
	fi
fi

# Go modules of the upstream peers (tests/peers/kube, make check-upstream):
# each module's pinned dependencies into Go's own module cache, where the
# later builds find them (GOMODCACHE, GOCACHE: Go's defaults).
if command -v go >/dev/null 2>&1; then
	for mod in "$top"/tests/peers/kube/*/; do
		[ -f "$mod/go.mod" ] || continue
		say "go mod download in ${mod#"$top"/}"
		(cd "$mod" && go mod download) || die "go mod download failed in $mod"
	done
else
	die "go not found: make check-upstream needs Go (1.26 or newer)"
fi

say "host ready"
