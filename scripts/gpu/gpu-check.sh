#!/usr/bin/env bash
# Every GPU check of the course, on a machine with an NVIDIA GPU: every notebook and lab
# solution executed in place, the whole test suite in GPU mode (the labs' wrong and right
# answers included), the overhead benchmark; then docs/gpu-results.md written from what
# was measured.
#   bash scripts/gpu/gpu-check.sh        (results go to $OUT, default ./gpu-out)
# $OUT gets: gpu-results.md, record.json, pytest.txt, bench.txt, bench.json, model.txt, model.json, doctor.txt, notebooks.txt,
# notebooks.json and notebooks.tar (the executed notebooks and solutions, to commit),
# junit.xml and tests.json (what the tests part ran and measured).
# In parts, for machines that limit one command's time:
#   PART=notebooks bash scripts/gpu/gpu-check.sh       the notebooks and solutions only
#   PART=tests NOTEBOOKS_JSON=path/notebooks.json bash scripts/gpu/gpu-check.sh
#                                                  the tests and benchmark, and the page
#                                                  (with the notebooks part's figures)
# NOTEBOOKS_JSON with a notebooks run: this run's results update that earlier run's.
# REPEAT=3 with a notebooks run: each notebook three times in a row (all must pass; the
# page shows each run's figures), as for the capstone's repeatable pipeline.
# EARLIER="folder ..." (earlier tests parts' junit.xml and tests.json, each from its $OUT): the
# page counts every part's tests.
# A partial set: NOTEBOOKS="solutions/*/*.ipynb" TESTS="tests/test_labs.py" (the page
# then says what ran).
# numba-cuda's own tests (tests/test_uninstall.py) need filecheck: pip download --no-deps
# --only-binary=:all: filecheck -d .whl. On the course's GPU test machine, which reaches
# no package index, first fetch the
# missing wheels here with ../shared/tools/gpu-wheels.sh .whl and carry .whl along.
# One command may run 10 minutes at most on the course's GPU machines: run the notebooks in
# parts, each with NOTEBOOKS_JSON=the previous part's notebooks.json so that the last
# part's JSON holds them all: PART=nb1 (lessons 00-04), nb2 (lessons 05-09), nb3 (the lab
# solutions), nb4 (the capstone's solved copy), nb5 (the capstone's learner copy); and the
# tests in four: PART=t1 (the exercises' and labs' kept answers), PART=t2 and PART=t2b (the
# grader's and the labs' other tests, in two halves), then PART=t3 EARLIER="t1's \$OUT
# t2's \$OUT t2b's \$OUT" NOTEBOOKS_JSON=the notebooks' JSON (every other test, and the page
# from all four). (t2 was once every test after t1: on a machine of two H200s it ran past
# the 10 minutes, 94 % done; then t2 and t2b in one: 443 s on two H200s, cut at 590 s,
# 97 % done, on one H200 of 16 cores.) How
# many tests and notebooks each part ran, and how long it took, on the last whole pass:
# docs/gpu-check-parts.md (written by scripts/gpu/gpu_parts.py from that pass's files).
# PART=owed: only what is owed (docs/owed.json, scripts/gpu/owed.py): the owed notebooks
# that fit BUDGET seconds (default 480), lessons' solved copies first, then their learner
# copies, then the lab solutions (lesson 09 only where two GPUs are visible); then, once no
# notebook is owed, the learner copies' model runs that are older than their code
# (scripts/course/model_runs.py, on the simulator). It then brings the ledger, the banners and the
# README up to date (all in notebooks.tar). Call it again until it says nothing is owed.
# PART=sanitizer: compute-sanitizer finds the planted errors of scripts/gpu/sanitize.py, and
# memcheck finds none in the lab solutions ($OUT gets sanitizer.txt, .json and .md, the
# page for docs/sanitizer.md). A few minutes.
# PART=recorder: what recording what a notebook ran costs (benchmarks/recorder_cost.py):
# the span-cost benchmark and lesson 06, each with and without it, in this one call.
# PART=implicit: which calls make the host wait and which order the streams
# (benchmarks/implicit_sync.py; $OUT gets implicit-sync.txt, .json and .md, the page for
# docs/implicit-sync.md: keep the JSON in data/runs/implicit-sync/, and write the page with
# --page from it). The whole pass (PART=all) and PART=t3 run it too: the
# reference's claims are checked on every GPU pass (a claim that fails: exit status 8).
# The exit status says what went wrong, one bit each: 1 a test failed, 4 a notebook
# failed, 8 a benchmark missed its stated target (the page says so at its top), 16 another
# step failed; 2 is a wrong PART. 0: all of it held.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
# PART=t1 runs these
KEPT_ANSWERS="tests/test_exercises.py tests/test_lab_answers.py tests/test_lab_answers_later.py"
# PART=t2 runs these, PART=t2b the second list; t3 the rest. On two H200s (session 68's
# junit.xml) the first list took 209 s, the second 229 s
GRADER_TESTS="tests/test_grading_sandbox.py tests/test_graphs.py tests/test_runner.py"
GRADER_TESTS_B="tests/test_transcript.py tests/test_judged_timings.py tests/test_labs.py
  tests/test_classroom.py tests/test_exercise_holes.py tests/test_hostfn.py
  tests/test_lab_grading.py tests/test_lab_grading_later.py"
