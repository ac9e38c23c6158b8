"""The labs' checks: one function per part, each called from a graded cell in one line.

``from streamlab.labs.lab02 import *`` gives a lab notebook its kernels, sizes and checks;
``check_part1(produce_then_consume)`` checks part 1 with fresh inputs and prints
``Part 1: passed``, or fails with one message that says what is wrong and how to fix it.

The checks judge *order*, not luck: they record what the learner's function issued
(:func:`streamlab.record_ops`), apply CUDA's ordering rules to it (:mod:`streamlab.order`),
and fail on a missing wait exactly as a GPU would, on the simulator too. A part is written
as its data and its own rules (a :class:`streamlab.runner.Check`), and the one runner
(:func:`streamlab.runner.run`) records, judges its races and compares its results, the
same way for every part (lab 05's part 2, which judges an event loop's turns, is written
out still). Host buffers a
function is given are watched (:mod:`streamlab.watched`), so that reading a result before
the copy that fills it has landed is a race like any other.

A part whose function still raises ``NotImplementedError`` prints ``not done yet``
instead of failing, so that *Run All* reaches every part; it scores nothing when graded
(:mod:`streamlab.grading` runs every check with ``STREAMLAB_GRADING=1``, where it fails).
"""

from __future__ import annotations

import os

from ..check import CheckFailed

# The verdict vocabulary the labs share with the lessons' exercises lives in the judging
# layer (streamlab.check); a lab's check imports it from here as before.
from ..check import (GRADING, HINTS, InternalError, NotDoneYet, learner_races,  # noqa: F401
                     no_races, none_ordered, order_culprits, part)


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
