#!/usr/bin/env python3
"""Checks that the documentation in docs/ and README.md matches the code.

    check_docs.py rules SOURCE_ROOT
        Every rule the core cites ("plugin-abi rule N" in core/) is a rule
        "### ABI-N: ..." of docs/plugin-abi.md; the rules there are numbered
        1..N without gaps or repeats; every "ABI-N" named in README.md or
        docs/ exists.

    check_docs.py claims SOURCE_ROOT
        The C++ standard of docs/cpp.md is the one accelConfig.cmake names,
        and every kernels/.../README.md a kernel source names exists.

    check_docs.py links SOURCE_ROOT
        Every relative link of README.md, CHANGELOG.md and docs/*.md names a
        file of the repository and, with a #fragment into a Markdown file, one
        of its headings; no text points at design notes kept outside the
        repository.

Exit status 0 pass, 1 fail.
"""
import re
import sys
from pathlib import Path

RULE_HEADING = re.compile(r"^### ABI-(\d+): \S", re.M)
RULE_CITED = re.compile(r"plugin-abi rule (\d+)")
RULE_NAMED = re.compile(r"\bABI-(\d+)\b")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def docs(root):
    return [root / "README.md", root / "CHANGELOG.md"] + sorted((root / "docs").glob("*.md"))


def check_rules(root):
    failures = []
    abi = (root / "docs" / "plugin-abi.md").read_text(encoding="utf-8")
    numbers = [int(n) for n in RULE_HEADING.findall(abi)]
    defined = set(numbers)
    if not numbers:
        failures.append("docs/plugin-abi.md defines no rule ('### ABI-N: title')")
    elif numbers != list(range(1, len(numbers) + 1)):
        failures.append(f"docs/plugin-abi.md: rules are not numbered 1..{len(numbers)} in order: "
                        f"{numbers}")

    cited = {}
    for src in sorted((root / "core").glob("*.[ch]pp")):
        text = src.read_text(encoding="utf-8")
        for m in RULE_CITED.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            cited.setdefault(int(m.group(1)), []).append(f"{src.relative_to(root)}:{line}")
    if not cited:
        failures.append("core/ cites no 'plugin-abi rule N' (the loader's reasons should)")
    for n, where in sorted(cited.items()):
        if n not in defined:
            failures.append(f"plugin-abi rule {n} is cited at {', '.join(where)} but "
                            f"docs/plugin-abi.md has no '### ABI-{n}:'")

    for doc in docs(root):
        if not doc.is_file():
            continue
        for m in RULE_NAMED.finditer(doc.read_text(encoding="utf-8")):
            if int(m.group(1)) not in defined:
                failures.append(f"{doc.relative_to(root)} names ABI-{m.group(1)}, which "
                                "docs/plugin-abi.md does not define")

    print(f"plugin-abi rules: {len(defined)} defined, {len(cited)} distinct ones cited by core/ "
          f"({sum(len(w) for w in cited.values())} citations)")
    return failures


def slug(heading):
    """The anchor a Markdown renderer (GitHub's rules) gives a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # no headings inside code blocks
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def check_links(root):
    failures = []
    count = 0
    for doc in docs(root):
        if not doc.is_file():
            failures.append(f"{doc.relative_to(root)} is missing")
            continue
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # a URL, not a file of the repository
            count += 1
            path, _, fragment = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(root)}: link '{target}'"
            if not dest.exists():
                failures.append(f"{where}: no such file or folder")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                failures.append(f"{where}: {dest.relative_to(root)} has no heading with "
                                f"anchor '#{fragment}'")
    # Everything a reader needs is in the repository: nothing may send them
    # to design notes that live next to it.
    outside = "DESIGN" + ".md"
    for top in ["README.md", "CHANGELOG.md", "docs", "core", "include", "backends", "plugins",
                "tools", "scripts", "examples", "tests"]:
        base = root / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for f in files:
            try:
                text = f.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if outside in text:
                failures.append(f"{f.relative_to(root)} refers to {outside}, which is not part "
                                "of the repository")
    print(f"links: {count} relative links checked in {len(docs(root))} documents")
    return failures


def check_claims(root):
    """The C++ standard accel.hpp needs is the same in cpp.md and the
    installed accelConfig.cmake, and every README.md a source file of
    kernels/ points at exists."""
    failures = []
    std_re = re.compile(r"C\+\+(\d\d)")
    cpp = (root / "docs/cpp.md").read_text()
    m = re.search(r"header-only (C\+\+\d\d) layer", cpp)
    want = m.group(1) if m else None
    if want is None:
        failures.append("docs/cpp.md does not say which C++ standard accel.hpp needs")
    cmake = (root / "core/cmake/accelConfig.cmake.in").read_text()
    said = set("C++" + n for n in std_re.findall(cmake))
    if want is not None and said != {want}:
        failures.append(f"core/cmake/accelConfig.cmake.in names {sorted(said)}; "
                        f"docs/cpp.md says accel.hpp needs {want}")
    for f in sorted((root / "kernels").rglob("*")):
        if not f.is_file() or f.suffix not in (".cl", ".cu", ".c", ".h", ".hip"):
            continue
        for ref in re.findall(r"\b(kernels/[\w/]*README\.md)", f.read_text()):
            if not (root / ref).is_file():
                failures.append(f"{f.relative_to(root)} points at {ref}, which does not exist")
    print("claims: C++ standard and kernels/ references checked")
    return failures


def main():
    checks = {"rules": check_rules, "links": check_links, "claims": check_claims}
    if len(sys.argv) != 3 or sys.argv[1] not in checks:
        sys.exit(__doc__)
    root = Path(sys.argv[2]).resolve()
    failures = checks[sys.argv[1]](root)
    for f in failures:
        print("FAILED:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
