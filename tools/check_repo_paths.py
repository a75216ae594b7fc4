#!/usr/bin/env python3
"""Checks that the repository stands alone. Fails (exit status 1, one line per problem naming
the file, the line and the path) when:

- a file (script, doc, test, source) refers to a path that leaves the repository: a `../`
  path that, resolved from the file's own folder, climbs above the repository's root, or any
  mention of `../shared`;
- a relative link in a Markdown file (`[text](path)`, `![alt](path)`, `[id]: path`,
  `href="path"`, `src="path"`) points to a file or folder that does not exist, or to a heading
  (`path#anchor`) that the Markdown file it points to does not have.

Skipped: URLs (http, https, mailto), links inside code (fenced blocks and `code spans`, which
are checked for `../` paths only), build outputs and data (target/, dist/, node_modules/, the
fuzz corpus, the golden files, web/data/), and `include_str!`/`include_bytes!` paths quoted
outside Rust files (Rust resolves them from the Rust file that holds them; inside .rs files they
are checked like any other path).

Usage: python3 tools/check_repo_paths.py [ROOT]   (default: the repository holding this file)
Standard library only.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))

# Folders never scanned: build outputs, installed packages, data.
SKIP_DIRS = {".git", "target", "dist", "node_modules", "pkg", ".dev", ".gl"}
SKIP_PREFIXES = ("tests/fuzz/corpus/", "tests/golden/", "web/data/")
TEXT_SUFFIXES = {
    ".rs", ".toml", ".md", ".sh", ".py", ".js", ".mjs", ".html", ".css", ".json", ".wgsl",
    ".cu", ".h", ".txt", ".yml", ".yaml", ".conf", "",
}

# A `../` path: one or more `../` and what follows up to a character that ends a path.
UP_PATH = re.compile(r"(?:\.\./)+[^\s\"'`()<>\[\]{},;|*$\\]*")
# A Rust include's path quoted in another language (a regex or a comment about Rust code).
RUST_INCLUDE = re.compile(r"include_(?:str|bytes)!\\?\(\s*\"$")

MD_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
MD_REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)")
HTML_LINK = re.compile(r"\b(?:href|src)=\"([^\"]+)\"")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def repo_files():
    """The files git would track here (tracked, and untracked but not ignored); a walk of the
    tree without the skipped folders where git is not available."""
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True,
        ).stdout.decode("utf-8", "replace")
        files = sorted({f for f in out.split("\0") if f})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for n in names:
                files.append(os.path.relpath(os.path.join(folder, n), ROOT).replace(os.sep, "/"))
    keep = []
    for f in files:
        parts = f.split("/")
        if any(p in SKIP_DIRS for p in parts[:-1]) or f.startswith(SKIP_PREFIXES):
            continue
        if os.path.splitext(f)[1].lower() not in TEXT_SUFFIXES:
            continue
        if os.path.isfile(os.path.join(ROOT, f)):
            keep.append(f)
    return keep


def read_text(rel):
    try:
        with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
            return fh.read()
    except (UnicodeDecodeError, OSError):
        return None


def inside(path):
    """Whether an absolute, normalised path lies in the repository."""
    return path == ROOT or path.startswith(ROOT + os.sep)


def check_up_paths(rel, text, problems):
    """`../` paths that leave the repository, resolved from the file's own folder."""
    here = os.path.dirname(os.path.join(ROOT, rel))
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in UP_PATH.finditer(line):
            path = m.group(0).rstrip(".:")
            if "../shared" in path:
                problems.append(f"{rel}:{lineno}: refers to {path}, outside the repository")
                continue
            if not rel.endswith(".rs") and RUST_INCLUDE.search(line[: m.start()]):
                continue
            target = os.path.normpath(os.path.join(here, path))
            if not inside(target):
                problems.append(f"{rel}:{lineno}: {path} leaves the repository (resolved from {os.path.dirname(rel) or '.'}/)")


def slug(heading):
    """The anchor a heading gets on GitHub: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(abs_path):
    """The heading anchors of a Markdown file, duplicates numbered as GitHub numbers them."""
    if abs_path not in _anchors:
        found, seen, in_code = set(), {}, False
        with open(abs_path, encoding="utf-8") as fh:
            for line in fh:
                if FENCE.match(line):
                    in_code = not in_code
                    continue
                m = None if in_code else re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    base = slug(m.group(1))
                    n = seen.get(base, 0)
                    found.add(base if n == 0 else f"{base}-{n}")
                    seen[base] = n + 1
        _anchors[abs_path] = found
    return _anchors[abs_path]


def link_targets(text):
    """(line number, target) of every link outside code in a Markdown text."""
    in_code = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        plain = CODE_SPAN.sub("", line)
        for pattern in (MD_INLINE_LINK, MD_REF_LINK, HTML_LINK):
            for m in pattern.finditer(plain):
                yield lineno, m.group(1).strip("<>")


def check_links(rel, text, problems):
    """Relative links in a Markdown file that point to nothing."""
    here = os.path.dirname(os.path.join(ROOT, rel))
    for lineno, target in link_targets(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        path = path.split("?", 1)[0]
        if not path:
            file = os.path.join(ROOT, rel)  # an anchor in this file
        elif path.startswith("/"):
            file = os.path.normpath(os.path.join(ROOT, path.lstrip("/")))
        else:
            file = os.path.normpath(os.path.join(here, path))
        if not inside(file):
            problems.append(f"{rel}:{lineno}: link {target} leaves the repository")
        elif not os.path.exists(file):
            problems.append(f"{rel}:{lineno}: link {target} points to {os.path.relpath(file, ROOT)}, which does not exist")
        elif anchor and file.endswith(".md") and os.path.isfile(file) and anchor not in anchors(file):
            problems.append(f"{rel}:{lineno}: link {target}: {os.path.relpath(file, ROOT)} has no heading #{anchor}")


def main():
    problems = []
    files = repo_files()
    me = os.path.relpath(os.path.abspath(__file__), ROOT).replace(os.sep, "/")
    for rel in files:
        text = read_text(rel)
        if text is None or rel == me:  # this file names the patterns it looks for
            continue
        check_up_paths(rel, text, problems)
        if rel.endswith(".md"):
            check_links(rel, text, problems)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_repo_paths: {len(problems)} path(s) outside the repository or links to nothing", file=sys.stderr)
        return 1
    print(f"check_repo_paths: {len(files)} files, every path inside the repository and every relative link found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
