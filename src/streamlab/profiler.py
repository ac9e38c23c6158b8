"""Ground truth beside the event timeline: CUPTI's own records of the same work.

An event span times a *stream* from one event to the next, and that includes the time
the stream waited for the host to issue the work. CUPTI, NVIDIA's profiling interface,
records what the GPU actually did (each kernel, copy and memset, with its start and end
on the GPU) and what the host's driver calls did (each launch call's start and end).
``streamlab.profile()`` collects those records through ``cupti-python``::

    with streamlab.profile(tl) as prof:      # tl: the Timeline of the same code
        ...                                  # the work, spans and all
    prof.trace()                             # a Trace on tl's time axis, rows named as tl's
    prof.launch_delays()                     # each kernel: launch call's end to its start
    prof.idle()                              # each stream: idle time, and what it waited for

Where CUPTI cannot run (the simulator, no ``cupti-python``, a driver that refuses it),
``profile()`` says so in one line, with what to do, and gives an empty profile.

The records are plain :class:`Record` values, read once from CUPTI's objects, so that a
test can check the parsing and every metric on records captured on a GPU and saved as
JSON (``tests/fixtures/cupti_records.json``, by ``scripts/gpu/capture_cupti_fixture.py``).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .trace import Row, Span, Trace

__all__ = ["Record", "Profile", "ProfileError", "profile", "cupti_status"]

_KINDS = ("kernel", "memcpy", "memset", "sync", "driver")
_COPY_KINDS = {"HTOD": "h2d", "DTOH": "d2h"}  # CUPTI's copy kinds that have a span kind


class ProfileError(RuntimeError):
    """A profile that cannot be read as asked; the message says what to do."""


@dataclass(frozen=True)
class Record:
    """One CUPTI activity record, as plain values. Times are CUPTI's, in ns."""

    kind: str  # kernel, memcpy, memset, sync, driver
    name: str  # the kernel's name, the copy's kind, the sync's type, the API call's name
    start_ns: int
    end_ns: int
    correlation_id: int = 0  # ties a GPU record to the driver call that issued it
    stream_id: int | None = None  # CUPTI's stream id (GPU records, syncs)
    thread_id: int | None = None  # driver calls
    grid: tuple | None = None
    block: tuple | None = None
    bytes: int | None = None
    src: str | None = None  # copies: PAGEABLE, PINNED, DEVICE, ...
    dst: str | None = None

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"record kind {self.kind!r} is not one of {', '.join(_KINDS)}")
        if not self.end_ns >= self.start_ns:
            raise ValueError(f"record {self.name!r} ends ({self.end_ns}) before it starts "
                             f"({self.start_ns})")

    @property
    def duration_ms(self) -> float:
        """How long it took, in ms."""
        return (self.end_ns - self.start_ns) / 1e6

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        d = dict(d)
        for key in ("grid", "block"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        return cls(**d)


def _name(enum_cls, value) -> str:
    try:
        return enum_cls(value).name
    except ValueError:
        return str(value)


def record_from_cupti(a, cupti) -> Record | None:
    """A :class:`Record` from one of cupti-python's activity objects (None for a kind
    the course does not use)."""
    kind = cupti.ActivityKind(a.kind)
    common = dict(start_ns=int(a.start), end_ns=int(a.end),
                  correlation_id=int(getattr(a, "correlation_id", 0)))
    if kind in (cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.KERNEL):
        return Record("kernel", str(a.name), stream_id=int(a.stream_id),
                      grid=(a.grid_x, a.grid_y, a.grid_z),
                      block=(a.block_x, a.block_y, a.block_z), **common)
    if kind == cupti.ActivityKind.MEMCPY:
        return Record("memcpy", _name(cupti.ActivityMemcpyKind, a.copy_kind),
                      stream_id=int(a.stream_id), bytes=int(a.bytes),
                      src=_name(cupti.ActivityMemoryKind, a.src_kind),
                      dst=_name(cupti.ActivityMemoryKind, a.dst_kind), **common)
    if kind == cupti.ActivityKind.MEMSET:
        return Record("memset", "memset", stream_id=int(a.stream_id), bytes=int(a.bytes),
                      dst=_name(cupti.ActivityMemoryKind, a.memory_kind), **common)
    if kind == cupti.ActivityKind.SYNCHRONIZATION:
        stream = int(a.stream_id)
        return Record("sync", _name(cupti.ActivitySynchronizationType, a.type),
                      stream_id=None if stream == 0xFFFFFFFF else stream, **common)
    if kind == cupti.ActivityKind.DRIVER:
        try:
            api = cupti.get_callback_name(cupti.CallbackDomain.DRIVER_API, a.cbid)
        except Exception:  # noqa: BLE001  (an id this CUPTI cannot name)
            api = f"driver call {a.cbid}"
        return Record("driver", str(api), thread_id=int(a.thread_id), **common)
    return None


def cupti_status() -> tuple[bool, str]:
    """Whether ``profile()`` can collect CUPTI records here, and why not."""
    from ._device import on_simulator

    if on_simulator():
        return False, ("CUPTI needs a real GPU and its driver; on the simulator there is "
                       "nothing to profile (the model GPU's timeline is all there is)")
    try:
        import cupti.cupti  # noqa: F401
    except ImportError as e:
        return False, (f"cupti-python is not installed ({e}): pip install cupti-python, "
                       "or the course's extra: pip install -e '.[cupti]'")
    return True, "CUPTI is available through cupti-python"


# --- collecting ----------------------------------------------------------------------
_ENABLED = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION", "DRIVER")
_collecting = threading.Lock()  # one profile at a time: CUPTI's activity API is global


def _clock_pair(cupti) -> tuple[int, float]:
    """CUPTI's clock against the host's perf_counter: (offset ns, uncertainty ms), from
    the tightest of several bracketed readings."""
    best = None
    for _ in range(7):
        h0 = time.perf_counter_ns()
        c = cupti.get_timestamp()
        h1 = time.perf_counter_ns()
        if best is None or h1 - h0 < best[1] - best[0]:
            best = (h0, h1, c)
    h0, h1, c = best
    return c - (h0 + h1) // 2, (h1 - h0) / 2 / 1e6


@contextlib.contextmanager
def profile(timeline=None, *, quiet: bool = False):
    """Collect CUPTI's records of the work issued in the block; yields a :class:`Profile`.

    ``timeline``: the :class:`~streamlab.Timeline` of the same code. The profile's
    trace then uses its time axis and its stream labels. Where CUPTI cannot run, one
    line says why and what to do (unless ``quiet``), and the profile has no records: its
    ``available`` is False, ``reason`` says why, and its metrics raise ProfileError."""
    from .timeline import Timeline

    if timeline is not None and not isinstance(timeline, Timeline):
        raise TypeError(f"profile(timeline) takes the streamlab.Timeline of the same code, "
                        f"not {type(timeline).__name__}")
    ok, why = cupti_status()
    prof = Profile([], available=ok, reason=why)
    if timeline is not None:
        prof.host_origin_s = timeline.host_origin_s
    if not ok:
        if not quiet:
            print(f"streamlab.profile: no CUPTI records here: {why}")
        yield prof
        return
    if not _collecting.acquire(blocking=False):
        raise ProfileError("a streamlab.profile() is already collecting: CUPTI's activity "
                           "records are process-wide, so profiles cannot nest or overlap")
    from cupti import cupti

    from numba import cuda

    raw: list = []
    dropped = [0]
    lock = threading.Lock()

    def requested():
        return 8 * 1024 * 1024, 0

    def completed(activities):
        # never raise here: CUPTI calls this, and an error would lose the buffer's rest
        for a in activities:
            try:
                r = record_from_cupti(a, cupti)
            except Exception:  # noqa: BLE001  (a record CUPTI left incomplete)
                dropped[0] += 1
                continue
            if r is not None:
                with lock:
                    raw.append(r)

    enabled = []
    refused = None
    try:
        cuda.synchronize()  # work issued before the block is not this profile's
        try:
            cupti.activity_register_callbacks(requested, completed)
            for name in _ENABLED:
                cupti.activity_enable(getattr(cupti.ActivityKind, name))
                enabled.append(name)
        except Exception as e:  # noqa: BLE001  (the driver refused CUPTI)
            refused = (f"the driver refused CUPTI ({e}); another profiler (Nsight) may hold "
                       "it, or the driver's profiling permission is off "
                       "(NVreg_RestrictProfilingToAdminUsers)")
        if refused is None:
            offset0, err0 = _clock_pair(cupti)
            begin_ns = cupti.get_timestamp()
            if timeline is None:
                prof.host_origin_s = time.perf_counter()
    except BaseException:
        _stop(cupti, enabled)
        raise
    if refused is not None:
        _stop(cupti, enabled)
        prof.available, prof.reason = False, refused
        if not quiet:
            print(f"streamlab.profile: no CUPTI records here: {refused}")
        yield prof
        return
    try:
        yield prof
        cuda.synchronize()  # the block's work must be done for its records to exist
        offset1, err1 = _clock_pair(cupti)
        cupti.activity_flush_all(1)
    finally:
        _stop(cupti, enabled)
    with lock:
        # CUPTI may hand this session records of an earlier one that it flushed late:
        # keep only what began inside the block
        prof.records = sorted((r for r in raw if r.start_ns >= begin_ns),
                              key=lambda r: (r.start_ns, r.end_ns))
    prof.dropped = dropped[0]
    prof.clock_offset_ns = (offset0 + offset1) // 2  # an int: a float of 1e18 ns is 256 ns coarse
    # the alignment's error: the readings' own, and how far the two clocks drifted
    prof.clock_error_ms = max(err0, err1) + abs(offset1 - offset0) / 2 / 1e6
    prof.streams = _stream_labels(cupti, timeline)


def _stop(cupti, enabled) -> None:
    """Disable what was enabled and let the next profile start, whatever fails."""
    try:
        for name in reversed(enabled):
            cupti.activity_disable(getattr(cupti.ActivityKind, name))
    finally:
        _collecting.release()


def _stream_labels(cupti, timeline) -> dict[int, str]:
    """CUPTI's stream ids of the timeline's streams, with the timeline's labels."""
    if timeline is None:
        return {}
    from numba import cuda

    ctx = cuda.current_context().handle
    ctx = int(getattr(ctx, "value", ctx) or 0)
    labels = {}
    for key, row in timeline._rows.items():
        if isinstance(key, int) and not row.host:
            try:
                sid = cupti.get_stream_id_ex(ctx, key, 0)
            except Exception:  # noqa: BLE001  (a stream CUPTI does not know)
                continue
            labels[int(sid)] = row.label
    return labels


# --- the profile ---------------------------------------------------------------------
@dataclass
class Profile:
    """CUPTI's records of one block of work, and what they tell.

    Times in the methods' results are ms on the host's axis: from ``host_origin_s`` (the
    Timeline's origin when one was given) on ``time.perf_counter()``, to within
    ``clock_error_ms``."""

    records: list
    available: bool = True
    reason: str = ""
    clock_offset_ns: int = 0  # CUPTI ns minus perf_counter ns
    dropped: int = 0  # records CUPTI handed over incomplete, left out
    clock_error_ms: float = 0.0
    host_origin_s: float = 0.0
    streams: dict = field(default_factory=dict)  # CUPTI stream id -> label
    device: str = "GPU"

    # saving and loading (the test fixture)
    def to_json(self, path=None) -> dict:
        """The profile as a JSON-ready dict (written to ``path`` too, if given)."""
        doc = {"records": [asdict(r) for r in self.records],
               "clock_offset_ns": self.clock_offset_ns, "clock_error_ms": self.clock_error_ms,
               "host_origin_s": self.host_origin_s, "device": self.device,
               "streams": {str(k): v for k, v in self.streams.items()}}
        if path is not None:
            Path(path).write_text(json.dumps(doc, indent=1))
        return doc

    @classmethod
    def from_json(cls, doc) -> "Profile":
        """A profile from :meth:`to_json`'s dict, or from the file it wrote."""
        if isinstance(doc, (str, Path)):
            doc = json.loads(Path(doc).read_text())
        return cls([Record.from_dict(r) for r in doc["records"]],
                   clock_offset_ns=int(doc["clock_offset_ns"]), clock_error_ms=doc["clock_error_ms"],
                   host_origin_s=doc["host_origin_s"], device=doc.get("device", "GPU"),
                   streams={int(k): v for k, v in doc.get("streams", {}).items()})

    # times
    def ms(self, ns: float) -> float:
        """A CUPTI time (ns) on the host's axis, in ms from the origin."""
        return (ns - self.clock_offset_ns) / 1e6 - self.host_origin_s * 1000.0

    def of(self, kind: str) -> list:
        """The records of one kind: kernel, memcpy, memset, sync or driver."""
        if kind not in _KINDS:
            raise ValueError(f"record kind {kind!r} is not one of {', '.join(_KINDS)}")
        return [r for r in self.records if r.kind == kind]

    def label(self, stream_id) -> str:
        """The row label of a CUPTI stream id: the Timeline's name for it, if it has one."""
        return self.streams.get(stream_id, f"stream (CUPTI id {stream_id})")

    def _require(self):  # noqa: D401
        if not self.available:
            raise ProfileError(f"this profile has no CUPTI records: {self.reason}")

    @property
    def gpu_records(self) -> list:
        """The kernels, copies and memsets: the work the GPU did."""
        return [r for r in self.records if r.kind in ("kernel", "memcpy", "memset")]

    def _calls(self) -> dict:
        """The driver call that issued each GPU record, by correlation id."""
        return {r.correlation_id: r for r in self.of("driver")}

    # the trace
    def trace(self) -> Trace:
        """The records as a :class:`~streamlab.Trace`: a row per stream (labelled as the
        Timeline's) with its kernels, copies and memsets, and a row of driver calls per
        host thread."""
        self._require()
        spans, rows = [], {}
        for r in self.gpu_records:
            row = self.label(r.stream_id)
            rows.setdefault(row, Row(row, "stream, as CUPTI saw it"))
            if r.kind == "kernel":
                kind, name = "kernel", r.name
            elif r.kind == "memcpy":
                kind = _COPY_KINDS.get(r.name, "other")
                name = f"{r.name} {(r.bytes or 0) / 1e6:.3g} MB ({r.src} to {r.dst})"
            else:
                kind, name = "other", f"memset {(r.bytes or 0) / 1e6:.3g} MB"
            spans.append(Span(name, row, kind, self.ms(r.start_ns), self.ms(r.end_ns)))
        for r in self.of("driver"):
            row = f"host: driver calls (thread {r.thread_id})"
            rows.setdefault(row, Row(row, "driver API calls", host=True))
            spans.append(Span(r.name, row, "host", self.ms(r.start_ns), self.ms(r.end_ns)))
        return Trace(tuple(spans), tuple(rows.values()), device=f"{self.device} (CUPTI)",
                     host_origin_s=self.host_origin_s, clock_uncertainty_ms=self.clock_error_ms)

    # the metrics (after Holistic Trace Analysis' launch statistics and idle time)
    def launch_delays(self) -> list[dict]:
        """Each kernel: the time from the end of the driver call that launched it to its
        start on the GPU (``delay_ms``), split into the time its stream was still busy
        with earlier work (``queued_ms``) and the rest (``latency_ms``: the launch's own
        latency, or a wait for another stream); with its GPU time and the call's."""
        self._require()
        calls = self._calls()
        busy_until: dict = {}  # stream -> end of its work so far, in start order
        out = []
        for r in sorted(self.gpu_records, key=lambda r: r.start_ns):
            prev_end = busy_until.get(r.stream_id)
            busy_until[r.stream_id] = max(prev_end or 0, r.end_ns)
            call = calls.get(r.correlation_id)
            if r.kind != "kernel" or call is None:
                continue
            queued = 0 if prev_end is None else max(0, min(r.start_ns, prev_end) - call.end_ns)
            out.append({"kernel": r.name, "stream": self.label(r.stream_id),
                        "delay_ms": (r.start_ns - call.end_ns) / 1e6,
                        "queued_ms": queued / 1e6,
                        "latency_ms": (r.start_ns - call.end_ns - queued) / 1e6,
                        "gpu_ms": r.duration_ms, "call_ms": call.duration_ms,
                        "start_ms": self.ms(r.start_ns)})
        return out

    def short_kernels(self) -> list[dict]:
        """The kernels whose GPU time is shorter than the driver call that launched them:
        the host, not the GPU, sets the pace of such work."""
        return [d for d in self.launch_delays() if d["gpu_ms"] < d["call_ms"]]

    def idle(self) -> dict[str, dict]:
        """Per stream: its idle time (ms) from the start of the profiled work (the first
        GPU record on any stream) to its own last piece of work, split by what it waited
        for: "host" (the next work was not yet issued), "another stream" (an event wait on
        this stream was issued before the next work) and "other" (issued, not waiting:
        the GPU's own start-up time; or work whose launch call CUPTI did not record)."""
        self._require()
        calls = self._calls()
        waits: dict = {}
        for r in self.of("sync"):
            if r.name == "STREAM_WAIT_EVENT" and r.stream_id is not None:
                waits.setdefault(r.stream_id, []).append(r.start_ns)
        for v in waits.values():
            v.sort()
        by_stream: dict = {}
        for r in self.gpu_records:
            by_stream.setdefault(r.stream_id, []).append(r)
        if not by_stream:
            return {}
        window = min(r.start_ns for r in self.gpu_records)  # the profiled work's start
        out = {}
        for sid, work in by_stream.items():
            work.sort(key=lambda r: r.start_ns)
            split = {"host": 0.0, "another stream": 0.0, "other": 0.0}
            busy_until, prev_issue = window, -1  # before its first work: since the start
            for r in work:
                call = calls.get(r.correlation_id)
                # no driver record (the call came before the profile): when it was issued
                # is unknown, and the gap is counted as "other", never as the host's
                issued = min(call.end_ns, r.start_ns) if call is not None else busy_until
                gap_start, gap_end = busy_until, r.start_ns
                if gap_end > gap_start:
                    host = max(0, min(issued, gap_end) - gap_start)
                    rest = gap_end - gap_start - host
                    w = waits.get(sid, [])
                    waited = bisect.bisect_left(w, issued) > bisect.bisect_right(w, prev_issue)
                    split["host"] += host / 1e6
                    split["another stream" if waited else "other"] += rest / 1e6
                busy_until = max(busy_until, r.end_ns)
                prev_issue = issued
            out[self.label(sid)] = split
        return out

    def queue_depth(self) -> dict[str, list]:
        """Per stream: [(ms, n)], the number of pieces of work issued to it (its driver
        call returned, or it started) and not yet finished on the GPU, after each change."""
        self._require()
        calls = self._calls()
        out = {}
        steps: dict = {}
        for r in self.gpu_records:
            call = calls.get(r.correlation_id)
            # issued when its call returned, or when it started if that was sooner (a copy
            # from pageable memory returns only once the copy is done)
            issued = min(call.end_ns, r.start_ns) if call is not None else r.start_ns
            s = steps.setdefault(r.stream_id, [])
            s += [(issued, 1), (r.end_ns, -1)]
        for sid, s in steps.items():
            s.sort()
            depth, line = 0, []
            for t, d in s:
                depth += d
                line.append((self.ms(t), depth))
            out[self.label(sid)] = line
        return out

    def summary(self) -> str:
        """A few lines: counts, launch delay and idle time, for a notebook to print."""
        if not self.available:
            return f"no CUPTI records: {self.reason}"
        launches = self.launch_delays()
        delays = [d["delay_ms"] for d in launches]
        latency = [d["latency_ms"] for d in launches]
        lines = [f"CUPTI records: {len(self.of('kernel'))} kernels, "
                 f"{len(self.of('memcpy'))} copies, {len(self.of('memset'))} memsets, "
                 f"{len(self.of('driver'))} driver calls; clocks aligned to within "
                 f"{self.clock_error_ms * 1000:.1f} us"]
        if delays:
            lines.append(f"launch delay: median {statistics.median(delays):.3f} ms, "
                         f"largest {max(delays):.3f} ms; without the time queued behind "
                         f"earlier work: median {statistics.median(latency):.3f} ms; "
                         f"{len(self.short_kernels())} kernels shorter than their launch call")
        for row, split in self.idle().items():
            parts = ", ".join(f"{k} {v:.3f} ms" for k, v in split.items())
            lines.append(f"idle on {row}: {parts}")
        return "\n".join(lines)


def compare_spans(prof: Profile, trace: Trace) -> list[dict]:
    """Each GPU span of an event timeline beside the CUPTI kernel it brackets: the span's
    duration, the kernel's, and the difference (ms). A span is matched to the one kernel
    on its row that starts and ends inside it (to within the clocks' error)."""
    prof._require()
    by_row: dict = {}
    for k in prof.of("kernel"):
        by_row.setdefault(prof.label(k.stream_id), []).append(k)
    slack = prof.clock_error_ms + trace.clock_uncertainty_ms + 0.005
    out = []
    for s in trace.spans:
        if s.kind != "kernel" or s.row not in by_row:
            continue
        inside = [k for k in by_row[s.row] if prof.ms(k.start_ns) >= s.start_ms - slack
                  and prof.ms(k.end_ns) <= s.end_ms + slack]
        if len(inside) == 1:
            k = inside[0]
            out.append({"span": s.name, "row": s.row, "span_ms": s.duration_ms,
                        "kernel_ms": k.duration_ms, "difference_ms": s.duration_ms - k.duration_ms,
                        "start_late_ms": prof.ms(k.start_ns) - s.start_ms})
    return out


def cupti_probe() -> tuple[bool, str]:
    """Whether CUPTI works here, tried for real: one tiny kernel profiled (for the doctor)."""
    ok, why = cupti_status()
    if not ok:
        return False, why
    from numba import cuda

    from .spin import spin

    try:
        with profile(quiet=True) as p:
            spin[1, 1](1000)
    except Exception as e:  # noqa: BLE001  (a diagnosis: report any failure)
        return False, f"CUPTI failed: {type(e).__name__}: {e}"
    if not p.available:
        return False, p.reason
    kernels = p.of("kernel")
    if not kernels:
        return False, ("CUPTI ran but recorded no kernel: the driver may not allow profiling "
                       "for this user (NVreg_RestrictProfilingToAdminUsers)")
    cuda.synchronize()
    return True, (f"works: a probe kernel of {kernels[0].duration_ms * 1000:.1f} us recorded, "
                  f"clocks aligned to within {p.clock_error_ms * 1000:.1f} us")
