#!/usr/bin/env bash
# The README's first command: install the Debian packages accel builds
# against, configure and build it in ./build, then show what accel finds on
# this machine with accelctl run from the build tree (meson devenv points
# ACCEL_PLUGIN_PATH at the freshly built plugins; nothing is installed).
#
# Usage: bash scripts/bootstrap.sh [extra meson setup options...]
# Env:   BUILD_DIR (default: build)
set -euo pipefail

cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

packages=($(grep -v '^#' scripts/debian-packages.txt))

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "bootstrap: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ -f "$build_dir/build.ninja" ]]; then
  meson setup --reconfigure "$build_dir" "$@"
else
  meson setup "$build_dir" "$@"
fi
# The library, plugins and tools only: `meson test` builds what it runs.
# Everything, tests and benchmarks too: Meson 1.0's default target includes
# every program a test or benchmark runs (build_by_default does not take
# them out), so `meson install` after this compiles nothing, and README
# command 2 only runs the tests.
meson compile -C "$build_dir"

echo
echo "== accelctl (from the build tree) =="
meson devenv -C "$build_dir" accelctl

# The first example computes: saxpy on the current accelerator. CPU OpenCL
# devices (PoCL) count only with ACCEL_OPENCL_DEVICE_TYPE=all, so that is
# the default here unless the caller chose otherwise.
echo
echo "== examples/saxpy (from the build tree) =="
ACCEL_OPENCL_DEVICE_TYPE=${ACCEL_OPENCL_DEVICE_TYPE-all} meson devenv -C "$build_dir" accel-saxpy
