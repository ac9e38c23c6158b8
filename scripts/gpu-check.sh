#!/usr/bin/env bash
# Every GPU check of the course, in one run, on a machine with an NVIDIA GPU:
# every notebook and lab solution executed in place, the whole test suite in GPU mode
# (the labs' wrong solutions included), the overhead benchmark; then docs/gpu-results.md
# written from what was measured.
#   bash scripts/gpu-check.sh        (results go to $OUT, default ./gpu-out)
# $OUT gets: gpu-results.md, pytest.txt, bench.txt, doctor.txt, notebooks.txt and
# notebooks.tar (the executed notebooks and solutions, to commit).
# A partial run, e.g. to try the labs on another GPU: NOTEBOOKS="solutions/*/*.ipynb"
# TESTS="tests/test_labs.py" bash scripts/gpu-check.sh (the page then says what ran).
# On the course's GPU test machine, which reaches no package index, first fetch the
# missing wheels here with ../shared/tools/gpu-wheels.sh .whl and carry .whl along.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
WORK=$(mktemp -d)
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/gpu-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/gpu-site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" STREAMLAB_DEVICE=gpu PYTHONUNBUFFERED=1
status=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -m streamlab doctor; } \
  > "$OUT/doctor.txt" 2>&1 || status=1
# the notebooks first, executed in place: the tests then check what will be committed
# shellcheck disable=SC2086  # NOTEBOOKS and TESTS are lists of paths and globs
python3 scripts/run_notebooks.py --json "$WORK/notebooks.json" ${NOTEBOOKS:-} \
  > "$OUT/notebooks.txt" 2>&1 || status=1
cat "$OUT/notebooks.txt"
tar -cf "$OUT/notebooks.tar" notebooks/*.ipynb solutions/*/*.ipynb
# the tests (the notebooks and solutions just ran; nbval's simulator run is CI's job)
STREAMLAB_RESULTS="$WORK/tests.json" python3 -m pytest -m "gpu or not gpu" -v -rs \
  --ignore=notebooks --ignore=solutions --junitxml="$WORK/junit.xml" ${TESTS:-} > "$OUT/pytest.txt" 2>&1 || status=1
tail -1 "$OUT/pytest.txt"
python3 benchmarks/span_overhead.py --json "$WORK/bench.json" > "$OUT/bench.txt" 2>&1 || status=1
python3 scripts/gpu_results.py --tests "$WORK/tests.json" --bench "$WORK/bench.json" \
  --junit "$WORK/junit.xml" --notebooks "$WORK/notebooks.json" \
  --out "$OUT/gpu-results.md" > /dev/null || status=1
echo "gpu-check: exit status $status"
exit "$status"
