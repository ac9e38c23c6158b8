"""What a committed notebook's outputs ran: its code and the package's sources, by hash.

A GPU run (``scripts/run_notebooks.py``) stamps each notebook it executes with
:func:`stamp`: the hash of its code cells, and the hash of each of the package's modules
that the run imported (asked of the notebook's own kernel at the end of the run, by
:data:`PROBE`), and of every data file (the GPU profiles). A test
(``tests/test_provenance.py``) recomputes those hashes as the files are now, and fails
when one differs from the stamp: the outputs are then older than the code they claim to
come from, and the notebook must be executed on a GPU again. A module the run never
imported cannot have made its outputs, so a change to it (the course's command line, say)
leaves them true. Markdown is not hashed either: a change of prose alone leaves the outputs
true.

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

__all__ = ["KEY", "MODEL_KEY", "PROBE", "code_hash", "imported", "module_hashes", "stamp",
           "stale"]

#: where the stamp sits in a notebook's metadata
KEY = "streamlab_run"
PACKAGE = Path(__file__).resolve().parent
#: the line :data:`PROBE` prints before the JSON list of the module files a kernel imported
MARK = "streamlab-imported-modules:"
#: code run in a notebook's kernel after its last cell: prints :data:`MARK` and the files
#: of the streamlab modules imported there
PROBE = ("import json as _j, sys as _s\n"
         f"print({MARK!r}, _j.dumps(sorted(getattr(m, '__file__', None) or '' for n, m in "
         "list(_s.modules.items()) if n == 'streamlab' or n.startswith('streamlab.'))))")


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


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def imported(printed: str, root: Path | None = None) -> list[str]:
    """The package's module files named in what :data:`PROBE` printed, relative to the
    package (``["__init__.py", "check.py", ...]``); a clear error for anything else.

    >>> imported(MARK + ' ["' + str(PACKAGE / "check.py") + '", ""]')
    ['check.py']
    """
    import json

    root = root or PACKAGE
    lines = [ln for ln in printed.splitlines() if ln.startswith(MARK)]
    if len(lines) != 1:
        raise ValueError(f"expected one line starting {MARK!r} from the kernel's probe, "
                         f"found {len(lines)} in {printed[-300:]!r}")
    files = json.loads(lines[0][len(MARK):])
    out = set()
    for name in files:
        if not name:  # a namespace package or built-in: no file of its own
            continue
        path = Path(name).resolve()
        try:
            out.add(path.relative_to(root.resolve()).as_posix())
        except ValueError:
            raise ValueError(f"the kernel imported streamlab from {path}, not from {root}: "
                             f"run the notebooks with this checkout's src/ on the path "
                             f"(scripts/gpu-check.sh does)") from None
    return sorted(out)


def module_hashes(modules, root: Path | None = None) -> dict[str, str]:
    """SHA-256 of each of ``modules`` (paths relative to ``root``) and of every data file
    of the package (``*.json``: the GPU profiles, which the model may read at any time)."""
    root = root or PACKAGE
    data = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json")
                  if "__pycache__" not in p.parts)
    return {rel: _file_hash(root / rel) for rel in sorted(set(modules) | set(data))}


def stamp(nb, device: str, modules, root: Path | None = None, key: str = KEY) -> None:
    """Record in ``nb``'s metadata what its outputs ran: its code, and the package's
    ``modules`` the run imported (see :func:`imported`) with the data files (``key``:
    where, as :func:`stale` reads it)."""
    nb["metadata"][key] = {"device": device, "code_sha256": code_hash(nb),
                           "modules_sha256": module_hashes(modules, root)}


#: where a lesson's learner copy records the model GPU's run of it (streamlab.workspace's
#: MODEL_RUN_KEY; scripts/model_runs.py writes it)
MODEL_KEY = "streamlab_model_run"
_AGAIN = {KEY: ("execute it on a GPU", "scripts/gpu-check.sh"),
          MODEL_KEY: ("run it on the simulator", "scripts/model_runs.py")}


def stale(nb, root: Path | None = None, key: str = KEY) -> str | None:
    """Why ``nb``'s outputs are older than what it would run now, or None if they are not
    (``key``: the GPU run's stamp, or :data:`MODEL_KEY`, the model GPU's run's)."""
    root = root or PACKAGE
    do, script = _AGAIN[key]
    saved = nb.get("metadata", {}).get(key)
    if not saved:
        return (f"it carries no record of the run its outputs came from: {do} with "
                f"{script}, which stamps it")
    if saved.get("code_sha256") != code_hash(nb):
        return (f"its code cells changed after the run its outputs came from: {do} again "
                f"({script})")
    recorded = saved.get("modules_sha256")
    if not isinstance(recorded, dict) or not recorded:
        return (f"its stamp names no modules of the package (a stamp of an older format): "
                f"{do} again ({script})")
    changed = sorted(rel for rel, digest in recorded.items()
                     if not (root / rel).is_file() or _file_hash(root / rel) != digest)
    new_data = sorted(rel for rel in module_hashes((), root) if rel not in recorded)
    if changed or new_data:
        return (f"the streamlab modules it ran changed after the run its outputs came "
                f"from ({', '.join((changed + new_data)[:6])}): {do} again ({script})")
    return None
