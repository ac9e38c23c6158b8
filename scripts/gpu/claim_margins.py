"""Every claim of every lesson, across every kept GPU run: its values, its threshold, and
its margin in units of its own spread across runs.

    python scripts/gpu/claim_margins.py [--out docs/claim-margins.md] [--under 3]

A run is kept in two places, and both are read:
- the committed notebooks' history (git): each commit of a lesson holds one GPU run's
  claims cell, whose output keeps the figures it measured and the device;
- the run records in ``data/runs/*.json`` that ``scripts/gpu/run_notebooks.py`` writes, which
  keep each run's claims (``claims``), a failed run's too (a run that failed, and so was
  never committed, is counted).
The same run found in both is counted once (by its figures).

Each claim is read with today's condition (the lesson's claims cell as committed now),
applied to every earlier run that measured the figures it reads: would today's text have
held then? A condition is split into its comparisons. For each, the slack is how far the
run was on the right side of the threshold (``a >= 3 * b``: ``a - 3 * b``), and the margin
is the slack's mean across a GPU's runs over its standard deviation: 3 means that the
threshold lies three spreads from the typical run. Where both sides are positive in every
run (times, rates, ratios: their noise multiplies), the slack is taken as a ratio, the
logarithm of one side over the other, so that a claim far from its threshold is not called
weak for varying much in absolute terms; but not where a side is a difference, an
``abs()`` or a figure named ``*_err`` (the lessons' relative errors), which can sit near zero (``abs(x - 1) <= 0.1`` with x at 1.0002), where a
ratio means nothing. ``and`` takes its weakest part, ``or``
its strongest (a guard such as ``n_gpus < 2 or ...`` that always holds makes the claim
safe there); a comparison that never varies is safe (inf) if it held, else -inf. A claim
seen in one run only has no spread: it is listed, with no margin.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))
import nbformat  # noqa: E402
from run_notebooks import _cc, kept_claims  # noqa: E402  (claimcheck, by its file)

_HEAD = re.compile(r"claims checked against this run on (.+?): \d+ of \d+ hold")


def claims_of(nb: dict) -> dict | None:
    """A notebook's (JSON) claims cell as run_notebooks keeps it (figures, on_gpu, claims,
    gpu_claims), with the device its report names."""
    try:  # (reads() joins a cell's source lines, as a saved notebook holds them)
        kept = kept_claims(nbformat.reads(json.dumps(nb), as_version=4))
    except _cc.ClaimError:  # an old commit's claims cell that cannot be read
        return None
    if kept is None:
        return None
    cell = next(c for c in nb["cells"] if c.get("cell_type") == "code"
                and "claims" in c.get("metadata", {}).get("tags", []))
    texts = [o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", [])]
    head = _HEAD.search("".join("".join(t) if isinstance(t, list) else t for t in texts))
    return dict(kept, device=head.group(1) if head else None)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def history_runs(path: str) -> list[dict]:
    """The GPU runs a lesson's committed history holds (oldest first), each with its
    commit's date."""
    log = _git("log", "--follow", "--format=@%H %cs", "--name-only", "--", path)
    runs, commit = [], None
    for line in log.splitlines():
        if line.startswith("@"):
            commit = line[1:].split()
            continue
        if not line.strip() or commit is None:
            continue
        try:
            nb = json.loads(_git("show", f"{commit[0]}:{line.strip()}"))
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            continue
        kept = claims_of(nb)
        if kept and kept["on_gpu"]:
            runs.append(dict(kept, source=f"{commit[0][:8]} ({commit[1]})"))
        commit = None
    return runs[::-1]


