#!/usr/bin/env python3
"""Staged-install consumer tests of accel (meson test --suite install).

Each step stages `meson install` of the build tree into a fresh temporary
DESTDIR outside the source tree, then uses that staged prefix the way an
outside consumer would:

  layout   files, symlinks and soname of the installed tree; accel.pc fields;
           the installed executables' RUNPATH, and that they start from the
           stage without LD_LIBRARY_PATH
  c        the README's C example built through pkg-config and run
  cxx      the README's C++ example built through CMake find_package(accel)
           and run; version checks, a C-only CMake consumer and a C++17
           consumer through pkg-config
  plugin   the backend recipe (docs/writing-a-backend.md): a copy of
           plugins/skeleton renamed to "oot", built against the staged
           accel_plugin.h and accel_plugin_helpers.hpp alone, found by the
           staged accelctl via ACCEL_PLUGIN_PATH and passed by the staged
           accel-conformance
  plugins-found  the staged accelctl, without ACCEL_PLUGIN_PATH, loads the
           staged plugins (found next to the staged libaccelcore)
  plugins-missing  with the staged plugin folder removed, the staged
           accelctl's Selection line and the warning name it "(does not
           exist)" among the folders searched
  python   the staged package accel (docs/python.md): `import accel` with
           only PYTHONPATH set, from outside both trees; the extension finds
           the staged libaccelcore through its RUNPATH, which finds the
           staged plugins; examples/python/device_index.py runs on sim
  readme   README.md and docs/ quote every file of examples/ verbatim (no
           install)

Exit status 0 pass, 1 fail, 77 skip (a tool the step needs is missing).
Set ACCEL_KEEP_TMP=1 to keep the temporary directory for inspection.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd=None, env=None, check=True, shell=False):
    shown = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
    log(f"$ {shown}" + (f"    (in {cwd})" if cwd else ""))
    p = subprocess.run(cmd, cwd=cwd, env=env, shell=shell, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.stdout:
        log(p.stdout.rstrip())
    if check and p.returncode != 0:
        raise Failure(f"command failed with exit status {p.returncode}: {shown}")
    return p


def expect(cond, what):
    if not cond:
        raise Failure(what)
    log(f"ok: {what}")


def clean_env():
    """The caller's environment without anything that could point a consumer
    back at the build or source tree."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACCEL_", "PKG_CONFIG", "CMAKE_", "MESON"))
           and k not in ("LD_LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH",
                         "CPLUS_INCLUDE_PATH", "LIBRARY_PATH")}
    env["LC_ALL"] = "C"
    return env


