"""Diagnose exercises: a program is given with a mistake in it; the learner finds the
mistake and fixes it (issue 58).

The learner's copy holds the program as given (``scripts/course/make_lessons.py`` writes
it there from the exercise module, the one source of it). Its check tells that program
from the learner's own by what it does: comments, blank lines, the docstring and the
names of local variables aside (:func:`unchanged`).
For the program as given it says what goes wrong, as a check that finds the symptom
reports it (a race, a wrong result), not how to fix it, and the cell runs on as an
unsolved exercise's does; for any other program it is the exercise's check."""

from __future__ import annotations

import ast
import dis
import inspect
import textwrap
import types

from .. import check
from ..order import RaceError
from ..runner import Check, run


def _shape(code: types.CodeType) -> tuple:
    """What a function's code does, without where it was written (file, lines)."""
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars,
            code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)


class _Plain(ast.NodeTransformer):
    """A function's tree without what does not change what it does: its docstring, its
    name, and the names of its local variables (numbered in the order they appear)."""

    def __init__(self, params):
        self.params, self.names = set(params), {}

    def visit_Name(self, node):
        if node.id in self.names or (isinstance(node.ctx, ast.Store)
                                     and node.id not in self.params):
            node.id = self.names.setdefault(node.id, f"_{len(self.names)}")
        return node


def _tree(source: str) -> str | None:
    """The plain tree of the one function in ``source`` (no lines, no comments, no
    docstring, its name and its local variables' names left out), or None."""
    try:
        found = [n for n in ast.parse(textwrap.dedent(source)).body
                 if isinstance(n, ast.FunctionDef)]
    except SyntaxError:
        return None
    if len(found) != 1:
        return None
    fn = found[0]
    fn.name = "_"
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
        fn.body = body[1:] or [ast.Pass()]
    return ast.dump(_Plain(a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)).visit(fn))


def unchanged(fn, source: str) -> bool:
    r"""Whether ``fn`` is the function that ``source`` defines, as given: the same code,
    whatever its comments, blank lines, docstring, and the names of its local variables
    (an edit that changes none of what it does is not a fix, and is not judged as one).
    Read from ``fn``'s source where Python keeps it (a notebook's cell, a file); else from
    its compiled code (a cell run under %%time), compared with the given program's
    compiled alone and beside imports of the names it uses (a cell that imports ``cuda``
    compiles ``cuda.event()`` to other code).

    >>> given = "def f(x):\n    return x + 1\n"
    >>> exec("def f(x):\n    # a comment\n\n    return x + 1", ns := {})
    >>> unchanged(ns["f"], given)
    True
    >>> exec("def f(x):\n    return x + 2", ns)
    >>> unchanged(ns["f"], given)
    False
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    try:  # the code's own source: not a wrapper's __wrapped__ (inspect.getsource(fn) is)
        theirs = _tree(inspect.getsource(code))
    except (OSError, TypeError):
        theirs = None
    if theirs is not None:
        return theirs == _tree(source)
    module = compile(source, "<the program as given>", "exec")
    names = {i.argval for c in module.co_consts if isinstance(c, types.CodeType)
             for i in dis.get_instructions(c) if i.opname == "LOAD_GLOBAL"}  # (globals only)
    for prefix in ("", "".join(f"import {n}\n" for n in sorted(names))):
        module = compile(prefix + source, "<the program as given>", "exec")
        given = [c for c in module.co_consts if isinstance(c, types.CodeType)
                 and c.co_name == code.co_name]
        if given and _shape(given[0]) == _shape(code):
            return True
    return False


def no_legacy_stream(ops, name: str) -> None:
    """Fail where the learner's code put work on the legacy default stream (a record, a
    wait, a copy or a launch with no stream): it orders every blocking stream, so it can
    make a wrong hand-over look right, by accident, and orders nothing with non-blocking
    streams."""
    legacy = [op for op in ops.user() if op.stream is not None and op.stream.is_legacy_default]
    if legacy:
        check.fail(f"{name} put {legacy[0].describe()}, a call with no stream: the legacy "
                   f"default stream orders every blocking stream after the work before it, "
                   f"by accident, and with non-blocking streams nothing. Give each call its "
                   f"stream")


def no_host_function_wait(ops, name: str) -> None:
    """Fail where the host waited for a host function (a threading.Event it set, a queue
    it filled, a future it resolved): a host wait like stream.synchronize(), which
    check.no_host_sync does not see, as the hand-over's records are streamlab's own. (Lab
    02's checks call it too; one vocabulary for both waits is issue 55's.)"""
    if [op for op in ops if op.kind == "sync" and op.name == "awaited"]:
        check.fail(f"the host waited inside {name} for a host function (a threading.Event, "
                   f"a queue or a future it set): that is a host wait like "
                   f"stream.synchronize(). Order the work with events, and let the caller "
                   f"wait")


def diagnose(fixed: Check, symptom: Check, fn, source: str, **kwargs) -> None:
    """Judge ``fn`` by ``fixed``, the exercise's check; but while ``fn`` is still the
    program as given (``source``), run it under ``symptom`` (a check whose failure says
    what goes wrong: a race, a wrong result) and print that, as the exercise not done yet
    (in a grader: :class:`~streamlab.check.NotDoneYet`). ``kwargs``: the checks' own
    (a seed)."""
    if not unchanged(fn, source):
        run(fixed, fn, **kwargs)
        return
    label = f"{fixed.what} {fixed.number}"
    try:
        run(symptom, fn, **kwargs)
    except (check.CheckFailed, RaceError) as exc:
        # what goes wrong, without the check's advice on what to do (its first sentence)
        found = str(exc).removeprefix(f"{label}: ").split(". ")[0].rstrip(".")
        text = (f"{label}: not done yet: this is the program as given, and what goes wrong "
                f"in it: {found}. Find the cause in the code above, and fix it")
        if check.GRADING:
            raise check.NotDoneYet(text) from None
        print(text)
        return
    raise check.InternalError(f"{label}: the program as given passed its check. This is a "
                              f"bug in the course: please report it")
