"""What a committed notebook's outputs ran, and whether they are older than that code now.

A GPU run (``scripts/gpu/run_notebooks.py``) records, while each notebook executes, which code
of the package it ran: each function or method, and each module body, of ``streamlab``
(its exercises' and labs' checks included), in the notebook's kernel and in any Python
process the notebook starts. The recorder is coverage.py (:class:`Recorder`: on Python 3.12
and later its ``sys.monitoring`` core, where each line reports once and is then switched
off), with wrappers of ``open``, ``os.listdir`` and ``os.scandir`` that note the package's
data files the run opened or listed (the GPU profiles). The notebook is then stamped (:func:`stamp_ran`) with the hash of its code
cells and a fingerprint of each piece of the package that ran: its source without
docstrings or comments (:func:`fingerprints`), so that a change of prose in the package
leaves the outputs true.

A test (``tests/test_provenance.py``) recomputes the fingerprints of the code as it is now
(:func:`stale`, :func:`changed`), and a notebook is older than its code only when one of
these changed: a function it ran, a module body it ran, its own code cells, or a data file
it read. A function it never ran cannot have made its outputs, nor can a module it never
imported. To add, remove or rename a function, or to change its decorators, is to change
its module's body (a name looked up at run time, or a method that overrides another,
changes what runs): every notebook that imported the module is then older than its code.

The model GPU's runs of the learner copies (``scripts/course/model_runs.py``, on the simulator)
are stamped the older way, by module (:func:`stamp`: the hash of each package module the
kernel imported); they need no GPU to make again.

This module imports nothing of the package, so that a runner can load it by its file
without choosing a device.

>>> code_hash({"cells": [{"cell_type": "code", "source": "x = 1"}]}) == \\
...     code_hash({"cells": [{"cell_type": "markdown", "source": "hi"},
...                          {"cell_type": "code", "source": ["x = 1"]}]})
True
>>> fingerprints("def f():\\n    '''Says hi.'''\\n    return 1  # one\\n") == \\
...     fingerprints("def f():\\n    return 1\\n")
True
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import sys
import time
from pathlib import Path

__all__ = ["KEY", "MODEL_RUN_KEY", "PROBE", "Recorder", "changed", "code_hash", "fingerprints",
           "imported", "module_hashes", "ran_of", "scope_of_lines", "stamp", "stamp_ran",
           "stale"]

#: where the stamp sits in a notebook's metadata
KEY = "streamlab_run"
PACKAGE = Path(__file__).resolve().parent
#: the line :data:`PROBE` prints before the JSON list of the module files a kernel imported
MARK = "streamlab-imported-modules:"
#: code run in a notebook's kernel after its last cell: prints :data:`MARK` and the files
#: of the streamlab modules imported there (the model runs' stamp, by module)
PROBE = ("import json as _j, sys as _s\n"
         f"print({MARK!r}, _j.dumps(sorted(getattr(m, '__file__', None) or '' for n, m in "
         "list(_s.modules.items()) if n == 'streamlab' or n.startswith('streamlab.'))))")
#: the name of the module body among a file's fingerprints
MODULE = "<module>"
#: characters of a fingerprint kept in a stamp (64 bits: no two pieces of code collide)
_DIGITS = 16
#: files of the package that are never part of what a run ran: this recorder itself
_NOT_RECORDED = ("provenance.py",)


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


# --- fingerprints: a piece of code's source without docstrings or comments ----------------

_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
_SKIPPED_FIELDS = {"ctx", "type_comment"}


def _body(node) -> list:
    """A scope's statements less its docstring."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _canon(node, out: list, inner: bool = True) -> None:
    """Append a canonical text of ``node`` to ``out``: the same on Python 3.11 to 3.13 for
    the same code (fields a later Python added are left out while empty, positions are
    never part of it). A function met inside is written by its decorators and its name
    alone (``inner``): its signature and body are its own fingerprint's."""
    if isinstance(node, list):
        out.append("[")
        for item in node:
            _canon(item, out)
            out.append(",")
        out.append("]")
        return
    if not isinstance(node, ast.AST):
        out.append(f"{type(node).__name__}:{node!r}")
        return
    if inner and isinstance(node, _FUNCTION):
        out.append(f"{type(node).__name__}({node.name}@")
        _canon(node.decorator_list, out)
        out.append(")")
        return
    out.append(type(node).__name__ + "(")
    for field in node._fields:
        if field in _SKIPPED_FIELDS:
            continue
        value = getattr(node, field, None)
        if value is None or value == []:
            continue
        if field == "body" and isinstance(node, (ast.Module, ast.ClassDef, *_FUNCTION)):
            value = _body(node)
        out.append(field + "=")
        _canon(value, out)
        out.append(";")
    out.append(")")


