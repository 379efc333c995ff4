#!/usr/bin/env bash
# unit-mounts.sh RUNDIR STATEDIR -- PROGRAM [ARG...]: run inside a new mount and UTS
# namespace (unshare --mount --uts), sets up the file system vmactd.service
# gives vmactd, then execs PROGRAM. PID 1 is not systemd on the test hosts;
# this stands in for the unit's mount-namespace options (test_sandbox):
#   ProtectSystem=strict     every mount read-only but /proc, /sys, /dev;
#   ReadWritePaths=          /sys/fs/cgroup and /sys/fs/bpf stay writable;
#   RuntimeDirectory=vmact, StateDirectory=vmact   /run/vmact and
#                            /var/lib/vmact writable: RUNDIR and STATEDIR (the
#                            test's, so that nothing of the host's is used)
#                            bound there (both mount points must exist);
#   ReadOnlyPaths=           /sys (but the two above) and /proc/sys read-only
#                            (the unit's stand-in for ProtectKernelTunables=);
#   ProtectKernelModules=    /usr/lib/modules empty; ProtectKernelLogs=
#                            /proc/kmsg unreadable (and /dev/kmsg gone);
#   ProtectHome=             /home, /root, /run/user empty and read-only;
#   PrivateDevices=          a /dev of null, zero, full, random, urandom,
#                            tty, pts, shm (no disks, no rtc: ProtectClock=);
#   PrivateTmp=              empty /tmp and /var/tmp;
#   ProtectHostname=, PrivateMounts=   the namespaces themselves.
set -euo pipefail
rundir=$1 statedir=$2; shift 2
[ "${1:-}" = -- ] && shift

mount --bind "$rundir" /run/vmact
mount --bind "$statedir" /var/lib/vmact

# PrivateDevices=: the new /dev is built aside, then moved over /dev.
stage=$(mktemp -d /tmp/vmact-dev.XXXXXX)
mount -t tmpfs -o mode=0755,nosuid,noexec tmpfs "$stage"
for n in null zero full random urandom tty; do
	touch "$stage/$n"
	mount --bind "/dev/$n" "$stage/$n"
done
mkdir "$stage/pts" "$stage/shm"
mount --bind /dev/pts "$stage/pts"
ln -s pts/ptmx "$stage/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$stage/shm"
ln -s /proc/self/fd "$stage/fd"
ln -s /proc/self/fd/0 "$stage/stdin"
ln -s /proc/self/fd/1 "$stage/stdout"
ln -s /proc/self/fd/2 "$stage/stderr"
mount --move "$stage" /dev
rmdir "$stage"

# ReadOnlyPaths=/proc/sys, ProtectKernelLogs= on /proc.
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount --bind /dev/null /proc/kmsg

# ProtectSystem=strict, ReadOnlyPaths=/sys: read-only but the
# API file systems, the two writable paths and vmact's directories.
sed 's/^\([^ ]* \)\{4\}\([^ ]*\).*/\2/' /proc/self/mountinfo | sort -u | while read -r mp; do
	case $mp in
	/proc | /proc/* | /dev | /dev/*) continue ;;
	/sys/fs/cgroup | /sys/fs/cgroup/* | /sys/fs/bpf | /sys/fs/bpf/*) continue ;;
	/run/vmact | /var/lib/vmact) continue ;;
	esac
	mount -o remount,bind,ro "$mp" 2>/dev/null || echo "unit-mounts: $mp stays writable" >&2
done

# ProtectKernelModules=, ProtectHome=: empty, read-only.
for d in /usr/lib/modules /home /root /run/user; do
	[ -d "$d" ] && mount -t tmpfs -o ro,mode=0755 tmpfs "$d"
done
# PrivateTmp=
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp
exec "$@"
