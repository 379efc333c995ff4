#!/usr/bin/env bash
# Refuses #include lines that go against vmact's layering: each argument is
# COMPONENT=ALLOWED,ALLOWED,... (the Makefile's layers-* lists); a component
# may include its own headers and those of the components it names, nothing
# else of vmact. --root DIR checks another tree (the test of this script).
set -u
root=.
if [ "${1:-}" = --root ]; then root=$2; shift 2; fi

declare -A allowed
comps=()
for spec in "$@"; do
	c=${spec%%=*}
	comps+=("$c")
	allowed[$c]=" $c $(echo "${spec#*=}" | tr , ' ') "
done

bad=0
for c in "${comps[@]}"; do
	[ -d "$root/$c" ] || continue
	while IFS= read -r hit; do
		file=${hit%%:*}
		rest=${hit#*:}; line=${rest%%:*}
		inc=$(printf '%s' "$hit" | sed -n 's/.*#[[:space:]]*include[[:space:]]*"\([^"/]*\)\/.*/\1/p')
		[ -n "$inc" ] || continue
		case " ${comps[*]} " in *" $inc "*) ;; *) continue ;; esac
		case "${allowed[$c]}" in
		*" $inc "*) ;;
		*)
			printf 'check-layers: %s:%s: %s includes %s/, which is not below it (%s may use:%s)\n' \
				"${file#"$root"/}" "$line" "$c" "$inc" "$c" "${allowed[$c]% }" >&2
			bad=1
			;;
		esac
	done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' --include='*.c' --include='*.h' "$root/$c")
done
if [ $bad -ne 0 ]; then
	echo "check-layers: FAILED (layering: base <- {agent-glue, hotplug, bpf} <- actuator)" >&2
	exit 1
fi
echo "check-layers: ok"
