"""What a committed notebook's outputs ran: its code and the package's sources, by hash.

A GPU run (``scripts/run_notebooks.py``) stamps each notebook it executes with
:func:`stamp`; a test (``tests/test_provenance.py``) recomputes the hashes of the
notebook's code cells and of ``src/streamlab`` as they are now, and fails when either
differs from the stamp: the outputs are then older than the code they claim to come from,
and the notebook must be executed on a GPU again. Markdown is not hashed: a change of
prose alone leaves the outputs true.

This module imports nothing of the package, so that a runner can load it by its file
without choosing a device.

>>> code_hash({"cells": [{"cell_type": "code", "source": "x = 1"}]}) == \\
...     code_hash({"cells": [{"cell_type": "markdown", "source": "hi"},
...                          {"cell_type": "code", "source": ["x = 1"]}]})
True
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["KEY", "code_hash", "package_hash", "stamp", "stale"]

#: where the stamp sits in a notebook's metadata
KEY = "streamlab_run"
PACKAGE = Path(__file__).resolve().parent


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def code_hash(nb) -> str:
    """SHA-256 of a notebook's code cells, in order (a dict or nbformat node)."""
    h = hashlib.sha256()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            h.update(_source(cell).encode())
            h.update(b"\0")
    return h.hexdigest()


def package_hash(root: Path = PACKAGE) -> str:
    """SHA-256 of the package's Python sources and data files (the GPU profiles), by
    relative path and content."""
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and p.suffix in (".py", ".json"))
    for p in files:
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def stamp(nb, device: str) -> None:
    """Record in ``nb``'s metadata what its outputs ran: its code and the package."""
    nb["metadata"][KEY] = {"device": device, "code_sha256": code_hash(nb),
                           "package_sha256": package_hash()}


def stale(nb) -> str | None:
    """Why ``nb``'s outputs are older than what it would run now, or None if they are not."""
    saved = nb.get("metadata", {}).get(KEY)
    if not saved:
        return ("it carries no record of the run its outputs came from: execute it on a "
                "GPU with scripts/gpu-check.sh, which stamps it")
    if saved.get("code_sha256") != code_hash(nb):
        return ("its code cells changed after the run its outputs came from: execute it "
                "on a GPU again (scripts/gpu-check.sh)")
    if saved.get("package_sha256") != package_hash():
        return ("the streamlab package changed after the run its outputs came from: "
                "execute it on a GPU again (scripts/gpu-check.sh)")
    return None