class Stage:
    """One staged installation: DESTDIR plus the configured layout."""

    def __init__(self, args, tmp):
        self.args = args
        self.destdir = tmp / "destdir"
        self.prefix = Path(args.prefix)

        def staged(p):
            p = Path(p)
            if not p.is_absolute():
                p = self.prefix / p
            return Path(str(self.destdir) + str(p))

        self.root = staged(self.prefix)
        self.libdir = staged(args.libdir)
        self.includedir = staged(args.includedir)
        self.bindir = staged(args.bindir)
        self.plugindir = self.libdir / "accel" / "plugins"
        self.pcdir = self.libdir / "pkgconfig"
        self.cmakedir = self.libdir / "cmake" / "accel"
        self.wrappers = self.compiler_wrappers(tmp)

    def install(self):
        env = clean_env()
        env["DESTDIR"] = str(self.destdir)
        run(self.args.meson + ["install", "-C", self.args.build_root, "--no-rebuild", "--quiet"],
            env=env)
        expect(self.root.is_dir(), f"meson install staged a prefix at {self.root}")

    def compiler_wrappers(self, tmp):
        """In a sanitizer build the installed library needs the sanitizer
        runtimes first in the process: consumers must be built with the same
        -fsanitize flags, by the compilers of the build (GCC's ASan runtime
        is a shared library, clang's is linked into each program: a plugin
        of one in a program of the other aborts with "incompatible ASan
        runtimes"). The README's commands call plain cc / c++, so put
        wrappers that run the build's compilers with the flags ahead of them
        on PATH (CMake finds them there too)."""
        if self.args.sanitize in ("", "none"):
            return None
        wdir = tmp / "sanitizer-bin"
        wdir.mkdir()
        compilers = {"cc": self.args.cc, "gcc": self.args.cc, "c++": self.args.cxx,
                     "g++": self.args.cxx}
        for name, build_compiler in compilers.items():
            real = shutil.which(build_compiler or name)
            if real is None:
                continue
            flags = f"-fsanitize={self.args.sanitize}"
            if name in ("cc", "gcc") and "clang" in Path(real).name:
                # libaccelcore is C++: a C program linked by clang needs
                # clang's C++ sanitizer runtime (UBSan's vptr and function
                # checks) and, for it, libstdc++ (GCC's shared runtimes
                # carry both).
                flags += " -fsanitize-link-c++-runtime -lstdc++"
            w = wdir / name
            w.write_text(f'#!/bin/sh\nexec "{real}" "$@" {flags}\n')
            w.chmod(0o755)
        log(f"note: sanitizer build ({self.args.sanitize}): consumers are built by "
            f"{self.args.cc} / {self.args.cxx} with -fsanitize={self.args.sanitize} through "
            f"wrappers in {wdir}")
        return wdir

    def env(self, ld_path=True):
        """Environment of a consumer using the staged prefix."""
        env = clean_env()
        env["PATH"] = f"{self.bindir}:{env.get('PATH', '/usr/bin:/bin')}"
        if self.wrappers is not None:
            env["PATH"] = f"{self.wrappers}:{env['PATH']}"
        if ld_path:
            env["LD_LIBRARY_PATH"] = str(self.libdir)
        # Only the staged accel.pc, and its paths prefixed with DESTDIR: the
        # way a distribution's sysroot build sees an installed package.
        env["PKG_CONFIG_LIBDIR"] = str(self.pcdir)
        env["PKG_CONFIG_SYSROOT_DIR"] = str(self.destdir)
        env["CMAKE_PREFIX_PATH"] = str(self.root)
        env["ACCEL_PLUGIN_PATH"] = str(self.plugindir)
        env["ACCEL_BACKEND"] = "sim"
        return env


def copy_example(src_root, names, dst):
    dst.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy2(src_root / n, dst / Path(n).name)
    return dst


# --- steps --------------------------------------------------------------------------


def step_layout(args, tmp):
    st = Stage(args, tmp)
    st.install()

    lib_real = st.libdir / "libaccelcore.so.1.0.0"
    lib_so1 = st.libdir / "libaccelcore.so.1"
    lib_dev = st.libdir / "libaccelcore.so"
    expect(lib_real.is_file() and not lib_real.is_symlink(), f"{lib_real.name} is installed")
    expect(lib_so1.is_symlink() and lib_so1.resolve() == lib_real.resolve(),
           "libaccelcore.so.1 -> libaccelcore.so.1.0.0")
    expect(lib_dev.is_symlink() and lib_dev.resolve() == lib_real.resolve(),
           "libaccelcore.so (development link) -> libaccelcore.so.1.0.0")
    readelf = shutil.which("readelf")
    if readelf:
        dyn = run([readelf, "-d", str(lib_real)]).stdout
        expect(re.search(r"\(SONAME\)\s+Library soname: \[libaccelcore\.so\.1\]", dyn) is not None,
               "SONAME is libaccelcore.so.1")
        expect("RPATH" not in dyn and "RUNPATH" not in dyn, "no build-tree RPATH left in the library")
    else:
        log("note: readelf not found; soname not checked")

    for h in ("accel.h", "accel_plugin.h", "accel_plugin_helpers.hpp", "accel.hpp",
              "detail/support.hpp", "detail/definitions.hpp"):
        staged = st.includedir / "accel" / h
        expect(staged.is_file(), f"include/accel/{h} is installed")
        expect(staged.read_bytes() == (Path(args.source_root) / "include" / "accel" / h).read_bytes(),
               f"installed {h} equals the source header")

    expect((st.plugindir / "accel-sim.so").is_file(),
           f"the sim plugin is installed in $libdir/accel/plugins ({st.plugindir})")
    for exe in args.exe:
        p = st.bindir / exe
        expect(p.is_file() and os.access(p, os.X_OK), f"bin/{exe} is installed")
    check_executables_start(st, readelf, args.exe)

    # accel.pc
    pc = st.pcdir / "accel.pc"
    expect(pc.is_file(), "accel.pc is installed in $libdir/pkgconfig")
    text = pc.read_text()
    expect(re.search(r"^Requires(\.private)?:", text, re.M) is None,
           "accel.pc requires no other package (spdlog/fmt stay private to the .so)")
    env = st.env()
    pkgconf = shutil.which("pkg-config")
    if pkgconf is None:
        raise Failure("pkg-config not found")
    ver = run([pkgconf, "--modversion", "accel"], env=env).stdout.strip()
    expect(ver == args.version, f"pkg-config --modversion accel is {args.version}")
    cflags = run([pkgconf, "--cflags", "accel"], env=env).stdout.split()
    libs = run([pkgconf, "--libs", "accel"], env=env).stdout.split()
    expect(f"-I{st.includedir}" in cflags,
           "pkg-config --cflags points into the staged include dir")
    expect(f"-L{st.libdir}" in libs and "-laccelcore" in libs,
           "pkg-config --libs gives -L<staged libdir> -laccelcore")
    env_nosysroot = dict(env)
    del env_nosysroot["PKG_CONFIG_SYSROOT_DIR"]
    plugindir = run([pkgconf, "--variable=plugindir", "accel"], env=env_nosysroot).stdout.strip()
    expect(plugindir == args.plugindir,
           f"pkg-config --variable=plugindir accel is the compiled-in plugins dir ({args.plugindir})")

    # CMake package files
    for f in ("accelConfig.cmake", "accelConfigVersion.cmake"):
        expect((st.cmakedir / f).is_file(), f"$libdir/cmake/accel/{f} is installed")
    expect(str(args.build_root) not in (st.cmakedir / "accelConfig.cmake").read_text()
           and str(args.source_root) not in (st.cmakedir / "accelConfig.cmake").read_text(),
           "accelConfig.cmake names no build or source path")


