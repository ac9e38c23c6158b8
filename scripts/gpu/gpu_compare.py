"""Write docs/gpu-compare.md: each GPU's run of the course, side by side.

    python scripts/gpu/gpu_compare.py            # writes the page from data/runs/*.json
    python scripts/gpu/gpu_compare.py --check    # fails if the page is not what the runs give

Each file in data/runs/ is the JSON that ``scripts/gpu/run_notebooks.py --json`` wrote on a GPU
(``YYYY-MM-DD-name.json``), kept as it came back. The page puts every notebook's headline
figures, and every lab solution's check lines, in one column a run, so that a figure that
differs between GPUs is seen to differ. The GPU of a run is the ``device`` line its
notebooks printed; nothing on the page is typed in.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "data" / "runs"
PAGE = ROOT / "docs" / "gpu-compare.md"


class RunError(ValueError):
    """A run file that cannot be read; says which and why."""


def load(path: Path) -> dict:
    """One run: its date (from the file's name), its GPU and its results."""
    found = re.fullmatch(r"(\d{4}-\d\d-\d\d)-[\w.-]+\.json", path.name)
    if not found:
        raise RunError(f"{path.name}: name a run file YYYY-MM-DD-what.json")
    try:
        results = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise RunError(f"{path.name} is not JSON ({exc}): copy run_notebooks.py's --json "
                       f"output as it came back") from None
    if not isinstance(results, dict) or not results:
        raise RunError(f"{path.name} holds no results: it should map notebook paths to what "
                       f"run_notebooks.py measured")
    gpus = {v for r in results.values() for k, v in r.get("headline", [])
            if k == "device" and isinstance(v, str)}
    gpus = {g.split(",")[0].split(" (")[0] for g in gpus}
    if len(gpus) != 1:
        raise RunError(f"{path.name}: its notebooks name {len(gpus)} devices "
                       f"({', '.join(sorted(gpus)) or 'none'}): keep one GPU's run a file")
    return {"date": found.group(1), "gpu": gpus.pop(), "results": results, "file": path.name}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _times(result: dict) -> int:
    """How many times in a row a notebook ran (``run_notebooks.py --repeat``)."""
    return max(1, len(result.get("runs") or []))


def status(result: dict) -> str:
    """How a notebook's run went, in words (every run of a --repeat run)."""
    if result.get("error"):
        return "FAILED: " + result["error"]
    if _times(result) > 1:  # run_notebooks.py --repeat: every run passed
        return (f"{_times(result)} runs in a row, each passed, in "
                + ", ".join(f"{run['seconds']}" for run in result["runs"]) + " s")
    return f"ran in {result['seconds']} s"


def figures(result: dict) -> dict[str, str]:
    """A notebook's headline figures but the device (each column names it): name ->
    value, or 'a · b · c' over the runs of a --repeat run, in their order ('–' where a
    run did not print it)."""
    runs = result.get("runs") or [result]
    values: dict[str, list[str]] = {}
    for i, run in enumerate(runs):
        for key, value in run.get("headline", []):
            if key != "device":
                values.setdefault(key, ["–"] * len(runs))[i] = value
    return {k: " · ".join(v) for k, v in values.items()}


def notebook_table(heads: list[str], results: list) -> list[str]:
    """One notebook's table: a column per run (``heads``), its results in that order
    (None where a run did not execute it): how each run went, then each figure."""
    lines = ["| | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(heads)]
    rows: dict[str, list[str]] = {"run": ["–"] * len(heads)}
    for i, x in enumerate(results):
        if x is None:
            continue
        rows["run"][i] = status(x)
        for key, value in figures(x).items():
            rows.setdefault(key, ["–"] * len(heads))[i] = value
    return lines + [f"| {_cell(key)} | " + " | ".join(_cell(v) for v in values) + " |"
                    for key, values in rows.items()]


def page(runs: list[dict]) -> str:
    """The page's markdown."""
    heads = [f"{r['gpu']}, {r['file'][:-5]}" for r in runs]
    lines = [
        "# Each GPU's run, side by side",
        "",
        "Written by `scripts/gpu/gpu_compare.py` from the runs kept in `data/runs/` (what",
        "`scripts/gpu/run_notebooks.py` measured on each GPU). Every notebook and lab solution,",
        "executed top to bottom; each column is one run. A figure that differs between GPUs",
        "is one the lessons' text does not state as a number: their claims hold it to what",
        "the device reports or what the same run measured.",
        "",
        "| run | GPU | notebooks run | times in a row | failed | file |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for head, r in zip(heads, runs):
        failed = sum(1 for x in r["results"].values() if x.get("error"))
        times = sorted({_times(x) for x in r["results"].values()})
        span = str(times[0]) if len(times) == 1 else f"{times[0]} to {times[-1]}"
        lines.append(f"| {head} | {r['gpu']} | {len(r['results'])} | {span} | {failed} | "
                     f"[{r['file']}](../data/runs/{r['file']}) |")
    paths = sorted({p for r in runs for p in r["results"]},
                   key=lambda p: (p.startswith("solutions/"), p))
    for path in paths:
        lines += ["", f"## [{Path(path).name}](../{path})", ""]
        lines += notebook_table(heads, [r["results"].get(path) for r in runs])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if the page is out of date")
    a = ap.parse_args(argv)
    files = sorted(RUNS.glob("*.json"))
    if not files:
        print(f"no runs in {RUNS}: copy run_notebooks.py's JSON there", file=sys.stderr)
        return 1
    try:
        text = page([load(p) for p in files])
    except RunError as exc:
        print(exc, file=sys.stderr)
        return 1
    if a.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/gpu/gpu_compare.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)} from {len(files)} run(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
