"""The checks' vocabulary, in one module: what every exercise and lab check says.

Each failure says what is wrong and hints at the fix.

The checks read what code *did* (an :class:`~streamlab.OpLog` from
:func:`~streamlab.record_ops`), what it *computed*, and, on a GPU, how it *overlapped*
(:func:`time_per_stream`). A check passes silently or raises :class:`CheckFailed`.

>>> import streamlab
>>> from streamlab import check
>>> from numba import cuda
>>> @cuda.jit
... def k(x):
...     x[0] = 1
>>> streams = [cuda.stream(), cuda.stream()]
>>> data = [cuda.device_array(1) for _ in streams]
>>> with streamlab.record_ops() as ops:
...     for s, d in zip(streams, data):
...         k[1, 1](d)                      # forgot the stream
>>> check.one_launch_per_stream(ops, "k", streams)
Traceback (most recent call last):
...
streamlab.check.CheckFailed: kernel 'k' went to the legacy default stream 2 times: ...

**Rules over what code did**: each a small named function over the record of operations
(:class:`~streamlab.OpLog`) that fails the check with a message saying what was wrong
and what to do, or returns what it measured.

They judge the skill rather than the calls: *the host worked while the GPU did* rather
than *do_work was called*; *every copy of the pipeline was asynchronous* rather than
*a copy was issued*.

>>> import numpy as np, streamlab
>>> from numba import cuda
>>> from streamlab import check
>>> s = cuda.stream()
>>> d = cuda.device_array(4, np.float32)
>>> with streamlab.record_ops() as ops:
...     _ = d.copy_to_host(np.zeros(4, np.float32), stream=s)   # into pageable memory
>>> check.pinned_copies_only(ops, "the pipeline")
Traceback (most recent call last):
...
streamlab.check.CheckFailed: the pipeline: 1 of 1 copies between host and device used pageable host memory ...

**A part's verdict** (:func:`part`, :class:`NotDoneYet`, :func:`no_races`, ...): how a
learner's error becomes one line that says what to change.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading

import numpy as np
from numba import cuda

from . import _device
from . import ops as _ops
from ._device import on_simulator
from .ops import OpLog, internal
from .order import Order, analyze, checked_here
from .streams import StreamRef, canonical_handle, stream_key
from .trace import Span, Trace


class CheckFailed(AssertionError):
    """A lab check failed; the message says what and hints at the fix."""


def fail(message: str):
    """Fail the check with ``message`` (what is wrong, and a hint at the fix)."""
    raise CheckFailed(message)


def _keys(streams):
    return [StreamRef.of(s).key() for s in streams]


def one_launch_per_stream(ops: OpLog, kernel: str, streams, names=None) -> None:
    """``kernel`` was launched exactly once on each of ``streams`` (``names``: theirs, for
    the messages), and nowhere else."""
    launches = ops.launches(kernel)
    if not launches:
        fail(f"kernel '{kernel}' was never launched: call {kernel}[grid, block, stream](...) "
             f"once for each stream")
    legacy = [op for op in launches if op.stream.is_legacy_default]
    if legacy:
        fail(f"kernel '{kernel}' went to the legacy default stream {len(legacy)} times: put the "
             f"stream in the launch configuration, {kernel}[grid, block, stream](...)")
    wanted = _keys(streams)
    used = [op.stream.key() for op in launches]
    for i, key in enumerate(wanted):
        n = used.count(key)
        if n != 1:  # (not "stream 0": the course keeps that name for the legacy default stream)
            which = (names[i] if names else "the stream you were given" if len(wanted) == 1
                     else f"stream number {i + 1} of the {len(wanted)} you were given")
            fail(f"{which} got {n} launches of '{kernel}': it should get exactly one")
    stray = [op for op in launches if op.stream.key() not in wanted]
    if stray:
        fail(f"kernel '{kernel}' was launched on {len(stray)} stream(s) you were not given: "
             f"use the streams passed in")


def waits_for(ops: OpLog, before, after, label: str = "the consumer",
              before_label: str = "the producer") -> None:
    """Op ``after`` is ordered after op ``before`` by an event (or by sharing a stream).

    That is: ``after``'s stream waited, before ``after`` was issued, on an event recorded
    in ``before``'s stream after ``before`` was issued. Host synchronizes do not count.
    ``label`` and ``before_label`` name the two in the message.
    """
    for role, op in (("before", before), ("after", after)):
        if getattr(op, "stream", None) is None:
            raise TypeError(f"waits_for compares two operations issued to streams "
                            f"(launches, copies, records); {role} is "
                            f"{op.describe() if hasattr(op, 'describe') else repr(op)}")
    if after.stream.key() == before.stream.key():
        if after.index > before.index:
            return
        fail(f"{label} was issued before {before_label}, in the same stream")
    waits = [op for op in ops.waits()
             if op.stream.key() == after.stream.key() and op.index < after.index]
    if not waits:
        fail(f"{label}'s stream never waits for {before_label}: record an event in "
             f"{before_label}'s stream after its work (event.record(stream)), and call "
             f"event.wait(consumer_stream) before {label}'s launch")
    problems = []
    for w in waits:
        rec = ops.recorded_before(w)
        if rec is None:
            problems.append("it waits on an event that had not been recorded yet: record "
                            "first, then wait")
        elif rec.stream.key() != before.stream.key():
            problems.append("it waits on an event recorded in another stream, not in "
                            f"{before_label}'s")
        elif rec.index < before.index:
            problems.append(f"it waits on an event recorded before {before_label} was "
                            "launched: record the event after the launch")
        else:
            return
    fail(f"{label} is not ordered after {before_label}: {problems[-1]}")


def no_host_sync(ops: OpLog, label: str = "") -> None:
    """The host did not wait in the recorded code: no synchronize (device, stream or
    event), no ``event.query()`` that found the work done, no copy the host had to
    wait for (a copy to the host with no stream, or into pageable memory), and no CUDA
    call made from inside a host function (CUDA forbids it). ``label``
    names the code (``"produce_then_consume"``) in the message."""
    where = f" inside {label}" if label else ""
    from_hostfn = [op for op in ops.user() if "issued_in_host_function" in op.detail]
    if from_hostfn:
        fail(f"{from_hostfn[0].describe()} was issued from inside a host function{where}: "
             f"CUDA forbids any CUDA call there (on a GPU it fails). Issue the work from "
             f"the host, ordered by events")
    waits = ops.syncs() + [op for op in ops.queries() if op.detail.get("result")]
    if waits:
        kinds = ", ".join(sorted({op.describe().split(" (")[0] for op in waits}))
        fail(f"you synchronized the host{where} ({kinds}): that makes each piece of work "
             f"wait for the one before. Issue all the work, and let the caller wait")
    blocking = [op for op in ops.copies() if op.blocking]
    if blocking:
        op = blocking[0]
        fail(f"the host waited{where} for {op.describe()}: a copy to the host with no "
             f"stream, or into pageable memory, returns only once it is done (and with no "
             f"stream it also waits for every blocking stream). Issue all the work, and "
             f"let the caller wait")


def equal(got, expected, label: str, rtol: float = 1e-5, atol: float = 0.0) -> None:
    """``got`` equals ``expected`` (arrays: element by element, floats within ``rtol``,
    or within ``atol`` of it: for results near zero, where the GPU's and numpy's last bits
    of a ``sin`` differ by more than ``rtol`` of a tiny value; NaN equals NaN). ``label``
    names the result in the message. Only numbers are compared: anything else ``got``
    holds (an object that says it equals anything, a subclass of int or of a numpy
    scalar, a string) fails, and none of its methods runs."""
    if not _numeric(expected):
        raise TypeError(f"check.equal compares numbers; the check's expected {label} is "
                        f"{type(expected).__name__}")
    if not _numeric(got):
        fail(f"{label}: expected numbers, got {_what(got)}: give plain numbers (Python's "
             f"int or float, or a numpy array of numbers)")
    expected = np.asarray(expected)
    try:
        got = np.asarray(got)
    except ValueError:  # lists of different lengths
        fail(f"{label}: expected shape {expected.shape}, got lists of different lengths")
    if got.shape != expected.shape:
        fail(f"{label}: expected shape {expected.shape}, got {got.shape}")
    close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True) | (got == expected)
    if not close.all():
        i = int(np.flatnonzero(~close.ravel())[0])
        fail(f"{label}: {int((~close).sum())} of {close.size} values are wrong; the first at "
             f"index {i}: expected {expected.ravel()[i]!r}, got {got.ravel()[i]!r}. Did every "
             f"piece of work run, and finish, before the result was read?")


def _numeric(value) -> bool:
    """Is ``value`` plain numbers: numpy's arrays of numbers and its own number types,
    Python's bool, int, float and complex (not a subclass, whose methods would run), or
    lists and tuples of them?"""
    if type(value) in (list, tuple):
        return all(_numeric(v) for v in value)
    if isinstance(value, np.ndarray):  # (a subclass is read as numpy's own array)
        return np.asarray(value).dtype.kind in "biufc"
    if isinstance(value, np.generic):
        return type(value).__module__ == "numpy" and np.dtype(type(value)).kind in "biufc"
    return type(value) in (bool, int, float, complex)


def plain_number(value) -> bool:
    """Is ``value`` one real number of Python's (int, float) or numpy's own types, not a
    bool and not a subclass (whose arithmetic and comparisons would be the learner's)?"""
    if isinstance(value, np.generic):
        return type(value).__module__ == "numpy" and np.dtype(type(value)).kind in "iuf"
    return type(value) in (int, float)


def _what(value) -> str:
    """What a value that is not plain numbers is, said without running its code."""
    if type(value) in (list, tuple):
        odd = next(v for v in value if not _numeric(v))
        return f"a {type(value).__name__} holding {_what(odd)}"
    if isinstance(value, np.ndarray):
        return f"an array of {np.asarray(value).dtype}"
    kind, where = type(value).__qualname__, type(value).__module__
    return kind if where == "builtins" else f"{where}.{kind}"


@contextlib.contextmanager
def time_per_stream(streams, labels=None):
    """One span per stream, measured on the GPU: from just before the first kernel the
    block launches into it (an event recorded then, as streamlab's own work) to the end of
    the block and of the stream's work. A stream the block launches nothing into spans
    the whole block.

    Yields a list that receives the :class:`~streamlab.Trace` once the block ends.
    ``labels`` names the rows (default: "stream 0", "stream 1", ...). Spans that begin at
    each stream's first launch show code that waits between its launches (a sleep, a
    poll of an event) starting its streams one after another: from the block's start,
    every stream would look busy all along (issue 56).

    An event is an item of its stream's hardware queue, and streams share the queues
    (``CUDA_DEVICE_MAX_CONNECTIONS``, 8 unless set). An event recorded after each launch
    held the other streams of its queue until the kernel ended: lab 08's 32 streams ran
    their breadth-first kernels 3.3 times slower so on an H100 (lesson 08 shows it), so
    the spans end with the block. Where there are more streams than queues, even an
    event recorded before a stream's first launch could sit behind another stream's
    kernel: then every span begins with the block, on the simulator alike.
    """
    streams = list(streams)
    if not streams:
        raise ValueError("time_per_stream needs at least one stream to time")
    names = list(labels) if labels is not None else [f"stream {i}"
                                                      for i in range(len(streams))]
    if len(names) != len(streams):
        raise ValueError(f"time_per_stream got {len(streams)} streams and {len(names)} "
                         f"labels: give one label per stream")
    index = {_key(s): i for i, s in enumerate(streams)}
    starts = [cuda.event(timing=True) for _ in streams]
    ends = [cuda.event(timing=True) for _ in streams]
    first = [None] * len(streams)

    def began(stream):
        i = index.get(_key(stream))
        if i is not None and first[i] is None:
            first[i] = cuda.event(timing=True)
            first[i].record(streams[i])

    origin = cuda.event(timing=True)
    with internal():
        origin.record(streams[0])
        for s, e in zip(streams, starts, strict=True):
            e.record(s)
    out = []
    try:  # the hardware queues the streams share: 8 unless set (or set to a non-number)
        queues = int(os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "8"))
    except ValueError:
        queues = 8
    with _ops.watch_launches(began if len(streams) <= queues else lambda _stream: None):
        yield out
    with internal():
        for s, e in zip(streams, ends, strict=True):
            e.record(s)
        for e in ends:
            e.synchronize()
    spans = [Span(n, n, "kernel", origin.elapsed_time(a or a0), origin.elapsed_time(b))
             for n, a, a0, b in zip(names, first, starts, ends, strict=True)]
    out.append(Trace.from_spans(spans))


