"""Rules a check can apply to what code did: each a small named function over the record
of operations (:class:`~streamlab.OpLog`) that fails the check with a message saying what
was wrong and what to do, or returns what it measured.

They judge the skill rather than the calls: *the host worked while the GPU did* rather
than *do_work was called*; *every copy of the pipeline was asynchronous* rather than
*a copy was issued*.

>>> import numpy as np, streamlab
>>> from numba import cuda
>>> from streamlab import rules
>>> s = cuda.stream()
>>> d = cuda.device_array(4, np.float32)
>>> with streamlab.record_ops() as ops:
...     _ = d.copy_to_host(np.zeros(4, np.float32), stream=s)   # into pageable memory
>>> rules.pinned_copies_only(ops, "the pipeline")
Traceback (most recent call last):
...
streamlab.check.CheckFailed: the pipeline: 1 of 1 copies between host and device used pageable host memory ...
"""

from __future__ import annotations

import threading

from . import check
from . import ops as _ops
from .ops import OpLog


def _in_host_function() -> bool:
    # set by streamlab.hostfn while a host function that a stream launched runs
    return _ops.current_host_function() is not None


def pinned_copies_only(ops: OpLog, label: str) -> None:
    """Every copy between host and device that the code issued used pinned host memory,
    so that none made the host wait (a copy from or into pageable memory is synchronous
    whatever stream it is given). ``label`` names the code in the message."""
    between = [op for op in ops.copies() if op.name in ("h2d", "d2h")]
    pageable = [op for op in between if not op.pinned]
    if pageable:
        check.fail(f"{label}: {len(pageable)} of {len(between)} copies between host and "
                   f"device used pageable host memory ({pageable[0].describe()}), so the "
                   f"host waited for each: copy from and into the pinned buffers you were "
                   f"given (fill them in place, buf[:] = x, instead of replacing them)")


class HostWork:
    """Host work to hand to the code under check, that notes when and where it ran.

    Call the object as the work itself (``host_work()``); afterwards
    :meth:`while_gpu_busy` says how many calls ran on the caller's own thread before the
    GPU's work was known to be done, which is what overlapping host work with GPU work
    means. ``work`` is what each call does (nothing, by default).
    """

    def __init__(self, ops: OpLog, work=None):
        self._ops = ops
        self._work = work
        self.starts: list[tuple[int, str]] = []  # (ops recorded so far, thread name)
        self.in_stream = 0  # calls run by a stream (a host function), not by the host
        self.caller = threading.current_thread().name

    def __call__(self, *args, **kwargs):
        self.starts.append((len(self._ops), threading.current_thread().name))
        self.in_stream += _in_host_function()
        if self._work is not None:
            return self._work(*args, **kwargs)
        return None

    @property
    def calls(self) -> int:
        """How many times the code called it."""
        return len(self.starts)

    def while_gpu_busy(self, label: str) -> int:
        """The calls made on the caller's thread while the GPU's work was not yet known to
        be done: before the code's first host wait (a synchronize) and before an
        ``event.query()`` first answered True. Fails, saying why, if none was; returns
        the count."""
        elsewhere = sorted({t for _, t in self.starts if t != self.caller})
        if self.in_stream or elsewhere:
            where = "in a host function of a stream" if self.in_stream else f"on {elsewhere[0]}"
            check.fail(f"{label}: the host work ran {where}, not on your own thread: a host "
                       f"function in a stream runs after the stream's work, on CUDA's "
                       f"thread. Call it yourself, between issuing the GPU's work and "
                       f"waiting for it")
        done_at = len(self._ops)
        for i, op in enumerate(self._ops):
            if op.internal:
                continue
            if op.kind == "sync" or op.blocking or \
                    (op.kind == "query" and op.detail.get("result")):
                done_at = i
                break
        busy = [n for n, _ in self.starts if n <= done_at]
        if self.starts and not busy:
            check.fail(f"{label}: the host work ran only after the GPU's work was done "
                       f"(after {self._ops[done_at].describe()}), so the host sat idle while "
                       f"the GPU worked: do the host work between issuing and waiting, and "
                       f"check for the end between pieces of it")
        return len(busy)