PART=${PART:-all}
case "$PART" in
  owed) ;;
  recorder) ;;
  implicit) ;;
  nb1) NOTEBOOKS="notebooks/0[0-4]__*.ipynb" ;;
  nb2) NOTEBOOKS="notebooks/0[5-9]__*.ipynb" ;;
  nb3) NOTEBOOKS="solutions/*/*.ipynb" ;;
  nb4) NOTEBOOKS="notebooks/10__*__SOLUTION.ipynb" ;;
  nb5) NOTEBOOKS="notebooks/10__capstone__streamed_pipeline.ipynb" ;;
  t1) TESTS=$KEPT_ANSWERS ;;
  t2) TESTS=$GRADER_TESTS ;;
  t2b) TESTS=$GRADER_TESTS_B ;;
  t3) TESTS=$(for f in $KEPT_ANSWERS $GRADER_TESTS $GRADER_TESTS_B; do printf -- '--ignore=%s ' "$f"; done) ;;
  all|notebooks|tests|sanitizer) ;;
  *) echo "PART=$PART: use all, notebooks, tests, owed, recorder, implicit, sanitizer, nb1 to nb5, t1, t2, t2b or t3 (see the top of this script)" >&2
     exit 2 ;;
esac
ASKED=$PART
case "$PART" in nb?) PART=notebooks ;; t?|t2b) PART=tests ;; esac
WORK=$(mktemp -d)
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/gpu-site .whl/*.whl || exit 16
  export PYTHONPATH=/tmp/gpu-site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" STREAMLAB_DEVICE=gpu PYTHONUNBUFFERED=1
status=0
TEST_FAILED=1 NOTEBOOK_FAILED=4 TARGET_MISSED=8 STEP_FAILED=16
finish() {
  local why=""
  [ $((status & TEST_FAILED)) -ne 0 ] && why="$why; a test failed"
  [ $((status & NOTEBOOK_FAILED)) -ne 0 ] && why="$why; a notebook failed"
  [ $((status & TARGET_MISSED)) -ne 0 ] && why="$why; a benchmark missed its stated target"
  [ $((status & STEP_FAILED)) -ne 0 ] && why="$why; another step failed (see its file in \$OUT)"
  echo "gpu-check: exit status $status${why:+ (${why#; })}"
  exit "$status"
}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -m streamlab doctor; } \
  > "$OUT/doctor.txt" 2>&1 || status=$((status | STEP_FAILED))
if [ "$PART" = sanitizer ]; then
  # compute-sanitizer: the planted errors found, the lab solutions clean (memcheck)
  python3 scripts/gpu/sanitize.py --json "$OUT/sanitizer.json" --out "$OUT/sanitizer.md" \
    > "$OUT/sanitizer.txt" 2>&1 || status=$((status | STEP_FAILED))
  cat "$OUT/sanitizer.txt"
  finish
fi
implicit_reference() {
  # the reference of implicit synchronisation: 3, a call did not do what it says
  python3 benchmarks/implicit_sync.py --json "$OUT/implicit-sync.json" --out "$OUT/implicit-sync.md" \
    > "$OUT/implicit-sync.txt" 2>&1
  case $? in 0) ;; 3) status=$((status | TARGET_MISSED)) ;; *) status=$((status | STEP_FAILED)) ;; esac
  cat "$OUT/implicit-sync.txt"
}
if [ "$PART" = implicit ]; then
  implicit_reference
  finish
fi
case "$ASKED" in all|t3) implicit_reference ;; esac
if [ "$PART" = recorder ]; then
  python3 benchmarks/recorder_cost.py --out "$OUT/recorder-cost.md" --json "$OUT/recorder-cost.json" \
    > "$OUT/recorder.txt" 2>&1 || status=$((status | STEP_FAILED))
  cat "$OUT/recorder.txt"
  finish
fi
if [ "$PART" = owed ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  NOTEBOOKS=$(python3 scripts/gpu/owed.py next --budget "${BUDGET:-480}" --gpus "$gpus") || status=$((status | STEP_FAILED))
  if [ -z "$NOTEBOOKS" ]; then
    # no notebook owed: the learner copies' model runs older than their code, if any
    python3 scripts/course/model_runs.py --stale > "$OUT/model-runs.txt" 2>&1 || status=$((status | STEP_FAILED))
    cat "$OUT/model-runs.txt"
    tar -cf "$OUT/notebooks.tar" notebooks/*.ipynb
    finish
  fi
  echo "owed, run now:" $NOTEBOOKS
  PART=notebooks
fi
if [ "$PART" != tests ]; then
  # the notebooks first, executed in place: the tests then check what will be committed
  # shellcheck disable=SC2086  # NOTEBOOKS and TESTS are lists of paths and globs
  python3 scripts/gpu/run_notebooks.py --json "$OUT/notebooks.json" ${NOTEBOOKS_JSON:+--merge "$NOTEBOOKS_JSON"} ${REPEAT:+--repeat "$REPEAT"} ${NOTEBOOKS:-} \
    > "$OUT/notebooks.txt" 2>&1 || status=$((status | NOTEBOOK_FAILED))
  cat "$OUT/notebooks.txt"
  # what is still owed, each notebook's banner and the README's marks, after this run
  python3 scripts/gpu/owed.py > "$OUT/owed.txt" 2>&1 || status=$((status | STEP_FAILED))
  cat "$OUT/owed.txt"
  tar -cf "$OUT/notebooks.tar" notebooks/*.ipynb solutions/*/*.ipynb docs/owed.json README.md
