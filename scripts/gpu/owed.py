"""The owed GPU runs: which committed notebooks' outputs are older than the code they ran.

    python scripts/gpu/owed.py              # the ledger, the notebooks' banners and the README's
                                        # marks, brought up to date with the code
    python scripts/gpu/owed.py --check      # change nothing: say what is out of step (exit 1)
    python scripts/gpu/owed.py next [--budget SECONDS] [--gpus N]
                                        # the owed notebooks that one GPU call should run,
                                        # one path a line (scripts/gpu/gpu-check.sh PART=owed)

A change to the code lands without a GPU run: each notebook it makes stale (by what the
notebook's GPU run ran, ``streamlab.provenance``: a function, a module body, a data file
or its own code cells) is listed in ``docs/owed.json`` with the commit after which the
code changed and what changed, and says so to its reader. A banner cell (tagged
``owed-gpu-run``) under the notebook's title, and a mark beside its link in the README's
tables, give the date of the GPU run its outputs come from. ``tests/test_owed.py`` fails
when a stale notebook is not listed, or a listed one is no longer stale, or a banner or a
mark is out of step. ``PART=owed bash scripts/gpu/gpu-check.sh`` runs what is owed, in parts
that fit one call; run this script after it, and the ledger empties.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "streamlab"
LEDGER = ROOT / "docs" / "owed.json"
README = ROOT / "README.md"
RUNS = ROOT / "data" / "runs"
TAG = "owed-gpu-run"
#: the README's marks beside an owed notebook's link (:func:`mark`)
MARK_RE = re.compile(r" \*\((?:outputs from a GPU run of [^)]*, older than its code|no GPU run "
                     r"of its code is kept): a new run is owed\)\*")
#: the date of a run that neither its stamp nor git can give
UNDATED = "an earlier day"
#: what changed, for a notebook whose stamp cannot say
NO_RECORD = "no record of its GPU run"
#: seconds a notebook is assumed to take on a GPU when no run of it says
UNKNOWN_SECONDS = 120


def _provenance():
    spec = importlib.util.spec_from_file_location(
        "_streamlab_provenance", ROOT / "src" / "streamlab" / "provenance.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


provenance = _provenance()


def executed() -> list[Path]:
    """Every notebook whose committed outputs are a GPU run: the lessons (both copies),
    then the lab solutions."""
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb")) + \
        sorted((ROOT / "solutions").glob("lab*/lab*.ipynb"))


def rel(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def what_changed(nb: dict) -> list[str] | None:
    """What changed after its GPU run ([] when nothing did); ``[NO_RECORD]`` when its
    stamp cannot say (none, or an old format)."""
    moved = provenance.changed(nb, PACKAGE)
    return [NO_RECORD] if moved is None else moved


def stale_now() -> dict[str, list[str]]:
    """Each stale notebook's path, with what changed after its run."""
    out = {}
    for path in executed():
        moved = what_changed(read(path))
        if moved:
            out[rel(path)] = moved
    return out


def run_date(path: Path, nb: dict) -> str:
    """The date of the GPU run its outputs come from: its stamp's; for a stamp of before
    the date was kept, the last commit that changed the file (its run was on or before)."""
    at = nb.get("metadata", {}).get(provenance.KEY, {}).get("at")
    if at:
        return at[:10]
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", rel(path)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    return f"{out} or before" if out else UNDATED


def head() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load() -> list[dict]:
    """The ledger's entries ([] when there is none)."""
    if not LEDGER.exists():
        return []
    data = read(LEDGER)
    entries = data.get("owed") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and {"notebook", "outputs_from", "after_commit", "changed"}
            <= set(e) for e in entries):
        raise SystemExit(f"{LEDGER.relative_to(ROOT)} is not a ledger of owed runs (a dict "
                         f"with 'owed': entries with notebook, outputs_from, after_commit "
                         f"and changed): write it with python scripts/gpu/owed.py")
    return entries


