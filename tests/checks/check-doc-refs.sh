#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# doc-refs: examples only (its control tree's references are made up).
# check-doc-refs: every relative link of every *.md resolves (the file, and
# its #anchor to a heading by GitHub's rules), every tree path a page cites
# in backticks exists, and every heading a comment or a page cites as
# doc/<page>.md, "Heading" exists, and doc/README.md lists every page
# (doc/README.md, "Citing a page"), and README.md's layout table names the
# tree's directories where they are, and all of them. The
# work is tests/checks/doc-refs.py, which reads the tree as it is when it
# runs. As a control it first runs on a scratch tree with one reference of
# each kind broken, and must find each of them and nothing else.
# Usage: tests/checks/check-doc-refs.sh (make check-doc-refs; make check and
# make unit run it). Exit status 0 only when the tree has no broken reference.
set -u
cd "$(dirname "$0")/../.." || exit 1
check=tests/checks/doc-refs.py

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/doc" "$tmp/src"
cat >"$tmp/doc/page.md" <<'MD'
# A page

## First `part`: its words

[good](other.md#a-heading) [good, same page](#first-part-its-words), `src/x.c`, `src/{x,y}.c`.
[missing file](gone.md) [missing anchor](other.md#no-such-heading) `src/gone.c`
See other.md, "A heading" and "Nowhere". `/usr/share/elsewhere.c` `kernel/sched/core.c`

```
[inside a fence](ignored.md)
```
MD
printf '# Other\n\n## A heading\n' >"$tmp/doc/other.md"
printf '# doc/\n\n- [page.md](page.md): a page.\n' >"$tmp/doc/README.md"
printf '/* What this does (doc/other.md,\n * "A heading"); why (doc/other.md,\n * "Gone heading"). */\nint x;\n' >"$tmp/src/x.c"
printf '/* doc/moved.md has it; see (doc/other.md#a-heading) and\n * (doc/other.md#nope), doc/other.md "A heading", doc/other.md\n * "Not one". */\nstatic const char *f = "doc/other.md";\n' >"$tmp/src/y.c"
# The layout table: a sibling placed inside a row (as guestd/ once was in
# actuator/'s), a row for a directory that is gone, a top-level directory
# and a sub-directory it does not name.
mkdir -p "$tmp/src/inner" "$tmp/src/other" "$tmp/lib"
printf 'int z;\n' >"$tmp/src/inner/z.c"
printf 'int w;\n' >"$tmp/src/other/w.c"
printf 'int a;\n' >"$tmp/lib/a.c"
cat >"$tmp/README.md" <<'MD'
# Control

## Layout

| directory | what |
|---|---|
| `src/` | the code: `inner/` (here), `lib/` (a sibling, placed inside), over [`doc/`](doc/) |
| `gone/` | a row for a directory that is not there |
MD
out=$(python3 -B "$check" "$tmp")
rc=$?
want='check-doc-refs: README.md:3: the layout table has no row for `doc/`
check-doc-refs: README.md:3: the layout table has no row for `lib/`
check-doc-refs: README.md:7: the layout table places `lib/` in `src/`, but src/lib/ is not a directory (a directory elsewhere in the tree is written as a link)
check-doc-refs: README.md:7: the layout table'"'"'s row `src/` names sub-directories but not `other/`
check-doc-refs: README.md:8: the layout table'"'"'s row `gone/`: no such directory at the top of the tree
check-doc-refs: doc/README.md:1: doc/other.md is not listed (one line per page)
check-doc-refs: doc/page.md:6: `src/gone.c`: src/gone.c does not exist
check-doc-refs: doc/page.md:6: link (gone.md): doc/gone.md does not exist
check-doc-refs: doc/page.md:6: link (other.md#no-such-heading): doc/other.md has no heading whose anchor is #no-such-heading
check-doc-refs: doc/page.md:7: cites other.md, "Nowhere": doc/other.md has no such heading
check-doc-refs: src/x.c:2: cites doc/other.md, "Gone heading": doc/other.md has no such heading
check-doc-refs: src/y.c:1: names doc/moved.md, which does not exist
check-doc-refs: src/y.c:2: cites doc/other.md#nope: doc/other.md has no heading whose anchor is #nope
check-doc-refs: src/y.c:2: cites doc/other.md, "Not one": doc/other.md has no such heading'
if [ "$rc" -ne 1 ] || [ "$(grep '^check-doc-refs:' <<<"$out")" != "$want" ]; then
	echo "check-doc-refs: the control tree's broken references were not found as expected:"
	echo "$out"
	echo "check-doc-refs: expected (exit status 1):"
	echo "$want"
	exit 1
fi
echo "check-doc-refs: control tree: its 14 broken references found"

python3 -B "$check" .
