"""How long each notebook and lab solution takes on Numba's CUDA simulator, and what
the model GPU costs in it.

    python benchmarks/notebook_times.py [--out docs/notebook-times.md] [NOTEBOOK ...]

Runs each one top to bottom in a fresh kernel on the simulator (STREAMLAB_DEVICE=sim),
as CI's nbval run does, with the session-wide race check on as there
(STREAMLAB_RACE_CHECK=1), and prints a table of the times. A last cell, not saved, reads
how much host time the model GPU (streamlab.model) spent replaying the notebook: its
cost, as a share of the run. Nothing is saved into the notebooks. With --out, the table
is written there too, with the machine it ran on.
"""

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 60  # what a notebook may take on the simulator (the first-hour issue's aim)
MODEL_LIMIT = 0.10  # what the model GPU may add to a notebook's run (issue 12's aim)
PROBE = ("import streamlab as _s\n"
         "print('MODEL-BUSY', _s.model.simulator_model().busy_s)")


def run(path: Path) -> tuple[float, float, str | None]:
    """Seconds for the whole run, seconds of it inside the model, and the first error."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    probe = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []))
    busy = float(probe.split()[-1]) if "MODEL-BUSY" in probe else float("nan")
    return seconds, busy, (f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    a = ap.parse_args()
    os.environ.update(STREAMLAB_DEVICE="sim", STREAMLAB_RACE_CHECK="1", STREAMLAB_QUIET="1")
    paths = [p.resolve() for p in a.notebooks] or (
        sorted((ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb"))
        + sorted((ROOT / "solutions").glob("lab*/lab*.ipynb")))
    rows = []
    for p in paths:
        seconds, busy, error = run(p)
        name = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(p)
        state = "ok" if error is None else f"FAILED: {error}"
        over = " (over the limit)" if seconds > LIMIT_S else ""
        share = busy / (seconds - busy) if seconds > busy else float("nan")
        if not share <= MODEL_LIMIT:
            over += f" (the model adds over {MODEL_LIMIT:.0%})"
        rows.append((name, seconds, busy, share, state + over))
        print(f"{name}: {seconds:.1f} s, model {busy:.2f} s, {state}{over}", flush=True)
    total = sum(r[1] for r in rows)
    lines = ["| notebook | seconds on the simulator | of which the model GPU | the model adds | |",
             "| --- | ---: | ---: | ---: | --- |"]
    lines += [f"| `{n}` | {s:.1f} | {b:.2f} | {sh:.1%} | {st} |" for n, s, b, sh, st in rows]
    lines.append(f"| all, one after another | {total:.1f} | {sum(r[2] for r in rows):.2f} | | |")
    print("\n" + "\n".join(lines))
    if a.out:
        head = [
            "# Notebook times on the simulator",
            "",
            "Written by `benchmarks/notebook_times.py`: each notebook and lab solution run",
            "top to bottom on Numba's CUDA simulator, under the session-wide race check, as",
            f"CI's nbval run does. The aim: none over {LIMIT_S} s. \"Of which the model",
            "GPU\": host time spent inside `streamlab.model` replaying the notebook's work;",
            f"\"the model adds\": that time over the rest of the run (aim: at most "
            f"{MODEL_LIMIT:.0%}).",
            "",
            f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores, python "
            f"{platform.python_version()}",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            "",
        ]
        a.out.write_text("\n".join(head + lines) + "\n")
    return 0 if all(r[4] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
