"""Grades that learner code cannot tamper with: each part judged in a fresh process.

A lab's checks run in the learner's own kernel while they work, for feedback. A *grade*
cannot come from there: anything in that kernel (``check.fail = lambda *a: None``, an
IPython input transformer that empties the next cells) can fool it. So the grader runs
each graded part again, in a fresh Python process of its own (:func:`run_part`):

* the notebook's cells, in order: the lab's locked cells, the learner's cells, and that
  one graded cell (with its hidden tests), as plain Python: no IPython, so no input
  transformer, magic or shell hook of the learner's applies;
* before and after the graded cell, a guard compares streamlab, numba, numpy and the
  standard library's objects, and the names the locked cells defined, with what they
  were before the learner's code ran: a replaced ``check.fail`` (or anything like it)
  fails the part, saying what was replaced;
* the course's folders are hidden (:mod:`streamlab.grading.sandbox`): by bubblewrap
  where the system allows it, so that no means reads them; and in any case, from the
  learner's first cell on, an audit hook (``sys.addaudithook``: it cannot be removed)
  refuses to open anything in them but what the part needs to run (Python, streamlab,
  its working folder), and to start programs;
* a part that does not finish within the time limit is stopped (its process is killed,
  whatever it does with KeyboardInterrupt) and scores nothing; the other parts, each in
  its own process, are graded as usual; a part's process dies with the grader (a class's
  Dask worker killed mid-task leaves no part running);
* warnings and logging go to the part's output as text; they cost nothing;
* the verdict comes back on a pipe of its own, with a number the child was given.

:class:`streamlab.grading.preprocessor.GradeInFreshProcesses` puts this in place of
nbgrader's ``Execute`` (see ``nbgrader_config.py``), so ``nbgrader autograde`` grades
this way.

What this does not stop (the checks still run in the learner's process: it is a guard
against the cheats a clever learner tries, not a security boundary): code that reads a
copy of the solutions kept outside the course's folders; without bubblewrap, tricks
below Python (``ctypes`` calling libc directly), or code that replaces what Python's
``os.path.realpath`` calls while it reads, that read the course's files; code that
walks up the stack to the grader's own ``report`` function (a few lines with
``sys._getframe``) and calls it with a pass, or digs the verdict pipe's number out of
memory, or changes a running check's local variables through its frame: kept as expected
failures in ``tests/test_grading_sandbox.py``, open until the checks judge outside the
learner's process. (The verdict is no longer written through ``json``, whose encoder
learner code could replace; it is a Python literal made by the interpreter's own
``repr`` of plain values, and replacing anything in ``json`` is named as tampering.) For
an exam, grade inside a container that holds only the submissions.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass, field

LOCKED, SOLUTION, GRADED, OTHER = "locked", "solution", "graded", "other"


@dataclass
class Verdict:
    """What one graded part came to: passed or not, the message, and what it printed."""

    passed: bool
    message: str = ""
    output: str = ""
    kind: str = ""  # CheckFailed, NotDoneYet, Tampered, TimedOut, an exception's name
    learner_errors: list = field(default_factory=list)
    sandbox: str = ""  # "bubblewrap", or "audit hook only: why", or "off: why"


#: the version of the results file of a class judged on Dask (streamlab.grading.classroom
#: writes it, GradeInFreshProcesses.judged reads it)
RESULTS_VERSION = 1


def cell_outputs(verdict: Verdict) -> list:
    """What a graded cell shows for ``verdict``, as nbgrader reads it: the part's output
    as text, and, when it failed, one error whose text is the check's message."""
    from nbformat.v4 import new_output

    outputs = []
    text = verdict.output
    if verdict.learner_errors:
        text += "".join(f"(an earlier cell failed: {e})\n" for e in verdict.learner_errors)
    if text:
        outputs.append(new_output("stream", name="stdout", text=text))
    if not verdict.passed:
        outputs.append(new_output("error", ename=verdict.kind or "CheckFailed",
                                  evalue=verdict.message,
                                  traceback=[f"{verdict.kind}: {verdict.message}"]))
    return outputs


def graded_cells(nb) -> list:
    """The notebook's graded (check) cells, in order."""
    return [c for c in nb["cells"] if c.get("cell_type") == "code"
            and c.get("metadata", {}).get("nbgrader", {}).get("grade")]


def course_paths(root: str | None = None, source_directory: str = "solutions",
                 db_url: str | None = None) -> tuple[list[str], list[str]]:
    """(folders to hide, paths to protect) while a learner's part is graded: nbgrader's
    course folder ``root`` (sources, every learner's submission, the gradebook) and the
    course's repository (tests, solutions) hidden; the course's source folder (the
    solutions) and its gradebook database (``db_url``, wherever SQLite keeps it)
    protected, should a part's own folder be in a hidden one."""
    hide, protect = set(), []
    if root is not None:
        hide.add(os.path.realpath(root))
        protect.append(os.path.join(root, source_directory))
    if db_url and db_url.startswith("sqlite:///"):
        protect.append(db_url[len("sqlite:///"):])
    try:
        from ..course import course_root

        repo = course_root()
        hide.add(os.path.realpath(repo))
        protect += [str(repo / "solutions"), str(repo / "gradebook.db")]
    except Exception:  # noqa: BLE001  (no course repository here: nothing more to guard)
        pass
    return sorted(hide), protect


