"""Lesson 09's exercises: a scratch array allocated and freed in the stream that uses it
(cuda.core's memory pool); a copy to another GPU that waits for that GPU's event."""

from __future__ import annotations

import functools
import sys

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..check import no_races
from ..memory import allocations_seen, memory_resource
from ..sim.pool import SimBuffer
from ..streams import StreamRef
from ..ops import internal, record_ops
from ..order import analyze
from ..streams import handle_of
from . import BUSY_NS, N, THREADS, blocks_for, exercise, fill, fresh, once_in

__all__ = ["double_into", "fill", "blocks_for", "THREADS", "VALUE", "check_exercise1",
           "check_exercise2"]

VALUE = 7.0  # exercise 2: what the source GPU fills its array with


@cuda.jit
def double_into(src, dst):
    """dst[i] = 2 src[i], one thread an element."""
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = 2 * src[i]


class _Seen:
    """Where, in the record of operations, the pool's allocate and close were called, and
    in which stream."""

    def __init__(self, ops):
        self.ops = ops
        self.allocs: list = []
        self.closes: list = []

    def note(self, into: list, stream) -> None:
        into.append((len(self.ops), None if stream is None else handle_of(stream)))


def _yours(free, from_pool: bool, pool_closed: bool) -> bool:
    """Was ``free`` the learner's own (a ``close``), not Python letting go of the buffer?
    The simulator's buffers say so. On a GPU, CUPTI sees the driver's free alone: a pool
    buffer's is the learner's when they closed it (the pool's wrapper saw the call); any
    other's, when it came while the learner's function was running."""
    if free.explicit is not None:
        return free.explicit
    return pool_closed if from_pool else free.at[1]


def _touches(op, alloc) -> bool:
    """Does the launch ``op`` read or write the device memory of ``alloc``?"""
    lo, hi = alloc.address, alloc.address + alloc.nbytes
    return any(r.lo < hi and lo < r.hi for r in (*op.reads, *op.writes) if not r.host)


def _code_of(fn):
    """The code object that runs when ``fn`` is called: a function's, a partial's
    function's, a callable object's ``__call__``'s (None if none is found)."""
    code = getattr(fn, "__code__", None)
    if code is None and isinstance(fn, functools.partial):
        code = getattr(fn.func, "__code__", None)
    if code is None:
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)
    return code


def _while_running(fn, ops):
    """For :func:`~streamlab.memory.allocations_seen`: (the position in ``ops``, whether
    ``fn`` is running). A buffer ``fn`` frees, or drops mid-way, is freed while its frame
    is on the stack; one it lets go of by returning is freed after its frame has left
    (CPython runs a local's finalizer at return with the caller's frame current: the kept
    answer "never freed" checks it at every run)."""
    code = _code_of(fn)

    def at():
        frame = sys._getframe(1)
        while frame is not None and code is not None:
            if frame.f_code is code:
                return len(ops), True
            frame = frame.f_back
        return len(ops), False

    return at


class _SeenPool:
    """The lesson's memory pool, with its calls noted (exercise 1's ``mr``): on a GPU its
    buffers' closes too, which CUPTI cannot tell from Python letting go of a buffer."""

    def __init__(self, inner, seen: _Seen):
        self._inner, self._seen = inner, seen

    def allocate(self, size, *, stream):
        """``mr.allocate(nbytes, stream=s)``, as the pool's."""
        buf = self._inner.allocate(size, stream=stream)
        self._seen.note(self._seen.allocs, stream)
        if isinstance(buf, SimBuffer):  # it says itself whether a free is a close
            return buf
        return _SeenBuffer(buf, self._seen)

    def __repr__(self):
        return repr(self._inner)


class _SeenBuffer:
    """A cuda.core pool buffer whose close is noted (``streamlab.as_array`` reads its
    ``size`` and ``handle``)."""

    def __init__(self, inner, seen: _Seen):
        self._inner, self._seen = inner, seen

    @property
    def size(self):
        """The buffer's bytes."""
        return self._inner.size

    @property
    def handle(self):
        """The buffer's device address."""
        return self._inner.handle

    def close(self, stream=None) -> None:
        """Free in ``stream``'s order, noted."""
        self._seen.note(self._seen.closes, stream)
        self._inner.close(stream)


