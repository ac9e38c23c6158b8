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
    print(f"{label}: passed")


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

    shell = get_ipython()
    if shell is not None and hasattr(shell, "set_custom_exc"):
        shell.set_custom_exc((CheckFailed, RaceError), _show_check_failure)
