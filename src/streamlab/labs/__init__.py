"""The labs' checks: one function per part, each called from a graded cell in one line.

``from streamlab.labs.lab02 import *`` gives a lab notebook its kernels, sizes and checks;
``check_part1(produce_then_consume)`` checks part 1 with fresh inputs and prints
``Part 1: passed``, or fails with one message that says what is wrong and how to fix it.

The checks judge *order*, not luck: they record what the learner's function issued
(:func:`streamlab.record_ops`), apply CUDA's ordering rules to it (:mod:`streamlab.order`),
and fail on a missing wait exactly as a GPU would, on the simulator too. Host buffers a
function is given are watched (:mod:`streamlab.watched`), so that reading a result before
the copy that fills it has landed is a race like any other.

A part whose function still raises ``NotImplementedError`` prints ``not done yet``
instead of failing, so that *Run All* reaches every part; it scores nothing when graded
(:mod:`streamlab.grading` runs every check with ``STREAMLAB_GRADING=1``, where it fails).
"""

from __future__ import annotations

import contextlib
import os

from ..check import CheckFailed, fail
from ..ops import OpLog
from ..order import Order, analyze, checked_here

GRADING = os.environ.get("STREAMLAB_GRADING", "") == "1"


class NotDoneYet(CheckFailed):
    """The learner's function still raises NotImplementedError."""


class InternalError(RuntimeError):
    """A check failed in its own code, not in the learner's: a bug in the course."""


#: what to do about an error a learner's code raised, by a piece of its message
HINTS = (
    (("CUDA_ERROR_NOT_READY", "has not been reached"),
     "an event was read before it had happened: wait for it first (end.synchronize(), "
     "then start.elapsed_time(end))"),
    (("CUDA_ERROR_INVALID_HANDLE",),
     "a stream or event of another context, or one already destroyed, was used"),
    (("unexpected keyword argument", "positional argument"),
     "a call's arguments do not match what it takes: see its help (help(name))"),
)


def _learner_line(exc, functions):
    """The deepest frame of the learner's own code in ``exc``'s traceback (their
    functions' cell, by its file), as ``line N: source``; None if none of it is there."""
    import linecache

    codes = (getattr(fn, "__code__", None) or getattr(type(fn).__call__, "__code__", None)
             for fn in functions)  # a function, or an object the learner made callable
    files = {code.co_filename for code in codes if code is not None}
    found, tb = None, exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    source = linecache.getline(found.tb_frame.f_code.co_filename, found.tb_lineno).strip()
    return f"line {found.tb_lineno}: {source}" if source else f"line {found.tb_lineno}"


def _as_one_line(label: str, exc: BaseException, functions) -> BaseException:
    """The error a check shows for an exception that is not a check's verdict: the
    learner's code raised it (one line: what, where, and what to do), or the check's own
    code did (one line: a bug in the course, and how to report it)."""
    what = f"{type(exc).__name__}: {exc}".strip()
    where = _learner_line(exc, functions)
    if where is None:
        return InternalError(
            f"{label}: the check itself failed ({what}). This is a bug in the course, not "
            f"in your code: please report it (the course's issue tracker, or your "
            f"teacher) with this line and your notebook")
    hint = next((h for keys, h in HINTS if any(k in str(exc) for k in keys)),
                "fix that line, then run the check again")
    return CheckFailed(f"{label}: your code raised {what} (at {where}): {hint}")


@contextlib.contextmanager
def part(number: int, *functions, what: str = "Part"):
    """Run a part's check: ``Part N: passed``, ``Part N: not done yet``, or CheckFailed.

    ``what`` names the unit: the lessons' exercises say ``Exercise N``."""
    label = f"{what} {number}"
    checker = f"check_{what.lower()}{number}"
    for fn in functions:
        if not callable(fn):
            fail(f"{label}: pass your function itself, e.g. {checker}(my_function), "
                 f"not {type(fn).__name__} {fn!r}")
    try:
        with checked_here():  # the check judges the races itself
            yield
    except NotImplementedError as exc:
        where = "the cell above" if what == "Part" else "this cell"
        text = (f"{label}: not done yet: write your code in {where}, in place "
                f"of the `raise NotImplementedError` line")
        if GRADING:
            raise NotDoneYet(text) from exc
        print(text)
        return
    except CheckFailed as exc:
        if not str(exc).startswith(label):
            exc.args = (f"{label}: {exc}",) + exc.args[1:]
        raise
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # noqa: BLE001  (one line for every other error)
        from ..order import RaceError

        if isinstance(exc, RaceError):
            raise
        raise _as_one_line(label, exc, functions) from None
    _saw_everything(label)
    print(f"{label}: passed")


