#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# host2.sh up|down: a second privileged libvirtd on this machine ("host B"),
# for the live-migration tests (tests/integration/test_migrate_follow.c,
# doc/testing.md "Two libvirt hosts on one machine"). Root.
#
# libvirt refuses to migrate to a daemon with its own host UUID, and a
# privileged daemon keeps its state at fixed paths (/run/libvirt/qemu/NAME.*,
# /var/lib/libvirt/qemu/domain-ID-NAME) and its QEMUs in fixed cgroups
# (machine/qemu-ID-NAME.libvirt-qemu): while a domain moves both daemons hold
# one of that name. So B runs in mount and cgroup namespaces of its own:
# its own /etc/libvirt (host_uuid set, no domains, networks, pools or
# hooks), /run/libvirt, /var/lib/libvirt/qemu, /var/cache/libvirt,
# /var/log/libvirt and /run/vmact, bound over the real ones, and a cgroup
# "vmact-h2" under every hierarchy as its root. Everything else (/tmp,
# /run/vmact-mig, the guest's kernel) both daemons see alike.
#
#   up    starts B unless it runs; prints its pid (nsenter -t PID -m -C
#         reaches its namespaces) once qemu+unix:///system?socket=
#         /run/vmact-mig/h2/run/libvirt-sock answers. QEMUs a killed run
#         left in B's cgroup are killed first.
#   down  stops B and any QEMU left in its cgroup.
#   restart  SIGKILLs B's libvirtd, as a crash would, and starts it again
#         with its QEMUs left running (libvirt takes them back); prints the
#         new pid as up does.
set -euo pipefail

H=/run/vmact-mig/h2
URI="qemu+unix:///system?socket=$H/run/libvirt-sock"
CG=vmact-h2
UUID=6d1f2a3e-0000-4b00-8000-0000000000b2

die() { echo "host2: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root"

# The cgroup directories B's tree lives in: one per v1 hierarchy, or the
# unified one.
cgroup_dirs() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo /sys/fs/cgroup/$CG
		return
	fi
	for c in /sys/fs/cgroup/*/; do
		c=${c%/}
		[ -e "$c/cgroup.procs" ] && echo "$c/$CG"
	done
}

# Every process left in B's cgroups (QEMUs of a killed daemon).
kill_left() {
	local d pids
	for d in $(cgroup_dirs); do
		[ -d "$d" ] || continue
		pids=$(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
	done
}

running() {
	local pid
	pid=$(cat $H/run/libvirtd.pid 2>/dev/null) || return 1
	kill -0 "$pid" 2>/dev/null && [ "$(readlink /proc/"$pid"/exe)" = /usr/sbin/libvirtd ] &&
		echo "$pid"
}

down() {
	local pid
	if pid=$(running); then
		for name in $(virsh -c "$URI" list --name 2>/dev/null); do
			virsh -c "$URI" destroy "$name" >/dev/null 2>&1 || true
		done
		kill "$pid"
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	kill_left
	rm -f $H/run/libvirtd.pid
	# Its cgroups, emptied (a group goes once its processes have).
	for d in $(cgroup_dirs); do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
}

# B's configuration: A's, less what B must not share.
configure() {
	rm -rf $H/etc
	mkdir -p $H/{etc,run,lib,cache,log,vmact}
	cp -a /etc/libvirt/. $H/etc/
	rm -rf $H/etc/qemu/*.xml $H/etc/qemu/networks $H/etc/qemu/autostart $H/etc/storage \
		$H/etc/secrets $H/etc/hooks $H/etc/nwfilter
	mkdir -p $H/etc/qemu/networks $H/etc/storage $H/etc/hooks
	sed -i '/^[[:space:]]*host_uuid[[:space:]]*=/d' $H/etc/libvirtd.conf
	echo "host_uuid = \"$UUID\"" >>$H/etc/libvirtd.conf
	# Its own QEMU log files rather than a second virtlogd; its own
	# migration ports. (migration_address may not be a loopback address
	# in qemu.conf: the caller passes it with each migration.)
	cat >>$H/etc/qemu.conf <<-'EOF'
		stdio_handler = "file"
		migration_port_min = 49216
		migration_port_max = 49279
	EOF
	# B starts from nothing: no status file of a daemon of an earlier run.
	rm -rf "${H:?}"/run/* "${H:?}"/lib/* "${H:?}"/vmact/*
}

# Runs inside B's new namespaces: the binds, the controllers seen from
# the new cgroup root, then libvirtd through a link named vmact-libvirtd2:
# its process name then is not "libvirtd", so that the `pgrep -x libvirtd`
# that finds A (setup-host.sh, th_restart_libvirtd) never finds B.
inner() {
	mount --bind $H/etc /etc/libvirt
	mount --bind $H/run /run/libvirt
	mount --bind $H/lib /var/lib/libvirt/qemu
	mount --bind $H/cache /var/cache/libvirt
	mount --bind $H/log /var/log/libvirt
	mkdir -p /run/vmact
	mount --bind $H/vmact /run/vmact
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		umount -l /sys/fs/cgroup
		mount -t cgroup2 cgroup2 /sys/fs/cgroup
	else
		local c opts
		for c in /sys/fs/cgroup/*/; do
			c=${c%/}
			opts=$(awk -v m="$c" '$5 == m { print $NF; exit }' /proc/self/mountinfo)
			case $(stat -fc %T "$c") in
			cgroupfs)
				umount -l "$c"
				mount -t cgroup -o "$opts" cgroup "$c"
				;;
			cgroup2fs)
				umount -l "$c"
				mount -t cgroup2 cgroup2 "$c"
				;;
			esac
		done
	fi
	exec $H/vmact-libvirtd2 -p /run/libvirt/libvirtd.pid
}