def runpath_entries(readelf, path):
    """The DT_RUNPATH entries of an ELF file, and whether it has a DT_RPATH."""
    dyn = run([readelf, "-d", str(path)]).stdout
    m = re.search(r"\(RUNPATH\)\s+Library runpath: \[([^\]]*)\]", dyn)
    return (m.group(1).split(":") if m else []), "(RPATH)" in dyn


def check_executables_start(st, readelf, names):
    """The installed executables find the staged libaccelcore by themselves:
    a RUNPATH relative to their folder ($ORIGIN), nothing of the build tree,
    and they run with no LD_LIBRARY_PATH (as under a prefix that is in no
    ld.so.conf, e.g. /opt/x)."""
    exes = [st.bindir / e for e in names]
    if readelf:
        for exe in exes:
            entries, has_rpath = runpath_entries(readelf, exe)
            expect(not has_rpath, f"bin/{exe.name} has no DT_RPATH (RUNPATH only)")
            expect(len(entries) == 1, f"bin/{exe.name} has one RUNPATH entry (got {entries})")
            entry = entries[0]
            if entry.startswith("$ORIGIN"):
                target = Path(entry.replace("$ORIGIN", str(exe.parent), 1))
            else:
                # libdir configured outside the prefix: an absolute path.
                target = Path(str(st.destdir) + entry)
            expect(target.resolve() == st.libdir.resolve(),
                   f"bin/{exe.name}'s RUNPATH {entry} leads to the installed libdir")
            if not Path(st.args.libdir).is_absolute():
                expect(entry.startswith("$ORIGIN/"),
                       f"bin/{exe.name}'s RUNPATH is relative to the executable ({entry})")
    else:
        log("note: readelf not found; RUNPATH not checked")

    env = st.env(ld_path=False)
    env["ACCEL_SIM_DEVICES"] = "2"
    ldd = shutil.which("ldd")
    if ldd:
        for exe in exes:
            resolved = run([ldd, str(exe)], env=env).stdout
            # The path comes as the RUNPATH spells it (.../bin/../lib/...).
            m = re.search(r"libaccelcore\.so\.1 => (\S+)", resolved)
            expect(m is not None and Path(m.group(1)).resolve().parent == st.libdir.resolve(),
                   f"bin/{exe.name} resolves libaccelcore.so.1 from the staged libdir by itself")
    if "accelctl" in names:
        p = run([str(st.bindir / "accelctl"), "backends", "--json"], env=env, check=False)
        expect(p.returncode == 0, "the staged accelctl starts without LD_LIBRARY_PATH")
        doc = json.loads(p.stdout)
        expect(doc.get("current_accelerator") == "sim",
               "the staged accelctl finds the staged sim plugin")
    if "accel-conformance" in names:
        # Catch2 v2 exits with the number of test cases listed, not 0.
        p = run([str(st.bindir / "accel-conformance"), "--list-tests"], env=env, check=False)
        expect(re.search(r"^\d+ test cases$", p.stdout, re.M) is not None,
               "the staged accel-conformance starts without LD_LIBRARY_PATH (lists its tests)")


