#!/usr/bin/env python3
"""Fails when a plugin needs a symbol of libaccelcore.

Usage: check_plugin_imports.py NM PLUGIN...

A plugin reaches the core only through the host-services table it is
given: the core opens plugins with dlopen(RTLD_NOW | RTLD_LOCAL)
(docs/plugin-abi.md, ABI-9), and where the core itself was opened
RTLD_LOCAL (a Python extension's dependency, as the accel package's is)
its symbols are not visible to the plugin, so a plugin with an undefined
accel_* symbol is rejected there ("undefined symbol"). Runs
`nm -D --undefined-only` on each PLUGIN and lists every accel_* it needs.
"""
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    nm, plugins = sys.argv[1], sys.argv[2:]
    bad = []
    for plugin in plugins:
        proc = subprocess.run([nm, "-D", "--undefined-only", plugin], capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            print(f"{nm} failed on {plugin}:\n{proc.stderr}", file=sys.stderr)
            return 2
        for line in proc.stdout.splitlines():
            name = line.split()[-1].split("@")[0]
            if name.startswith("accel_"):
                bad.append(f"{plugin}: needs {name}")
    for b in bad:
        print(b)
    print(f"{len(plugins)} plugin(s) checked, {len(bad)} core symbol(s) needed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