def _key(stream):
    """A stream's identity as the calling thread sees it (0 names a default stream)."""
    return stream_key(canonical_handle(stream))


def fail_with_timeline(trace: Trace, message: str) -> None:
    """Fail with ``message``, first drawing ``trace`` (the learner's own timeline) where a
    notebook can show it: a timing check that fails shows what ran when."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python (the grader's fresh process): the message alone
        fail(message)
    if get_ipython() is not None:
        import matplotlib.pyplot as plt

        ax = trace.plot(title="your timeline, as the check measured it")
        fig = ax.figure if hasattr(ax, "figure") else plt.gcf()
        display(fig)
        plt.close(fig)
    fail(message)


def untimed(what: str) -> None:
    """A run whose data says a GPU timing was not read (as on the simulator, where a
    judge skips the timing's rule): judged where this process runs, it fails on a GPU."""
    if not on_simulator():
        fail(f"the check's run sent no timing of {what}, yet it ran on a GPU: this part "
             f"scores nothing")


def concurrency_at_least(trace: Trace, minimum: float, label: str) -> None:
    """The spans overlapped at least ``minimum``-fold (it prints how much). On a GPU the
    spans are measured; on the simulator they come from the model GPU (the lessons'
    timelines do too), and with the model off (``STREAMLAB_MODEL=off``) the overlap is
    not checked, and it says so. ``label`` names the work."""
    where = ""
    if on_simulator():
        from .model import simulator_model

        model = simulator_model()
        if model is None:
            print(f"{label}: overlap not checked (the simulator runs everything in order, "
                  f"and STREAMLAB_MODEL=off turned its model GPU off)")
            return
        where = f" on the {model.profile.label.split(',')[0]}"
    m = trace.metrics()
    if m.concurrency < minimum:
        fail_with_timeline(
            trace, f"{label}: the work overlapped only {m.concurrency:.1f}-fold{where} "
                   f"(makespan {m.makespan_ms:.2f} ms for {m.busy_ms:.2f} ms of work); "
                   f"expected at least {minimum:.1f}. Something is making the streams wait "
                   f"for each other, or the host waits between its launches (each "
                   f"stream's span begins just before its first kernel's launch)")
    print(f"{label}: overlapped {m.concurrency:.1f}-fold{where}")


def measured_spans(trace: Trace) -> list | None:
    """``trace``'s spans as plain values, ``[row, start ms, end ms]`` each, as a check
    sends them to the grader (:func:`spans_overlap` judges them); None where nothing is
    measured (the simulator with its model GPU off)."""
    if on_simulator() and not _model_on():
        return None
    return [[s.row, float(s.start_ms), float(s.end_ms)] for s in trace.spans]


def spans_overlap(spans, count: int, minimum: float, label: str) -> None:
    """:func:`concurrency_at_least` as the grader's judge asks it, quietly: ``count``
    streams' spans, as :func:`measured_spans` sent them, overlapped at least
    ``minimum``-fold. Where this process runs on the simulator with its model off, nothing
    was measured, and nothing is judged (as there); elsewhere the spans must come."""
    if on_simulator() and not _model_on():
        return
    if not isinstance(spans, list) or len(spans) != count or not all(
            isinstance(s, list) and len(s) == 3 and type(s[0]) is str for s in spans) \
            or len({s[0] for s in spans}) != count:
        fail(f"{label}: the grader received no timings of the {count} streams (one span "
             f"each): this part scores nothing")
    trace = Trace.from_spans([Span(row, row, "kernel", a, b) for row, a, b in spans])
    with contextlib.redirect_stdout(io.StringIO()):
        concurrency_at_least(trace, minimum, label)


def best_concurrency_at_least(run_once, minimum: float, label: str, *, tries: int = 3) -> Trace:
    """As :func:`concurrency_at_least`, for the best of up to ``tries`` runs of
    ``run_once()``, which runs the code under test, checks all it did, and returns its
    timeline. Another program busy on the host stretches the time between launches, on a
    GPU and on the simulator's model GPU alike, so one run of right code can fall short: a
    run that does is measured again, and says so. Code that makes the streams wait falls
    short every time. Returns the best run's timeline."""
    best = None
    for attempt in range(1, tries + 1):
        trace = run_once()
        got = trace.metrics().concurrency
        if best is None or got > best.metrics().concurrency:
            best = trace
        judged = not on_simulator() or _model_on()
        if best.metrics().concurrency >= minimum or attempt == tries or not judged:
            break
        print(f"{label}: run {attempt} overlapped only {got:.1f}-fold (expected "
              f"{minimum:.1f}); a busy host can stretch one run, so it is measured again")
    concurrency_at_least(best, minimum, label)
    return best


def _model_on() -> bool:
    from .model import simulator_model

    return simulator_model() is not None


# --- rules over what code did, and a part's verdict -------------------------------------
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
        fail(f"{label}: {len(pageable)} of {len(between)} copies between host and "
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
            fail(f"{label}: the host work ran {where}, not on your own thread: a host "
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
            fail(f"{label}: the host work ran only after the GPU's work was done "
                       f"(after {self._ops[done_at].describe()}), so the host sat idle while "
                       f"the GPU worked: do the host work between issuing and waiting, and "
                       f"check for the end between pieces of it")
        return len(busy)


# --- a part's verdict: the vocabulary every lab and exercise check shares ---------------
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
    what = " ".join(f"{type(exc).__name__}: {exc}".split())  # (one line: numba's span several)
    where = _learner_line(exc, functions)
    if where is None and sys.gettrace() is not None:  # (a tracer can make a check's
        # code skip or change lines: a silenced fail() ran on into a crash, issue 56)
        return InternalError(
            f"{label}: the check itself failed ({what}) while a trace function was set "
            f"(sys.settrace: a debugger, or code of yours), which can change what a "
            f"check's code does. Turn it off and run the check again; if it still fails, "
            f"report it (the course's issue tracker, or your teacher)")
    if where is None and isinstance(exc, TypeError):  # Python refused the check's call of
        import inspect  # the learner's function itself: its parameters are not the stub's

        for fn in (f for f in functions
                   if getattr(f, "__name__", None) and f"{f.__name__}()" in str(exc)):
            try:
                theirs = f" (yours takes {fn.__name__}{inspect.signature(fn)})"
            except (TypeError, ValueError):
                theirs = ""
            return CheckFailed(f"{label}: the check called {fn.__name__} as the exercise's stub "
                               f"declares it, and Python refused the call: {exc}{theirs}. "
                               f"Keep the stub's parameters, in its order, and write your "
                               f"code inside")
    if where is None:
        return InternalError(
            f"{label}: the check itself failed ({what}). This is a bug in the course, not "
            f"in your code: please report it (the course's issue tracker, or your "
            f"teacher) with this line and your notebook")
    # the mistake it most likely is, by its message and the calls it went through (58)
    said, tb, calls = str(exc), exc.__traceback__, set()
    while tb is not None:
        calls, tb = calls | {tb.tb_frame.f_code.co_name}, tb.tb_next
    if "CUDA_ERROR_INVALID_HANDLE" in said and calls & {"elapsed_time", "event_elapsed_time"}:
        hint = ("an event made with cuda.event(timing=False) keeps no time. Make both with "
                "cuda.event() (timing is on by default) and record each in the stream")
    elif "launch configuration was not specified" in said:
        hint = ("a launch's blocks and threads must be whole numbers: blocks_for takes a "
                "number of elements, such as blocks_for(d_x.size), not the array")
    else:
        hint = next((h for keys, h in HINTS if any(k in said for k in keys)),
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
        from .order import RaceError

        if isinstance(exc, RaceError):
            raise
        raise _as_one_line(label, exc, functions) from None
    _saw_everything(label)
    print(f"{label}: passed")


def _saw_everything(label: str) -> None:
    """A check that could not see cuda.core's calls (CUPTI was taken by another
    subscriber in the learner's process) cannot pass: a sync it did not see is no proof
    of none."""
    if _device.SIMULATOR:
        return
    from . import _driverwatch

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
    from .order import stream_names

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


def events_read(ms, start, end, what: str) -> float:
    """The figure a learner's function returned, held to what its own events read: the
    records ``start`` and ``end`` (Ops). A figure typed in, or timed on the host's clock,
    is not the events' (they read to half a microsecond; the figure must match to 0.1 us)."""
    if not plain_number(ms):
        fail(f"{what} returned {_what(ms)}: return start.elapsed_time(end), the "
             f"milliseconds between the events")
    measured = start.event.elapsed_time(end.event)
    if abs(ms - measured) > 1e-4 + 1e-6 * measured:
        fail(f"{what} returned {ms:.4f} ms, but its events read {measured:.4f} ms "
                   f"apart: return start.elapsed_time(end)")
    return float(ms)


def once_in(found, stream) -> bool:
    """Is ``found`` (recorded operations) exactly one operation, issued to ``stream``?"""
    return len(found) == 1 and found[0].stream.key() == StreamRef.of(stream).key()