def step_c(args, tmp):
    st = Stage(args, tmp)
    st.install()
    if shutil.which("cc") is None or shutil.which("pkg-config") is None:
        log("SKIP: cc or pkg-config missing")
        return SKIP
    ex = Path(args.source_root) / "examples" / "c"
    work = copy_example(ex, ["hello.c", "build.sh"], tmp / "consumer-c")
    out = run(["sh", "-e", "build.sh"], cwd=work, env=st.env()).stdout
    expect("accelerator: sim, 2 device(s)" in out, "the C example sees 2 sim devices")
    expect("round trip ok" in out, "the C example's round trip works")
    # It links the staged library by soname, and resolves it in the stage.
    ldd = shutil.which("ldd")
    if ldd:
        resolved = run([ldd, str(work / "hello")], env=st.env()).stdout
        expect(re.search(r"libaccelcore\.so\.1 => " + re.escape(str(st.libdir)), resolved)
               is not None, "hello resolves libaccelcore.so.1 from the staged libdir")


def step_opencl(args, tmp):
    """examples/opencl: OpenCL called on accel's stream, over PoCL."""
    st = Stage(args, tmp)
    st.install()
    if shutil.which("cc") is None or shutil.which("pkg-config") is None:
        log("SKIP: cc or pkg-config missing")
        return SKIP
    if run(["pkg-config", "--exists", "OpenCL"], check=False).returncode != 0:
        log("SKIP: no OpenCL.pc (Debian: ocl-icd-opencl-dev)")
        return SKIP
    ex = Path(args.source_root) / "examples" / "opencl"
    work = copy_example(ex, ["interop.c", "build.sh"], tmp / "consumer-opencl")
    env = st.env()
    # build.sh asks pkg-config for OpenCL too, whose OpenCL.pc is the
    # system's, outside the stage: the consumer sees its folder after the
    # staged one. PKG_CONFIG_SYSROOT_DIR prefixes its -I and -L with the stage
    # as well; those folders do not exist, and the compiler finds the system's
    # OpenCL headers and loader in its default paths, where they are.
    ocl_pc = run(["pkg-config", "--variable=pcfiledir", "OpenCL"]).stdout.strip()
    env["PKG_CONFIG_LIBDIR"] += os.pathsep + ocl_pc
    env["POCL_DEVICES"] = "pthread"
    env["POCL_CACHE_DIR"] = str(tmp / "pocl-cache")
    out = run(["sh", "-e", "build.sh"], cwd=work, env=env).stdout
    expect("OpenCL fill ordered between accel copies" in out,
           "the OpenCL example's clEnqueueSVMMemFill on accel's queue ran between accel's copies")


def cmake_configure_build(cmake, src, build, env):
    run([cmake, "-S", str(src), "-B", str(build)], env=env)
    run([cmake, "--build", str(build)], env=env)


