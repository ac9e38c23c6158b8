"""Execute the course notebooks and the lab solutions in place; collect what they report.

    python scripts/gpu/run_notebooks.py [--json PATH] [--repeat N] [NOTEBOOK ...]
    (default: notebooks/*.ipynb, then solutions/*/*.ipynb)
    python scripts/gpu/run_notebooks.py --combine A.json B.json ... --json PATH
    (runs nothing: each notebook's runs in A, then in B, ..., as one result)

Each notebook runs top to bottom in a fresh kernel (nbclient), in its own folder, and
is saved with its outputs. Every output goes before the run: a notebook that fails is
saved with the cells after the failing one empty (never an earlier run's outputs beside
this run's), unstamped, and its result names the cell (``failed_cell``). Each result keeps
the claims cell's figures and conditions (``claims``), a failed run's too (what
scripts/gpu/claim_margins.py reads). A lesson's last code cell, tagged ``headline``, prints
``name: value`` lines: the figures that docs/gpu-results.md reports for it. Its cell
tagged ``claims`` is re-checked from the saved output, and a claim that does not hold
fails the run, named. ``--repeat N`` runs each notebook N times in a row, each in a fresh
kernel: every run must pass, the last one is saved, and the results keep each run's
figures (``runs``), so that a page can show that a result repeats. A lab solution reports what each of its graded check cells
printed (its timings and its "passed"). Run on a GPU by scripts/gpu/gpu-check.sh; committed outputs come from that run.
"""

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str):
    """streamlab's module ``name`` alone, by its file: importing the package would choose
    a device and open a CUDA context in this process, beside the notebooks' kernels."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"_streamlab_{name}", ROOT / "src" / "streamlab" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (a dataclass looks its module up there)
    spec.loader.exec_module(module)
    return module


_cc = _module("claimcheck")
ClaimError, check_notebook = _cc.ClaimError, _cc.check_notebook
provenance = _module("provenance")  # what a run's outputs ran: its stamp


def stdout(cell) -> str:
    """What a code cell printed to stdout."""
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def graded(cell) -> dict | None:
    """The nbgrader metadata of a graded (check) cell, else None."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if cell.cell_type == "code" and meta.get("grade") else None


def headline(nb) -> list[list[str]]:
    """The ``name: value`` lines printed by the cell tagged 'headline'."""
    cells = [c for c in nb.cells if "headline" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"expected one cell tagged 'headline', found {len(cells)}")
    return [list(m.groups()) for m in re.finditer(r"^(.+?):\s+(.+)$", stdout(cells[0]), re.M)]


def checks(nb) -> list[list[str]]:
    """For a lab: each graded cell's id and points, and the lines it printed."""
    out = []
    for cell in nb.cells:
        if meta := graded(cell):
            lines = [ln.strip() for ln in stdout(cell).splitlines() if ln.strip()]
            out.append([f"{meta['grade_id']} ({meta.get('points', 0)} points)",
                        "; ".join(lines) or "(printed nothing)"])
    return out


def report(nb) -> list[list[str]]:
    """A lab's check results, or a lesson's headline figures."""
    return checks(nb) if any(graded(c) for c in nb.cells) else headline(nb)


