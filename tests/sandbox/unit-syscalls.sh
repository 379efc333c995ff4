#!/usr/bin/env bash
# unit-syscalls.sh UNIT: prints, one a line, the system calls a unit's
# SystemCallFilter= lines allow, as systemd reads them: the lines in order,
# the first an allow list (systemd then adds @default), a "~" line taking
# calls away, a later plain line adding them back; groups (@name) expanded
# by this host's systemd (systemd-analyze syscall-filter), so the list the
# sandbox test loads (tests/sandbox/seccomp-exec.c) and the one systemd would load
# cannot drift apart.
set -euo pipefail
unit=$1

declare -A seen=()
expand() { # NAME: prints the calls of a group or the call itself
	local name=$1 line
	case $name in
	@*)
		[ -n "${seen[$name]:-}" ] && return 0
		seen[$name]=1
		local out
		if ! out=$(systemd-analyze syscall-filter "$name"); then
			echo "unit-syscalls: unknown group $name" >&2
			return 1
		fi
		# The first line names the group; comments start with #.
		while read -r line; do
			case $line in "" | \#* | "$name") continue ;; esac
			expand "$line"
		done <<<"$out"
		;;
	*) echo "$name" ;;
	esac
}

declare -A allow=()
first=1
while IFS= read -r value; do
	remove=0
	case $value in "~"*) remove=1; value=${value#\~} ;; esac
	if [ "$first" = 1 ]; then
		first=0
		if [ "$remove" = 1 ]; then
			echo "unit-syscalls: $unit: the first SystemCallFilter= is a deny list" >&2
			exit 1
		fi
		for c in $(seen=(); expand @default); do allow[$c]=1; done
	fi
	for tok in $value; do
		seen=()
		for c in $(expand "$tok"); do
			if [ "$remove" = 1 ]; then unset "allow[$c]"; else allow[$c]=1; fi
		done
	done
done < <(sed -n 's/^SystemCallFilter=//p' "$unit")

if [ "$first" = 1 ]; then
	echo "unit-syscalls: $unit has no SystemCallFilter=" >&2
	exit 1
fi
printf '%s\n' "${!allow[@]}" | sort