def step_cxx(args, tmp):
    st = Stage(args, tmp)
    st.install()
    cmake = shutil.which("cmake")
    if cmake is None:
        log("SKIP: cmake is not installed (scripts/bootstrap.sh installs it)")
        return SKIP
    ex = Path(args.source_root) / "examples" / "cxx"
    work = copy_example(ex, ["CMakeLists.txt", "hello.cpp", "build.sh"], tmp / "consumer-cxx")
    # No LD_LIBRARY_PATH: the imported target's IMPORTED_LOCATION must give
    # the executable a working RPATH to the staged library by itself.
    out = run(["sh", "-e", "build.sh"], cwd=work, env=st.env(ld_path=False)).stdout
    expect(f"accel plugins dir: {st.plugindir}" in out,
           "find_package(accel) sets ACCEL_PLUGIN_DIR to the (relocated) plugins dir")
    expect("accelerator: sim, 2 device(s)" in out, "the C++ example sees 2 sim devices")
    expect("round trip ok on device 1" in out, "the C++ example's round trip works on device 1")

    # A C-only consumer: accel::core must not require C++ (or C++20).
    cdir = tmp / "consumer-cmake-c"
    cdir.mkdir()
    shutil.copy2(Path(args.source_root) / "examples" / "c" / "hello.c", cdir / "hello.c")
    (cdir / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\n"
        "project(c_user LANGUAGES C)\n"
        "set(CMAKE_C_STANDARD 99)\n"
        f"find_package(accel {args.version} EXACT REQUIRED)\n"
        "get_target_property(_loc accel::core IMPORTED_LOCATION)\n"
        "message(STATUS \"accel::core location: ${_loc}\")\n"
        "add_executable(hello_c hello.c)\n"
        "target_link_libraries(hello_c PRIVATE accel::core)\n")
    cmake_configure_build(cmake, cdir, cdir / "build", st.env(ld_path=False))
    run_env = st.env(ld_path=False)
    run_env["ACCEL_SIM_DEVICES"] = "2"
    out = run([str(cdir / "build" / "hello_c")], env=run_env).stdout
    expect("round trip ok" in out, "a C-only CMake consumer links accel::core and runs")

    # Version checks of accelConfigVersion.cmake.
    major, minor = args.version.split(".")[:2]
    checks = [
        (f"{major}.{minor}", True),
        (args.version, True),
        (f"{major}.{int(minor) + 1}", False),  # newer than installed
        (f"{int(major) + 1}", False),           # another major
        (f"{major}.{minor}...{int(major) + 2}", True),  # a range
    ]
    vdir = tmp / "consumer-cmake-versions"
    vdir.mkdir()
    lines = ["cmake_minimum_required(VERSION 3.19)", "project(v LANGUAGES C)"]
    for i, (req, _) in enumerate(checks):
        lines += [f"find_package(accel {req} QUIET)",
                  f"message(STATUS \"check{i} ${{accel_FOUND}}\")",
                  "unset(accel_FOUND)", "unset(accel_DIR CACHE)"]
    (vdir / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    out = run([cmake, "-S", str(vdir), "-B", str(vdir / "build")], env=st.env()).stdout
    for i, (req, want) in enumerate(checks):
        m = re.search(rf"check{i} (\S*)", out)
        got = m is not None and m.group(1) in ("1", "ON", "TRUE", "YES")
        expect(got == want, f"find_package(accel {req}) {'succeeds' if want else 'is refused'}")

    # A C++17 consumer of the installed accel.hpp (CUDA, HIP and SYCL code
    # bases mostly are C++17), strict, through pkg-config.
    if shutil.which("c++") is None or shutil.which("pkg-config") is None:
        log("note: c++ or pkg-config missing; C++17 consumer not built")
        return None
    c17 = tmp / "consumer-cxx17"
    c17.mkdir()
    (c17 / "hello17.cpp").write_text(CXX17_CONSUMER)
    run(["sh", "-c", "c++ -std=c++17 -Wall -Wextra -pedantic -Werror -o hello17 hello17.cpp "
         "$(pkg-config --cflags --libs accel)"], cwd=c17, env=st.env())
    run_env = st.env()
    run_env["ACCEL_SIM_DEVICES"] = "2"
    out = run([str(c17 / "hello17")], env=run_env).stdout
    expect("c++17 round trip ok on device 1" in out,
           "a C++17 consumer (-std=c++17 -pedantic -Werror) builds against the staged accel.hpp and runs")
    return None


CXX17_CONSUMER = """\
#include <accel/accel.hpp>

#include <cstdio>
#include <numeric>
#include <vector>

int main() {
  try {
    accel::DeviceIndexGuard guard(accel::device_count() - 1);
    accel::Stream stream = accel::Stream::create();
    accel::Event start(accel::EventOptions{true});
    accel::Event end(accel::EventOptions{true});
    std::vector<int> in(1024), out(in.size());
    std::iota(in.begin(), in.end(), 0);
    accel::DeviceBuffer<int> buf(in.size());
    stream.record(start);
    buf.copy_from(in, stream);
    buf.copy_to(out, stream);
    stream.record(end);
    end.synchronize();
    std::printf("c++17 round trip %s on device %d in %f ms\\n", out == in ? "ok" : "MISMATCH",
                accel::current_device_index(), start.elapsed_time(end).count());
    return out == in ? 0 : 1;
  } catch (const accel::Error& e) {
    std::fprintf(stderr, "%s\\n", e.what());
    return 1;
  }
}
"""


def step_plugin(args, tmp):
    st = Stage(args, tmp)
    st.install()
    if shutil.which("c++") is None or shutil.which("pkg-config") is None:
        log("SKIP: c++ or pkg-config missing")
        return SKIP
    work = tmp / "oot-plugin"
    work.mkdir()
    skeleton = Path(args.source_root) / "plugins" / "skeleton"
    shutil.copy2(skeleton / "skeleton.cpp", work / "skeleton.cpp")
    shutil.copy2(skeleton / "skeleton.map", work / "skeleton.map")
    shutil.copy2(Path(args.source_root) / "examples" / "plugin" / "build.sh", work / "build.sh")
    source = (work / "skeleton.cpp").read_text()
    expect('kBackendName = "skeleton"' in source,
           'plugins/skeleton/skeleton.cpp names its backend in one place (kBackendName = "skeleton")')
    # Third-party plugins get only the installed headers: the template must
    # need nothing else of accel's (no backends/common, no libaccelcore).
    includes = re.findall(r'^#include [<"]accel/([^>"]+)[>"]', source, re.M)
    expect(sorted(includes) == ["accel_plugin.h", "accel_plugin_helpers.hpp"],
           f"the template includes only accel_plugin.h and accel_plugin_helpers.hpp (got {includes})")
    expect((st.includedir / "accel" / "accel_plugin_helpers.hpp").is_file(),
           "accel_plugin_helpers.hpp is installed next to accel_plugin.h")

    # No LD_LIBRARY_PATH: the staged accelctl and accel-conformance find the
    # staged library through their RUNPATH, as under a prefix like /opt/x.
    env = st.env(ld_path=False)
    # Not the staged plugins dir, and no ACCEL_BACKEND: the script sets the
    # path to its own folder and the new backend must be picked by itself.
    del env["ACCEL_PLUGIN_PATH"]
    del env["ACCEL_BACKEND"]
    out = run(["bash", "-e", "build.sh"], cwd=work, env=env).stdout
    renamed = (work / "skeleton.cpp").read_text()
    expect('kBackendName = "oot"' in renamed and "skeleton" not in renamed.lower(),
           "the copy was renamed to oot, every skeleton/SKELETON with it")
    # bash -e: the script already failed if accel-conformance did.
    expect("All tests passed" in out.split("accel-conformance --backend oot")[-1],
           "accel-conformance --backend oot passes (Catch2: All tests passed)")

    # The plugin exports exactly the entry symbol.
    nm = shutil.which("nm")
    if nm:
        syms = run([nm, "-D", "--defined-only", str(work / "accel-oot.so")]).stdout
        fields = [l.split() for l in syms.splitlines()]
        exported = [f[2] for f in fields if len(f) == 3 and f[1].isupper()]
        expect(exported == ["accel_plugin_get_api"],
               f"the plugin exports only accel_plugin_get_api (got {exported})")

    env["ACCEL_PLUGIN_PATH"] = str(work / "plugins")
    env["ACCEL_OOT_DEVICES"] = "2"
    p = run(["accelctl", "backends", "--json"], cwd=work, env=env, check=False)
    if p.returncode != 0:
        p = run(["accelctl", "--json", "backends"], cwd=work, env=env)
    doc = json.loads(p.stdout)
    oot = [b for b in doc["backends"] if b.get("name") == "oot"]
    expect(len(oot) == 1, "accelctl backends --json lists the oot backend once")
    b = oot[0]
    expect(b["status"] == "available", f"oot is available (status {b['status']}: {b.get('reason')})")
    expect(b["device_count"] == 2, "oot has 2 devices")
    expect(Path(b["path"]).resolve() == (work / "plugins" / "accel-oot.so").resolve(),
           "oot was loaded from the ACCEL_PLUGIN_PATH directory")
    expect(doc.get("current_accelerator") == "oot", "oot is the current accelerator")

    # And the conformance suite, run here again so a pass is unambiguous.
    p = run(["accel-conformance", "--backend", "oot"], cwd=work, env=env, check=False)
    expect(p.returncode == 0, "the staged accel-conformance --backend oot exits 0")


def step_plugins_found(args, tmp):
    """A staged install used in place, without ACCEL_PLUGIN_PATH: the staged
    libaccelcore finds the staged plugins next to itself."""
    st = Stage(args, tmp)
    st.install()
    if not (st.bindir / "accelctl").is_file():
        log("SKIP: accelctl is not installed (tools=false)")
        return SKIP
    env = st.env(ld_path=False)
    del env["ACCEL_PLUGIN_PATH"]
    del env["ACCEL_BACKEND"]
    env["ACCEL_SIM_DEVICES"] = "2"
    accelctl = str(st.bindir / "accelctl")
    p = run([accelctl, "backends", "--json"], env=env, check=False)
    expect(p.returncode == 0, "the staged accelctl starts")
    doc = json.loads(p.stdout)
    sim = [b for b in doc["backends"] if b.get("name") == "sim"]
    expect(len(sim) == 1 and Path(sim[0]["path"]).resolve().parent == st.plugindir.resolve(),
           f"without ACCEL_PLUGIN_PATH the staged accelctl loads sim from {st.plugindir} "
           f"(selection: {doc.get('selection_reason')})")
    expect(doc.get("current_accelerator") is not None, "a staged backend is current")


def step_plugins_missing(args, tmp):
    """A staged install whose plugin folder is gone: accelctl's Selection
    line and the default-level warning name every folder searched and mark
    that one as missing."""
    st = Stage(args, tmp)
    st.install()
    if not (st.bindir / "accelctl").is_file():
        log("SKIP: accelctl is not installed (tools=false)")
        return SKIP
    env = st.env(ld_path=False)
    del env["ACCEL_PLUGIN_PATH"]
    del env["ACCEL_BACKEND"]
    accelctl = str(st.bindir / "accelctl")
    moved = st.plugindir.with_name("plugins.moved")
    st.plugindir.rename(moved)
    p = run([accelctl], env=env, check=False)
    expect(p.returncode == 0, "the staged accelctl starts with its plugin folder gone")
    missing = f"'{st.plugindir}' (does not exist)"
    selection = [l for l in p.stdout.splitlines() if l.startswith("Selection:")]
    expect(len(selection) == 1 and missing in selection[0],
           f"accelctl's Selection line names {missing} (got {selection})")
    expect(f"'{args.plugindir}'" in selection[0],
           "the Selection line names the configured plugins folder too")
    # run() merges stderr into stdout: the warning is the non-report line.
    warnings = [l for l in p.stdout.splitlines() if l.startswith("[accel] [warning]")]
    expect(any(missing in l for l in warnings),
           f"the default-level warning names {missing} (warnings: {warnings})")
    expect("ACCEL_LOG_LEVEL" not in p.stdout, "accelctl no longer sends the user to ACCEL_LOG_LEVEL")


def step_readme(args, tmp):
    src = Path(args.source_root)
    readme = (src / "README.md").read_text()
    for title in ("## Use accel from C", "## Use accel from C++", "## Write a backend"):
        expect(re.search(rf"^{re.escape(title)}\s*$", readme, re.M) is not None,
               f"README has a section '{title[3:]}'")
    # The backend recipe lives in docs/; README's section points there.
    recipe = src / "docs" / "writing-a-backend.md"
    expect(recipe.is_file() and re.search(r"^# Write a backend\s*$", recipe.read_text(), re.M)
           is not None, "docs/writing-a-backend.md holds the backend recipe")
    # <!-- example: path --> then a fenced block whose body is the file, in
    # README.md or any document of docs/.
    pattern = re.compile(r"<!-- example: (\S+) -->\s*\n```[^\n]*\n(.*?)```", re.S)
    quoted = {}  # example file -> [(document, body)]
    for doc in [src / "README.md"] + sorted((src / "docs").glob("*.md")):
        for m in pattern.finditer(doc.read_text()):
            quoted.setdefault(m.group(1), []).append((str(doc.relative_to(src)), m.group(2)))
    # Dot files (examples/.clang-format: the examples' 80 columns) are
    # settings, not examples.
    examples = sorted(str(p.relative_to(src)) for p in (src / "examples").rglob("*")
                      if p.is_file() and not p.name.startswith("."))
    expect(examples != [], "examples/ has files")
    for rel in examples:
        expect(rel in quoted, f"README.md or docs/ quotes {rel}")
        want = (src / rel).read_text()
        for doc, body in quoted[rel]:
            if body != want:
                import difflib
                diff = "".join(difflib.unified_diff(want.splitlines(True), body.splitlines(True),
                                                    rel, doc))
                log(diff)
            expect(body == want, f"{doc}'s copy of {rel} equals the file")
    for rel, places in quoted.items():
        expect((src / rel).is_file(),
               f"the example marker in {places[0][0]} names an existing file ({rel})")


def step_python(args, tmp):
    if args.sanitize not in ("", "none"):
        # The interpreter is not instrumented: it would need the sanitizer
        # runtime preloaded (tests/python/run_pytest.py does that for the
        # build tree's package, suite python).
        log(f"SKIP: a {args.sanitize} build's package runs under its suite python only")
        return SKIP
    st = Stage(args, tmp)
    st.install()
    pkg = Path(str(st.destdir) + args.python_dir)
    expect((pkg / "__init__.py").is_file() and (pkg / "__init__.pyi").is_file()
           and (pkg / "py.typed").is_file(), f"the package and its stubs are installed in {pkg}")
    exts = sorted(pkg.glob("_accel*.so"))
    expect(len(exts) == 1, f"one extension module accel._accel is installed ({exts})")
    readelf = shutil.which("readelf")
    if readelf:
        entries, has_rpath = runpath_entries(readelf, exts[0])
        expect(not has_rpath and entries and all(e.startswith("$ORIGIN") for e in entries),
               f"the extension's RUNPATH is relative to its folder ({entries})")
    env = st.env(ld_path=False)
    env.pop("ACCEL_PLUGIN_PATH", None)
    env.update({"ACCEL_BACKEND": "sim", "ACCEL_SIM_DEVICES": "2", "PYTHONPATH": str(pkg.parent),
                "PYTHONDONTWRITEBYTECODE": "1"})
    work = tmp / "py"
    work.mkdir()
    p = run([args.python, "-c", "import accel; print(accel.__file__); "
             "print(accel.current_accelerator(), accel.device_count())"], cwd=work, env=env,
            check=False)
    lines = p.stdout.splitlines()
    expect(p.returncode == 0 and len(lines) >= 2 and Path(lines[-2]).parent == pkg,
           f"import accel takes the staged package from {pkg}")
    expect(lines[-1] == "sim 2", "the staged plugins are found: sim with 2 devices is current")
    example = work / "device_index.py"
    shutil.copy(Path(args.source_root) / "examples" / "python" / "device_index.py", example)
    p = run([args.python, str(example)], cwd=work, env=env, check=False)
    expect(p.returncode == 0 and "device_index: sim 1 then 0: ok" in p.stdout,
           "examples/python/device_index.py runs on the staged package")


STEPS = {"layout": step_layout, "python": step_python, "c": step_c, "cxx": step_cxx, "plugin": step_plugin,
         "plugins-found": step_plugins_found, "plugins-missing": step_plugins_missing,
         "opencl": step_opencl, "readme": step_readme}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=sorted(STEPS))
    ap.add_argument("--meson", required=True, help="meson command (may be several words)")
    ap.add_argument("--build-root", required=True)
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--includedir", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--plugindir", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--sanitize", default="none", help="the build's b_sanitize option")
    ap.add_argument("--cc", default="", help="the build's C compiler (sanitizer builds)")
    ap.add_argument("--cxx", default="", help="the build's C++ compiler (sanitizer builds)")
    ap.add_argument("--python", default="", help="the interpreter the package is built for")
    ap.add_argument("--python-dir", default="", help="the folder meson installs the package in")
    ap.add_argument("--exe", action="append", default=None,
                    help="an executable meson installs in bindir (repeat); "
                         "default: accelctl and accel-conformance")
    args = ap.parse_args()
    if args.exe is None:
        args.exe = ["accelctl", "accel-conformance"]
    args.meson = [args.meson]

    tmp = Path(tempfile.mkdtemp(prefix=f"accel-install-{args.step}-"))
    src = Path(args.source_root).resolve()
    if src in tmp.resolve().parents:
        log(f"temporary directory {tmp} is inside the source tree; set TMPDIR elsewhere")
        return 1
    log(f"step {args.step}; working in {tmp}")
    try:
        rc = STEPS[args.step](args, tmp)
        if rc == SKIP:
            return SKIP
        log(f"PASS: {args.step}")
        return 0
    except Failure as e:
        log(f"FAIL: {e}")
        return 1
    finally:
        if os.environ.get("ACCEL_KEEP_TMP"):
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
