"""How many GPU-run notebooks a change makes stale: by module (the old rule) and by what ran.

    python scripts/gpu/stale_by_change.py --base REV PATCH [PATCH ...] [--out docs/stale-by-change.md]

Each patch is applied in turn to the code of git revision ``REV`` (each on top of the ones
before it, as they were written), and what it changed is compared, by the rule of each
kind of stamp:

* **by module** (the stamps before issue 53): a notebook was stale when the patch changed
  any file of streamlab it imported (every module whose body its GPU run ran) or any data
  file of the package, or its own code cells;
* **by what ran** (``streamlab.provenance``): a notebook is stale when the patch changed a
  function or module body its GPU run ran (a fingerprint of its source without docstrings
  or comments), a data file it read, or its own code cells.

What each notebook ran is read from its stamp as committed now: run it after the GPU runs
that the patches owed, so that the stamps record what the changed code ran.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from owed import executed, provenance, rel  # noqa: E402


def _scopes(folder: Path) -> dict[str, dict[str, str]]:
    """Every module's fingerprints under ``folder`` (streamlab's package)."""
    out = {}
    for path in sorted(folder.rglob("*.py")):
        try:
            out[path.relative_to(folder).as_posix()] = provenance.fingerprints(path.read_text())
        except SyntaxError:
            out[path.relative_to(folder).as_posix()] = {}
    return out


def _data(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith((".py", ".pyc")) and "__pycache__" not in p.parts}


def _notebook_code(tree: Path) -> dict[str, str]:
    return {rel(p): provenance.code_hash(json.loads((tree / rel(p)).read_text()))
            for p in executed() if (tree / rel(p)).exists()}


def changes(base: str, patches: list[Path]) -> list[dict]:
    """For each patch: the package's files it changed, its scopes changed (``file:
    scope``), its data files changed, and the notebooks whose code cells it changed."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", base], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
        package = tree / "src" / "streamlab"
        for patch in patches:
            before = (_scopes(package), _data(package), _notebook_code(tree))
            done = subprocess.run(["git", "apply", str(patch.resolve())], cwd=tree,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{patch}: does not apply to {base} and the patches before "
                                 f"it: {done.stderr.strip()}")
            made = tree / "scripts" / "course" / "make_lessons.py"  # a lesson's learner copy follows
            subprocess.run([sys.executable, str(made)], cwd=tree, capture_output=True)
            after = (_scopes(package), _data(package), _notebook_code(tree))
            files = sorted(f for f in before[0].keys() | after[0].keys()
                           if before[0].get(f) != after[0].get(f))
            scopes = sorted(f"{f}: {s}" for f in files
                            for s in before[0].get(f, {}).keys() | after[0].get(f, {}).keys()
                            if before[0].get(f, {}).get(s) != after[0].get(f, {}).get(s))
            data = sorted(f for f in before[1].keys() | after[1].keys()
                          if before[1].get(f) != after[1].get(f))
            cells = sorted(n for n in before[2].keys() | after[2].keys()
                           if before[2].get(n) != after[2].get(n))
            out.append({"patch": patch.name, "files": files, "scopes": scopes, "data": data,
                        "code_cells": cells})
    return out


def stale(change: dict) -> tuple[list[str], list[str]]:
    """The notebooks ``change`` makes stale by module, and by what ran."""
    by_module, by_ran = [], []
    scopes = set(change["scopes"])
    for path in executed():
        name = rel(path)
        saved = json.loads(path.read_text())["metadata"].get(provenance.KEY, {})
        if not saved:  # no GPU run yet (a learner's copy remade from changed code): owed
            continue   # a run already, so no change makes it stale

        ran = saved.get("ran")
        if ran is None:
            raise SystemExit(f"{name}: its stamp does not say what it ran (an older stamp): "
                             f"run the GPU runs first")
        cells = name in change["code_cells"]
        if cells or change["data"] or set(change["files"]) & set(ran):
            by_module.append(name)
        read = set(saved.get("data", {})) | {f"{d}/{n}" for d, names in
                                             saved.get("listed", {}).items() for n in names}
        if cells or read & set(change["data"]) or any(
                f"{f}: {s}" in scopes for f, names in ran.items() for s in names):
            by_ran.append(name)
    return by_module, by_ran


def page(base: str, rows: list[tuple[dict, list, list]]) -> str:
    lines = ["# How many notebooks a change makes stale", "",
             f"Written by `scripts/gpu/stale_by_change.py` from the patches applied in turn to "
             f"commit `{base}`, and what each GPU-run notebook ran, as its stamp records "
             f"({len(executed())} notebooks). By module: the rule of the stamps before issue "
             "53 (a change to any streamlab file the notebook imported). By what ran: a "
             "change to a function or module body it ran, a data file it read, or its own "
             "code cells.", "",
             "| change | what it changed | stale by module | stale by what ran | which, by what ran |",
             "| --- | --- | ---: | ---: | --- |"]
    for change, by_module, by_ran in rows:
        what = ", ".join(f"`{s}`" for s in change["scopes"][:8]) + (
            f" and {len(change['scopes']) - 8} more" if len(change["scopes"]) > 8 else "")
        if change["code_cells"]:
            what += ("; " if what else "") + "code cells of " + ", ".join(
                f"`{Path(n).name}`" for n in change["code_cells"])
        which = ", ".join(Path(n).name.replace(".ipynb", "") for n in by_ran) \
            if len(by_ran) < len(executed()) else "all"
        lines.append(f"| `{change['patch']}` | {what} | {len(by_module)} | {len(by_ran)} | "
                     f"{which} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("patches", nargs="+", type=Path)
    ap.add_argument("--base", required=True, help="the git revision the patches apply to")
    ap.add_argument("--out", help="write the page here")
    a = ap.parse_args(argv)
    rows = [(c, *stale(c)) for c in changes(a.base, a.patches)]
    text = page(a.base, rows)
    if a.out:
        Path(a.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
