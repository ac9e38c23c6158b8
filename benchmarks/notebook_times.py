"""How long each notebook and lab solution takes on Numba's CUDA simulator.

    python benchmarks/notebook_times.py [--out docs/notebook-times.md] [NOTEBOOK ...]

Runs each one top to bottom in a fresh kernel on the simulator (STREAMLAB_DEVICE=sim),
as CI's nbval run does, with the session-wide race check on as there
(STREAMLAB_RACE_CHECK=1), and prints a table of the times. Nothing is saved into the
notebooks. With --out, the table is written there too, with the machine it ran on.
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


def run(path: Path) -> tuple[float, str | None]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    return seconds, (f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else None)


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
        seconds, error = run(p)
        name = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(p)
        state = "ok" if error is None else f"FAILED: {error}"
        over = " (over the limit)" if seconds > LIMIT_S else ""
        rows.append((name, seconds, state + over))
        print(f"{name}: {seconds:.1f} s, {state}{over}", flush=True)
    total = sum(s for _, s, _ in rows)
    lines = ["| notebook | seconds on the simulator | |", "| --- | ---: | --- |"]
    lines += [f"| `{n}` | {s:.1f} | {st} |" for n, s, st in rows]
    lines.append(f"| all, one after another | {total:.1f} | |")
    print("\n" + "\n".join(lines))
    if a.out:
        head = [
            "# Notebook times on the simulator",
            "",
            "Written by `benchmarks/notebook_times.py`: each notebook and lab solution run",
            "top to bottom on Numba's CUDA simulator, under the session-wide race check, as",
            f"CI's nbval run does. The aim: none over {LIMIT_S} s.",
            "",
            f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores, python "
            f"{platform.python_version()}",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            "",
        ]
        a.out.write_text("\n".join(head + lines) + "\n")
    return 0 if all(st == "ok" for _, _, st in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