def record_runs(path: str) -> list[dict]:
    """The runs of a notebook that data/runs/*.json keep with their claims."""
    out = []
    for rec in sorted((ROOT / "data" / "runs").glob("*.json")):
        try:
            data = json.loads(rec.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        result = data.get(path) if isinstance(data, dict) else None
        if not isinstance(result, dict):
            continue
        for run in result.get("runs") or [result]:
            kept = run.get("claims")
            if kept and kept.get("on_gpu"):
                device = next((v.split(",")[0].split(" (")[0] for k, v in run.get("headline", [])
                               if k == "device" and isinstance(v, str)), None)
                out.append(dict(kept, device=device, source=rec.name,
                                failed=run.get("error") is not None))
    return out


# ---- a condition's slack ---------------------------------------------------------------

def _num(node, figures, text):
    v = _cc._value(node, figures, text)
    return float(v)


def slack(node, figures: dict, text: str) -> list:
    """The condition as a tree: ("and"|"or", [parts]), ("cmp", big, small) for a
    comparison that holds when big > small, or +1.0/-1.0 for a test that held or not."""
    if isinstance(node, ast.Expression):
        return slack(node.body, figures, text)
    if isinstance(node, ast.BoolOp):
        return ("and" if isinstance(node.op, ast.And) else "or",
                [slack(v, figures, text) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return 1.0 if not _cc._value(node.operand, figures, text) else -1.0
    if isinstance(node, ast.Compare):
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            scale = _is_scale(left) and _is_scale(right)
            if isinstance(op, (ast.Gt, ast.GtE)):  # (bigger, smaller when it holds)
                parts.append(("cmp", _num(left, figures, text), _num(right, figures, text),
                              scale))
            elif isinstance(op, (ast.Lt, ast.LtE)):
                parts.append(("cmp", _num(right, figures, text), _num(left, figures, text),
                              scale))
            else:  # == and !=: held or not
                held = _cc._value(ast.Compare(left=left, ops=[op], comparators=[right]),
                                  figures, text)
                parts.append(1.0 if held else -1.0)
            left = right
        return ("and", parts) if len(parts) > 1 else parts[0]
    return 1.0 if _cc._value(node, figures, text) else -1.0  # a figure read as true/false


def _is_scale(node) -> bool:
    """Is this side a quantity whose noise multiplies (a time, a rate, a count, or a sum,
    product or ratio of them)? A difference or an ``abs()`` is not: it can sit near zero,
    where a ratio to it means nothing (``abs(x - 1) <= 0.1`` with x at 1.0002); nor is a
    figure named ``*_err``, which the lessons compute as such an error."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id.endswith("_err"):
            return False  # the course's *_err figures are errors: abs(a / b - 1), near zero
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub):
            return False
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return False
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "abs":
            return False
    return True


def margin(trees: list) -> float | None:
    """The margin, in spreads, of one condition across runs (its slack trees, one a run)."""
    first = trees[0]
    if isinstance(first, tuple) and first[0] in ("and", "or"):
        kind = first[0]
        parts = [margin([t[1][i] for t in trees]) for i in range(len(first[1]))]
        if any(p is None for p in parts):
            return None
        return min(parts) if kind == "and" else max(parts)
    if isinstance(first, tuple):  # a comparison: its slack, by ratio where it can be
        pairs = [(t[1], t[2]) for t in trees]
        if all(t[3] for t in trees) and all(big > 0 and small > 0 for big, small in pairs):
            values = [math.log(big / small) for big, small in pairs]
        else:
            values = [big - small for big, small in pairs]
    else:
        values = [float(t) for t in trees]
    if len(values) < 2:
        return None
    sd = statistics.stdev(values)
    mean = statistics.fmean(values)
    if sd == 0:  # the same every run: safe if it held with room, else never
        return math.inf if mean > 0 else (0.0 if mean == 0 else -math.inf)
    return mean / sd


def rows_for(path: str) -> list[dict]:
    now = claims_of(json.loads((ROOT / path).read_text()))
    if not now:
        return []
    runs, seen = [], set()
    for run in history_runs(path) + record_runs(path):
        key = json.dumps(run["figures"], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        runs.append(run)
    rows = []
    for group in ("claims", "gpu_claims"):
        for text, condition in now[group].items():
            tree = ast.parse(condition, mode="eval")
            names = sorted(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                           and n.id not in ("abs", "min", "max"))
            by_gpu: dict[str, list] = {}
            for run in runs:
                try:
                    s = slack(tree, run["figures"], condition)
                    held = _cc.holds(condition, run["figures"])
                except (_cc.ClaimError, TypeError, ValueError, ZeroDivisionError):
                    continue  # an earlier run that did not measure what today's reads
                by_gpu.setdefault(run.get("device") or "?", []).append((s, held, run))
            for gpu, seen_runs in sorted(by_gpu.items()):
                values = {n: [r["figures"].get(n) for _, _, r in seen_runs] for n in names}
                rows.append({"notebook": path, "claim": text, "condition": condition,
                             "gpu": gpu, "runs": len(seen_runs),
                             "failed": sum(1 for _, held, _ in seen_runs if not held),
                             "margin": margin([s for s, _, _ in seen_runs]),
                             "values": values})
    return rows


def _span(values: list) -> str:
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not nums:
        return "/".join(sorted({str(v) for v in values}))
    lo, hi = min(nums), max(nums)
    fmt = (lambda x: f"{x:.3g}")
    return fmt(lo) if lo == hi else f"{fmt(lo)} to {fmt(hi)}"


def _m(m: float | None) -> str:
    if m is None:
        return "(one run)"
    if math.isinf(m):
        return "safe" if m > 0 else "never held"
    return f"{m:.1f}"


def stated(r: dict) -> bool:
    """Does the claim's text say that what it reads varies (and with what)? Such a claim
    is listed apart: its reader is told not to take its figure as fixed."""
    return "varies" in r["claim"]


def page(rows: list[dict], under: float) -> str:
    low = [r for r in rows if r["margin"] is not None and r["margin"] < under]
    weak = [r for r in low if not stated(r)]
    said = [r for r in low if stated(r)]
    out = ["# Every claim's margin across the kept GPU runs", "",
           "Written by `scripts/gpu/claim_margins.py` from the committed notebooks' history and "
           "the run records in `data/runs/`: each lesson's claims as written today, applied "
           "to every kept GPU run that measured what they read. The margin is the slack's "
           "mean over its standard deviation across one GPU's runs (see the script). "
           "\"safe\": the same on every run (or a guard that always holds).", "",
           f"**{len(weak)} of {len(rows)} claim rows have a margin under {under:g} "
           f"spreads** and a text that does not say how much it varies; {len(said)} more "
           f"have such a margin and a text that says so.", ""]
    for title, group in (("", weak), (f"### Under {under:g} spreads, the text saying that "
                                      f"it varies", said)):
        if not group:
            continue
        if title:
            out += [title, ""]
        out += ["| lesson | claim | GPU | runs | failed | margin | values |",
                "| --- | --- | --- | ---: | ---: | ---: | --- |"]
        for r in sorted(group, key=lambda r: r["margin"]):
            out.append(_row(r))
        out.append("")
    out += ["## Every claim", "", "| lesson | claim | GPU | runs | failed | margin | values |",
            "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    out += [_row(r) for r in rows]
    return "\n".join(out) + "\n"


def _row(r: dict) -> str:
    lesson = Path(r["notebook"]).name.split("__")[0] + (
        " solved" if "SOLUTION" in r["notebook"] else "")
    values = "; ".join(f"{n} {_span(v)}" for n, v in r["values"].items())
    claim = r["claim"].replace("|", "\\|")
    return (f"| {lesson} | {claim} (`{r['condition'].replace('|', '/')}`) | {r['gpu']} | "
            f"{r['runs']} | {r['failed']} | {_m(r['margin'])} | {values} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the page here (default: print it)")
    ap.add_argument("--under", type=float, default=3.0,
                    help="list first the claims whose margin is under this many spreads")
    ap.add_argument("notebooks", nargs="*", help="lessons (default: every lesson)")
    a = ap.parse_args(argv)
    if a.under <= 0:
        print(f"--under {a.under}: give a number of spreads above 0, such as 3",
              file=sys.stderr)
        return 2
    paths = a.notebooks or sorted(p.relative_to(ROOT).as_posix()
                                  for p in (ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb"))
    rows = []
    for path in paths:
        if not (ROOT / path).exists():
            print(f"{path}: no such notebook (give paths such as "
                  f"notebooks/01__default_streams__eight_streams.ipynb)", file=sys.stderr)
            return 2
        rows += rows_for(path)
    text = page(rows, a.under)
    if a.out:
        a.out.write_text(text)
        print(f"wrote {a.out}: {len(rows)} claim rows")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