def _saw_everything(label: str) -> None:
    """A check that could not see cuda.core's calls (CUPTI was taken by another
    subscriber in the learner's process) cannot pass: a sync it did not see is no proof
    of none."""
    from .._device import on_simulator

    if on_simulator():
        return
    from .. import _driverwatch

    why = _driverwatch.taken()
    if why:
        fail(f"{label}: this check could not watch all of your code's CUDA calls: {why}. "
             f"Stop that subscriber (or restart the kernel) and run the check again")


def learner_races(order: Order):
    """The races in which at least one operation is the learner's (not the check's)."""
    return [r for r in order.races if not (r.first.internal and r.second.internal)]


def no_races(ops: OpLog, order: Order | None = None, names=None,
             parts_of_one_array: bool = False) -> Order:
    """Fail on the first race that involves the learner's operations; return the order.

    ``parts_of_one_array``: the lab gives launches of one kernel different parts of one
    array (a start and a size). The simulator sees which elements each touched; a GPU's
    record knows only the whole argument, so there such pairs are left to the check's
    own comparison of the results."""
    from ..order import stream_names

    order = order or analyze(ops)
    races = learner_races(order)
    if parts_of_one_array:
        races = [r for r in races if not (r.first.kind == r.second.kind == "launch"
                                          and r.first.name == r.second.name)]
    if races:
        more = f" ({len(races) - 1} more like it)" if len(races) > 1 else ""
        fail(races[0].message(stream_names(names)) + more)
    return order


def none_ordered(order, launches, what: str) -> None:
    """Fail unless no two of ``launches`` are ordered: then a GPU may run them all at once."""
    for i, a in enumerate(launches):
        for j in range(i + 1, len(launches)):
            b = launches[j]
            if order.ordered(a, b):
                culprit = next((op for op in order_culprits(order, a, b)), None)
                why = f": {culprit}" if culprit else ""
                fail(f"{what} {j} must wait for {what} {i}, so they cannot run at once{why}")


def order_culprits(order, a, b):
    """Plain words for what makes ``b`` wait for ``a``, for the message."""
    if a.stream.key() == b.stream.key():
        yield "they are in the same stream"
        return
    for op in order.fed:
        if order.ordered(a, op) and order.ordered(op, b) and op is not a and op is not b:
            if op.kind == "launch" and op.stream.is_legacy_default:
                yield (f"{op.describe()} is on the legacy default stream, which waits for "
                       f"every blocking stream and makes them wait for it. Put it on "
                       f"cuda.per_thread_default_stream() or a stream of its own")
                return
            if op.kind == "sync" or (op.kind == "copy" and op.blocking):
                yield (f"the host waited ({op.describe()}) before issuing the next launch: "
                       f"issue everything, then let the caller wait")
                return
            if op.kind == "wait":
                yield f"{op.describe()} makes one stream wait for the other"
                return


def _show_check_failure(shell, etype, value, tb, tb_offset=None):
    """In IPython, a failed check shows its message alone, not a traceback through
    streamlab: the message says what is wrong and how to fix it."""
    stb = [f"{etype.__name__}: {value}"]
    shell._showtraceback(etype, value, stb)  # the error output, as a notebook shows it
    return stb


def install_ipython_display() -> None:
    """Show CheckFailed and RaceError in IPython as their message alone (called by
    ``import streamlab``)."""
    import sys

    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    from ..order import RaceError

    from .._patching import remember

    shell = get_ipython()
    if shell is not None and hasattr(shell, "set_custom_exc"):
        remember(shell, "custom_exceptions")  # what set_custom_exc sets, for uninstall()
        remember(shell, "CustomTB")
        shell.set_custom_exc((Exception,), _show_error)


def without_streamlab_frames(tb):
    """``tb`` with the frames of streamlab's own code left out: the learner's frames (and
    the libraries' they called) remain, so the error still points at their line."""
    import types

    from ..provenance import PACKAGE

    package = str(PACKAGE) + os.sep
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(package):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _show_error(shell, etype, value, tb, tb_offset=None):
    """In IPython: a check's verdict (and a check's own failure) shows as its one-line
    message; any other error shows its traceback without streamlab's frames."""
    from ..order import RaceError

    if isinstance(value, (CheckFailed, RaceError, InternalError)):
        return _show_check_failure(shell, etype, value, tb, tb_offset)
    stb = shell.InteractiveTB.structured_traceback(etype, value,
                                                   without_streamlab_frames(tb), tb_offset)
    shell._showtraceback(etype, value, stb)
    return stb
