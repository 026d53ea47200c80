#!/usr/bin/env bash
# CI: the libFuzzer build (clang, ASan + UBSan) and a bounded fuzzing run of
# the public API over sim (tests/fuzz). Called by .ci/run after the Debian
# packages are installed (clang and libclang-rt-14-dev, the libFuzzer
# runtime, are in scripts/debian-packages.txt). Builds only what the fuzz
# suite runs (the harness and the sim plugin), one compile job per core.
set -euo pipefail
cd "$(dirname "$0")/.."

CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
  -Db_lundef=false -Doptimization=1 \
  -Dopencl=disabled -Dhip=disabled -Dlevel_zero=disabled -Dcuda=disabled
targets=$(python3 scripts/test-targets.py build-fuzz fuzz)
ninja -C build-fuzz -j "$(nproc)" $targets
meson test -C build-fuzz --no-rebuild --suite fuzz --print-errorlogs