def _digest(node, top) -> str:
    out: list[str] = []
    if isinstance(top, _FUNCTION):  # its signature and body; its decorators are its scope's
        out.append(type(top).__name__ + "(")
        for field in ("args", "returns", "type_params"):
            if getattr(top, field, None):
                _canon(getattr(top, field), out)
        _canon(_body(top), out)
        out.append(")")
    else:
        _canon(node, out)
    return hashlib.sha256("".join(out).encode()).hexdigest()[:_DIGITS]


def _scopes(tree: ast.Module):
    """Each scope of a module: (name, node, its own lines), the module body first. A
    function is named by the classes and functions around it (``Timeline.span``,
    ``outer.inner``); a second function of the same name in the same place gets ``#2``."""
    found = [(MODULE, tree)]
    seen: dict[str, int] = {}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTION):
                name = prefix + child.name
                seen[name] = seen.get(name, 0) + 1
                if seen[name] > 1:
                    name = f"{name}#{seen[name]}"
                found.append((name, child))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return found


@functools.lru_cache(maxsize=256)
def _parsed(source: str):
    tree = ast.parse(source)
    scopes = _scopes(tree)
    prints = {name: _digest(node, node) for name, node in scopes}
    # each line's scope: a function owns its body's lines (the lines of its def, its
    # decorators and its defaults run in the scope around it); the innermost wins
    owner: dict[int, str] = {}
    for name, node in scopes[1:]:  # outer functions come before the ones inside them
        first = node.body[0].lineno
        for line in range(first, node.end_lineno + 1):
            owner[line] = name
    return prints, owner


def fingerprints(source: str) -> dict[str, str]:
    """A fingerprint of each scope of a module's source: its body (:data:`MODULE`: the
    statements run at import, class bodies among them, each function there by its name and
    decorators) and each function or method (its signature and body, each function inside
    it by its name and decorators). Docstrings, comments and layout are not part of it."""
    return dict(_parsed(source)[0])


def scope_of_lines(source: str, lines) -> set[str]:
    """The scopes of ``source`` whose code ran, from the lines that ran: a line in a
    function's body is the function's, any other line the module body's. A function whose
    def and body share one line counts as run where it was only defined (on the safe side:
    its outputs may be called stale when they are not, never the reverse)."""
    owner = _parsed(source)[1]
    return {owner.get(line, MODULE) for line in lines}


# --- the recorder, in the process that runs the notebook's code ----------------------------

#: where :class:`Recorder` writes what one process ran (one JSON file per process)
DIR_VARIABLE = "STREAMLAB_RAN_DIR"
#: the line the kernel's last cell prints before what its recorder wrote
RAN_MARK = "streamlab-ran:"
#: code run in a notebook's kernel after its last cell: writes what the kernel ran and
#: names the file, and the streamlab the kernel imported
RAN_PROBE = ("import json as _j, sys as _s\n"
             "_r = _s.modules.get('_streamlab_ran_recorder')\n"
             f"print({RAN_MARK!r}, _j.dumps({{'file': _r.dump(final=True) if _r else None, "
             "'streamlab': getattr(_s.modules.get('streamlab'), '__file__', None)}))")


#: how the recorder records, kept in each stamp: the first version (2026-11-27's first GPU
#: pass) noted data files with an audit hook, which slowed host calls (see Recorder)
RECORDER = "coverage.py lines, open/listdir/scandir wrapped"


