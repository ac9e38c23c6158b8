#!/usr/bin/env bash
# CI's own run (.ci/run) on clean clones of this checkout's HEAD, N times in a row, each with
# a busy loop on one core beside it, then once without it (CI's time limit is 8 minutes):
# the landings that never flake of issue 53, logged as a page.
#   bash scripts/ci/ci_under_load.sh [N] [OUT.md]      (defaults: 5, docs/ci-under-load.md)
# Each run's whole log is kept in /tmp/ci-under-load/run-K.log; the page gives each run's
# exit status, time and pytest's summary line; a page that exists keeps its earlier calls'
# sections, and this call adds its own. Exits 1 if any run failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
n=${1:-5}
out=${2:-docs/ci-under-load.md}
work=/tmp/ci-under-load
rm -rf "$work" && mkdir -p "$work"
commit=$(git rev-parse --short=12 HEAD)
rows=()
failed=0
run() {  # run K LOAD: one clean clone, .ci/run, with LOAD (yes/no) beside it
  local k=$1 load=$2 dir="$work/clone-$1" log="$work/run-$1.log" busy="" start end rc summary
  git clone -q . "$dir"
  if [ "$load" = yes ]; then
    sh -c 'while :; do :; done' & busy=$!
  fi
  start=$(date +%s)
  (cd "$dir" && bash .ci/run) > "$log" 2>&1
  rc=$?
  end=$(date +%s)
  [ -n "$busy" ] && kill "$busy" 2>/dev/null
  summary=$(grep -E "^=+ .*(passed|failed).* in [0-9.]+s" "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
  rows+=("| $k | $load | $rc | $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s | ${summary:-(no pytest summary)} |")
  [ "$rc" -ne 0 ] && failed=1
  rm -rf "$dir"
  echo "run $k (busy loop: $load): exit $rc, $(( end - start )) s: $summary"
}
for k in $(seq 1 "$n"); do run "$k" yes; done
run "$((n + 1))" no
# a page that exists keeps its earlier runs: each call adds its own section below them
section=$(
  if [ -s "$out" ]; then echo; echo "## Commit \`$commit\`"; else
    echo "# CI under load"
    echo
    echo "Written by \`scripts/ci/ci_under_load.sh\`, one section a call, the latest last. CI's"
    echo "limit is 8 minutes."
    echo
    echo "## Commit \`$commit\`"
  fi
  echo
  echo "\`.ci/run\` (what CI runs: the README's two commands, from a clean clone of this"
  echo "commit) $n times in a row with a busy loop on one core beside it, then once without"
  echo "it, on this $(nproc)-core machine ($(date -u +%Y-%m-%d))."
  echo
  echo "| run | busy loop | exit status | time | pytest |"
  echo "| ---: | --- | ---: | ---: | --- |"
  printf '%s\n' "${rows[@]}"
)
printf '%s\n' "$section" >> "$out"
printf '%s\n' "$section"
exit "$failed"
