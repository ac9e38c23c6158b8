"""What a graded check sends the grader, so that the verdict is made outside the learner's
process (issue 32, item 1).

A check that is *judged in the grader* is written in two halves:

* the **run** (in the learner's process): it makes the inputs, calls the learner's
  function under :func:`streamlab.record_ops`, and collects what came out: a
  :class:`Run`, the recorded operations, the streams the function was given, the output
  arrays and any plain values it returned;
* the **judge**: a function of that :class:`Run` and the check's own arguments, with
  every rule (no host wait, the order of operations, no races, the values) and the
  expected values, which it makes itself from the check's seed.

In a notebook both halves run in the learner's kernel, as any check does. Under the
grader (:func:`streamlab.grading.run_part`), the run also :func:`send`\\ s its
:class:`Run` to the grader as a *transcript* (format :data:`FORMAT`, below), and the
grader judges each transcript again in its own process, which never runs learner code:
whatever the learner's code did to the checks, to streamlab or to the grader's own
functions in its process, the grade is the judge's verdict on what the grader received.
A lab module lists its judged checks in ``JUDGES`` (check name -> judge, label).

The transcript, version 3, one per call of a judged check, in the order of the calls: a
dict of plain values (str, int, float, bool, None, lists, dicts), written as a Python
literal and read with :func:`ast.literal_eval`:

* ``format``: 3; ``check``: ``"streamlab.labs.lab02.check_part1"``; ``kwargs``: the
  check's keyword arguments as called (a seed the call left out is the one the check
  drew);
* ``ops``: each recorded operation (:class:`streamlab.ops.Op`): its fields, with its stream
  as a dict of :class:`~streamlab.streams.StreamRef`'s fields, its regions as dicts of
  :class:`~streamlab.regions.Region`'s, its event as a number (the same event, the same
  number) and its ``detail`` with plain values only (others as their ``repr``);
* ``streams``: the streams the check gave the learner's function, by name, as StreamRefs;
* ``outputs``: each output array as its dtype, shape and SHA-256 of its bytes: the judge
  compares them with the expected array's, exactly (the judged checks' results are
  whole numbers in floats, exact on any GPU);
* ``values``: plain values the function returned (an int stays an int; anything else is
  sent as its type's name and its ``repr``);
* ``events``: events the function returned, by name, as their numbers (the numbers the
  operations use);
* ``data``: plain values the check read or measured itself (lab 07's captured graph's
  shape, :meth:`streamlab.graph_types.GraphShape.plain`; the timings of labs 01, 04, 05
  and 08: streams' spans, times waited, an event loop's turns, a GPU's clock), as they
  are: the judge applies the thresholds.

What stays possible: the record is made in the learner's process. Code there can
rewrite it before the check reads it (a few lines that find the check's log through its
frame and delete a host wait from it pass lab 02's first part: kept as an expected
failure in ``tests/test_transcript.py``), or reach the grader's pipe and send a
transcript of its own making. Either way, what it sends must still hold operations the
judge's rules accept and, where outputs are judged, the expected bytes. What no longer
works is writing a verdict, or replacing a check, a rule or the grader's functions in the
learner's process: the grader's judge reads none of them.
"""

from __future__ import annotations

import ast
import hashlib
import secrets
from dataclasses import dataclass, field

import numpy as np

FORMAT = 3  # 1 had no "events", 2 no "data"

#: where :func:`send` writes: set by the grader's child process (``_child.main``, through
#: :func:`send_to`), else None
_sink = None


def send_to(sink) -> None:
    """Send every transcript :func:`send` makes to ``sink(text)`` (the grader's child
    process sets it once, before it imports the rest of streamlab)."""
    global _sink
    _sink = sink


class TranscriptError(ValueError):
    """A transcript that is not in the format: what was wrong."""


@dataclass(frozen=True)
class Digest:
    """An output array as the grader receives it: dtype, shape and the SHA-256 of its bytes."""

    dtype: str
    shape: tuple
    sha256: str

    @classmethod
    def of(cls, array) -> "Digest":
        """The digest of ``array`` (C order)."""
        a = np.ascontiguousarray(np.asarray(array))
        return cls(a.dtype.str, tuple(int(n) for n in a.shape),
                   hashlib.sha256(a.tobytes()).hexdigest())