class Recorder:
    """What one process runs of the package, recorded from its start: coverage.py's lines
    of the package's files, and the package's data files opened or listed (``open``,
    ``os.listdir`` and ``os.scandir`` wrapped: an audit hook would do the same, but Python
    calls it for every audited event, ``id()`` and ``sys._getframe()`` among them, and it
    added 3 us to a span on Python 3.12, measured, where coverage.py's ``sys.monitoring``
    core added nothing).
    Started by ``scripts/gpu/ran_site/sitecustomize.py`` in every Python process that a GPU
    run starts with :data:`DIR_VARIABLE` set; :meth:`dump` writes it there."""

    def __init__(self, folder: str, root: Path | None = None):
        import coverage

        self.folder, self.root = folder, Path(root or PACKAGE).resolve()
        if sys.version_info >= (3, 12):
            os.environ.setdefault("COVERAGE_CORE", "sysmon")  # each line reports once
        self.coverage = coverage.Coverage(
            data_file=None, config_file=False, source=[str(self.root)],
            omit=[str(self.root / name) for name in _NOT_RECORDED])
        self.opened: set[str] = set()
        self.listed: set[str] = set()
        self.final = False
        self.path = None

    def _wrap(self) -> None:
        """Note each path opened or listed from now on, in this process."""
        import builtins
        import io

        opened, listed = self.opened, self.listed

        def noting(real, into, name):
            def call(*args, **kwargs):
                path = args[0] if args else kwargs.get(name, ".")
                if isinstance(path, (str, bytes, os.PathLike)):  # (not a file descriptor)
                    into.add(os.fsdecode(path))
                return real(*args, **kwargs)
            call.__wrapped__ = real
            return call

        builtins.open = io.open = noting(builtins.open, opened, "file")
        os.listdir = noting(os.listdir, listed, "path")
        os.scandir = noting(os.scandir, listed, "path")

    def start(self) -> "Recorder":
        """Record from now on (the wrappers, then coverage.py); this recorder."""
        self._wrap()
        self.coverage.start()
        return self

    def dump(self, final: bool = False) -> str:
        """Write what this process ran so far to the folder; the file's path. After a
        ``final`` dump (the kernel's last cell) a later one (at exit) writes nothing: what
        the process runs as it shuts down made no output."""
        if self.final:
            return self.path
        self.final = final
        self.coverage.stop()
        data = self.coverage.get_data()
        lines = {f: sorted(data.lines(f) or ()) for f in data.measured_files()}
        if not final:  # (a restart makes every line report once more: not after the last)
            self.coverage.start()
        record = {"pid": os.getpid(), "lines": {f: v for f, v in lines.items() if v},
                  "opened": sorted(self.opened), "listed": sorted(self.listed),
                  "python": sys.version.split()[0],
                  "core": os.environ.get("COVERAGE_CORE", "ctrace"),
                  "recorder": RECORDER}
        self.path = os.path.join(self.folder, f"ran-{os.getpid()}.json")
        with open(self.path + ".part", "w") as f:
            json.dump(record, f)
        os.replace(self.path + ".part", self.path)
        return self.path


def ran_of(records, root: Path | None = None) -> dict:
    """What the processes' records (:meth:`Recorder.dump`'s files, read) say ran of the
    package under ``root``: ``{"ran": {file: {scope: fingerprint}}, "data": {file: sha256},
    "listed": {folder: [data files]}}``, files relative to ``root``."""
    root = Path(root or PACKAGE).resolve()
    lines: dict[str, set] = {}
    opened, listed = set(), set()
    for record in records:
        for name, ran in record.get("lines", {}).items():
            rel = _relative(name, root)
            if rel is not None and rel.endswith(".py"):
                lines.setdefault(rel, set()).update(ran)
        opened.update(r for name in record.get("opened", ()) if (r := _relative(name, root)))
        listed.update(r for name in record.get("listed", ()) if (r := _relative(name, root))
                      is not None)
    ran = {}
    for rel, numbers in sorted(lines.items()):
        source = (root / rel).read_text()
        prints = fingerprints(source)
        ran[rel] = {name: prints[name] for name in sorted(scope_of_lines(source, numbers))}
    data = {rel: _file_hash(root / rel) for rel in sorted(opened)
            if not rel.endswith((".py", ".pyc")) and (root / rel).is_file()}
    # a folder listed for its data files (the model's profiles), not one that importing a
    # module lists: only a listing that holds data files is kept
    folders = {rel: names for rel in sorted(listed) if (root / rel).is_dir()
               and (names := _data_files(root / rel))}
    how = sorted({r.get("recorder", "coverage.py lines, an audit hook") for r in records})
    return {"ran": ran, "data": data, "listed": folders, "recorder": "; ".join(how)}


def _relative(name: str, root: Path) -> str | None:
    try:
        path = Path(os.path.realpath(name))
        return path.relative_to(root).as_posix() if path != root else "."
    except (ValueError, OSError):
        return None


def _data_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()
                  if p.is_file() and not p.name.endswith((".py", ".pyc")))


def stamp_ran(nb, device: str, ran: dict, at: str | None = None, key: str = KEY) -> None:
    """Record in ``nb``'s metadata what its outputs ran (:func:`ran_of`), on which device,
    and when."""
    nb["metadata"][key] = {"device": device,
                           "at": at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "code_sha256": code_hash(nb), **ran}


# --- the model runs' stamp, by module -----------------------------------------------------

