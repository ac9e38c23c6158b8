"""What does recording what a notebook ran cost? The span-cost benchmark and lesson 06, each
with and without the recorder, in one process's turn on the same GPU.

    python benchmarks/recorder_cost.py [--out docs/recorder-cost.md] [--json PATH] [--runs 2]

``scripts/gpu/run_notebooks.py`` records, while a notebook runs on a GPU, which code of streamlab
it ran (``streamlab.provenance.Recorder``: coverage.py, on Python 3.12 and later through
``sys.monitoring``, with an audit hook for the data files), so that a change to the code
makes stale only the notebooks that ran it. The recording must not move a claim. This runs,
alternately without and with the recorder (``--runs`` times each way):

* ``benchmarks/span_overhead.py`` in a fresh process: a span's host cost against two bare
  event records, and a span under ``record_ops``;
* lesson 06's solved copy in a fresh kernel (its headline figures, and whether its claims
  held).

A table, not a test: it prints each run's figures and the median of each way.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

import run_notebooks  # noqa: E402  (loads streamlab's provenance by its file, no device)

LESSON = ROOT / "notebooks" / "06__what_events_cannot_see__cupti__SOLUTION.ipynb"
#: a row's earlier name, as kept runs' JSON holds it (the span under record_ops was on
#: numba's events until issue 54)
EARLIER_NAMES = {"host: one span while record_ops is on":
                 "host: one span while record_ops is on (numba's events)"}


def _named(rows: list, name: str) -> str:
    """The name these runs' rows give this figure: today's, or the one they were kept under."""
    old = EARLIER_NAMES.get(name)
    return old if old and all(name not in r and old in r for r in rows) else name


SPAN_ROWS = ("host: two event records", "host: one timeline span (2 events)",
             "host: one span over two bare records",
             "host: one span while record_ops is on",
             "GPU: gap added per span")


def span_run(recording: bool) -> dict:
    """One run of the span benchmark in a fresh process: its rows by name."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        cmd = [sys.executable, str(ROOT / "benchmarks" / "span_overhead.py"), "--json", str(out)]
        if recording:
            with run_notebooks.recording() as folder:
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                recorded = sorted(Path(folder).glob("ran-*.json"))
        else:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            recorded = []
        if run.returncode not in (0, 3) or not out.exists():  # 3: its target missed
            raise RuntimeError(f"span_overhead.py failed:\n{run.stdout[-1500:]}{run.stderr[-1500:]}")
        if recording and not recorded:
            raise RuntimeError("the recorder wrote nothing: is coverage.py installed?")
        return {row["name"]: row["value"] for row in json.loads(out.read_text())}


