"""Run each lesson's learner copy on Numba's simulator and keep the model GPU's answers.

    python scripts/course/model_runs.py                 # every lesson with a question
    python scripts/course/model_runs.py 01 notebooks/04__copies_to_host__overlap.ipynb
    python scripts/course/model_runs.py --check         # fails if a kept run is older than the code
    python scripts/course/model_runs.py --stale         # runs only those

In the learner's copy a question's measured answer is hidden until the learner guesses
(:func:`streamlab.workspace.reveal`); then the course's GPU run is shown, and beside it
what the course's model GPU predicts for the same cells. This script makes that
prediction: it executes the learner's copy top to bottom on the simulator, in a fresh
kernel (the copy itself is never executed in place: its committed outputs are a GPU's),
and keeps the outputs of each cell that answers a question in that cell's metadata
(``streamlab_model``), with a record of the run in the notebook's
(``streamlab_model_run``: the model, the code and the package's modules it ran, as
:mod:`streamlab.provenance` stamps a GPU run). ``tests/test_model_runs.py`` fails when a
kept run is older than the code or the modules it ran: run this script again then. A
change to the simulator or the model (``streamlab/sim``, ``model.py``) is such a change.
Needs no GPU; on a machine with one it still uses the simulator.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))  # run_notebooks
from run_notebooks import _module, provenance, stdout  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
LABEL = "streamlab-model-label:"
#: after the last cell: the model the simulator's timelines came from
LABEL_PROBE = ("import streamlab.model as _m\n"
               f"print({LABEL!r}, _m.simulator_model().profile.label "
               "if _m.simulator_model() else 'no model')")


# streamlab's workspace by its file, as run_notebooks loads provenance (importing the
# package would choose a device in this process); it imports nothing of the package
workspace = _module("workspace")
answering_cells = workspace.answering_cells


def lessons(names: list[str]) -> list[Path]:
    """The learner copies named (a number such as ``04``, or a path), or every lesson's
    learner copy that asks a question. A clear error for a name that matches none."""
    every = [p for p in sorted(NOTEBOOKS.glob("[0-9][0-9]__*.ipynb"))
             if "__SOLUTION" not in p.name]
    if not names:
        return [p for p in every if answering_cells(json.loads(p.read_text())["cells"])]
    out = []
    for name in names:
        path = Path(name)
        if path.suffix == ".ipynb":
            path = path if path.is_absolute() else (Path.cwd() / path)
            if not path.is_file() or "__SOLUTION" in path.name:
                raise SystemExit(f"{name}: not a lesson's learner copy (notebooks/NN__x.ipynb)")
            out.append(path.resolve())
            continue
        match = [p for p in every if p.name.startswith(f"{name}__")]
        if len(match) != 1:
            raise SystemExit(f"{name!r} names no lesson: give its number (00 to "
                             f"{every[-1].name[:2]}) or its learner copy's path")
        out += match
    return out


def run(path: Path, timeout: int) -> str | None:
    """Execute ``path``'s copy on the simulator and keep its answers in ``path``; None, or
    why it failed (nothing is written then)."""
    nb = nbformat.read(path, as_version=4)
    ran = nbformat.read(path, as_version=4)
    ran.cells.append(nbformat.v4.new_code_cell(provenance.PROBE))
    ran.cells.append(nbformat.v4.new_code_cell(LABEL_PROBE))
    client = NotebookClient(ran, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        return re.sub(r"\x1b\[[0-9;]*m", "", str(exc).splitlines()[-1] if str(exc) else
                      repr(exc))
    except Exception as exc:  # noqa: BLE001  (a cell past its time, a kernel that died:
        return f"{type(exc).__name__}: {exc}"  # this lesson fails, the others still run)
    label_cell, probe = ran.cells.pop(), ran.cells.pop()
    found = re.search(rf"^{re.escape(LABEL)} (.+)$", stdout(label_cell), re.M)
    label = found.group(1).strip() if found else ""
    if not label.startswith("model of"):
        return (f"it did not run on the simulator's model GPU (it said {label!r}): run this "
                f"where NUMBA_ENABLE_CUDASIM=1 takes effect, with STREAMLAB_MODEL unset")
    for cell in nb.cells:
        cell.get("metadata", {}).pop(workspace.MODEL_OUTPUTS_KEY, None)
    for i in answering_cells(nb.cells):
        nb.cells[i].setdefault("metadata", {})[workspace.MODEL_OUTPUTS_KEY] = {
            "outputs": ran.cells[i].get("outputs", [])}
    provenance.stamp(nb, label, provenance.imported(stdout(probe)),
                     key=workspace.MODEL_RUN_KEY)
    nbformat.write(nb, path)
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lessons", nargs="*", help="lesson numbers or learner copies' paths")
    ap.add_argument("--check", action="store_true",
                    help="run nothing: fail if a kept run is older than its code")
    ap.add_argument("--stale", action="store_true",
                    help="run only the lessons whose kept run is older than their code")
    ap.add_argument("--timeout", type=int, default=600, help="seconds a cell may run")
    a = ap.parse_args(argv)
    paths = lessons(a.lessons)
    if a.stale:
        paths = [p for p in paths if provenance.stale(json.loads(p.read_text()),
                                                      key=workspace.MODEL_RUN_KEY)]
        if not paths:
            print("every kept model run is as new as its code")
            return 0
    if a.check:
        old = {p.name: why for p in paths
               if (why := provenance.stale(json.loads(p.read_text()),
                                           key=workspace.MODEL_RUN_KEY))}
        for name, why in old.items():
            print(f"{name}: {why}")
        return 1 if old else 0
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"   # the kernels inherit it: the simulator
    os.environ.pop("STREAMLAB_MODEL", None)    # and its default model
    os.environ["STREAMLAB_DEVICE"] = "sim"
    os.environ["STREAMLAB_QUIET"] = "1"
    failed = 0
    for path in paths:
        t0 = time.perf_counter()
        why = run(path, a.timeout)
        took = time.perf_counter() - t0
        print(f"{path.name}: {'kept the model GPU run' if why is None else 'FAILED: ' + why}"
              f" ({took:.0f} s)", flush=True)
        failed += why is not None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