fi
if [ "$PART" != notebooks ]; then
  # the tests (the notebooks and solutions ran; nbval's simulator run is CI's job).
  # --ignore-glob: nbval collects notebooks from testpaths even past --ignore=notebooks
  # one worker (-n 1): GPU timings are not shared with a second test worker, and a test
  # that crashes the process (a segfault in a driver library) fails alone: xdist restarts
  # the worker and the run goes on to write its results
  STREAMLAB_RESULTS="$WORK/tests.json" python3 -m pytest -m "gpu or not gpu" -v -rs -n 1 \
    --ignore-glob='notebooks/*' --ignore-glob='solutions/*' --junitxml="$WORK/junit.xml" ${TESTS:-} > "$OUT/pytest.txt" 2>&1 || status=$((status | TEST_FAILED))
  grep -E "^=+ .*(passed|failed|error|no tests)" "$OUT/pytest.txt" | tail -1
  cp "$WORK/junit.xml" "$OUT/junit.xml"
  [ -f "$WORK/tests.json" ] && cp "$WORK/tests.json" "$OUT/tests.json"
  python3 benchmarks/span_overhead.py --json "$WORK/bench.json" > "$OUT/bench.txt" 2>&1
  case $? in 0) ;; 3) status=$((status | TARGET_MISSED)) ;; *) status=$((status | STEP_FAILED)) ;; esac
  # kept, so that the page can be rebuilt off the GPU machine with scripts/gpu/gpu_results.py
  [ -f "$WORK/bench.json" ] && cp "$WORK/bench.json" "$OUT/bench.json"
  # the model GPU's predictions against this GPU (a table in the page)
  python3 scripts/gpu/model_vs_gpu.py --json "$OUT/model.json" > "$OUT/model.txt" 2>&1 || status=$((status | STEP_FAILED))
  cat "$OUT/model.txt"
  # earlier tests parts (EARLIER="folder ...", each with its junit.xml and tests.json): one page
  junits="$WORK/junit.xml" figures="$WORK/tests.json"
  for earlier in ${EARLIER:-}; do
    junits="$earlier/junit.xml $junits"
    [ -f "$earlier/tests.json" ] && figures="$earlier/tests.json $figures"
  done
  nb_json=$OUT/notebooks.json
  [ "$PART" = tests ] && nb_json=${NOTEBOOKS_JSON:-}
  # record.json: this run's record, to keep in data/runs/results/ (the course's page is
  # made from the kept records, each GPU's run in its own column)
  # shellcheck disable=SC2086  # junits and figures are lists of paths
  python3 scripts/gpu/gpu_results.py --doctor "$OUT/doctor.txt" --tests $figures \
    --bench "$WORK/bench.json" --junit $junits \
    ${nb_json:+$( [ -f "$nb_json" ] && echo --notebooks "$nb_json")} \
    $( [ -f "$OUT/model.json" ] && echo --model "$OUT/model.json") \
    --record "$OUT/record.json" --out "$OUT/gpu-results.md" || status=$((status | STEP_FAILED))
fi
finish
