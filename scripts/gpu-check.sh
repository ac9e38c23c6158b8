#!/usr/bin/env bash
# Every GPU check of the course, in one run, on a machine with an NVIDIA GPU:
# the whole test suite in GPU mode, the overhead benchmark, and every notebook executed
# in place; then docs/gpu-results.md written from what was measured.
#   bash scripts/gpu-check.sh        (results go to $OUT, default ./gpu-out)
# $OUT gets: gpu-results.md, pytest.txt, bench.txt, doctor.txt, notebooks.txt and
# notebooks.tar (the executed notebooks, to commit).
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
python3 scripts/run_notebooks.py --json "$WORK/notebooks.json" > "$OUT/notebooks.txt" 2>&1 || status=1
cat "$OUT/notebooks.txt"
# the tests (nbval's simulator comparison is CI's job: --ignore=notebooks)
STREAMLAB_RESULTS="$WORK/tests.json" python3 -m pytest -m "gpu or not gpu" -v -rs \
  --ignore=notebooks --junitxml="$WORK/junit.xml" > "$OUT/pytest.txt" 2>&1 || status=1
tail -1 "$OUT/pytest.txt"
python3 benchmarks/span_overhead.py --json "$WORK/bench.json" > "$OUT/bench.txt" 2>&1 || status=1
tar -cf "$OUT/notebooks.tar" notebooks/*.ipynb
python3 scripts/gpu_results.py --tests "$WORK/tests.json" --bench "$WORK/bench.json" \
  --junit "$WORK/junit.xml" --notebooks "$WORK/notebooks.json" \
  --out "$OUT/gpu-results.md" > /dev/null || status=1
echo "gpu-check: exit status $status"
exit "$status"
