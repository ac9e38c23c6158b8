#!/usr/bin/env bash
# The class grader on a GPU machine without nbgrader (the course's): the judge stage of
# benchmarks/class_grading.py, with its wheels. In three steps:
#   here:  python benchmarks/class_grading.py --stage prepare --dir .class-bench --n 200
#          bash scripts/gpu/gpu-class.sh --fetch .whl-class      (the Dask wheels, once)
#   there: bash scripts/gpu/gpu-class.sh .class-bench --gpus 1 2 --within 250
#          (carry .whl, .whl-class and .class-bench; the rest of the arguments go to the
#          judge stage; $OUT gets judged.json and judge.log)
#   here:  python benchmarks/class_grading.py --stage finish --dir .class-bench \
#            --out docs/class-grading-gpu.md --record data/runs/class/DATE-GPU.json
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --fetch ]; then
  dest=${2:?usage: gpu-class.sh --fetch DEST}
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 --platform any \
    -d "$dest" -r scripts/course/class-wheels.txt
  exit
fi
dir=${1:?usage: gpu-class.sh DIR [judge-stage arguments] (or --fetch DEST)}
shift
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
for w in .whl .whl-class; do
  [ -d "$w" ] || { echo "gpu-class.sh: no $w folder: carry it (see the top of this script)" >&2; exit 2; }
done
[ -d "$dir/class/.grading" ] || { echo "gpu-class.sh: $dir holds no prepared class: run the prepare stage here first" >&2; exit 2; }
# two targets: both sets hold a tornado wheel, and one pip call with both failed there
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/gpu-site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/class-site .whl-class/*.whl
export PYTHONPATH="/tmp/gpu-site:/tmp/class-site:$PWD/src" PYTHONUNBUFFERED=1
status=0
# the course's GPU machines have no bubblewrap (and reach no package index): there the
# sandbox is turned off by name, as the grader requires, and the page says so
boxed=()
command -v bwrap >/dev/null || boxed=(--sandbox off)
python3 benchmarks/class_grading.py --stage judge --dir "$dir" "${boxed[@]}" "$@" > "$OUT/judge.log" 2>&1 || status=$?
[ -f "$dir/judged.json" ] && cp "$dir/judged.json" "$OUT/"
grep -E "judged in|Error|error" "$OUT/judge.log" || true
exit "$status"