def ledger_now(stale: dict[str, list[str]]) -> list[dict]:
    """The ledger as it should be: an entry kept from the last ledger keeps its commit."""
    kept = {e["notebook"]: e for e in load()}
    base = head()
    out = []
    for name, moved in stale.items():
        path = ROOT / name
        before = kept.get(name, {})
        when = run_date(path, read(path))
        if when == UNDATED and before.get("outputs_from"):  # (no git here: a GPU machine)
            when = before["outputs_from"]
        out.append({"notebook": name, "outputs_from": when,
                    "after_commit": before.get("after_commit", base), "changed": moved})
    return out


ABOUT = ("The notebooks whose committed outputs come from a GPU run of older code: what "
         "changed after that run (a function or module body of streamlab the run ran, a data "
         "file it read, or the notebook's own code cells), the commit after which it "
         "changed, and the date of the run. Written by scripts/gpu/owed.py; "
         "PART=owed bash scripts/gpu/gpu-check.sh runs them again.")


def write_ledger(entries: list[dict]) -> None:
    LEDGER.write_text(json.dumps({"about": ABOUT, "owed": entries}, indent=1) + "\n")


# --- what the reader sees ------------------------------------------------------------------

def banner_text(entry: dict) -> str:
    moved = entry["changed"]
    if moved == [NO_RECORD]:
        return ("> **No GPU run of this code is kept.** Any output below comes from other "
                "code, or none is shown; a new GPU run is owed. Run the cells to see what "
                "this code gives.")
    shown = ", ".join(f"`{m}`" for m in moved[:4]) + (
        f" and {len(moved) - 4} more" if len(moved) > 4 else "")
    return (f"> **These outputs come from older code.** They are a GPU run of "
            f"{entry['outputs_from']}; the code this notebook runs has changed since "
            f"({shown}), and a new GPU run is owed. A figure below may differ from what "
            f"the code gives now: run the cells to see.")


def mark(entry: dict) -> str:
    """The README's mark beside an owed notebook's link."""
    if entry["changed"] == [NO_RECORD]:
        return " *(no GPU run of its code is kept: a new run is owed)*"
    return f" *(outputs from a GPU run of {entry['outputs_from']}, older than its code: a " \
           f"new run is owed)*"


def _is_banner(cell) -> bool:
    return TAG in cell.get("metadata", {}).get("tags", [])


def with_banner(nb: dict, entry: dict | None) -> dict:
    """``nb`` with its banner as ``entry`` says (none when it is not owed): a markdown cell
    tagged ``owed-gpu-run`` under the notebook's title."""
    cells = [c for c in nb["cells"] if not _is_banner(c)]
    if entry is not None:
        title = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                      and "".join(c["source"]).lstrip().startswith("# ")), 0)
        cells.insert(title + 1, {"cell_type": "markdown", "id": TAG, "metadata": {"tags": [TAG]},
                                 # as JupyterLab saves a cell: its lines, in a list
                                 "source": banner_text(entry).splitlines(keepends=True)})
    return dict(nb, cells=cells)


def banner_of(nb: dict) -> str | None:
    found = [c for c in nb["cells"] if _is_banner(c)]
    return "".join(found[0]["source"]) if len(found) == 1 else (None if not found else "?")


def readme_with_marks(text: str, entries: list[dict]) -> str:
    """The README with a mark beside the link of each owed notebook (a lab's solution is
    marked beside its lab's link), and none beside any other."""
    text = MARK_RE.sub("", text)
    for entry in entries:
        name = entry["notebook"]
        if name.startswith("solutions/"):
            name = "labs/" + name[len("solutions/"):]
        link = f"]({name})"
        if link in text:
            text = text.replace(link, link + mark(entry), 1)
    return text


# --- what a GPU call runs next -------------------------------------------------------------

def seconds_of(name: str) -> float:
    """How long the notebook took on a GPU: its stamp's record, else the newest kept run
    that names it, else :data:`UNKNOWN_SECONDS`."""
    took = read(ROOT / name).get("metadata", {}).get(provenance.KEY, {}).get("seconds")
    if isinstance(took, (int, float)):
        return float(took)
    for path in sorted(RUNS.glob("*.json"), key=lambda p: p.name, reverse=True):
        try:
            found = read(path).get(name)
        except (ValueError, AttributeError):
            continue
        if isinstance(found, dict) and isinstance(found.get("seconds"), (int, float)):
            return float(found["seconds"])
    return float(UNKNOWN_SECONDS)


