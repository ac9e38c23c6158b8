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
* the course's folders are hidden (:mod:`streamlab.grading.sandbox`): by bubblewrap,
  so that no means reads them, the part an unprivileged user with no capability (it
  cannot undo the sandbox); where the teacher turned it off by name, not; and in any
  case, from the
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

Every lab's module lists ``JUDGES`` (all seven labs, every part), and each is judged in
this process too: each of its checks sends a transcript of what it saw
(:mod:`streamlab.transcript`), the timings it measured as plain numbers (lab 01's
streams' spans and time waited, lab 04's pipeline against one stream, lab 05's event
loop's turns, lab 08's head start and spans), and :func:`judge_in_grader` judges it again
with the check's own rules and thresholds; the part's own pass is not a grade there.

What this does not stop (it is a guard against the cheats a clever learner tries, not a
security boundary): code that reads a copy of the solutions kept outside the course's
folders; without bubblewrap, tricks below Python (``ctypes`` calling libc directly), or
code that replaces what Python's ``os.path.realpath`` calls while it reads, that read the
course's files; and code that rewrites what the checks send before they send it: the
record of operations and the timings, both made in the learner's process (kept as
expected failures in ``tests/test_transcript.py`` and ``tests/test_judged_timings.py``).
A pass written to the grader by code that finds its ``report`` function (through the
stack, or in memory) is no grade: no verdict of the part's own is one. (The verdict is
not written through ``json``, whose encoder learner code could replace; it is a Python
literal made by the interpreter's own ``repr`` of plain values, and replacing anything in
``json`` is named as tampering.) For an exam, grade inside a container that holds only
the submissions.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
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
    sandbox: str = ""  # "bubblewrap", or "off: why" (asked for, or nothing to hide)


#: the version of the results file of a class judged on Dask (streamlab.grading.classroom
#: writes it, GradeInFreshProcesses.judged reads it)
RESULTS_VERSION = 1


def cell_outputs(verdict: Verdict, notes=()) -> list:
    """What a graded cell shows for ``verdict``, as nbgrader reads it: the part's output
    as text (after ``notes``, what :func:`rebuild` found), and, when it failed, one error
    whose text is the check's message."""
    from nbformat.v4 import new_output

    outputs = []
    text = "".join(f"(the grader: {n})\n" for n in notes) + verdict.output
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


