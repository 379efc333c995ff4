#!/usr/bin/env bash
# check-logging.sh: only the edge logs (doc/CODING_STYLE.md, "Errors").
# A file may include base/log.h only if it is a program's main() file (one
# named in a <program>-objs list of Kbuild) or lies in a directory Kbuild's
# log-edge-y names; everything else returns its errors to its caller. A
# planted include in base/ must be refused, so the check is known to see.
set -euo pipefail
cd "$(dirname "$0")/../.."
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "print-$1"; }

edge=$(mk log-edge-y)
mains=$(for p in $(mk progs-y) $(mk tools-y); do mk "$p-objs"; done | tr ' ' '\n' | sed 's/\.o$/.c/')

# offenders FILE...: those that include base/log.h without being allowed to.
offenders() {
	local f d ok
	for f in "$@"; do
		grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"base/log\.h"' "$f" || continue
		ok=0
		for d in $edge; do
			case "$f" in "$d"/*) ok=1 ;; esac
		done
		grep -qxF "$f" <<<"$mains" && ok=1
		[ $ok -eq 1 ] || echo "$f"
	done
}

mapfile -t files < <(git ls-files '*.c' '*.h' | grep -vE '^(tests|bench|base/log\.)')
bad=$(offenders "${files[@]}")
if [ -n "$bad" ]; then
	echo "check-logging: these files log, but only the edge does (Kbuild log-edge-y, programs' mains):"
	printf '  %s\n' $bad
	exit 1
fi
tmp=base/.check-logging-planted.c
trap 'rm -f "$tmp"' EXIT
printf '#include "base/log.h"\n' >"$tmp"
if [ -z "$(offenders "$tmp")" ]; then
	echo "check-logging: a planted base/log.h include in base/ was accepted: the check is blind"
	exit 1
fi
echo "check-logging: ${#files[@]} files; only $(echo $edge | tr ' ' ',') and the programs' mains log"
