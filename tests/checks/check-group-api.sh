#!/usr/bin/env bash
# check-group-api.sh: vmact-groupd's API has one codec (shared/group-api.c,
# doc/ARCHITECTURE.md). The files of its three programs that speak the API
# (Kbuild's group-api-users-y: vmact-groupd's routes, vmact-cloudprovider,
# vmact-groupctl) build and read no JSON field by name and write no API
# path of their own: no json_object_get/set/del, json_pack/unpack, and no
# "/v1/" literal; the codec's types, encoders, decoders and paths do it. A
# planted field read in cloudprovider/ must be refused, so the check is
# known to see.
set -euo pipefail
cd "$(dirname "$0")/../.."
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "print-$1"; }

by_name='\bjson_(object_(get|set|set_new|set_nocheck|set_new_nocheck|del)|pack|pack_ex|unpack|unpack_ex|vpack_ex|vunpack_ex)[[:space:]]*\('
path='"/v1/'

# offenders FILE...: FILE:LINE: text of each hit.
offenders() {
	grep -nHE "$by_name|$path" "$@" || true
}

users=$(mk group-api-users-y)
[ -n "$users" ] || { echo "check-group-api: Kbuild's group-api-users-y is empty"; exit 1; }
mapfile -t files < <(git ls-files -co --exclude-standard $(for u in $users; do echo "$u"; done) |
	grep -E '\.[ch]$')
[ ${#files[@]} -gt 0 ] || { echo "check-group-api: no file in $users"; exit 1; }
if ! grep -qE "$by_name" shared/group-api.c; then
	echo "check-group-api: shared/group-api.c builds no JSON: the codec is not where this check thinks"
	exit 1
fi
bad=$(offenders "${files[@]}")
if [ -n "$bad" ]; then
	echo "check-group-api: these lines name a field or a path of vmact-groupd's API outside its codec"
	echo "(shared/group-api.h: its types, encoders, decoders and paths):"
	printf '  %s\n' "$bad"
	exit 1
fi
tmp=cloudprovider/.check-group-api-planted.c
trap 'rm -f "$tmp"' EXIT
printf 'static int t(json_t *d) { return json_integer_value(json_object_get(d, "target")); }\n' >"$tmp"
if [ -z "$(offenders "$tmp")" ]; then
	echo "check-group-api: a planted json_object_get in cloudprovider/ was accepted: the check is blind"
	exit 1
fi
echo "check-group-api: ${#files[@]} files of $(echo $users | tr ' ' ',') speak vmact-groupd's API through shared/group-api.h alone"
