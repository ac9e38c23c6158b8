"""Diagnose exercises: a program is given with a mistake in it; the learner finds the
mistake and fixes it (issue 58).

The learner's copy holds the program as given (``scripts/course/make_lessons.py`` writes
it there from the exercise module, the one source of it). Its check tells that program
from the learner's own by its code, comments and blank lines aside (:func:`unchanged`).
For the program as given it says what goes wrong, as a check that finds the symptom
reports it (a race, a wrong result), not how to fix it, and the cell runs on as an
unsolved exercise's does; for any other program it is the exercise's check."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

from .. import check
from ..order import RaceError
from ..runner import Check, run


def _shape(code: types.CodeType) -> tuple:
    """What a function's code does, without where it was written (file, lines)."""
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars


def _tree(source: str, name: str) -> str | None:
    """The syntax tree of function ``name`` in ``source`` (no lines, no comments)."""
    try:
        module = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    found = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return ast.dump(found[0]) if found else None


def unchanged(fn, source: str) -> bool:
    r"""Whether ``fn`` is the function that ``source`` defines, as given: the same code,
    whatever its comments and blank lines. Read from ``fn``'s source where Python keeps
    it (a notebook's cell, a file); else from its compiled code, which is the given
    program's where it was compiled alone (the code of ``cuda.event()`` differs where the
    same cell imports ``cuda``).

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
    try:
        theirs = _tree(inspect.getsource(fn), code.co_name)
    except (OSError, TypeError):
        theirs = None
    if theirs is not None:
        return theirs == _tree(source, code.co_name)
    module = compile(source, "<the program as given>", "exec")
    given = [c for c in module.co_consts
             if isinstance(c, types.CodeType) and c.co_name == code.co_name]
    return bool(given) and _shape(given[0]) == _shape(code)


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