def device_of(nb) -> str:
    """The device the first code cell printed ('device: NVIDIA H100 ...'), or ''."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    found = re.search(r"^device: (.+)$", stdout(code[0]), re.M) if code else None
    if found:  # "NVIDIA H100 80GB HBM3 (1 GPU(s) visible)": the GPU's name alone
        return found.group(1).split(" (")[0].split(",")[0].strip()
    found = re.search(r"running on (.+?) \(", "".join(  # a lab: streamlab's own line
        o.get("text", "") for c in code[:3] for o in c.get("outputs", [])))
    return found.group(1) if found else ""


#: the folder whose sitecustomize starts the recorder in every Python process of a run
RAN_SITE = ROOT / "scripts" / "gpu" / "ran_site"


@contextlib.contextmanager
def recording():
    """While a notebook runs: every Python process started meanwhile (its kernel, and the
    processes the notebook starts) records what it runs of streamlab
    (:class:`streamlab.provenance.Recorder`) into the folder this yields."""
    saved = {k: os.environ.get(k) for k in (provenance.DIR_VARIABLE, "PYTHONPATH")}
    with tempfile.TemporaryDirectory(prefix="streamlab-ran-") as folder:
        os.environ[provenance.DIR_VARIABLE] = folder
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(RAN_SITE)] + ([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else []))
        try:
            yield folder
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def what_ran(folder: str, printed: str) -> dict:
    """What the run's processes recorded (:func:`streamlab.provenance.ran_of`); a clear
    error where the kernel recorded nothing or ran streamlab from elsewhere."""
    lines = [ln for ln in printed.splitlines() if ln.startswith(provenance.RAN_MARK)]
    errors = sorted(Path(folder).glob("error-*.txt"))
    if errors:
        raise RunError(errors[0].read_text())
    if len(lines) != 1:
        raise RunError(f"the kernel's last cell printed no {provenance.RAN_MARK!r} line: "
                       f"{printed[-300:]!r}")
    said = json.loads(lines[0][len(provenance.RAN_MARK):])
    if not said["file"]:
        raise RunError("the kernel recorded nothing of what it ran: was it started with "
                       f"{RAN_SITE} on PYTHONPATH?")
    imported_from = said["streamlab"]
    if imported_from and not Path(imported_from).resolve().is_relative_to(provenance.PACKAGE):
        raise RunError(f"the kernel imported streamlab from {imported_from}, not from "
                       f"{provenance.PACKAGE}: run the notebooks with this checkout's src/ "
                       f"on the path (scripts/gpu/gpu-check.sh does)")
    records = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("ran-*.json"))]
    return provenance.ran_of(records)


class RunError(RuntimeError):
    """A run whose outputs cannot be stamped: says why."""


def run(path: Path, timeout: int) -> dict:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    error = failed_cell = None
    # every output goes before the run: a cell the run never reached (after one that
    # failed) is saved empty, never with an earlier run's output beside this run's
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # after the last cell, the kernel writes what it ran of streamlab (the stamp's code);
    # the probe's cell is taken out again before the notebook is saved
    nb.cells.append(nbformat.v4.new_code_cell(provenance.RAN_PROBE))
    with recording() as folder:
        try:
            client.execute()
        except CellExecutionError as exc:
            error = str(exc).splitlines()[-1] if str(exc) else repr(exc)
            error = re.sub(r"\x1b\[[0-9;]*m", "", error)  # the traceback's colours
            failed_cell = which_failed(nb)
        finally:
            probe = nb.cells.pop()
        ran = None
        if error is None:
            try:
                ran = what_ran(folder, stdout(probe))
            except RunError as exc:
                error = f"not stamped: {exc}"
    seconds = round(time.perf_counter() - t0, 1)
    if error is None:  # what the outputs ran: a test fails once that code moves on
        provenance.stamp_ran(nb, device_of(nb), ran)
        nb.metadata[provenance.KEY]["seconds"] = seconds  # (scripts/gpu/owed.py plans by it)
    else:
        nb.metadata.pop(provenance.KEY, None)
    nbformat.write(nb, path)
    # when it ran: --combine tells a run carried over by --merge from a new one by it
    result = {"seconds": seconds, "error": error, "headline": [],
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if failed_cell is not None:
        result["failed_cell"] = failed_cell
    claims = kept_claims(nb)
    if claims is not None:
        result["claims"] = claims
    if error is None:
        result["headline"] = report(nb)
        error = result["error"] = claims_error(path)
    return result


def which_failed(nb) -> dict | None:
    """The cell whose error stopped a run: its place among all cells and among the code
    cells (pytest's "Cell N" under nbval), and its first line; None if no cell shows one."""
    code = -1
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code += 1
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            return {"cell": index, "code_cell": code, "first_line": first[:120]}
    return None


def kept_claims(nb) -> dict | None:
    """What a run's claims cell kept: its figures, where they were measured (``on_gpu``),
    and its conditions (``claims``, ``gpu_claims``), so that every run record keeps each
    claim's values (scripts/gpu/claim_margins.py reads them); None for a notebook without a
    claims cell, or one whose claims cell never ran. Kept for a failed run too: a claim
    that failed says by how much."""
    cells = [c for c in nb.cells if c.cell_type == "code"
             and "claims" in c.get("metadata", {}).get("tags", [])]
    kept = [o["metadata"][_cc.MIME] for c in cells for o in c.get("outputs", [])
            if _cc.MIME in o.get("metadata", {})]
    if len(cells) != 1 or len(kept) != 1:
        return None
    conditions = _cc._call(cells[0].source)
    return {"figures": kept[0]["figures"], "on_gpu": kept[0]["on_gpu"],
            "claims": conditions.get("claims") or {},
            "gpu_claims": conditions.get("gpu_claims") or {}}


def claims_error(path: Path) -> str | None:
    """A lesson's claims, re-checked from its saved output (as CI checks a committed one):
    None when they hold (or it is a lab, which has checks instead), else what fails."""
    nb = nbformat.read(path, as_version=4)
    if not any("claims" in c.get("metadata", {}).get("tags", []) for c in nb.cells):
        if not any(graded(c) for c in nb.cells):  # a lesson whose claims are still to write
            print(f"note: {path.name} has no cell tagged 'claims' yet", file=sys.stderr)
        return None
    try:
        _, failed = check_notebook(path)
    except ClaimError as exc:
        return f"claims cannot be checked: {exc}"
    return f"claims that do not hold: {'; '.join(failed)}" if failed else None


def repeated(runs: list[dict]) -> dict:
    """One notebook's result from several runs in a row: the last run's, failed if any
    run failed (naming it), with every run's own result under ``runs``."""
    if len(runs) == 1:
        return runs[0]
    result = dict(runs[-1], runs=[dict(r) for r in runs])
    failed = [f"run {i + 1} of {len(runs)}: {r['error']}" for i, r in enumerate(runs)
              if r["error"] is not None]
    result["error"] = "; ".join(failed) or None
    return result


def combine(parts: list[dict]) -> dict:
    """Several results files of the same code on the same GPU (calls that each fit one
    command's time) as one: each notebook's runs in the order given, failed if any failed.
    A run already taken from an earlier part (carried into a later one by ``--merge``) is
    taken once: a run is known by when it ran (``at``), or, in files of before ``at`` was
    kept, by all it holds. Raises ValueError for what is not such a file, or for parts of
    different GPUs."""
    out: dict[str, list] = {}
    seen: dict[str, list] = {}
    gpus = set()
    for i, part in enumerate(parts, 1):
        if not isinstance(part, dict) or not all(
                isinstance(r, dict) and "error" in r and "seconds" in r for r in part.values()):
            raise ValueError(f"part {i} is not what run_notebooks.py --json writes (notebook "
                             f"paths, each with its seconds and error)")
        taken: dict[str, list] = {}  # this part's runs: never one another's carry-over
        for name, result in part.items():
            for run in result.get("runs") or [{k: v for k, v in result.items() if k != "runs"}]:
                gpus.update(v.split(",")[0].split(" (")[0] for k, v in run.get("headline", [])
                            if k == "device" and isinstance(v, str))
                key = run.get("at") or json.dumps(run, sort_keys=True)
                if key in seen.get(name, ()):
                    continue  # an earlier part's run, carried over
                taken.setdefault(name, []).append(key)
                out.setdefault(name, []).append(run)
        for name, keys in taken.items():
            seen.setdefault(name, []).extend(keys)
    if len(gpus) > 1:
        raise ValueError(f"the parts ran on {len(gpus)} GPUs ({', '.join(sorted(gpus))}): "
                         f"combine one GPU's runs")
    return {name: repeated(runs) for name, runs in out.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each notebook N times in a row (the last run is saved)")
    ap.add_argument("--merge", type=Path, help="results of an earlier run (JSON) that this "
                    "run's results update: a run in parts writes one page")
    ap.add_argument("--combine", type=Path, nargs="+", metavar="JSON",
                    help="run nothing: write the runs of these results files (in order) "
                    "as one, to --json")
    a = ap.parse_args()
    if a.combine:
        if a.notebooks or not a.json:
            print("--combine takes results files and --json (where to write), no notebooks",
                  file=sys.stderr)
            return 2
        try:
            results = combine([json.loads(p.read_text()) for p in a.combine])
        except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
            print(f"--combine: {exc}: give the JSON files run_notebooks.py wrote",
                  file=sys.stderr)
            return 2
        a.json.write_text(json.dumps(results, indent=1))
        return 0 if all(r["error"] is None for r in results.values()) else 1
    paths = [p.resolve() for p in a.notebooks] or (
        sorted((ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb"))
        + sorted((ROOT / "solutions").glob("lab*/lab*.ipynb")))
    if not paths:
        print("no notebooks to run", file=sys.stderr)
        return 1
    if sys.version_info < (3, 12):
        print("run_notebooks: this Python has no sys.monitoring, so recording what each "
              "notebook runs uses coverage.py's tracer, which slows Python code about 2.6 "
              "times (measured here): a claim about host time may fail. Run GPU notebooks "
              "with Python 3.12 or later.", file=sys.stderr)
    results = json.loads(a.merge.read_text()) if a.merge and a.merge.exists() else {}
    if a.repeat < 1:
        print(f"--repeat {a.repeat}: give the number of runs, 1 or more", file=sys.stderr)
        return 2
    for p in paths:
        name = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(p)
        runs = []
        for i in range(a.repeat):
            r = run(p, a.timeout)
            runs.append(r)
            status = "ok" if r["error"] is None else f"FAILED: {r['error']}"
            if r.get("failed_cell"):
                at = r["failed_cell"]
                status += f" (in code cell {at['code_cell']}: {at['first_line']})"
            which = f" (run {i + 1} of {a.repeat})" if a.repeat > 1 else ""
            print(f"{name}{which}: {r['seconds']} s, {status}")
            for key, value in r["headline"]:
                print(f"    {key}: {value}")
        results[name] = repeated(runs)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["error"] is None for r in results.values()) else 1  # earlier too


if __name__ == "__main__":
    sys.exit(main())