up() {
	local pid d
	if pid=$(running); then
		echo "$pid"
		return
	fi
	# A restart keeps B's state, as a real libvirtd's restart does: its
	# definitions (etc), its running domains' status files (run, lib).
	# Configuring again wiped them, and a restarted B lost the guest that
	# ran there (test_migrate_torture, 2026-11-29 19:20 and 22:45).
	if [ "${1:-}" != keep ]; then
		kill_left
		configure
	fi
	ln -sfn /usr/sbin/libvirtd $H/vmact-libvirtd2
	for d in $(cgroup_dirs); do
		mkdir -p "$d"
		# A v1 cpuset group takes no task until it has CPUs and nodes.
		if [ -e "$(dirname "$d")/cpuset.cpus" ] && [ ! -e "$(dirname "$d")/cgroup.subtree_control" ]; then
			cat "$(dirname "$d")/cpuset.cpus" >"$d/cpuset.cpus"
			cat "$(dirname "$d")/cpuset.mems" >"$d/cpuset.mems"
		fi
	done
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		# The controllers libvirt uses, delegated to B's root.
		for ctl in cpu cpuset memory pids io; do
			grep -qw $ctl /sys/fs/cgroup/cgroup.controllers &&
				echo "+$ctl" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
		done
	fi
	# Join B's cgroups, then unshare: the new cgroup namespace's root is
	# vmact-h2. setsid: B outlives the caller's session.
	# shellcheck disable=SC2016
	setsid bash -c '
		for d in '"$(cgroup_dirs | tr '\n' ' ')"'; do echo $$ >"$d/cgroup.procs"; done
		exec unshare --mount --cgroup --propagation private bash "$0" inner' "$0" \
		>$H/libvirtd.log 2>&1 </dev/null &
	for _ in $(seq 1 150); do
		if virsh -c "$URI" version >/dev/null 2>&1 && pid=$(running); then
			echo "$pid"
			return
		fi
		sleep 0.2
	done
	tail -20 $H/libvirtd.log >&2 || true
	die "libvirtd B did not answer on $URI within 30 s (its log: $H/libvirtd.log)"
}

case ${1:-} in
up) up ;;
restart)
	if pid=$(running); then
		kill -9 "$pid"
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	fi
	up keep
	;;
down) down ;;
inner) inner ;;
*) die "usage: host2.sh up|restart|down" ;;
esac
