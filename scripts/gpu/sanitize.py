"""compute-sanitizer over the lab solutions, and over planted errors it must find.

    python scripts/gpu/sanitize.py [--json PATH] [--out PAGE] [--timeout S] [NOTEBOOK ...]
    (default: every solutions/*/*.ipynb)

On a GPU machine with NVIDIA's compute-sanitizer (the CUDA toolkit's bin folder, or
$COMPUTE_SANITIZER). Two parts:

1. **Planted errors.** Three small numba programs, each with one error of the kind a tool
   exists to find, and each beside its fixed twin:
   - memcheck: a kernel that writes one element past the end of its array;
   - racecheck: threads that read a neighbour's shared-memory slot without waiting for
     it to be written (no ``cuda.syncthreads()`` between the write and the read);
   - synccheck: a ``cuda.syncthreads()`` that only half of a block reaches.
   The planted program must give at least one error, its twin none.
2. **The lab solutions under memcheck.** Each solution notebook's code cells run in one
   plain ``python3`` process under ``compute-sanitizer --tool memcheck``. A cell that fails
   is noted and the rest run on: the labs' timing checks may fail under the sanitizer's
   slowdown, which is not what is judged here. The sanitizer's error count must be 0.

Every run passes ``--report-api-errors no``: anything that imports ``cuda.bindings``
(cuda.core, streamlab) makes the bindings probe driver symbols that the driver lacks,
and the sanitizer reports each probe as an API error (30 to 40 of them) that is not a
bug in the program (../shared/GPU_NOTES.md). The memory, race and barrier checks stay on.

Prints a table and exits 1 when a solution has an error or a planted one is not found.
``--json`` keeps the results; ``--out`` writes them as a page. Run by
``PART=sanitizer bash scripts/gpu/gpu-check.sh``. Not in CI: the simulator has no sanitizer.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the planted programs: (tool, what is wrong, the program, its fixed twin). Each is a
#: whole script; {FIX} marks the line that the twin has and the planted one lacks (or has
#: wrong), as (planted, fixed).
_HEAD = """\
import numpy as np
from numba import cuda, float32

"""
PLANTED = {
    "memcheck": (
        "a kernel writes one element past the end of its array (`i <= n`, not `i < n`)",
        _HEAD + """\
@cuda.jit
def fill(a, n):
    i = cuda.grid(1)
    if {FIX}:
        a[i] = 1.0

