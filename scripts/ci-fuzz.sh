#!/usr/bin/env bash
# CI: the libFuzzer build (clang, ASan + UBSan) and a bounded fuzzing run of
# the public API over sim (tests/fuzz). Called by .ci/run after the Debian
# packages are installed (clang and libclang-rt-14-dev, the libFuzzer
# runtime, are in scripts/debian-packages.txt). Builds only the fuzz target;
# meson test builds the sim plugin it depends on.
set -euo pipefail
cd "$(dirname "$0")/.."

CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dopencl=disabled -Dhip=disabled -Dlevel_zero=disabled -Dcuda=disabled && meson compile -C build-fuzz tests/fuzz/accel-fuzz && meson test -C build-fuzz --suite fuzz --print-errorlogs