@dataclass(frozen=True)
class Foreign:
    """A value the learner's function returned that is not an int: its type and repr."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass
class Run:
    """What a check's run half collected: the operations recorded, the streams given to the
    learner's function (by name), its output arrays, the plain values it returned, and
    the events it returned (by name; the same object as in the operations that recorded
    or waited on it). In the learner's process the streams are numba streams and the
    outputs arrays; in the grader, StreamRefs and :class:`Digest`\\ s, and each event
    the object its operations share. ``data``: plain values the check read itself."""

    ops: object
    streams: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    events: dict = field(default_factory=dict)  # name -> an event the function returned
    data: dict = field(default_factory=dict)

    def stream(self, name: str):
        """The stream given to the learner's function under ``name``."""
        return self.streams[name]

    def key(self, name: str):
        """What identifies stream ``name`` (:meth:`~streamlab.streams.StreamRef.key`), in the
        learner's process and in the grader alike."""
        from .streams import StreamRef

        return StreamRef.of(self.streams[name]).key()

    def type_name(self, name: str) -> str:
        """The type of returned value ``name``, by name (as the learner's process saw it)."""
        value = self.values[name]
        return value.type_name if isinstance(value, Foreign) else type(value).__name__

    def equal(self, name: str, expected, label: str, **tolerance) -> None:
        """Output ``name`` equals ``expected`` (exactly, when it came as a digest; else
        as :func:`streamlab.check.equal` with ``rtol`` and ``atol``, if given)."""
        from . import check

        got = self.outputs[name]
        if not isinstance(got, Digest):
            check.equal(got, expected, label, **tolerance)
            return
        want = np.asarray(expected)
        if tuple(want.shape) != got.shape:
            check.fail(f"{label}: expected shape {tuple(want.shape)}, got {got.shape}")
        if Digest.of(want.astype(np.dtype(got.dtype), copy=False)) != got:
            check.fail(f"{label}: the values the grader received are not the expected ones")


def copied(array):
    """``array`` copied to the host through its class's own ``copy_to_host``: a method the
    learner's code put on the array itself is not the copy."""
    return type(array).copy_to_host(array)


def plain_int(value) -> bool:
    """Is ``value`` a Python int or one of numpy's own integers (not a subclass of either,
    whose conversion would run the learner's code)?"""
    return type(value) is int or (isinstance(value, np.integer)
                                  and type(value).__module__ == "numpy")


def pick_seed(seed):
    """``seed``, or a fresh one when it is None: the judge makes its expected values from
    the seed the check used, so the check always uses one it can send."""
    if seed is None:
        return secrets.randbelow(2**31)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a whole number or None, not {type(seed).__name__} "
                        f"{seed!r}")
    return int(seed)


def send(check: str, kwargs: dict, run: Run) -> Run:
    """Send ``run`` to the grader as check ``check``'s transcript (when the grader is
    listening; else nothing); returns ``run``."""
    if _sink is not None:
        _sink(encode(check, kwargs, run))
    return run


# --- plain values ---------------------------------------------------------------------
_PLAIN = (str, int, float, bool, type(None))


def _plain(value, depth: int = 0):
    """``value`` made of plain types only (a str subclass made a str, an unknown object
    its repr): what the literal may hold."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if np.isfinite(value) else repr(value)  # literal_eval reads no nan
    if isinstance(value, str):
        return str.__add__("", value)
    if depth < 4 and isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if depth < 4 and isinstance(value, dict):
        return {str.__add__("", str(k)): _plain(v, depth + 1) for k, v in value.items()}
    return str.__add__("", repr(value))


def _stream_dict(ref) -> dict | None:
    if ref is None:
        return None
    return {"handle": int(ref.handle), "kind": _plain(ref.kind), "thread": _plain(ref.thread),
            "device": int(ref.device), "priority": int(ref.priority)}


def _region_dict(r) -> dict:
    return {"lo": int(r.lo), "hi": int(r.hi), "what": _plain(r.what), "alloc": int(r.alloc),
            "host": bool(r.host),
            "parts": None if r.parts is None else [[int(a), int(b)] for a, b in r.parts]}


def encode(check: str, kwargs: dict, run: Run) -> dict:
    """``run`` as a transcript (a dict of plain values; see the module's docstring)."""
    from .streams import StreamRef

    events: dict = {}
    ops = []
    for op in run.ops:
        ev = None
        if op.event is not None:
            ev = events.setdefault(id(op.event), (len(events) + 1, op.event))[0]
        ops.append({
            "index": int(op.index), "kind": _plain(op.kind), "name": _plain(op.name),
            "stream": _stream_dict(op.stream), "event": ev,
            "pinned": None if op.pinned is None else bool(op.pinned),
            "thread": _plain(op.thread), "blocking": bool(op.blocking),
            "internal": bool(op.internal),
            **{k: [_region_dict(r) for r in getattr(op, k)]
               for k in ("reads", "writes", "atomics", "host_reads")},
            "where": _plain(op.where), "detail": _plain(dict(op.detail)), "uid": int(op.uid)})
    returned = {}
    for name, event in run.events.items():
        if event is not None:  # (None: what was returned is not an event)
            returned[name] = events.setdefault(id(event), (len(events) + 1, event))[0]
    values = {}
    for name, value in run.values.items():
        if plain_int(value):
            values[name] = int(value)
        else:  # (a type of the learner's own could run its code in repr: then the
            # object's, by type and id)
            own = type(value).__module__ in ("builtins", "numpy")
            values[name] = {"type": str.__add__("", type(value).__name__),
                            "repr": str.__add__("", repr(value) if own
                                                else object.__repr__(value))}
    return {"format": FORMAT, "check": _plain(check), "kwargs": _plain(dict(kwargs)),
            "ops": ops,
            "streams": {n: _stream_dict(StreamRef.of(s))
                        for n, s in run.streams.items()},
            "outputs": {n: {"dtype": d.dtype, "shape": list(d.shape), "sha256": d.sha256}
                        for n, d in ((n, Digest.of(a)) for n, a in run.outputs.items())},
            "values": values, "events": returned, "data": _plain(dict(run.data))}


def write(entry: dict) -> str:
    """One transcript as the text the grader reads back with :func:`read`."""
    return repr(entry)


def read(text: str) -> dict:
    """A transcript's text back to its dict; TranscriptError if it is not a literal."""
    try:
        entry = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise TranscriptError(f"not a transcript: {type(exc).__name__}") from None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        raise TranscriptError(f"not a transcript of format {FORMAT}")
    return entry


# --- back to objects, in the grader ---------------------------------------------------
def _need(d, key, types, where):
    if not isinstance(d, dict) or key not in d:
        raise TranscriptError(f"{where}: no {key!r}")
    value = d[key]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in
                                        (types if isinstance(types, tuple) else (types,))):
        raise TranscriptError(f"{where}: {key!r} is {type(value).__name__}")
    return value