def order(names) -> list[str]:
    """The lessons' solved copies, then their learner copies, then the lab solutions."""
    def rank(name):
        return (0 if "__SOLUTION" in name else 1 if name.startswith("notebooks/") else 2, name)
    return sorted(names, key=rank)


#: notebooks whose committed run is of more GPUs than one (lesson 09 hands work from one
#: GPU to another: its outputs are a two-GPU machine's)
GPUS_WANTED = {"notebooks/09__": 2}


def gpus_wanted(name: str) -> int:
    return max([n for prefix, n in GPUS_WANTED.items() if name.startswith(prefix)] or [1])


def next_part(budget: float, gpus: int = 1) -> list[str]:
    """The owed notebooks one call runs on a machine of ``gpus`` GPUs: in :func:`order`,
    each that fits what is left of ``budget`` seconds (a notebook longer than the whole
    budget runs alone) and wants no more GPUs than there are."""
    owed = order(e["notebook"] for e in load() if gpus_wanted(e["notebook"]) <= gpus)
    part, left = [], budget
    for name in owed:
        took = seconds_of(name) * 1.15 + 5  # a margin: a run is not always as quick
        if took <= left or not part and took > budget:
            part.append(name)
            left -= took
            if took > budget:
                break
    return part


# --- the command line ----------------------------------------------------------------------

def problems() -> list[str]:
    """What is out of step between the code, the ledger, the banners and the README."""
    out = []
    stale = stale_now()
    entries = load()
    listed = {e["notebook"]: e for e in entries}
    for name, moved in stale.items():
        if name not in listed:
            out.append(f"{name} is older than its code ({', '.join(moved[:4])}) and not in "
                       f"the ledger: run it on a GPU, or list it with python scripts/gpu/owed.py")
        elif listed[name]["changed"] != moved:
            out.append(f"{name}: the ledger says {listed[name]['changed'][:4]} changed, the "
                       f"code says {moved[:4]}: python scripts/gpu/owed.py")
    for name in listed:
        if name not in stale:
            out.append(f"{name} is in the ledger but its outputs are not older than its "
                       f"code: take it off with python scripts/gpu/owed.py")
    for path in executed():
        entry = listed.get(rel(path)) if rel(path) in stale else None
        want = banner_text(entry) if entry else None
        have = banner_of(read(path))
        if have != want:
            out.append(f"{rel(path)}: its banner does not say what the ledger does "
                       f"(python scripts/gpu/owed.py)")
    if readme_with_marks(README.read_text(), [e for e in entries if e["notebook"] in stale]) \
            != README.read_text():
        out.append("README.md: its marks of owed notebooks are out of step with the ledger "
                   "(python scripts/gpu/owed.py)")
    return out


def update() -> list[dict]:
    entries = ledger_now(stale_now())
    write_ledger(entries)
    listed = {e["notebook"]: e for e in entries}
    for path in executed():
        nb = read(path)
        new = with_banner(nb, listed.get(rel(path)))
        if new != nb:
            path.write_text(json.dumps(new, indent=1, ensure_ascii=False, sort_keys=True)
                            + "\n")
    text = README.read_text()
    marked = readme_with_marks(text, entries)
    if marked != text:
        README.write_text(marked)
    return entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="?", choices=["next"], help="next: the next GPU call's part")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if out of step")
    ap.add_argument("--budget", type=float, default=540,
                    help="seconds one GPU call may spend on notebooks (default 540)")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs the machine has (default 1)")
    a = ap.parse_args(argv)
    if a.what == "next":
        print("\n".join(next_part(a.budget, a.gpus)))
        return 0
    if a.check:
        found = problems()
        for p in found:
            print(p)
        return 1 if found else 0
    entries = update()
    print(f"{len(entries)} notebook(s) owed a GPU run" + "".join(
        f"\n  {e['notebook']}: {', '.join(e['changed'][:4])}"
        + (f" and {len(e['changed']) - 4} more" if len(e['changed']) > 4 else "")
        for e in entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
