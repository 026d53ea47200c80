#!/usr/bin/env python3
"""compile_check.py --fail TEXT [--replace OLD NEW] SOURCE -- COMPILER ARGS...:
compiles SOURCE with -fsyntax-only and passes when the compiler fails with
TEXT in its output; then compiles it again with OLD replaced by NEW (by
default `const std::string& s` by `float s`) and passes only if that
compiles (so the failure is the one meant)."""
import os
import subprocess
import sys
import tempfile

args = sys.argv[1:]
sep = args.index("--")
want = args[args.index("--fail") + 1]
source = [a for a in args[:sep] if a.endswith(".cpp")][0]
old, new = "const std::string& s", "float s"
if "--replace" in args[:sep]:
    i = args.index("--replace")
    old, new = args[i + 1], args[i + 2]
cc = args[sep + 1:]


def compile_text(text):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(text)
    try:
        return subprocess.run(cc + ["-fsyntax-only", f.name], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    finally:
        os.unlink(f.name)


text = open(source).read()
bad = compile_text(text)
ok = True
if bad.returncode == 0:
    print("compiled, but must not")
    ok = False
elif want not in bad.stdout:
    print(bad.stdout[-4000:])
    print(f"the compiler failed without {want!r}")
    ok = False
if old not in text:
    print(f"{old!r} is not in {source}")
    ok = False
good = compile_text(text.replace(old, new))
if good.returncode != 0:
    print(good.stdout[-4000:])
    print(f"the same source with {new!r} for {old!r} does not compile")
    ok = False
print("compile_check: " + ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
