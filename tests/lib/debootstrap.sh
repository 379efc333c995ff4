# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that build a Debian 12 machine from Debian's
# packages (tests/host/build-image.sh, make check-host's host;
# tests/k8s/build-node-image.sh, the node VMs of make check-k8s): the
# host's own Debian mirror and apt proxy, and debootstrap with retries.
# Each script defines say and die first.

DEB_SUITE=bookworm

# deb_mirror: the host's mirror of Debian's main archive for the suite, as
# apt reads its sources (sources.list or deb822 .sources, a local mirror
# or proxy included), or VMACT_HOST_MIRROR; exports http_proxy when apt
# names a proxy.
deb_mirror() {
	local m p
	m=${VMACT_HOST_MIRROR:-$(apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(LABEL) $(COMPONENT)' \
		'Identifier: Packages' 2>/dev/null | awk -v s="$DEB_SUITE" '$2 == s && $3 == "Debian" && $4 == "main" { print $1; exit }')}
	[ -n "$m" ] || die "no $DEB_SUITE main of Debian in the host's apt sources (apt-get indextargets; apt-get update first?); VMACT_HOST_MIRROR names one"
	p=$(apt-config shell p Acquire::http::Proxy | sed -n "s/^p='\(.*\)'$/\1/p")
	if [ -n "$p" ] && [ "$p" != DIRECT ]; then export http_proxy=$p; fi
	DEB_MIRROR=$m
}

# deb_unmount ROOT: what a chroot of an interrupted run left mounted.
deb_unmount() {
	local m
	for m in proc sys dev/pts dev; do
		mountpoint -q "$1/$m" 2>/dev/null && umount -l "$1/$m"
	done
	return 0
}

# deb_bootstrap ROOT LOG PACKAGE...: a minimal bookworm with the packages,
# from deb_mirror's mirror; twice, since a mirror that fails a download
# once is no reason to stop.
deb_bootstrap() {
	local root=$1 log=$2 try
	shift 2
	say "debootstrap $DEB_SUITE from $DEB_MIRROR (a few minutes)"
	for try in 1 2; do
		rm -rf "$root"
		debootstrap --variant=minbase --include="$(IFS=,; echo "$*")" \
			"$DEB_SUITE" "$root" "$DEB_MIRROR" >"$log" 2>&1 && return 0
		[ "$try" = 2 ] && { tail -n 30 "$log" >&2; die "debootstrap failed ($log)"; }
		say "debootstrap failed; once more"
	done
}
