#!/bin/sh
# run_fuzz.sh FUZZER BUILD_DIR SEEDS REGRESSIONS [libFuzzer options...]
# One bounded libFuzzer run (meson test --suite fuzz). New corpus entries go
# to BUILD_DIR/fuzz-corpus and crash inputs to BUILD_DIR/fuzz-artifacts/,
# both in the build tree; SEEDS and REGRESSIONS are only read. A crash input
# found here belongs in tests/fuzz/regressions/ once the bug is fixed.
set -eu
fuzzer=$1; build=$2; seeds=$3; regressions=$4
shift 4
mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
exec "$fuzzer" "-artifact_prefix=$build/fuzz-artifacts/" "$@" \
  "$build/fuzz-corpus" "$seeds" "$regressions"
