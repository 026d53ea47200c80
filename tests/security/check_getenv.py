#!/usr/bin/env python3
"""Every backend and plugin reads its environment only through the host's
get_env (secure_getenv in the core), so a setuid program ignores
ACCEL_CUDA_DRIVER, ACCEL_HIP_RUNTIME, ACCEL_ZE_LOADER and the rest.

Scans backends/, plugins/ and core/ for direct getenv()/secure_getenv()
calls and environ use. The core may call secure_getenv; a plugin or backend
may call nothing directly, except the vendor variables listed in ALLOWED,
which are read as the vendor's own runtime reads them (plain getenv) and
name no file to load.

usage: check_getenv.py SOURCE_ROOT
"""
import os
import re
import sys

ALLOWED = {
    # (file, variable): why
    ("backends/cuda/count.cpp", "CUDA_VISIBLE_DEVICES"):
        "the driver's own variable, read as the driver reads it; a device list, not a path",
    ("backends/hip/count.cpp", "ROCR_VISIBLE_DEVICES"):
        "ROCr's own variable, read as ROCr reads it; a device list, not a path",
    ("backends/hip/count.cpp", "HIP_VISIBLE_DEVICES"):
        "HIP's own variable, read as HIP reads it; a device list, not a path",
    ("backends/hip/count.cpp", "CUDA_VISIBLE_DEVICES"):
        "read by HIP as a fallback for HIP_VISIBLE_DEVICES, as HIP reads it; a device list",
}

CALL = re.compile(r'\b(secure_getenv|getenv|getenv_s|__secure_getenv)\s*\(\s*("([^"]*)")?')
ENVIRON = re.compile(r'\b(environ|__environ)\b')


def main():
    root = sys.argv[1]
    problems, seen = [], 0
    for top in ("backends", "plugins", "core"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".c", ".cc", ".cpp", ".h", ".hpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for no, line in enumerate(f, 1):
                        code = line.split("//")[0]
                        for m in CALL.finditer(code):
                            seen += 1
                            fn, var = m.group(1), m.group(3) or "?"
                            if top == "core" and fn == "secure_getenv":
                                continue
                            if (rel, var) in ALLOWED:
                                print(f"allowed: {rel}:{no}: {fn}(\"{var}\"): {ALLOWED[(rel, var)]}")
                                continue
                            problems.append(f"{rel}:{no}: {fn}(\"{var}\") - use host->get_env "
                                            "(plugins) or secure_getenv (core)")
                        if ENVIRON.search(code) and "environment" not in code:
                            problems.append(f"{rel}:{no}: reads environ directly")
    print(f"{seen} getenv-style calls scanned")
    for p in problems:
        print("FAIL " + p)
    if seen == 0:
        print("FAIL no call found at all: the scan is broken")
        return 1
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
