#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# doc-refs: examples only (the references below are made up).
"""Every reference into the documentation resolves (doc/README.md, "Citing a page").

Three kinds, each read from the tree as it is when the check runs:
  - a relative link in a Markdown file, [text](path) or [text](path#anchor):
    the file exists, and the anchor is the slug of a heading of that file
    by GitHub's rules;
  - a repository path a Markdown file cites in backticks (`cluster/place.c`,
    `actuator/metrics/`, `agent-glue/{client,codec}`, `net/http-*.c`):
    a path whose first component is a top-level directory of the tree must
    exist (glob and brace forms must match something; a program may be
    named by its source without the .c);
  - a heading cited from anywhere, code comments included, as
    doc/<page>.md, "Heading" (the comma may be left out; or several: "A" and "B"; a heading's short
    title, its words before a colon or a parenthesis, will do) or
    doc/<page>.md#anchor, comments running over several lines included;
    and any doc/<page>.md a non-Markdown file names must exist;
  - doc/README.md, the index, links every Markdown page under doc/;
  - README.md's "Layout" table and the tree's directories agree: each
    directory a row's first cell names exists at the top of the tree, and
    each the row's text names bare (`daemon/`) exists inside the row's
    (a directory elsewhere is written as a link, checked as one); every
    top-level directory (but hidden ones) has a row, and a row that names
    sub-directories names all of them.
Prints one line per broken reference, FILE:LINE: what is broken, then
"N references checked, M broken"; exits 1 when any is broken.
A file that says "doc-refs: examples only" in its first five lines (this one,
and check-doc-refs.sh with its control tree) is not read.
Usage: doc-refs.py [ROOT]   (default: the tree this script is in)
"""
import bisect
import glob
import os
import re
import subprocess
import sys
import unicodedata

SKIP_DIRS = {".git", "build", "node_modules"}


def tree_files(root):
    """The tree's files: git's view (tracked and new, not ignored), else a walk."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True, check=True).stdout.decode()
        if subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                          capture_output=True, text=True, check=True).stdout.strip() \
                != os.path.realpath(root):
            raise OSError("not the top of a repository")
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            for n in names:
                files.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(f for f in set(files) if os.path.isfile(os.path.join(root, f)))


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read(2 << 20)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def md_lines(text):
    """(line number, line) of a Markdown file outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, line