def lesson_run(recording: bool) -> dict:
    """Lesson 06 in a fresh kernel, saved to a scratch copy: its headline and claims."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(LESSON, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(LESSON.parent)}})
    t0 = time.perf_counter()
    if recording:
        nb.cells.append(nbformat.v4.new_code_cell(run_notebooks.provenance.RAN_PROBE))
        with run_notebooks.recording() as folder:
            client.execute()
            probe = nb.cells.pop()
            ran = run_notebooks.what_ran(folder, run_notebooks.stdout(probe))
        functions = sum(len(v) for v in ran["ran"].values())
    else:
        client.execute()
        functions = None
    seconds = time.perf_counter() - t0
    with tempfile.NamedTemporaryFile(suffix=".ipynb", dir=LESSON.parent, delete=False) as f:
        scratch = Path(f.name)
    try:
        nbformat.write(nb, scratch)
        claims = run_notebooks.claims_error(scratch)
    finally:
        scratch.unlink()
    figures = {k: v for k, v in run_notebooks.headline(nb)}
    return {"seconds": round(seconds, 1), "claims": claims or "held", "figures": figures,
            "functions_recorded": functions}


def _number(text):
    """The leading number of a figure such as '12.6 us', else None."""
    try:
        return float(str(text).split()[0])
    except (ValueError, IndexError):
        return None


def page(span: dict, lesson: dict, device: str, runs: int, when: str | None = None,
         python: str | None = None, recorder: str | None = None) -> str:
    lines = ["# What recording what a notebook ran costs", "",
             "Written by `benchmarks/recorder_cost.py` on " + device + ", " +
             (when or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())) + f" (Python "
             f"{python or sys.version.split()[0]}; the recorder: "
             f"{recorder or run_notebooks.provenance.RECORDER}): the span-cost benchmark and "
             "lesson 06's solved copy, "
             f"{runs} runs each without and with the recorder that `scripts/gpu/run_notebooks.py` "
             "starts in every process of a GPU run (`streamlab.provenance.Recorder`), in turn "
             "(without, with, without, ...), in one call on one GPU.", "",
             "## The span-cost benchmark (benchmarks/span_overhead.py)", "",
             "| figure | " + " | ".join(f"without, run {i + 1}" for i in range(runs)) + " | "
             + " | ".join(f"with, run {i + 1}" for i in range(runs)) + " | median without | "
             "median with |", "|" + " --- |" * (2 * runs + 3)]
    for name in (_named(span[False] + span[True], n) for n in SPAN_ROWS):
        off = [r.get(name) for r in span[False]]
        on = [r.get(name) for r in span[True]]
        if any(v is None for v in off + on):
            continue
        lines.append(f"| {name} | " + " | ".join(f"{v:.3f}" for v in off + on) +
                     f" | {statistics.median(off):.3f} | {statistics.median(on):.3f} |")
    lines += ["", "## Lesson 06, solved copy: its headline figures and its claims", "",
              "| | " + " | ".join(f"without, run {i + 1}" for i in range(runs)) + " | "
              + " | ".join(f"with, run {i + 1}" for i in range(runs)) + " | median without | "
              "median with |", "|" + " --- |" * (2 * runs + 3)]
    every = lesson[False] + lesson[True]
    names = list(dict.fromkeys(k for r in every for k in r["figures"]))
    for name in names:
        cells = [str(r["figures"].get(name, "")) for r in every]
        off = [_number(r["figures"].get(name)) for r in lesson[False]]
        on = [_number(r["figures"].get(name)) for r in lesson[True]]
        medians = (f"{statistics.median(off):.3g} | {statistics.median(on):.3g}"
                   if None not in off + on else " | ")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {medians} |")
    lines.append("| its claims | " + " | ".join(r["claims"] for r in every) + " | | |")
    lines.append("| seconds, the whole notebook | " + " | ".join(str(r["seconds"]) for r in every)
                 + " | | |")
    lines.append("| functions and module bodies recorded | " + " | ".join(
        "" if r["functions_recorded"] is None else str(r["functions_recorded"]) for r in every)
                 + " | | |")
    held = sum(r["claims"] == "held" for r in every)
    slower = [(name, statistics.median(on) / statistics.median(off))
              for name in (_named(span[False] + span[True], n) for n in SPAN_ROWS)
              if name.startswith("host:") and "over" not in name
              for off, on in [([r.get(name) for r in span[False]], [r.get(name) for r in span[True]])]
              if None not in off + on and statistics.median(off) > 0]
    lines += ["", "## In short", "",
              f"- Lesson 06's claims held in {held} of {len(every)} runs.",
              "- The span benchmark's host costs, with the recorder over without (medians): "
              + ", ".join(f"{name[len('host: '):]} {ratio:.2f}x" for name, ratio in slower) + "."]
    costs = [(name, statistics.median(on) / statistics.median(off)) for name in names
             if name.startswith("host cost")
             for off, on in [([_number(r["figures"].get(name)) for r in lesson[False]],
                              [_number(r["figures"].get(name)) for r in lesson[True]])]
             if None not in off + on and statistics.median(off) > 0]
    if costs:
        lines.append("- Lesson 06's own host costs, measured in its kernel, with over without "
                     "(medians): " + ", ".join(f"{name[len('host cost, '):]} {ratio:.2f}x"
                                               for name, ratio in costs) + ".")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the page here")
    ap.add_argument("--json", help="write every run's figures here")
    ap.add_argument("--runs", type=int, default=2, help="runs each way (default 2)")
    ap.add_argument("--from-json", help="run nothing: the page from a JSON this wrote")
    a = ap.parse_args(argv)
    if a.from_json:
        data = json.loads(Path(a.from_json).read_text())
        span = {False: data["span"]["False"], True: data["span"]["True"]}
        lesson = {False: data["lesson06"]["False"], True: data["lesson06"]["True"]}
        text = page(span, lesson, data.get("device", "a GPU"), len(span[False]),
                    data.get("when"), data.get("python"), data.get("recorder"))
        if a.out:
            Path(a.out).write_text(text)
        print(text, end="")
        return 0
    os.environ.setdefault("STREAMLAB_QUIET", "1")
    span = {False: [], True: []}
    lesson = {False: [], True: []}
    for i in range(a.runs):
        for recording in (False, True):
            span[recording].append(span_run(recording))
            print(f"span benchmark, {'with' if recording else 'without'} the recorder, run "
                  f"{i + 1}: " + ", ".join(f"{k}: {span[recording][-1].get(k)}" for k in
                                           SPAN_ROWS), flush=True)
    for i in range(a.runs):
        for recording in (False, True):
            lesson[recording].append(lesson_run(recording))
            r = lesson[recording][-1]
            print(f"lesson 06, {'with' if recording else 'without'} the recorder, run {i + 1}: "
                  f"{r['seconds']} s, claims {r['claims']}", flush=True)
    device = next((r["figures"].get("device") for r in lesson[False] if r["figures"].get(
        "device")), None) or "this machine"
    text = page(span, lesson, device, a.runs)
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    if a.json:
        Path(a.json).write_text(json.dumps({
            "span": {str(k): v for k, v in span.items()},
            "lesson06": {str(k): v for k, v in lesson.items()}, "device": device,
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "python": sys.version.split()[0], "recorder": run_notebooks.provenance.RECORDER},
            indent=1))
    held = all(r["claims"] == "held" for rs in lesson.values() for r in rs)
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
