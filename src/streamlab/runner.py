"""One way to run a check: record what the learner's function did, then judge it.

An exercise or a lab part is written as its data and the few rules that are its own (a
:class:`Check`); the runner does the rest, the same way for every check:

* **the run**, in the learner's process (:func:`run`): the check's inputs are made, the
  check's own work is put first (streams kept busy, so that a missing wait shows), the
  learner's function is called under :func:`streamlab.record_ops`, the device is waited
  for, and what came out is collected as a :class:`~streamlab.transcript.Run` (the
  operations, the streams given, the outputs copied back, what the function returned,
  plain data the check read itself, such as a captured graph's shape);
  under the grader the run is also sent to it (:func:`streamlab.transcript.send`),
  with the timings the check measured as plain data (the best of three runs' spans for a
  check with ``overlap``; ``measure``'s numbers, taken once every other rule has passed);
* **the judge** (:meth:`Check.judge`), from the Run and the check's arguments alone: the
  check's own rules, then the rules every check shares: no races, and every output equal
  to the value the check expects, made from its arguments (a seed, say), not from the
  learner's process; last, the timings the run sent (``overlap``, ``timing``). The grader
  judges the transcript again in its own process with the same method (a lab module's
  ``JUDGES``).

A check function stays an ordinary function with its own signature (the grader reads its
defaults), whose body is one call::

    PART1 = Check(1, "streamlab.labs.lab02.check_part1", arrange=_part1_inputs,
                  rules=_part1_rules, expected=_part1_expected, seeded=True)

    def check_part1(produce_then_consume, *, nonblocking=False, seed=None):
        run(PART1, produce_then_consume, nonblocking=nonblocking, seed=seed)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
from numba import cuda

from .check import (best_concurrency_at_least, fail, measured_spans, no_races, part,
                    spans_overlap, time_per_stream)
from .ops import internal, record_ops
from .order import analyze
from .transcript import Run, copied, pick_seed, send


#: what the runner's wait for the device says where the learner's code left a capture open
_LEFT_OPEN = ("your code left a graph capture open (begin_building() with no end_building()), "
              "so the GPU refuses every synchronize ({error}). End every capture you begin, "
              "then restart the kernel (Kernel > Restart) to clear this one")


@dataclass
class Inputs:
    """What a check's ``arrange`` makes for one run.

    ``call(fn)`` calls the learner's function with them (``call(*functions)``, where the
    check takes more than one) and returns what it returned (inside the recording; it may
    issue the check's own work around the call, marked :func:`streamlab.ops.internal`).
    ``busy`` is the check's own work put first: (stream, nanoseconds of
    :func:`streamlab.spin`) pairs. ``streams`` and ``outputs`` are what the Run carries by
    name: the streams the function was given, and the arrays copied back once the device
    is done (device arrays; host arrays the copies filled). ``returned(value)`` turns what
    the function returned into the Run's ``(values, events)``, or ``(values, events,
    outputs)`` where it returned arrays the judge compares as outputs (a list or tuple is
    copied as it was when the function returned: what a host function fills in later is
    not read). ``data``: plain values (str, int, float, bool, lists, dicts) the check reads
    itself while the function runs (a graph's shape), sent to the grader as they are."""

    call: Callable
    streams: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    busy: tuple = ()
    returned: Callable | None = None
    #: the expected outputs, made here (from random inputs) by a check that only the
    #: learner's process judges; a check the grader judges again makes them in ``expected``
    expected: dict | None = None
    #: the streams timed, one span each, for a check that judges their overlap
    timed: tuple = ()
    #: after(run, trace, functions): what the check does once the judge has passed, in the
    #: learner's process (reads the GPU's clock, times the learner's functions again),
    #: failing with check.fail; ``trace`` is the timed streams' (None without them)
    after: Callable | None = None
    #: a list the runner puts the recording into (its OpLog, filling as the code runs)
    #: before the call, for a call that waits on what was recorded so far
    live: list | None = None
    data: dict = field(default_factory=dict)
    #: measure(trace, functions) -> dict: plain values read once the device is done (the
    #: GPU's clock, the timed streams' spans; ``trace`` as for ``after``), added to the
    #: run's data before it is sent, so that the judge applies the thresholds. For a check
    #: with timings (``Check.timing`` or ``overlap``) it runs once every other rule has
    #: passed, and may time the learner's ``functions`` again (on a GPU)
    measure: Callable | None = None


@dataclass(frozen=True)
class Check:
    """One exercise or lab part, as data: its number, the name the grader knows it by,
    how its inputs are made (``arrange(**kwargs)`` -> :class:`Inputs`), its own rules
    (``rules(run, order, **kwargs)``, failing with :func:`streamlab.check.fail`), the
    rules on what it returned, judged once the race check has passed (``values(run,
    order, **kwargs)``), and its expected outputs (``expected(**kwargs)`` -> {output
    name: (expected array, label)})."""

    number: int
    name: str | None  # the grader's name for a check it judges again; None: judged here only
    arrange: Callable
    rules: Callable
    expected: Callable | None = None
    values: Callable | None = None  # values(run, order, **kwargs): returned values' rules
    what: str = "Part"
    seeded: bool = False  # a ``seed`` argument, drawn when None (pick_seed) and sent
    races: dict = field(default_factory=dict)  # no_races' options (parts_of_one_array)
    named_races: bool = False  # a race names the streams by the Run's names for them
    #: overlap(**kwargs) -> (minimum concurrency, label): the timed streams' spans must
    #: overlap that much, in the best of three runs (check.best_concurrency_at_least)
    overlap: Callable | None = None
    tolerance: dict = field(default_factory=dict)  # check.equal's rtol and atol
    #: timing(run, **kwargs): the rules on the timings in the run's data, judged last
    timing: Callable | None = None

    def judge(self, run: Run, expected: dict | None = None, **kwargs) -> None:
        """The verdict on ``run``: the check's own rules, no races, what the function
        returned, the expected outputs (``expected``, where the run made them, else the
        check's own ``expected(**kwargs)``), then the timings it sent
        (:meth:`judge_timing`)."""
        order = analyze(run.ops)
        self.rules(run, order, **kwargs)
        no_races(run.ops, order, **self.races,
                 **({"names": run.streams} if self.named_races else {}))
        if self.values is not None:
            self.values(run, order, **kwargs)
        if expected is None and self.expected is not None:
            expected = self.expected(**kwargs)
        for name, (want, label) in (expected or {}).items():
            run.equal(name, want, label, **self.tolerance)
        if self.overlap is not None or self.timing is not None:
            self.judge_timing(run, **kwargs)

    def judge_timing(self, run: Run, **kwargs) -> None:
        """The rules on the timings the run sent as data: the timed streams' spans
        (``spans``) overlapping as much as ``overlap`` asks, and ``timing``'s rules."""
        if self.overlap is not None:
            spans_overlap(run.data.get("spans"), len(run.streams), *self.overlap(**kwargs))
        if self.timing is not None:
            self.timing(run, **kwargs)


def run(check: Check, *functions, **kwargs) -> None:
    """Run ``check`` on the learner's functions (most checks take one) with the check's
    arguments: print ``Part N: passed`` (or ``Exercise N``), ``not done yet`` while a
    function raises NotImplementedError, or fail with CheckFailed saying what is wrong."""
    with part(check.number, *functions, what=check.what):
        if check.seeded:
            kwargs["seed"] = pick_seed(kwargs.get("seed"))
        if check.overlap is None:
            once(check, functions, kwargs)
            return
        minimum, label = check.overlap(**kwargs)
        tried = {}  # trace -> its run: the best run is sent, its spans judged there again

        def attempt():
            trace, collected = once(check, functions, kwargs)
            tried[id(trace)] = collected
            return trace

        best = best_concurrency_at_least(attempt, minimum, label)
        if check.name is not None:
            send(check.name, kwargs, tried[id(best)])


def once(check: Check, functions: tuple, kwargs: dict):
    """One run of the functions on fresh inputs, judged; the timed streams' trace, if
    any. A check with timings (``timing`` or ``overlap``) judges everything else first,
    so that a wrong answer is not timed, then measures (``measure``), sends the run and
    judges its timings; one with ``overlap`` returns (trace, run) unsent instead, the
    spans in the run's data, for :func:`run` to send the best run."""
    inputs = check.arrange(**kwargs)
    with contextlib.ExitStack() as stack:
        # recording first, then timing: the spans hold the learner's code alone, not the
        # recorder's start (its first in a process took 280 ms on an H200: lab 08's right
        # answers failed when graded), and they end as soon as the code returns
        ops = stack.enter_context(record_ops())
        timing = stack.enter_context(time_per_stream(inputs.timed)) if inputs.timed else None
        if inputs.live is not None:
            inputs.live[:] = [ops]
        if inputs.busy:
            from .spin import spin

            with internal():
                for stream, ns in inputs.busy:
                    spin[1, 1, stream](ns)
        # what the function returned, as it was when it returned (before anything else runs)
        value = _as_returned(inputs.call(*functions))
    values, events, *returned = (inputs.returned(value) if inputs.returned is not None
                                 else ({}, {}))
    if inputs.outputs or inputs.measure is not None:  # read once the device is done
        synchronized(_LEFT_OPEN)
    outputs = {name: _fetched(array) for name, array in inputs.outputs.items()}
    trace = timing[0] if timing is not None else None
    collected = Run(ops, inputs.streams, {**outputs, **(returned[0] if returned else {})},
                    values, events, inputs.data)
    timed = check.overlap is not None or check.timing is not None
    if timed:  # (the check without its timings: a wrong answer is not timed)
        replace(check, overlap=None, timing=None).judge(collected, inputs.expected, **kwargs)
        if trace is not None:
            collected.data["spans"] = measured_spans(trace)
    if inputs.measure is not None:
        collected.data.update(inputs.measure(trace, functions))
    if check.overlap is not None:
        return trace, collected
    if check.name is not None:  # a check the grader judges again: it gets the Run
        collected = send(check.name, kwargs, collected)
    (check.judge_timing(collected, **kwargs) if timed
     else check.judge(collected, inputs.expected, **kwargs))
    if inputs.after is not None:
        inputs.after(collected, trace, functions)
    return trace


def _as_returned(value):
    """A list or tuple the learner's function returned, copied as it is now (its items
    as they are), so that what code fills in later does not count; anything else as it
    is."""
    if isinstance(value, list):
        return list(value)
    return tuple(value) if isinstance(value, tuple) else value


def synchronized(open_capture: str) -> None:
    """``cuda.synchronize()``, failing with ``open_capture`` (its ``{error}``, the GPU's
    refusal) where a graph capture is open in the process: every synchronize is refused
    then, and the check's own error would read as the course's bug."""
    try:
        cuda.synchronize()
    except Exception as exc:  # noqa: BLE001  (numba's and the simulator's errors alike)
        if "CAPTURE" not in str(exc):
            raise
        fail(open_capture.format(error=exc))


def _fetched(array):
    """An output as the judge reads it: a device array copied to the host (by its class's
    own copy, not one the learner's code put on it), a host array copied as it is now."""
    if isinstance(array, np.ndarray):
        return np.array(array, copy=True)
    return copied(array)