n = 1000
d = cuda.device_array(n, np.float32)
fill[(n + 1 + 127) // 128, 128](d, n)
cuda.synchronize()
print("sum", d.copy_to_host().sum())
""", ("i <= n", "i < n")),
    "racecheck": (
        "threads read a neighbour's shared-memory slot with no `cuda.syncthreads()` "
        "between its write and the read",
        _HEAD + """\
@cuda.jit
def shift_left(a):
    s = cuda.shared.array(256, float32)
    i = cuda.threadIdx.x
    s[i] = a[i]
    {FIX}
    a[i] = s[(i + 1) % 256]

d = cuda.to_device(np.arange(256, dtype=np.float32))
shift_left[1, 256](d)
cuda.synchronize()
print("first", d.copy_to_host()[0])
""", ("pass", "cuda.syncthreads()")),
    "synccheck": (
        "a `cuda.syncthreads()` that only the even threads of each warp reach",
        _HEAD + """\
@cuda.jit
def half_barrier(a):
    i = cuda.threadIdx.x
    if {FIX}:
        cuda.syncthreads()
    a[i] = i

d = cuda.device_array(256, np.float32)
half_barrier[1, 256](d)
cuda.synchronize()
print("last", d.copy_to_host()[-1])
""", ("i % 2 == 0", "i < 256")),
}

#: errors a tool does not report, measured and shown (not judged): synccheck on an H100
#: (2026-11-26) flagged a barrier that half of each warp skips, and nothing when whole
#: warps skip it, although CUDA calls both undefined. Shown so the page says what the
#: tool misses, on the GPU of the run.
UNSEEN = {
    "synccheck": (
        "a `cuda.syncthreads()` that whole warps skip (the first half of the block "
        "reaches it)",
        PLANTED["synccheck"][1], "i < 128"),
}

#: what each planted program prints last, when it ran to its end
_LAST_LINE = {"memcheck": "sum ", "racecheck": "first ", "synccheck": "last "}

#: the sanitizer's own count, printed last: "ERROR SUMMARY: 3 errors" (every tool), and
#: racecheck's "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_RACE = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?")


class SanitizerError(Exception):
    """No compute-sanitizer here, or its output could not be read."""


def find_sanitizer() -> str:
    """compute-sanitizer's path: $COMPUTE_SANITIZER, the PATH, or a CUDA toolkit folder."""
    given = os.environ.get("COMPUTE_SANITIZER")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise SanitizerError(f"COMPUTE_SANITIZER={given}: not an executable file: point "
                                 "it at the CUDA toolkit's bin/compute-sanitizer")
        return given
    found = shutil.which("compute-sanitizer") or next(iter(sorted(glob.glob(
        "/usr/local/cuda*/bin/compute-sanitizer") + glob.glob(
        "/usr/local/cuda*/compute-sanitizer/compute-sanitizer"), reverse=True)), None)
    if not found:
        raise SanitizerError("compute-sanitizer was not found (not on PATH, not under "
                             "/usr/local/cuda*/bin): install the CUDA toolkit's sanitizer, or "
                             "set COMPUTE_SANITIZER to its path")
    return found


def errors_in(output: str, tool: str) -> int:
    """The error count the sanitizer printed at the end of ``output``."""
    counts = [int(n) for n in _SUMMARY.findall(output)]
    if tool == "racecheck":
        counts += [int(n) for n in _RACE.findall(output)]
    if not counts:
        tail = "\n".join(output.strip().splitlines()[-5:])
        raise SanitizerError(f"{tool}: the sanitizer printed no ERROR SUMMARY (did the "
                             f"program start?); its last lines:\n{tail}")
    return max(counts)


def sanitize(tool: str, argv: list[str], timeout: float, cwd=None) -> dict:
    """Run ``argv`` under ``tool``: its error count, seconds, and the output's last lines."""
    cmd = [find_sanitizer(), "--tool", tool, "--report-api-errors", "no", *argv]
    t0 = time.perf_counter()
    try:
        # its own session, so that a timeout stops the program under the sanitizer too (it
        # would stay on the GPU while the next one runs)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                cwd=cwd, env={"STREAMLAB_DEVICE": "gpu", **os.environ},
                                start_new_session=True)
    except OSError as e:
        raise SanitizerError(f"{cmd[0]} could not be started: {e}") from None
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raw, _ = proc.communicate()
        text = raw.decode(errors="replace")
        return {"tool": tool, "errors": None, "seconds": round(timeout, 1),
                "note": f"stopped after {timeout:.0f} s", "tail": text[-2000:],
                "returncode": None}
    text = raw.decode(errors="replace")
    result = {"tool": tool, "seconds": round(time.perf_counter() - t0, 1),
              "tail": text[-2000:], "note": "", "text": text, "returncode": proc.returncode}
    try:
        result["errors"] = errors_in(text, tool)
    except SanitizerError as e:
        result["errors"], result["note"] = None, str(e)
    return result