def plan(nb) -> list[dict]:
    """The notebook's code cells with their roles (locked, solution, graded, other)."""
    cells = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            role = GRADED
        elif meta.get("solution"):
            role = SOLUTION
        elif meta.get("locked"):
            role = LOCKED
        else:
            role = OTHER  # a cell the learner added
        src = cell.get("source", "")
        cells.append({"source": "".join(src) if isinstance(src, list) else src,
                      "role": role, "id": meta.get("grade_id", "")})
    return cells


def run_part(cells: list[dict], part: str, *, cwd: str, protect=(), hide=(),
             timeout: float = 300, env: dict | None = None, sandbox: str = "auto") -> Verdict:
    """Judge graded cell ``part`` in a fresh process (see the module docstring).

    ``protect``: paths the learner's code may not open. ``hide``: folders (the course)
    whose files it may not read at all, apart from what the process needs to run
    (Python, streamlab) and ``cwd``, which should hold the submission alone.
    ``sandbox``: "auto" hides them with bubblewrap where it works here, and otherwise
    with the audit hook alone (the verdict's ``sandbox`` says which, and why);
    "bwrap" requires bubblewrap (:class:`~streamlab.grading.sandbox.SandboxError` if
    this system cannot make one); "off" uses the audit hook alone."""
    from . import sandbox as _sandbox

    if sandbox not in _sandbox.MODES:
        raise ValueError(f"sandbox={sandbox!r}: use one of {', '.join(_sandbox.MODES)}")
    nonce = secrets.token_hex(16)
    child_env = dict(os.environ if env is None else env)
    child_env.update(STREAMLAB_GRADING="1", STREAMLAB_QUIET="1", PYTHONUNBUFFERED="1")
    child_env.pop("STREAMLAB_RACE_CHECK", None)
    command = [sys.executable, "-m", "streamlab.grading"]
    hide = [os.path.realpath(h) for h in hide]
    keep = _sandbox.needed(sys.executable, child_env, hide) if hide else []
    how = "off: nothing to hide" if not hide else "off: asked for"
    if hide and sandbox != "off":
        bwrap, why = _sandbox.status()
        if bwrap:
            command = _sandbox.wrap(command, hide=hide, keep=keep, cwd=cwd, bwrap=bwrap)
            how = "bubblewrap"
        elif sandbox == "bwrap":
            raise _sandbox.SandboxError(f"sandbox='bwrap' was asked for, but {why}")
        else:
            how = f"audit hook only: {why}"
    read_end, write_end = os.pipe()
    spec = {"cells": cells, "part": part, "protect": [os.path.realpath(p) for p in protect],
            "hide": hide, "allow": keep + [os.path.realpath(cwd)],
            "fd": write_end, "nonce": nonce,
            # the child dies with this process (bwrap, its parent there, does by itself)
            "parent": os.getpid() if how != "bubblewrap" else None}
    proc = subprocess.Popen(command, cwd=cwd,
                            env=child_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, pass_fds=(write_end,),
                            start_new_session=True)
    os.close(write_end)
    try:
        out, _ = proc.communicate(json.dumps(spec).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        out = proc.communicate()[0]
        os.close(read_end)
        return Verdict(False, f"{_title(part)} did not finish within {timeout:g} s, so the "
                       f"grader stopped it: does your code wait for something that never "
                       f"happens, or loop forever?", _text(out), "TimedOut", sandbox=how)
    with os.fdopen(read_end, "rb") as pipe:
        raw = pipe.read().decode(errors="replace")
    verdict = _verdict(raw, nonce, _text(out), proc.returncode, part)
    verdict.sandbox = how
    return verdict


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _text(out: bytes, limit: int = 20000) -> str:
    text = out.decode(errors="replace")
    return text if len(text) <= limit else text[:limit] + "\n... (output cut)"


def _title(part: str) -> str:
    return f"the part checked by {part}" if part else "the part"


def _verdict(raw: str, nonce: str, output: str, returncode: int, part: str) -> Verdict:
    for line in raw.splitlines():
        head, _, body = line.partition(" ")
        if head == nonce:
            data = ast.literal_eval(body)
            return Verdict(data["passed"], data["message"], output, data["kind"],
                           data.get("learner_errors", []))
    return Verdict(False, f"{_title(part)} ended the grader's process before the check "
                   f"finished (exit status {returncode}): code that exits, or crashes the "
                   f"interpreter, cannot pass", output, "Exited")

