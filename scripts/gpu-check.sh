#!/usr/bin/env bash
# Every GPU check of the course, in one run, on a machine with an NVIDIA GPU.
#   bash scripts/gpu-check.sh            (results go to $OUT, default ./gpu-out)
# On the course's GPU test machine, which reaches no package index, first fetch the
# missing wheels here with ../shared/tools/gpu-wheels.sh .whl and carry .whl along.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/gpu-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/gpu-site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" STREAMLAB_DEVICE=gpu PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -m streamlab doctor 2>&1 | tee "$OUT/doctor.txt"
STREAMLAB_RESULTS="$OUT/tests.json" python3 -m pytest -m "gpu or not gpu" -v -rs \
  --junitxml="$OUT/junit.xml" 2>&1 | tee "$OUT/pytest.txt"
status=${PIPESTATUS[0]}
python3 benchmarks/span_overhead.py --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
python3 scripts/gpu_results.py --tests "$OUT/tests.json" --bench "$OUT/bench.json" \
  --junit "$OUT/junit.xml" --out "$OUT/gpu-results.md" > /dev/null || status=1
echo "gpu-check: pytest exit status $status"
exit "$status"