def slug(heading):
    """GitHub's anchor for a heading: its text lower-cased, punctuation and
    symbols dropped (hyphens and underscores kept), each space a hyphen."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    out = []
    for c in text:
        cat = unicodedata.category(c)
        if c in "-_" or cat[0] in "LNM":
            out.append(c)
        elif c == " ":
            out.append("-")
    return "".join(out)


def norm_heading(h):
    h = CODE_SPAN.sub(lambda m: m.group(2), h)
    return " ".join(h.replace("*", "").split()).casefold()


class Page:
    def __init__(self, text):
        self.anchors = set()
        self.titles = set()
        seen = {}
        for _, line in md_lines(text):
            m = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            self.anchors.add(s if k == 0 else f"{s}-{k}")
            title = norm_heading(m.group(2))
            self.titles.add(title)
            # Cited by its short title too: the words before a colon or
            # a parenthesis ("Sandbox" for "Sandbox (`vmactd.service`)").
            short = re.split(r":\s|\s\(", title, maxsplit=1)[0].strip()
            if short:
                self.titles.add(short)


class Checker:
    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.files = tree_files(self.root)
        self.top_dirs = {f.split("/", 1)[0] for f in self.files if "/" in f}
        self.pages = {}
        self.checked = 0
        self.broken = []

    def page(self, rel):
        if rel not in self.pages:
            text = read_text(os.path.join(self.root, rel))
            self.pages[rel] = Page(text) if text is not None else None
        return self.pages[rel]

    def bad(self, where, line, msg):
        self.broken.append(f"{where}:{line}: {msg}")

    def exists(self, rel):
        return os.path.exists(os.path.join(self.root, rel))

    def resolve(self, src, target):
        """A path as written in src, relative to the tree's top (None outside it)."""
        p = os.path.normpath(os.path.join(os.path.dirname(src), target))
        return None if p.startswith("..") else p

    # --- Markdown links and cited paths -------------------------------------
    def check_markdown(self, rel, text):
        for n, line in md_lines(text):
            spans = list(CODE_SPAN.finditer(line))
            prose = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
            targets = [m.group(1) for m in re.finditer(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)", prose)]
            m = re.match(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)", prose)
            if m:
                targets.append(m.group(1))
            for t in targets:
                self.check_link(rel, n, t)
            for s in spans:
                self.check_cited_path(rel, n, s.group(2).strip())

    def check_link(self, rel, n, target):
        if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            return  # an address, not a file of the tree
        self.checked += 1
        path, _, anchor = target.partition("#")
        dest = self.resolve(rel, path) if path else rel
        if dest is None:
            self.bad(rel, n, f"link ({target}) leaves the tree")
            return
        if not self.exists(dest):
            self.bad(rel, n, f"link ({target}): {dest} does not exist")
            return
        if anchor:
            self.check_anchor(rel, n, f"link ({target})", dest, anchor)

    def check_anchor(self, rel, n, what, dest, anchor):
        if not dest.endswith(".md"):
            self.bad(rel, n, f"{what}: an anchor into {dest}, which is not a Markdown page")
            return
        page = self.page(dest)
        if page is None or anchor not in page.anchors:
            self.bad(rel, n, f"{what}: {dest} has no heading whose anchor is #{anchor}")

    def expand(self, pattern):
        m = re.search(r"\{([^{}]*)\}", pattern)
        if not m:
            return [pattern]
        out = []
        for alt in m.group(1).split(","):
            out += self.expand(pattern[:m.start()] + alt + pattern[m.end():])
        return out

    def check_cited_path(self, rel, n, code):
        code = code.strip("\"'")
        code = re.sub(r":\d+(-\d+)?$", "", code)  # file.c:123
        if not re.fullmatch(r"[\w.{},*\[\]/+-]+", code) or "/" not in code:
            return  # not a path, or one with a placeholder (<name>, N, …)
        if code.split("/", 1)[0] not in self.top_dirs:
            return  # a path of the running system or of another project
        self.checked += 1
        for p in self.expand(code):
            if re.search(r"[*?\[]", p):
                if not glob.glob(os.path.join(glob.escape(self.root), p)):
                    self.bad(rel, n, f"`{code}`: nothing in the tree matches {p}")
            elif not self.exists(p) and not self.exists(p + ".c"):
                # (a program named by its source without the .c:
                # `tests/unit/test_layout`, `tests/sandbox/seccomp-exec`)
                self.bad(rel, n, f"`{code}`: {p} does not exist")

    # --- headings cited as doc/<page>.md, "Heading" or doc/<page>.md#anchor ---
    CITE = re.compile(r'(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)'
                      r'(?:#([\w-]+)|(?:,\s*|\s+)((?:"[^";{}"]{1,100}"(?:\s*(?:,\s*and|,|and|or)\s*)?)+))')
    DOC_PATH = re.compile(r'(?<![\w/.$-])(doc/(?:[\w.-]+/)*[\w.-]+\.md)\b')
    COMMENT_LEAD = re.compile(r'^\s*(?:/\*+|\*+/?|//+|#+|;+|--|\.\\"|\\")?\s?')

    def joined(self, rel, text):
        """The file as one string, comment leaders stripped and lines joined
        with a space, so that a citation running over lines reads as one;
        and the offset at which each line starts."""
        md = rel.endswith(".md")
        parts, starts, pos = [], [], 0
        for line in text.split("\n"):
            if not md:
                line = self.COMMENT_LEAD.sub("", line, count=1)
            starts.append(pos)
            parts.append(line)
            pos += len(line) + 1
        return " ".join(parts), starts

    def find_page(self, rel, name):
        for cand in (self.resolve(rel, name), os.path.normpath(name),
                     os.path.normpath(os.path.join("doc", name))):
            if cand and self.exists(cand):
                return cand
        return None

    def check_citations(self, rel, text):
        flat, starts = self.joined(rel, text)
        line_of = lambda off: bisect.bisect_right(starts, off)
        for m in self.CITE.finditer(flat):
            name, anchor, quoted = m.group(1), m.group(2), m.group(3)
            headings = re.findall(r'"([^"]+)"', quoted or "")
            if rel.endswith(".md") and any(h.startswith("<") for h in headings):
                continue  # how to cite, with a placeholder
            if rel.endswith(".md") and anchor and f"]({name}#{anchor})" in flat[m.start() - 2:m.end() + 1]:
                continue  # a link: check_link had it
            n = line_of(m.start())
            dest = self.find_page(rel, name)
            if dest is None:
                if name.startswith("doc/") or "/" not in name:
                    self.checked += 1
                    self.bad(rel, n, f"cites {name}, which does not exist")
                continue
            if anchor:
                self.checked += 1
                self.check_anchor(rel, n, f"cites {name}#{anchor}", dest, anchor)
            page = self.page(dest)
            for h in headings:
                self.checked += 1
                if page is None or norm_heading(h) not in page.titles:
                    self.bad(rel, n, f'cites {name}, "{h}": {dest} has no such heading')
        if not rel.endswith(".md"):
            for m in self.DOC_PATH.finditer(flat):
                self.checked += 1
                if not self.exists(m.group(1)):
                    self.bad(rel, line_of(m.start()), f"names {m.group(1)}, which does not exist")

    def check_index(self):
        index = "doc/README.md"
        if index not in self.files:
            return
        linked = set()
        for n, line in md_lines(read_text(os.path.join(self.root, index)) or ""):
            for m in re.finditer(r"\]\(\s*<?([^)\s>#]+)", line):
                p = self.resolve(index, m.group(1))
                if p:
                    linked.add(p)
        for f in self.files:
            if f.startswith("doc/") and f.endswith(".md") and f != index:
                self.checked += 1
                if f not in linked:
                    self.bad(index, 1, f"{f} is not listed (one line per page)")

    # --- README.md's layout table ----------------------------------------
    LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")

    def subdirs(self, d):
        """The directories right inside d (d "" for the top), from the files."""
        pre = d + "/" if d else ""
        return {f[len(pre):].split("/", 1)[0] for f in self.files
                if f.startswith(pre) and "/" in f[len(pre):]}

    def check_layout(self):
        readme = "README.md"
        text = read_text(os.path.join(self.root, readme)) if readme in self.files else None
        if text is None:
            return
        rows, heading, in_section = [], None, False
        for n, line in md_lines(text):
            if re.match(r"^#{1,6}\s", line):
                in_section = re.match(r"^##\s+Layout\s*$", line) is not None
                heading = n if in_section else heading
                continue
            if in_section and line.startswith("|"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) >= 2 and not re.fullmatch(r"[-: ]*", cells[0]) and cells[0] != "directory":
                    rows.append((n, cells[0], cells[1]))
        if heading is None:
            return
        named = set()
        for n, first, what in rows:
            dirs = [m.group(2).strip().rstrip("/") for m in CODE_SPAN.finditer(first)]
            for d in dirs:
                self.checked += 1
                named.add(d)
                if "/" in d or d not in self.subdirs(""):
                    self.bad(readme, n, f"the layout table's row `{d}/`: no such directory "
                                        "at the top of the tree")
            # Bare directories are the row's own; links are checked as links.
            listed = set()
            for m in CODE_SPAN.finditer(self.LINK.sub(" ", what)):
                sub = m.group(2).strip()
                if not re.fullmatch(r"[\w.-]+(/[\w.-]+)*/", sub):
                    continue  # not a directory (`make deb`, `cl_`, `vmactl`)
                self.checked += 1
                sub = sub.rstrip("/")
                listed.add(sub)
                if not any(os.path.isdir(os.path.join(self.root, d, sub)) for d in dirs):
                    where = " or ".join(f"{d}/{sub}/" for d in dirs)
                    self.bad(readme, n, f"the layout table places `{sub}/` in "
                                        f"`{'/`, `'.join(dirs)}/`, but {where} is not a "
                                        "directory (a directory elsewhere in the tree "
                                        "is written as a link)")
            if listed and len(dirs) == 1:
                for sub in sorted(self.subdirs(dirs[0]) - listed):
                    self.checked += 1
                    self.bad(readme, n, f"the layout table's row `{dirs[0]}/` names "
                                        f"sub-directories but not `{sub}/`")
        for d in sorted(self.subdirs("") - named):
            if d.startswith("."):
                continue
            self.checked += 1
            self.bad(readme, heading, f"the layout table has no row for `{d}/`")

    def run(self):
        for rel in self.files:
            text = read_text(os.path.join(self.root, rel))
            if text is None:
                continue
            if "doc-refs: examples only" in "\n".join(text.split("\n", 5)[:5]):
                continue
            if rel.endswith(".md"):
                self.check_markdown(rel, text)
            self.check_citations(rel, text)
        self.check_index()
        self.check_layout()
        for b in sorted(set(self.broken)):
            print(f"check-doc-refs: {b}")
        print(f"{self.checked} references checked, {len(set(self.broken))} broken")
        return 1 if self.broken else 0


if __name__ == "__main__":
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    sys.exit(Checker(top).run())
