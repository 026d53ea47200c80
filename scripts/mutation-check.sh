#!/usr/bin/env bash
# Every check can fail: each file in scripts/mutations/ is a deliberate bug
# (a patch to the committed tree) and names the tests that must catch it.
# This script builds the committed HEAD in a scratch worktree, runs every
# named test once unmutated (they must pass there, or a "catch" proves
# nothing), then for each mutation applies it, rebuilds, runs its tests,
# expects at least one to FAIL, and reverts it. It prints, for each
# mutation, the test that caught it, and exits 1 if any mutation was missed
# or the unmutated baseline failed. Not part of .ci/run: a full pass
# rebuilds the tree once per mutation (about a minute each on 2 cores).
#
# Usage: bash scripts/mutation-check.sh [NAME...]   (default: every mutation)
# Env:   MUTATION_DIR  scratch worktree (default /tmp/accel-mutation; reused
#                      between runs, so a second run rebuilds little)
#        JOBS          ninja jobs (default: nproc)
#
# A mutation file: '# test: <meson test name>' lines (one per test that
# must catch it), a '# why: <text>' line, then a `git diff` against the tree.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${MUTATION_DIR:-/tmp/accel-mutation}
jobs=${JOBS:-$(nproc)}
mutations=()
if (($#)); then
  for n in "$@"; do mutations+=("$repo/scripts/mutations/$n.patch"); done
else
  mutations=("$repo"/scripts/mutations/*.patch)
fi

tests_of() { sed -n 's/^# test: *//p' "$1"; }
why_of() { sed -n 's/^# why: *//p' "$1" | head -1; }

# The scratch tree: a detached worktree at HEAD (what is committed).
head=$(git -C "$repo" rev-parse HEAD)
if [[ -d $dir/.git || -f $dir/.git ]]; then
  git -C "$dir" checkout -q --force --detach "$head"
  git -C "$dir" clean -q -fd -e build
else
  git -C "$repo" worktree add -q --detach "$dir" "$head"
fi
# The build reads the scratch tree's sources (never this checkout's).
info=$dir/build/meson-info/meson-info.json
if [[ -f $info ]] && [[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' "$info") != "$dir" ]]; then
  rm -rf "$dir/build"
fi
[[ -f $dir/build/build.ninja ]] || meson setup "$dir/build" "$dir" >/dev/null

# Builds what the named tests run (nothing else), then runs them.
run_tests() {  # log, tests...
  local log=$1; shift
  {
    # shellcheck disable=SC2046
    ninja -C "$dir/build" -j "$jobs" $(python3 "$dir/scripts/test-targets.py" "$dir/build" --tests "$@") &&
      meson test -C "$dir/build" --no-rebuild --num-processes "$jobs" --print-errorlogs "$@"
  } >"$log" 2>&1
}

all_tests=()
for m in "${mutations[@]}"; do
  [[ -f $m ]] || { echo "mutation-check: no such mutation: $m" >&2; exit 2; }
  git -C "$dir" apply --check "$m" || { echo "mutation-check: $(basename "$m") no longer applies" >&2; exit 2; }
  mapfile -t t < <(tests_of "$m")
  ((${#t[@]})) || { echo "mutation-check: $(basename "$m") names no test" >&2; exit 2; }
  all_tests+=("${t[@]}")
done
mapfile -t all_tests < <(printf '%s\n' "${all_tests[@]}" | sort -u)

echo "mutation-check: HEAD $(git -C "$repo" rev-parse --short HEAD), ${#mutations[@]} mutation(s), in $dir"
echo "mutation-check: baseline (unmutated): ${all_tests[*]}"
if ! run_tests "$dir/baseline.log" "${all_tests[@]}"; then
  grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|ERROR)' "$dir/baseline.log" || tail -20 "$dir/baseline.log"
  echo "mutation-check: FAILED: the named tests do not pass on the unmutated tree ($dir/baseline.log)"
  exit 1
fi
echo "mutation-check: baseline: every named test passes"

missed=0
for m in "${mutations[@]}"; do
  name=$(basename "$m" .patch)
  mapfile -t t < <(tests_of "$m")
  git -C "$dir" apply "$m"
  log="$dir/mutation-$name.log"
  set +e
  run_tests "$log" "${t[@]}"
  set -e
  # Meson's result lines: " 3/5 accel:suite / name   FAIL   1.2s ...".
  caught=$(grep -E '^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT|ERROR) ' "$log" |
           sed -E 's/^ *[0-9]+\/[0-9]+ +(.* \/ )?([^ ]+) .*/\2/' | sort -u | paste -sd, - || true)
  if [[ -z $caught ]] && grep -q '^FAILED: ' "$log"; then
    caught="(the build failed: a mutation must compile)"
    missed=$((missed + 1))
    printf '  %-34s MISSED  %s\n' "$name" "$caught"
  elif [[ -n $caught ]]; then
    printf '  %-34s caught by %s\n' "$name" "$caught"
  else
    missed=$((missed + 1))
    printf '  %-34s MISSED  (%s passed)\n' "$name" "${t[*]}"
  fi
  printf '  %-34s   (%s)\n' "" "$(why_of "$m")"
  git -C "$dir" apply -R "$m"
done

if ((missed)); then
  echo "mutation-check: FAILED: $missed of ${#mutations[@]} mutation(s) not caught"
  exit 1
fi
echo "mutation-check: all ${#mutations[@]} mutation(s) caught"