def rebuild(submitted, released):
    """The notebook the grader runs: the lab as ``released`` (its source notebook, hidden
    tests included), with only the answer cells' source taken from ``submitted``, matched
    by their grade ids; and the notes for the learner's feedback, one a cell that was not
    where the lab put it.

    * Every cell of the lab's own (locked text and code, the graded checks) is the
      released one, whatever the learner's copy holds: a locked cell edited, deleted, or
      stripped of its nbgrader marks is run as released (issue 56 item 1: a setup cell
      stripped and rewritten rebound the checks before), and a missing one is named.
    * An answer cell missing from the copy runs empty, and is named.
    * A cell the learner added (no grade id the lab knows, a stripped locked cell
      included) stays where it was, after the lab's cell it followed; it is the learner's
      and runs under the same rule as an answer (definitions only).

    The released answers (the solutions) are never taken. Neither notebook is changed."""
    import copy

    from nbformat import from_dict

    def gid(cell):
        return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")

    known = {gid(c) for c in released["cells"]} - {None}
    mine: dict = {}  # grade id -> the learner's cell of that id (the first)
    added: dict = {None: []}  # the lab's cell a learner's cell followed (None: none) -> them
    last = None
    for cell in submitted["cells"]:
        g = gid(cell)
        if g in known and g not in mine:
            mine[g], last = cell, g
        elif cell.get("cell_type") == "code":  # (a learner's text cell runs nothing)
            plain = copy.deepcopy(cell)
            plain.get("metadata", {}).pop("nbgrader", None)  # the learner's, whatever marked
            added.setdefault(last, []).append(plain)
    cells, notes = list(added[None]), []
    for cell in released["cells"]:
        g, meta = gid(cell), cell.get("metadata", {}).get("nbgrader", {})
        cell = copy.deepcopy(cell)
        if g is not None and meta.get("solution"):  # an answer: the learner's, never the lab's
            if g in mine:
                cell["source"] = mine[g].get("source", "")
            else:
                cell["source"] = ""
                notes.append(f"your answer cell {g!r} was not in your notebook (deleted, or "
                             f"its nbgrader marks taken off): the grader ran it empty")
        elif g is not None and g not in mine and cell.get("cell_type") == "code":
            notes.append(f"the lab's cell {g!r} was not in your notebook (deleted, or its "
                         f"nbgrader marks taken off): the grader ran it as the lab has it")
        cells.append(cell)
        cells += added.get(g, []) if g is not None else []
    nb = from_dict({**copy.deepcopy(dict(released)), "cells": cells})
    return nb, notes


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
    """The notebook's code cells with their roles (locked, solution, graded, other).

    A cell is the lab's own (locked) only with a ``grade_id`` as well: nbgrader's
    autograde restores such a cell from the gradebook, and takes the id off a cell it does
    not know. A cell the learner marked locked by hand is the learner's: it runs under the
    grader's audit hook, and the names it defines are not the lab's."""
    cells = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            role = GRADED
        elif meta.get("solution"):
            role = SOLUTION
        elif meta.get("locked") and meta.get("grade_id"):
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
    ``sandbox``: "auto" (the default) and "bwrap" hide them with bubblewrap, the part an
    unprivileged user with no capability
    (:class:`~streamlab.grading.sandbox.SandboxError`, saying why and what to do, where
    this system cannot make that sandbox); "off", asked for by name, uses the audit hook
    alone (the verdict's ``sandbox`` says which)."""
    from . import sandbox as _sandbox

    if sandbox not in _sandbox.SANDBOX_MODES:
        raise ValueError(f"sandbox={sandbox!r}: use one of {', '.join(_sandbox.SANDBOX_MODES)}")
    nonce = secrets.token_hex(16)
    child_env = dict(os.environ if env is None else env)
    child_env.update(STREAMLAB_GRADING="1", STREAMLAB_QUIET="1", PYTHONUNBUFFERED="1")
    child_env.pop("STREAMLAB_RACE_CHECK", None)
    command = [sys.executable, "-m", "streamlab.grading", "part"]
    hide = [os.path.realpath(h) for h in hide]
    keep = _sandbox.needed(sys.executable, child_env, hide) if hide else []
    how = "off: nothing to hide" if not hide else "off: asked for"
    if hide and sandbox != "off":
        bwrap, why = _sandbox.status()
        if not bwrap:
            raise _sandbox.SandboxError(
                f"no sandbox can be made for grading here: {why}. The grader grades in "
                f"one, or with the sandbox turned off by name, where only its audit hook "
                f"(which code below Python gets past) keeps the course from the "
                f"learner's code: sandbox='off' (python -m streamlab.grading class ... "
                f"--sandbox off; nbgrader: --GradeInFreshProcesses.sandbox=off)")
        command = _sandbox.wrap(command, hide=hide, keep=keep, cwd=cwd, bwrap=bwrap)
        how = "bubblewrap"
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
    # the pipe is read as the child writes (transcripts can outgrow a pipe's buffer)
    chunks: list = []
    reader = threading.Thread(target=_drain, args=(read_end, chunks), daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(json.dumps(spec).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        out = proc.communicate()[0]
        reader.join()
        return Verdict(False, f"{_title(part)} did not finish within {timeout:g} s, so the "
                       f"grader stopped it: does your code wait for something that never "
                       f"happens, or loop forever?", _text(out), "TimedOut", sandbox=how)
    reader.join()
    raw = b"".join(chunks).decode(errors="replace")
    verdict = _verdict(raw, nonce, _text(out), proc.returncode, part)
    if verdict.passed:
        verdict = judge_in_grader(cells, part, _transcripts(raw, nonce), verdict)
    verdict.sandbox = how
    return verdict


def _drain(fd: int, chunks: list) -> None:
    with os.fdopen(fd, "rb") as pipe:
        while True:
            chunk = pipe.read(1 << 16)
            if not chunk:
                return
            chunks.append(chunk)


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


def _lines(raw: str, nonce: str, tag: str) -> list[str]:
    """The bodies of the pipe's lines ``<nonce> <tag> <body>``, in order."""
    found = []
    for line in raw.splitlines():
        head, _, rest = line.partition(" ")
        kind, _, body = rest.partition(" ")
        if head == nonce and kind == tag:
            found.append(body)
    return found


def _verdict(raw: str, nonce: str, output: str, returncode: int, part: str) -> Verdict:
    """The child's verdict: its first failing one, if it wrote one (a pass written before
    the check ran, and the check's own failure after it, is a failure), else its first."""
    verdicts = []
    for body in _lines(raw, nonce, "V"):
        try:
            data = ast.literal_eval(body)
            verdicts.append(Verdict(data["passed"] is True, str(data["message"]), output,
                                    str(data["kind"]), list(data.get("learner_errors", []))))
        except (ValueError, SyntaxError, TypeError, KeyError, MemoryError, RecursionError):
            return Verdict(False, f"{_title(part)}: the grader could not read the verdict "
                           f"its process wrote: this part scores nothing", output, "Unreadable")
    failed = [v for v in verdicts if not v.passed]
    if failed or verdicts:
        return (failed or verdicts)[0]
    return Verdict(False, f"{_title(part)} ended the grader's process before the check "
                   f"finished (exit status {returncode}): code that exits, or crashes the "
                   f"interpreter, cannot pass", output, "Exited")


def _transcripts(raw: str, nonce: str) -> list:
    """The transcripts the child sent, as text (read by :func:`judge_in_grader`)."""
    return _lines(raw, nonce, "T")


def judged_calls(cells: list[dict], part: str):
    """The judged checks graded cell ``part`` calls, in order, as (module, name,
    keyword arguments); None when its checks are judged in the learner's process only
    (a lab module with no ``JUDGES``, or no lab module at all).

    The lab module is the one the lab's locked cells import (``from streamlab.labs.lab02
    import *``); the calls are those of the graded cell's code to a check in the module's
    ``JUDGES``, with keyword arguments written as literals (ValueError, for the teacher,
    if one is not)."""
    import importlib

    module = None
    for cell in cells:
        if cell["role"] != LOCKED or module is not None:
            continue
        try:
            tree = ast.parse(cell["source"])
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("streamlab.labs.lab"):
                    module = name
                    break
    graded = [c for c in cells if c["role"] == GRADED and c["id"] == part]
    if module is None or not graded:
        return None
    mod = importlib.import_module(module)
    judges = getattr(mod, "JUDGES", None)
    if not judges:
        return None
    calls = []
    nodes = [n for n in ast.walk(ast.parse(graded[0]["source"]))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in judges]
    for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
        kwargs = {}
        for kw in node.keywords:
            try:
                kwargs[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                raise ValueError(f"the graded cell {part!r} calls {node.func.id} with "
                                 f"{kw.arg}={ast.unparse(kw.value)}: the grader judges a "
                                 f"check from its arguments, so write them as literals "
                                 f"(numbers, strings, True/False)") from None
        calls.append((mod, node.func.id, kwargs))
    return calls


def _arguments(check, kwargs: dict) -> dict:
    """The keyword arguments a call of ``check`` with ``kwargs`` runs with: its defaults,
    and the call's. None stands for a value the check draws itself (a seed)."""
    import inspect

    wanted = {p.name: p.default for p in inspect.signature(check).parameters.values()
              if p.kind is p.KEYWORD_ONLY}
    unknown = set(kwargs) - set(wanted)
    if unknown:
        raise ValueError(f"{check.__name__} takes no argument {sorted(unknown)[0]!r}")
    wanted.update(kwargs)
    return wanted


def judge_in_grader(cells: list[dict], part: str, transcripts: list, verdict: Verdict) -> Verdict:
    """The grade, judged in this process from the transcripts the part's process sent
    (see :mod:`streamlab.transcript`): each judged check the graded cell calls
    must have sent one, for the same check and arguments, in order, and its judge must
    pass it. ``verdict`` (the part's own, a pass) stands when the cell calls no judged
    check; else a failure here replaces it."""
    from ..check import CheckFailed
    from .. import transcript as tr

    calls = judged_calls(cells, part)
    if calls is None:
        return verdict

    def failed(message: str, kind: str = "Unjudged") -> Verdict:
        return Verdict(False, message, verdict.output, kind, verdict.learner_errors)

    if len(transcripts) != len(calls):
        return failed(f"{_title(part)}: the grader expected what {len(calls)} check(s) of "
                      f"your code saw and received {len(transcripts)}: code that stops a "
                      f"check, or writes to the grader itself, scores nothing")
    for (mod, name, kwargs), text in zip(calls, transcripts):
        judge, number = mod.JUDGES[name]
        try:
            entry = tr.read(text)
            if entry.get("check") != f"{mod.__name__}.{name}":
                raise tr.TranscriptError(f"it is from {entry.get('check')!r}, not {name}")
            sent = entry.get("kwargs")
            wanted = _arguments(getattr(mod, name), kwargs)
            if not isinstance(sent, dict) or set(sent) != set(wanted) or any(
                    v is not None and sent[k] != v for k, v in wanted.items()):
                raise tr.TranscriptError(f"its arguments {sent!r} are not the call's "
                                         f"{wanted!r}")
            run = tr.decode(entry)
            judge(run, **sent)
        except CheckFailed as exc:
            return failed(f"Part {number}: {exc}", "CheckFailed")
        except Exception as exc:  # noqa: BLE001  (a transcript that cannot be judged fails)
            return failed(f"{_title(part)}: the grader could not judge what your code sent "
                          f"({type(exc).__name__}: {exc}); this part scores nothing")
    return verdict