def planted(timeout: float) -> list[dict]:
    """Each planted program and its twin under its tool."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tool, (what, source, (bad, good)) in PLANTED.items():
            for kind, line in (("planted", bad), ("fixed", good)):
                path = Path(tmp) / f"{tool}_{kind}.py"
                path.write_text(source.replace("{FIX}", line))
                r = sanitize(tool, [sys.executable, str(path)], timeout)
                want = "at least 1" if kind == "planted" else "0"
                # the fixed twin must also run to its end (a crash before any kernel ran
                # would find nothing, too); the planted one may fail once the tool reports
                ok = r["errors"] is not None and (
                    r["errors"] >= 1 if kind == "planted"
                    else r["errors"] == 0 and r["returncode"] == 0
                    and _LAST_LINE[tool] in r.get("text", ""))
                if kind == "fixed" and r["errors"] == 0 and not ok:
                    r["note"] = "the program did not run to its end: see its output"
                r.pop("text", None)
                rows.append({**r, "what": f"{kind}: {what}", "want": want, "ok": ok})
        for tool, (what, source, line) in UNSEEN.items():
            path = Path(tmp) / f"{tool}_unseen.py"
            path.write_text(source.replace("{FIX}", line))
            r = sanitize(tool, [sys.executable, str(path)], timeout)
            r.pop("text", None)
            rows.append({**r, "what": f"also planted: {what}", "want": "shown, not judged",
                         "ok": r["errors"] is not None})
    return rows


# --- a notebook's code cells in one plain process --------------------------------------
_RUNNER = r'''
import asyncio, json, sys
import matplotlib
matplotlib.use("Agg")
# the grader's own way to run a notebook cell (IPython's transforms, top-level await)
from streamlab.grading._child import _run_cell
cells = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
loop = asyncio.new_event_loop()
failed = []
for i, source in enumerate(cells):
    try:
        _run_cell(source, f"<cell {i}>", ns, loop)
    except BaseException as e:
        failed.append(f"cell {i}: {type(e).__name__}: {str(e)[:200]}")
print("CELLS FAILED:", json.dumps(failed))
'''


def lab(notebook: Path, timeout: float) -> dict:
    """A lab solution's code cells under memcheck, in its own folder."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cells.json").write_text(json.dumps(cells))
        (Path(tmp) / "runner.py").write_text(_RUNNER)
        r = sanitize("memcheck", [sys.executable, str(Path(tmp) / "runner.py"),
                                  str(Path(tmp) / "cells.json")], timeout,
                     cwd=notebook.parent)
    m = re.search(r"CELLS FAILED: (\[.*\])", r.get("text", ""))
    r["cells_failed"] = json.loads(m.group(1)) if m else None
    r.pop("text", None)
    r["what"] = notebook.relative_to(ROOT).as_posix()
    r["want"] = "0"
    # 0 errors counts only when the cells ran: the runner finished, and a cell that failed
    # was a check refusing (under the sanitizer a check may: see the docstring), not the
    # lab's own code (then the answers never ran, and 0 errors says nothing)
    r["ok"] = (r["errors"] == 0 and r["cells_failed"] is not None
               and all(re.match(r"cell \d+: CheckFailed: ", f) for f in r["cells_failed"]))
    return r


def table(rows: list[dict]) -> str:
    lines = ["| program | tool | errors found | wanted | seconds | |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        found = "–" if r["errors"] is None else str(r["errors"])
        note = r.get("note") or ""
        if r.get("cells_failed"):
            note = (note + " " if note else "") + (
                f"{len(r['cells_failed'])} cell(s) failed under the sanitizer: "
                + "; ".join(r["cells_failed"][:3]))
            if any("could not watch all of your code" in f for f in r["cells_failed"]):
                note += (" (such a check ran the answers, then refused them at its last "
                         "step: CUPTI, which the checks use to watch cuda.core's calls, "
                         "cannot subscribe beside the sanitizer)")
        elif r.get("cells_failed") is None and r["what"].endswith(".ipynb"):
            note = (note + " " if note else "") + "the cells did not all run"
        mark = "ok" if r["ok"] else "**FAILED**"
        lines.append(f"| {r['what']} | {r['tool']} | {found} | {r['want']} | "
                     f"{r['seconds']} | {mark} {note} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path,
                    help="lab solutions to run under memcheck (default: all of them)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--out", type=Path, help="write the results as a page here")
    ap.add_argument("--timeout", type=float, default=240,
                    help="seconds one program may run under the sanitizer (default 240)")
    ap.add_argument("--planted-only", action="store_true",
                    help="only the planted errors (no lab solution)")
    a = ap.parse_args(argv)
    if a.timeout <= 0:
        ap.error(f"--timeout {a.timeout}: give a positive number of seconds")
    notebooks = a.notebooks or sorted(ROOT.glob("solutions/*/*.ipynb"))
    for nb in notebooks:
        if not nb.is_file() or nb.suffix != ".ipynb":
            ap.error(f"{nb}: not a notebook file: name lab solutions, such as "
                     "solutions/lab02__events/lab02__events.ipynb")
    try:
        find_sanitizer()
    except SanitizerError as e:
        print(f"sanitize.py: {e}", file=sys.stderr)
        return 2
    rows = planted(a.timeout)
    if not a.planted_only:
        rows += [lab(nb.resolve(), a.timeout) for nb in notebooks]
    text = table(rows)
    print(text)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    if a.out:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().splitlines()
        a.out.write_text(
            "# compute-sanitizer over the lab solutions and planted errors\n\n"
            f"Written by `scripts/gpu/sanitize.py` on "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, on "
            f"{gpu[0] if gpu else 'a GPU nvidia-smi did not name'}, with "
            f"`--report-api-errors no` (see the script's docstring).\n\n{text}\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