def imported(printed: str, root: Path | None = None) -> list[str]:
    """The package's module files named in what :data:`PROBE` printed, relative to the
    package (``["__init__.py", "check.py", ...]``); a clear error for anything else.

    >>> imported(MARK + ' ["' + str(PACKAGE / "check.py") + '", ""]')
    ['check.py']
    """
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
                             f"(scripts/gpu/gpu-check.sh does)") from None
    return sorted(out)


def module_hashes(modules, root: Path | None = None) -> dict[str, str]:
    """SHA-256 of each of ``modules`` (paths relative to ``root``) and of every data file
    of the package (``*.json``: the GPU profiles, which the model may read at any time)."""
    root = root or PACKAGE
    data = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json")
                  if "__pycache__" not in p.parts)
    return {rel: _file_hash(root / rel) for rel in sorted(set(modules) | set(data))}


def stamp(nb, device: str, modules, root: Path | None = None, key: str = KEY) -> None:
    """Record in ``nb``'s metadata what its outputs ran, by module: its code, and the
    package's ``modules`` the run imported (see :func:`imported`) with the data files
    (``key``: where, as :func:`stale` reads it)."""
    nb["metadata"][key] = {"device": device, "code_sha256": code_hash(nb),
                           "modules_sha256": module_hashes(modules, root)}


# --- stale or not --------------------------------------------------------------------------

#: where a lesson's learner copy records the model GPU's run of it (streamlab.workspace's
#: MODEL_RUN_KEY; scripts/course/model_runs.py writes it)
MODEL_RUN_KEY = "streamlab_model_run"
_AGAIN = {KEY: ("execute it on a GPU", "PART=owed scripts/gpu/gpu-check.sh"),
          MODEL_RUN_KEY: ("run it on the simulator", "scripts/course/model_runs.py")}


def _file_prints(path: Path) -> dict[str, str] | None:
    try:
        return fingerprints(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def changed(nb, root: Path | None = None, key: str = KEY) -> list[str] | None:
    """What changed after the run ``nb``'s outputs came from, as a list of names: ``code
    cells``, ``file.py: function`` (a function or module body it ran, changed or gone),
    ``file.json`` (a data file it read or a folder it listed). [] when nothing did; None
    when its stamp cannot say (none, or of a format that names no code)."""
    root = Path(root or PACKAGE)
    saved = nb.get("metadata", {}).get(key)
    if not saved:
        return None
    out = [] if saved.get("code_sha256") == code_hash(nb) else ["code cells"]
    if "ran" in saved:
        for rel, scopes in sorted(saved["ran"].items()):
            now = _file_prints(root / rel)
            for name, digest in sorted(scopes.items()):
                if now is None or now.get(name) != digest:
                    out.append(f"{rel}: {name}")
        for rel, digest in sorted(saved.get("data", {}).items()):
            if not (root / rel).is_file() or _file_hash(root / rel) != digest:
                out.append(rel)
        for rel, names in sorted(saved.get("listed", {}).items()):
            now = _data_files(root / rel) if (root / rel).is_dir() else []
            out += sorted(f"{rel}/{n}" for n in set(now) ^ set(names))
        return out
    recorded = saved.get("modules_sha256")
    if not isinstance(recorded, dict) or not recorded:
        return None
    out += sorted(rel for rel, digest in recorded.items()
                  if not (root / rel).is_file() or _file_hash(root / rel) != digest)
    out += sorted(rel for rel in module_hashes((), root) if rel not in recorded)
    return out


def stale(nb, root: Path | None = None, key: str = KEY) -> str | None:
    """Why ``nb``'s outputs are older than what it would run now, or None if they are not
    (``key``: the GPU run's stamp, or :data:`MODEL_RUN_KEY`, the model GPU's run's)."""
    do, script = _AGAIN[key]
    saved = nb.get("metadata", {}).get(key)
    if not saved:
        return (f"it carries no record of the run its outputs came from: {do} with "
                f"{script}, which stamps it")
    moved = changed(nb, root, key)
    if moved is None:
        return (f"its stamp names no code of the package (a stamp of an older format): "
                f"{do} again ({script})")
    if moved == ["code cells"]:
        return (f"its code cells changed after the run its outputs came from: {do} again "
                f"({script})")
    if moved:
        what = "code it ran" if "ran" in saved else "streamlab modules it ran"
        shown = ", ".join(moved[:6]) + (f" and {len(moved) - 6} more" if len(moved) > 6
                                        else "")
        return f"the {what} changed after the run its outputs came from ({shown}): {do} " \
               f"again ({script})"
    return None
