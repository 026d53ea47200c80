#!/usr/bin/env python3
"""A real setuid run of a program linking libaccelcore (meson test 'setuid').

accel reads every path variable with secure_getenv, so a setuid or setgid
program must ignore ACCEL_PLUGIN_PATH, ACCEL_BACKEND, ACCEL_LOG_LEVEL and the
backends' library overrides (ACCEL_CUDA_DRIVER, ...): otherwise any user
could make a setuid-root program load their code. This test:

 1. copies accel-setuid-probe and libaccelcore.so.1 into ROOT, a folder in
    the build tree whose absolute path is the probe's RUNPATH (the dynamic
    linker ignores $ORIGIN and LD_LIBRARY_PATH for setuid programs), plus the
    sim and cuda plugins into ROOT/plugins and the fake libcuda into
    ROOT/fake; everything owned by root, nothing group/world-writable;
 2. makes the probe setuid root (chmod 4755) and runs it as an unprivileged
    user (setpriv --reuid/--regid/--clear-groups) with ACCEL_PLUGIN_PATH=
    ROOT/plugins, ACCEL_BACKEND=sim, ACCEL_SIM_DEVICES=2,
    ACCEL_CUDA_DRIVER=ROOT/fake/libcuda.so.1, ACCEL_LOG_LEVEL=debug, ...:
    nothing from ROOT/plugins may load, no debug log may appear;
 3. removes the setuid bit and runs the same binary, same user, same
    environment: now sim (2 devices) and cuda (through the fake driver) load
    from ROOT/plugins and the debug log appears. So the test can fail: if
    the variables were ignored always, step 3 fails; if they were honoured
    under setuid, step 2 fails.

Needs root (to chown/chmod 4755 and switch user). Not root: prints why and
exits 77 (meson's "skipped"); CI runs as root. A build folder on a nosuid
mount: same. Set ACCEL_TEST_KEEP=1 to keep ROOT for inspection.

usage: setuid_test.py --probe P --lib L --root DIR --sim S [--cuda C --cuda-fake F]
"""
import argparse
import os
import pwd
import grp
import shutil
import stat
import subprocess
import sys

SKIP = 77
failures = []
passes = 0


def check(cond, what, detail=""):
    global passes
    if cond:
        passes += 1
        print(f"  ok    {what}")
    else:
        failures.append(what)
        print(f"  FAIL  {what}" + (f"\n        {detail}" if detail else ""))


def skip(why):
    print(f"setuid test cannot run: {why}")
    print("SKIPPED (exit 77)")
    sys.exit(SKIP)


def parse_probe(out):
    facts = {"env": {}, "backends": []}
    for line in out.splitlines():
        if line.startswith("backend\t"):
            parts = line.split("\t")
            parts += [""] * (6 - len(parts))
            facts["backends"].append(
                {"name": parts[1], "status": parts[2], "devices": int(parts[3] or 0),
                 "path": parts[4], "reason": parts[5]})
            continue
        key, _, rest = line.partition(" ")
        if key == "env":
            name, plain, secure = rest.split(" ")
            facts["env"][name] = (plain, secure)
        else:
            facts[key] = rest
    return facts


def unprivileged_user():
    for name in ("nobody", "accel-test"):
        try:
            pw = pwd.getpwnam(name)
            return pw
        except KeyError:
            pass
    # No 'nobody': make a system user for the test (as root, with useradd).
    useradd = shutil.which("useradd")
    if useradd is None:
        skip("no 'nobody' user and no useradd to create one")
    subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    "accel-test"], check=True)
    return pwd.getpwnam("accel-test")


def path_problems(path, uid):
    """Why an unprivileged user could not reach `path`, or could tamper with it."""
    problems = []
    p = os.path.abspath(path)
    parts = []
    while True:
        parts.append(p)
        if p == "/":
            break
        p = os.path.dirname(p)
    for d in reversed(parts):
        st = os.stat(d)
        if not st.st_mode & stat.S_IXOTH:
            problems.append(f"{d} is not traversable by others (mode {st.st_mode & 0o7777:o})")
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            problems.append(f"{d} is world-writable without the sticky bit")
    return problems