def _stream(d, where):
    from .streams import StreamRef

    if d is None:
        return None
    return StreamRef(_need(d, "handle", int, where), _need(d, "kind", str, where),
                     _need(d, "thread", str, where), _need(d, "device", int, where),
                     _need(d, "priority", int, where))


def _region(d, where):
    from .regions import Region

    parts = d.get("parts") if isinstance(d, dict) else None
    if parts is not None:
        if not isinstance(parts, list) or not all(
                isinstance(p, list) and len(p) == 2 and all(type(x) is int for x in p)
                for p in parts):
            raise TranscriptError(f"{where}: 'parts' is not a list of [lo, hi] pairs")
        parts = tuple((a, b) for a, b in parts)
    return Region(_need(d, "lo", int, where), _need(d, "hi", int, where),
                  _need(d, "what", str, where), _need(d, "alloc", int, where),
                  _need(d, "host", bool, where), parts)


class _Event:
    """An event in a transcript: the same number, the same object."""

    def __init__(self, number: int):
        self.number = number

    def __repr__(self) -> str:
        return f"<event {self.number}>"


def decode(entry: dict) -> Run:
    """A transcript back to a :class:`Run` the judge reads: an OpLog of Ops, StreamRefs,
    Digests and plain values (TranscriptError if anything is missing or of a wrong type)."""
    from .ops import OP_KINDS, Op, OpLog

    events: dict = {}
    log = OpLog()
    for i, d in enumerate(_need(entry, "ops", list, "the transcript")):
        where = f"operation {i}"
        kind = _need(d, "kind", str, where)
        if kind not in OP_KINDS:
            raise TranscriptError(f"{where}: unknown kind {kind!r}")
        ev = d.get("event")
        if ev is not None:
            if type(ev) is not int:
                raise TranscriptError(f"{where}: 'event' is {type(ev).__name__}")
            ev = events.setdefault(ev, _Event(ev))
        pinned = d.get("pinned")
        if pinned is not None and type(pinned) is not bool:
            raise TranscriptError(f"{where}: 'pinned' is {type(pinned).__name__}")
        log.append(Op(
            index=_need(d, "index", int, where), kind=kind, name=_need(d, "name", str, where),
            stream=_stream(d.get("stream"), where), event=ev, pinned=pinned,
            thread=_need(d, "thread", str, where), blocking=_need(d, "blocking", bool, where),
            internal=_need(d, "internal", bool, where),
            **{k: tuple(_region(r, where) for r in _need(d, k, list, where))
               for k in ("reads", "writes", "atomics", "host_reads")},
            where=_need(d, "where", str, where), detail=_need(d, "detail", dict, where),
            uid=_need(d, "uid", int, where)))
    streams = {n: _stream(s, f"stream {n!r}")
               for n, s in _need(entry, "streams", dict, "the transcript").items()}
    outputs = {}
    for n, d in _need(entry, "outputs", dict, "the transcript").items():
        shape = _need(d, "shape", list, f"output {n!r}")
        if not all(type(x) is int for x in shape):
            raise TranscriptError(f"output {n!r}: 'shape' is not whole numbers")
        outputs[n] = Digest(_need(d, "dtype", str, f"output {n!r}"), tuple(shape),
                            _need(d, "sha256", str, f"output {n!r}"))
    values = {}
    for n, v in _need(entry, "values", dict, "the transcript").items():
        if type(v) is int:
            values[n] = v
        elif isinstance(v, dict):
            values[n] = Foreign(_need(v, "type", str, f"value {n!r}"),
                                _need(v, "repr", str, f"value {n!r}"))
        else:
            raise TranscriptError(f"value {n!r} is {type(v).__name__}")
    returned = {}
    for n, v in _need(entry, "events", dict, "the transcript").items():
        if type(v) is not int:
            raise TranscriptError(f"event {n!r} is {type(v).__name__}")
        returned[n] = events.setdefault(v, _Event(v))
    return Run(log, streams, outputs, values, returned,
               _need(entry, "data", dict, "the transcript"))