def check_exercise1(scratch_step, *, seed=None):
    """``scratch_step(mr, stream, d_x)``: allocate a scratch array of d_x.size floats from
    the pool ``mr`` in ``stream`` (``streamlab.as_array`` makes it an array), launch
    ``double_into`` from d_x into the scratch and again from the scratch into d_x, then
    free the scratch in ``stream``: all in stream order, and the host does not wait."""
    from cuda.core import Device, StreamOptions

    with exercise(1, scratch_step):
        h, d_x = fresh(seed)
        dev = Device()
        dev.set_current()
        s = dev.create_stream(options=StreamOptions(nonblocking=False))
        with internal():
            double_into[1, 1](d_x[:1], cuda.device_array(1, np.float32))  # compiled
            cuda.synchronize()
        with record_ops() as ops:
            seen = _Seen(ops)
            with internal():  # the stream is busy: a free issued too early would show
                streamlab.spin[1, 1, s](BUSY_NS)
            with allocations_seen(at=_while_running(scratch_step, ops)) as anywhere:
                scratch_step(_SeenPool(memory_resource(), seen), s, d_x)
        check.no_host_sync(ops, "scratch_step")
        pool_allocs, pool_closes = list(seen.allocs), list(seen.closes)
        scratch = None  # the allocation, where every API's are seen and there is one
        if anywhere or streamlab.on_simulator():
            # every stream-ordered allocation and free, through any API (the pool's, the
            # device's allocate), each with where it came in the record
            allocs = [a for a in anywhere if a.kind == "alloc"]
            seen.allocs = [(a.at[0], a.stream) for a in allocs]
            if len(allocs) == 1 and allocs[0].address is not None:
                scratch = allocs[0]  # only its frees count (not those of other garbage)
            frees = [a for a in anywhere if a.kind == "free"
                     and (scratch is None or a.address == scratch.address)]
            seen.closes = [(f.at[0], f.stream) for f in frees
                           if _yours(f, bool(pool_allocs), bool(pool_closes))]
            if not seen.closes and frees:
                check.fail("your code never freed the scratch: Python freed it only when "
                           "nothing held it any more (when a function returned, say), "
                           "whenever that is. Free it yourself, buf.close(stream), after "
                           "the last launch")
        # (else: a GPU without cupti-python, where only the pool's own calls are seen)
        if not seen.allocs:
            check.fail("allocate the scratch from the pool, in the stream: mr.allocate(4 * "
                       "d_x.size, stream=stream). cuda.device_array "
                       "allocates at once, on the host's word, and may wait")
        if len(seen.allocs) > 1:
            check.fail(f"{len(seen.allocs)} stream-ordered allocations were made: one "
                       f"scratch array is enough (mr.allocate once)")
        if len(seen.closes) > 1:
            check.fail(f"{len(seen.closes)} stream-ordered frees were made for one "
                       f"allocation: free the scratch once, buf.close(stream)")
        mine = handle_of(s)
        if seen.allocs[0][1] != mine:
            check.fail("the scratch was allocated in another stream than the one that uses "
                       "it, so the allocation is not ordered before the kernels: allocate "
                       "it in stream")
        launches = ops.launches("double_into")
        key = StreamRef.of(s).key()
        if len(launches) != 2 or any(op.stream.key() != key for op in launches):
            check.fail("launch double_into twice, in the stream: from d_x into the scratch, "
                       "then from the scratch into d_x")
        if scratch is not None and scratch.nbytes and \
                not all(_touches(op, scratch) for op in launches):
            check.fail("a double_into launch did not use the scratch you allocated: make "
                       "the array from the buffer, streamlab.as_array(buf, d_x.size, "
                       "np.float32), and pass that array to both launches")
        if not seen.closes:
            check.fail("the scratch was never freed: buf.close(stream) after the last "
                       "launch, so the pool can reuse it")
        at, where = seen.closes[0]
        if at <= launches[-1].index:
            check.fail("the scratch was freed before the last double_into was issued: in "
                       "stream order the free then comes before a kernel that uses it, and "
                       "the pool may give its memory to the next allocation. Close it "
                       "after the last launch")
        if where not in (None, mine):
            check.fail("the scratch was freed in another stream, which is not ordered "
                       "after the kernels: close it in the stream that used it")
        no_races(ops)
        s.sync()
        check.equal(d_x.copy_to_host(), 4 * h, "d_x after scratch_step")


def check_exercise2(hand_over):
    """``hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst)``: fill d_src with VALUE
    in s_src, on GPU gpu_src; then copy d_src into d_dst in s_dst, on GPU gpu_dst, once
    the fill is done: an event recorded on the source GPU, waited on by s_dst. The host
    does not wait. (``gpu_src`` and ``gpu_dst`` are ``cuda.gpus[i]``: use them as ``with
    gpu_src:``. With one GPU, they are the same one.)"""
    with exercise(2, hand_over):
        two = not streamlab.on_simulator() and len(cuda.gpus) >= 2
        gpu_src, gpu_dst = cuda.gpus[0], cuda.gpus[1 if two else 0]
        with gpu_src:
            d_src = cuda.to_device(np.zeros(N, np.float32))
            s_src = cuda.stream()
            with internal():
                fill[1, 1](d_src[:1], 0.0)  # compiled for this GPU
                streamlab.spin[1, 1](1)
                cuda.synchronize()
        with gpu_dst:
            d_dst = cuda.to_device(np.full(N, -1.0, np.float32))
            s_dst = cuda.stream()
        with record_ops() as ops:
            with gpu_src, internal():  # the source GPU is busy: a missing wait would show
                streamlab.spin[1, 1, s_src](BUSY_NS)
            hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst)
        check.no_host_sync(ops, "hand_over")
        fills, copies = ops.launches("fill"), ops.copies()
        if not once_in(fills, s_src):
            check.fail("launch fill once, in s_src: fill[blocks_for(d_src.size), THREADS, "
                       "s_src](d_src, VALUE), with the source GPU current")
        if not once_in(copies, s_dst):
            check.fail("copy d_src into d_dst once, in s_dst: d_dst.copy_to_device(d_src, "
                       "stream=s_dst), with the destination GPU current")
        order = analyze(ops)
        if not order.ordered(fills[0], copies[0]):
            check.fail("the copy in s_dst does not wait for the fill in s_src: record an "
                       "event in s_src after the fill, with the source GPU current, and "
                       "make s_dst wait on it (event.wait(s_dst))")
        no_races(ops, order)
        for gpu in {id(gpu_src): gpu_src, id(gpu_dst): gpu_dst}.values():
            with gpu:
                cuda.synchronize()
        with gpu_dst:
            got = d_dst.copy_to_host()
        check.equal(got, np.full(N, VALUE, np.float32), "d_dst after hand_over")
        print(f"GPU {gpu_dst.id} waited for GPU {gpu_src.id}'s event"
              + ("" if two else " (one GPU here: the same one)"))
