#!/usr/bin/env bash
# Refuses #include lines that go against vmact's layering: each argument is
# COMPONENT=ALLOWED,ALLOWED,... (the Makefile's layers-* lists). A component
# is a directory, at the top (base, net) or below it (actuator/policy,
# agent-glue/codec); a file belongs to the deepest component holding it, and
# an included "dir/.../x.h" to the deepest component that is a prefix of its
# path. A component may include its own headers and those of the components
# it names, nothing else of vmact. An argument +main=DIR/FILE names a
# program's main() in a directory that holds only mains and sub-layers
# (cluster/): any other source file at DIR's top is refused. --root DIR
# checks another tree (the test of this script).
set -u
root=.
if [ "${1:-}" = --root ]; then root=$2; shift 2; fi

declare -A allowed
declare -A mains
comps=()
for spec in "$@"; do
	case "$spec" in
	+main=*)
		m=${spec#+main=}
		mains[${m%/*}]+=" ${m##*/} "
		continue
		;;
	esac
	c=${spec%%=*}
	comps+=("$c")
	allowed[$c]=" $c $(echo "${spec#*=}" | tr , ' ') "
done

# The deepest component that is a prefix of path $1 (relative to the top),
# or nothing.
owner() {
	local best="" c
	for c in "${comps[@]}"; do
		case "$1" in
		"$c"/*) [ ${#c} -gt ${#best} ] && best=$c ;;
		esac
	done
	printf '%s' "$best"
}

bad=0
for c in "${comps[@]}"; do
	[ -d "$root/$c" ] || continue
	while IFS= read -r hit; do
		file=${hit%%:*}
		rel=${file#"$root"/}
		[ "$(owner "$rel")" = "$c" ] || continue
		rest=${hit#*:}; line=${rest%%:*}
		path=$(printf '%s' "$hit" | sed -n 's/.*#[[:space:]]*include[[:space:]]*"\([^"]*\/[^"]*\)".*/\1/p')
		[ -n "$path" ] || continue
		inc=$(owner "$path")
		[ -n "$inc" ] || continue
		case "${allowed[$c]}" in
		*" $inc "*) ;;
		*)
			printf 'check-layers: %s:%s: %s includes %s/, which is not below it (%s may use:%s)\n' \
				"$rel" "$line" "$c" "$inc" "$c" "${allowed[$c]% }" >&2
			bad=1
			;;
		esac
	done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' --include='*.c' --include='*.h' "$root/$c")
done
# The directories of mains: no source at their top but the mains.
for d in "${!mains[@]}"; do
	for f in "$root/$d"/*.c "$root/$d"/*.h; do
		[ -e "$f" ] || continue
		case "${mains[$d]}" in
		*" ${f##*/} "*) ;;
		*)
			printf 'check-layers: %s: %s/ holds only its program'"'"'s main (%s) and sub-layers: this file belongs in one of them\n' \
				"${f#"$root"/}" "$d" "$(echo ${mains[$d]})" >&2
			bad=1
			;;
		esac
	done
done
if [ $bad -ne 0 ]; then
	echo "check-layers: FAILED (the layers and their rules: doc/ARCHITECTURE.md)" >&2
	exit 1
fi
echo "check-layers: ok"
