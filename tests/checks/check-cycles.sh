#!/usr/bin/env bash
# check-cycles.sh: no two files of vmact call each other, directly or
# round a longer loop (doc/ARCHITECTURE.md, "How the rules are checked").
# An edge A -> B means A's object references a symbol B's object defines;
# tsort(1) finds the loops. The layers' own order is checked by check-layers.sh and the link;
# this is the same rule at the grain of files, inside a layer too. As a
# control, a planted pair of objects that call each other must be refused.
# VMACT_BUILD: the build directory (make check passes build/san).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${VMACT_BUILD:-build}
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "BUILD=$build" "print-$1"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# edges OBJECT...: "A B" lines, paths relative to the build directory.
edges() {
	local o s
	declare -A def=()
	for o in "$@"; do
		for s in $(nm --defined-only -g "$o" | awk 'NF == 3 { print $3 }'); do def[$s]=$o; done
	done
	for o in "$@"; do
		for s in $(nm -u "$o" | awk '{ print $2 }'); do
			local d=${def[$s]:-}
			if [ -n "$d" ] && [ "$d" != "$o" ]; then echo "${o#"$build"/} ${d#"$build"/}"; fi
		done
	done | sort -u
}

loops() { # EDGES-FILE: the loops tsort reports, one object a line
	tsort "$1" 2>&1 >/dev/null | grep -v 'input contains a loop' | sed 's/^tsort: //' || true
}

# Every archive's objects: the layers' and the other programs' components
# (cli/vmactl/, cluster/'s sub-layers, cloudprovider/).
lib_objs=$(mk LIB_OBJS) && tool_objs=$(mk TOOL_OBJS) || { echo "check-cycles: make print-* failed"; exit 1; }
objs=($lib_objs $tool_objs)
for o in "${objs[@]}"; do
	[ -f "$o" ] || { echo "check-cycles: $o missing (build first)"; exit 1; }
done
edges "${objs[@]}" >"$tmp/edges"
found=$(loops "$tmp/edges")
if [ -n "$found" ]; then
	echo "check-cycles: files that call each other (each loop's members):"
	printf '  %s\n' $found
	exit 1
fi

# The control: two objects that call each other are a loop.
printf 'void b(void);\nvoid a(void) { b(); }\n' >"$tmp/a.c"
printf 'void a(void);\nvoid b(void) { a(); }\n' >"$tmp/b.c"
cc -c -o "$tmp/a.o" "$tmp/a.c" && cc -c -o "$tmp/b.o" "$tmp/b.c"
build=$tmp edges "$tmp/a.o" "$tmp/b.o" >"$tmp/planted"
if [ -z "$(loops "$tmp/planted")" ]; then
	echo "check-cycles: a planted loop (a.o <-> b.o) was not found: the check is blind"
	exit 1
fi
echo "check-cycles: $(wc -l <"$tmp/edges") calls between ${#objs[@]} files, no loop (a planted one is found)"