def run_probe(probe, user, env, label):
    setpriv = shutil.which("setpriv")
    cmd = [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", probe]
    print(f"\n--- {label}: {' '.join(cmd)}")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    print(r.stdout.rstrip())
    if r.stderr.strip():
        print("stderr:\n" + r.stderr.rstrip())
    print(f"exit {r.returncode}")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--fallback-root", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--cuda")
    ap.add_argument("--cuda-fake")
    a = ap.parse_args()

    if os.geteuid() != 0:
        skip(f"it must run as root (euid is {os.geteuid()}) to install a setuid-root "
             "binary and switch to an unprivileged user; CI runs it as root")
    if shutil.which("setpriv") is None:
        skip("setpriv (util-linux) is not installed")
    user = unprivileged_user()
    # The build folder if the unprivileged user can reach it and setuid bits
    # count there; else the private folder in /var/tmp (a clone under /root,
    # mode 700, is the usual case on CI machines). The probe's RUNPATH names
    # both (tests/security/meson.build).
    os.makedirs(os.path.dirname(os.path.abspath(a.root)), exist_ok=True)
    candidates = [os.path.abspath(a.root), os.path.abspath(a.fallback_root)]
    root, refused = None, []
    for c in candidates:
        parent = os.path.dirname(c)
        if not os.path.isdir(parent):
            refused.append(f"{parent} does not exist")
        elif os.statvfs(parent).f_flag & os.ST_NOSUID:
            refused.append(f"{parent} is on a filesystem mounted nosuid")
        elif path_problems(parent, user.pw_uid):
            refused.append("user '%s' cannot safely reach %s: %s" % (
                user.pw_name, parent, "; ".join(path_problems(parent, user.pw_uid))))
        else:
            root = c
            break
    for why in refused:
        print(f"not used: {why}")
    if root is None:
        skip("no folder where a setuid-root binary can run as '%s'" % user.pw_name)
    print(f"setuid tree: {root}")

    # 1. The private tree.
    if os.path.lexists(root):
        shutil.rmtree(root)
    os.mkdir(root)
    for sub in ("", "plugins", "fake"):
        d = os.path.join(root, sub)
        os.makedirs(d, exist_ok=True)
        os.chown(d, 0, 0)
        os.chmod(d, 0o755)

    def install(src, dst, mode):
        shutil.copyfile(src, dst)
        os.chown(dst, 0, 0)
        os.chmod(dst, mode)

    probe = os.path.join(root, "accel-setuid-probe")
    install(a.probe, probe, 0o755)
    install(a.lib, os.path.join(root, "libaccelcore.so.1"), 0o644)
    plugins = os.path.join(root, "plugins")
    install(a.sim, os.path.join(plugins, "accel-sim.so"), 0o755)
    # The plugins folder next to libaccelcore (docs/installing.md): searched
    # by the plain run, never by the setuid one (AT_SECURE).
    own = os.path.join(root, "accel", "plugins")
    for d in (os.path.dirname(own), own):
        os.makedirs(d, exist_ok=True)
        os.chown(d, 0, 0)
        os.chmod(d, 0o755)
    install(a.sim, os.path.join(own, "accel-sim.so"), 0o755)
    have_cuda = bool(a.cuda and a.cuda_fake and os.path.exists(a.cuda) and
                     os.path.exists(a.cuda_fake))
    fake_cuda = os.path.join(root, "fake", "libcuda.so.1")
    if have_cuda:
        install(a.cuda, os.path.join(plugins, "accel-cuda.so"), 0o755)
        install(a.cuda_fake, fake_cuda, 0o755)
    else:
        print("(cuda plugin or fake driver not built: ACCEL_CUDA_DRIVER is checked "
              "only as 'not honoured under setuid')")

    env = {
        "PATH": "/usr/bin:/bin",
        "ACCEL_PLUGIN_PATH": plugins,
        "ACCEL_BACKEND": "sim",
        "ACCEL_SIM_DEVICES": "2",
        "ACCEL_LOG_LEVEL": "debug",
        "ACCEL_CUDA_DRIVER": fake_cuda,
        "ACCEL_CUDA_NVML": os.path.join(root, "fake", "libnvidia-ml.so.1"),
        "FAKE_CUDA_DEVICES": "1",
        "ACCEL_HIP_RUNTIME": os.path.join(root, "fake", "libamdhip64.so"),
        "ACCEL_HIP_KFD_TOPOLOGY": os.path.join(root, "fake", "topology"),
        "ACCEL_ZE_LOADER": os.path.join(root, "fake", "libze_loader.so.1"),
    }
    # Sanitizer builds: keep the test setup's options, but without leak
    # checking, which needs ptrace and cannot attach to a setuid process.
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    path_vars = ["ACCEL_PLUGIN_PATH", "ACCEL_BACKEND", "ACCEL_LOG_LEVEL", "ACCEL_SIM_DEVICES",
                 "ACCEL_CUDA_DRIVER", "ACCEL_CUDA_NVML", "ACCEL_HIP_RUNTIME",
                 "ACCEL_HIP_KFD_TOPOLOGY", "ACCEL_ZE_LOADER"]

    # 2. setuid root, run as the unprivileged user.
    os.chmod(probe, 0o4755)
    st = os.stat(probe)
    print(f"{probe}: mode {st.st_mode & 0o7777:o}, owner {st.st_uid}:{st.st_gid}; "
          f"running as {user.pw_name} ({user.pw_uid}:{user.pw_gid})")
    r = run_probe(probe, user, env, "setuid run")
    f = parse_probe(r.stdout)
    print("\nsetuid run:")
    check(r.returncode == 0 and f.get("end") is not None, "the setuid probe ran to the end",
          f"exit {r.returncode}")
    check(f.get("setuid") == "1" and f.get("euid") == "0" and f.get("uid") == str(user.pw_uid),
          "it really ran setuid root as the unprivileged user",
          f"uid {f.get('uid')} euid {f.get('euid')}")
    check(f.get("at_secure") == "1", "the kernel marked it AT_SECURE")
    for v in path_vars:
        plain, secure = f["env"].get(v, ("?", "?"))
        check(plain == "set" and secure == "hidden",
              f"{v} reached the process but secure_getenv hides it", f"{plain}/{secure}")
    from_dir = [b for b in f["backends"] if b["path"].startswith(plugins + "/") or
                b["path"] == plugins]
    check(not from_dir, "nothing from ACCEL_PLUGIN_PATH was even looked at",
          f"entries: {from_dir}")
    check(f.get("current") != "sim" and not any(b["name"] == "sim" for b in f["backends"]),
          "no sim backend (ACCEL_PLUGIN_PATH, ACCEL_BACKEND and ACCEL_SIM_DEVICES ignored)")
    check(not any(b["name"] == "cuda" and b["status"] == "available" for b in f["backends"]),
          "no cuda backend through ACCEL_CUDA_DRIVER=<fake>")
    check("ACCEL_BACKEND=" not in f.get("selection", ""),
          "the selection reason does not quote ACCEL_BACKEND", f.get("selection", ""))
    check("searching" not in r.stderr and "[debug]" not in r.stderr.lower(),
          "ACCEL_LOG_LEVEL=debug was ignored (no debug log)")
    check(not any(b["path"].startswith(own + "/") for b in f["backends"]) and
          own not in f.get("selection", ""),
          "the plugins folder next to libaccelcore was not searched", f"{f['backends']}")

    # 3. The same binary without the setuid bit, same user, same environment.
    os.chmod(probe, 0o755)
    r = run_probe(probe, user, env, "plain run")
    f = parse_probe(r.stdout)
    print("\nplain run:")
    check(r.returncode == 0 and f.get("end") is not None, "the plain probe ran to the end",
          f"exit {r.returncode}")
    check(f.get("setuid") == "0" and f.get("at_secure") == "0",
          "it ran without privileges", f"setuid {f.get('setuid')} at_secure {f.get('at_secure')}")
    for v in path_vars:
        plain, secure = f["env"].get(v, ("?", "?"))
        check(plain == "set" and secure == "visible", f"{v} is visible", f"{plain}/{secure}")
    check(any(b["path"] == os.path.join(own, "accel-sim.so") for b in f["backends"]),
          "the plugins folder next to libaccelcore was searched", f"{f['backends']}")
    sim = [b for b in f["backends"] if b["name"] == "sim" and b["path"].startswith(plugins + "/")]
    check(len(sim) == 1 and sim[0]["path"] == os.path.join(plugins, "accel-sim.so") and
          sim[0]["status"] == "available" and sim[0]["devices"] == 2,
          "sim loaded from ACCEL_PLUGIN_PATH with ACCEL_SIM_DEVICES=2 devices", f"{sim}")
    check(f.get("current") == "sim", "ACCEL_BACKEND=sim chose it", f.get("current", ""))
    check("searching" in r.stderr, "ACCEL_LOG_LEVEL=debug was honoured (debug log present)")
    if have_cuda:
        # ACCEL_BACKEND=sim leaves accel-cuda.so unopened, so the plugins'
        # variables are shown by a second plain run that names cuda.
        r = run_probe(probe, user, dict(env, ACCEL_BACKEND="cuda"), "plain run (cuda)")
        f = parse_probe(r.stdout)
        cuda = [b for b in f["backends"] if b["name"] == "cuda"]
        check(len(cuda) == 1 and cuda[0]["status"] == "available" and cuda[0]["devices"] == 1,
              "cuda loaded and found the fake driver named by ACCEL_CUDA_DRIVER", f"{cuda}")

    if os.environ.get("ACCEL_TEST_KEEP"):
        print(f"\nkept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{passes} checks passed, {len(failures)} failed")
    for what in failures:
        print(f"  failed: {what}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
