#!/usr/bin/env python3
"""Checks that the tree matches what docs/layout.md says of it.

    check_tree.py layout SOURCE_ROOT
        Every file or folder that an entry of docs/layout.md's code block
        names exists (in the entry's folder, or at that path from the top),
        and every folder of the repository is an entry or is named in one.

    check_tree.py readme-headings SOURCE_ROOT
        Every backend README (backends/*/README.md, plugins/sim/README.md) has
        exactly the `##` headings docs/layout.md lists, in that order.

    check_tree.py function-length SOURCE_ROOT CTAGS
        No function in core/, backends/, plugins/ or tools/ is longer than
        80 lines (as Universal Ctags sees it: from its line to its end),
        except one that is a single switch over an enum (an attribute table).

Exit status 0 pass, 1 fail, 77 (skip) when ctags is not there.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

NAMED_FILE = re.compile(
    r"\.(h|hpp|c|cpp|cu|cl|hip|py|sh|txt|build|map|md|in|supp|dict|json)$")
BRACES = re.compile(r"\{([^{}]*)\}")
MAX_FUNCTION_LINES = 80


def expand(token):
    """'a/{x,y}/' -> ['a/x/', 'a/y/']."""
    m = BRACES.search(token)
    if not m:
        return [token]
    head, tail = token[:m.start()], token[m.end():]
    return [r for alt in m.group(1).split(",") for r in expand(head + alt + tail)]


def layout_entries(root):
    """[(entry folders, [named tokens])] from docs/layout.md's code block."""
    text = (root / "docs" / "layout.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(.*?)```", text, re.S)
    if not block:
        return None
    entries = []
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        words = re.split(r"[\s();:]+", line.strip())
        words = [w.rstrip(",.") for w in words if w.rstrip(",.")]
        if not line[0].isspace():
            entries.append((expand(words[0]), words[1:]))
        elif entries:
            entries[-1][1].extend(words)
    return entries


def repo_folders(root):
    """Every folder holding a tracked file (git), or every folder but build
    trees and hidden ones when the tree is no git checkout."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files"], check=True,
                             capture_output=True, text=True).stdout
        files = out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subdirs, names in os.walk(root):
            subdirs[:] = [s for s in subdirs if s == ".ci" or not (
                s.startswith(".") or s.startswith("build") or s == "__pycache__")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    folders = set()
    for f in files:
        parent = Path(f).parent
        while str(parent) != ".":
            folders.add(parent.as_posix() + "/")
            parent = parent.parent
    return folders


def resolve(root, folder, token):
    """The paths (relative to root) a token of an entry stands for, or []."""
    for base in (folder, ""):
        pattern = base + token
        matches = [p for p in root.glob(pattern.rstrip("/"))
                   if p.is_dir() or not token.endswith("/")]
        if matches:
            return [p.relative_to(root).as_posix() + ("/" if p.is_dir() else "") for p in matches]
    return []


def check_layout(root):
    entries = layout_entries(root)
    if entries is None:
        return ["docs/layout.md has no code block of entries"]
    failures, named = [], set()
    for folders, tokens in entries:
        for folder in folders:
            if not (root / folder).is_dir():
                failures.append(f"docs/layout.md: entry '{folder}' is no folder of the tree")
                continue
            named.add(folder)
            for token in tokens:
                if not (token.endswith("/") or NAMED_FILE.search(token)):
                    continue
                found = resolve(root, folder, token)
                if not found:
                    failures.append(f"docs/layout.md: '{token}' (entry {folder}) is not in "
                                    f"the tree")
                named.update(f for f in found if f.endswith("/"))
    # A named folder names the folders above it (include/accel/ names include/).
    for folder in list(named):
        parts = folder.rstrip("/").split("/")
        named.update("/".join(parts[:i]) + "/" for i in range(1, len(parts)))
    for folder in sorted(repo_folders(root) - named):
        failures.append(f"folder {folder} is in the tree but docs/layout.md does not name it")
    print(f"layout: {len(entries)} entries, {len(named)} folders named")
    return failures


def expected_headings(root):
    text = (root / "docs" / "layout.md").read_text(encoding="utf-8")
    m = re.search(r"has\s+these `##` headings[^\n]*\n(?:[^\n]*\n)*?\n((?:\d+\. [^\n]+\n)+)", text)
    return [re.sub(r"^\d+\. ", "", l) for l in m.group(1).splitlines()] if m else None


def check_readme_headings(root):
    expected = expected_headings(root)
    if not expected:
        return ["docs/layout.md lists no backend README headings"]
    readmes = sorted(root.glob("backends/*/README.md")) + [root / "plugins/sim/README.md"]
    failures = []
    for readme in readmes:
        text = re.sub(r"```.*?```", "", readme.read_text(encoding="utf-8"), flags=re.S)
        got = re.findall(r"^## (.+?)\s*$", text, re.M)
        if got != expected:
            failures.append(f"{readme.relative_to(root)}: headings {got}, docs/layout.md "
                            f"lists {expected}")
    print(f"readme headings: {len(readmes)} READMEs against {len(expected)} headings")
    return failures


def single_switch(lines):
    """A function that is one switch statement, apart from a preamble and an
    epilogue of at most 20 lines together (an attribute table)."""
    text = re.sub(r"//[^\n]*", "", "\n".join(lines))
    m = re.search(r"\bswitch\s*\(", text)
    if not m:
        return False
    opening = text.find("{", m.end())
    depth, i = 0, opening
    while i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            break
        i += 1
    inside = text.count("\n", m.start(), i)
    return len(lines) - inside <= 20


def check_function_length(root, ctags):
    dirs = [str(root / d) for d in ("core", "backends", "plugins", "tools")]
    try:
        out = subprocess.run([ctags, "--fields=+ne", "--c++-kinds=f", "--c-kinds=f",
                              "--languages=C,C++", "-R", "-f", "-"] + dirs,
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"SKIP: cannot run ctags ({e})")
        sys.exit(77)
    failures, count = [], 0
    for row in out.splitlines():
        cols = row.split("\t")
        fields = dict(c.split(":", 1) for c in cols[3:] if ":" in c)
        if "line" not in fields or "end" not in fields:
            continue
        name, path = cols[0], Path(cols[1])
        if name.startswith("__anon"):
            continue  # a lambda: counted in the function around it
        count += 1
        start, end = int(fields["line"]), int(fields["end"])
        if end - start + 1 <= MAX_FUNCTION_LINES:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()[start - 1:end]
        if single_switch(lines):
            continue
        failures.append(f"{path.relative_to(root)}:{start}: {name} is {end - start + 1} lines "
                        f"(at most {MAX_FUNCTION_LINES}, a single switch excepted)")
    print(f"function length: {count} functions read")
    return failures


def main():
    checks = {"layout": 3, "readme-headings": 3, "function-length": 4}
    if len(sys.argv) < 3 or checks.get(sys.argv[1]) != len(sys.argv):
        sys.exit(__doc__)
    root = Path(sys.argv[2]).resolve()
    if sys.argv[1] == "layout":
        failures = check_layout(root)
    elif sys.argv[1] == "readme-headings":
        failures = check_readme_headings(root)
    else:
        failures = check_function_length(root, sys.argv[3])
    for f in failures:
        print("FAILED:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
