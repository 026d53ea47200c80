#!/usr/bin/env python3
"""The wheel (docs/python.md, "Installing with pip"), as a user makes it:
`pip install --no-build-isolation .` into a fresh `--system-site-packages`
venv, then `import accel` and examples/python/device_index.py from a folder
outside both the source and the build tree, with no ACCEL_PLUGIN_PATH,
PYTHONPATH or LD_LIBRARY_PATH: the installed package must find its
extension, libaccelcore and the plugins inside the venv by itself.

Usage: wheel.py --python PY --source-root SRC --work-dir DIR

pip builds from a copy of the source tree in DIR/src (meson-python 0.12
writes files into the tree it builds) with its Meson build folder in
DIR/build, both kept between runs so that a second run only rebuilds what
changed. Exits 77 (skipped) when the interpreter lacks venv, ensurepip or
mesonpy, naming the Debian package.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
# Top-level entries of the source tree that are not sources.
NOT_SOURCES = {".git", ".cache"}


class Failure(Exception):
    pass


def log(msg):
    print(f"wheel: {msg}", flush=True)


def expect(cond, what):
    if not cond:
        raise Failure(what)
    log(f"ok: {what}")


def run(cmd, **kw):
    log("$ " + " ".join(str(c) for c in cmd))
    p = subprocess.run([str(c) for c in cmd], text=True, capture_output=True, **kw)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    return p


def missing_modules(python):
    needed = {"venv": "python3-venv", "ensurepip": "python3-venv", "mesonpy": "python3-mesonpy"}
    missing = []
    for mod, package in needed.items():
        p = subprocess.run([python, "-c", f"import {mod}"], capture_output=True)
        if p.returncode != 0:
            missing.append(f"{mod} (Debian: {package})")
    return missing


def copy_sources(src, dst):
    """The source tree as a checkout has it: no build folders, no VCS."""
    def ignore(folder, names):
        if Path(folder) == src:
            return [n for n in names if n in NOT_SOURCES or n.startswith("build")
                    or n.startswith(".mesonpy")]
        return [n for n in names if n == "__pycache__"]
    # meson-python's native file, which it writes into the tree: when it is
    # there unchanged, meson-python reconfigures the kept build folder
    # (without it, it runs a plain `meson setup` there, which keeps the old
    # configuration).
    native = dst / ".mesonpy-native-file.ini"
    kept = native.read_bytes() if native.is_file() else None
    if dst.exists():
        shutil.rmtree(dst)
    # copy2 keeps modification times, so the kept build folder rebuilds
    # only what changed.
    shutil.copytree(src, dst, ignore=ignore, copy_function=shutil.copy2, symlinks=True)
    if kept is not None:
        native.write_bytes(kept)


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACCEL_", "PYTHON", "PIP_", "POCL_", "FAKE_"))
           and k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def check(args, tmp):
    missing = missing_modules(args.python)
    if missing:
        log(f"SKIP: {args.python} lacks " + ", ".join(missing))
        return SKIP
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src"
    copy_sources(Path(args.source_root).resolve(), src)
    env = clean_env()

    venv = tmp / "venv"
    p = run([args.python, "-m", "venv", "--system-site-packages", venv], env=env)
    expect(p.returncode == 0, f"python3 -m venv --system-site-packages {venv}")
    py = venv / "bin" / "python"
    p = run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
             "--no-cache-dir", f"--config-settings=builddir={work / 'build'}", "."],
            cwd=src, env=env)
    expect(p.returncode == 0, "pip install --no-build-isolation . builds and installs the wheel")

    p = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"], env=env)
    site = Path(p.stdout.strip())
    expect(site.is_relative_to(venv), f"the venv's site-packages is {site}")
    pkg = site / "accel"
    libs = site / ".accel.mesonpy.libs"
    exts = sorted(pkg.glob("_accel*.so"))
    expect(len(exts) == 1 and (pkg / "__init__.pyi").is_file() and (pkg / "py.typed").is_file(),
           f"the wheel put the package, its extension and its stubs in {pkg}")
    cores = sorted(libs.glob("libaccelcore.so*"))
    plugins = sorted(p.name for p in (libs / "accel" / "plugins").glob("*.so"))
    expect(cores != [], f"the wheel bundles libaccelcore in {libs} ({[c.name for c in cores]})")
    expect("accel-sim.so" in plugins, f"the wheel bundles the plugins beside it ({plugins})")
    expect(not list((venv / "include").rglob("accel.h")) and not list(libs.rglob("*.pc")),
           "the wheel carries no C headers or pkg-config files")

    outside = tmp / "elsewhere"
    outside.mkdir()
    example = outside / "device_index.py"
    shutil.copy(src / "examples" / "python" / "device_index.py", example)
    # Every plugin, as a user gets them (PoCL's cache kept out of $HOME).
    all_env = dict(env, ACCEL_SIM_DEVICES="2", POCL_CACHE_DIR=str(tmp / "pocl-cache"))
    probe = ("import json, accel, accel._accel as c; print(json.dumps({'file': accel.__file__, "
             "'current': str(accel.current_accelerator()), 'backends': c.backends()}))")
    p = run([py, "-c", probe], cwd=outside, env=all_env)
    expect(p.returncode == 0, "import accel works in the venv, outside both trees")
    doc = json.loads(p.stdout.splitlines()[-1])
    expect(Path(doc["file"]).resolve().parent == pkg.resolve(),
           f"import accel takes the venv's package ({doc['file']})")
    names = sorted(b["name"] for b in doc["backends"])
    expect("sim" in names and doc["current"] != "None",
           f"the plugins load (backends {names}, current {doc['current']})")
    for b in doc["backends"]:
        expect(Path(b["path"]).resolve().parent == (libs / "accel" / "plugins").resolve(),
               f"backend {b['name']} came from the wheel's plugins folder ({b['path']})")
        # Rule ABI-16: the folder beside libaccelcore is the installation's.
        expect("lowered" not in b["reason"],
               f"backend {b['name']} keeps its own priority there ({b['reason']!r})")
    run_env = dict(all_env, ACCEL_BACKEND="sim")
    p = run([py, "-c", "import accel; print(accel.current_accelerator(), accel.device_count())"],
            cwd=outside, env=run_env)
    expect(p.returncode == 0 and p.stdout.split() == ["sim", "2"],
           f"ACCEL_BACKEND=sim makes sim current, with 2 devices ({p.stdout.strip()})")
    p = run([py, example], cwd=outside, env=run_env)
    expect(p.returncode == 0 and "device_index: sim 1 then 0: ok" in p.stdout,
           "examples/python/device_index.py runs on the installed wheel")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", required=True, help="the interpreter the venv is made from")
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--work-dir", required=True, help="kept: the source copy and build folder")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="accel-wheel-"))
    try:
        rc = check(args, tmp)
        if rc == 0:
            log("PASS")
        return rc
    except Failure as e:
        log(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
