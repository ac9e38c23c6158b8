"""Plain data for a timeline: spans, rows, and the trace that holds them.

A :class:`Trace` is what a :class:`~streamlab.Timeline` produces once its work is done:
immutable, with every time in milliseconds from the timeline's origin. Everything
that reads a trace (the table, the metrics, the plot, the Chrome trace) works on it
alone, so a trace can be built by hand in a test or a lab check.

>>> from streamlab import Span, Trace
>>> t = Trace.from_spans([Span("k0", "stream 1", "kernel", 0.0, 2.0),
...                       Span("k1", "stream 2", "kernel", 0.5, 2.5)])
>>> round(t.metrics().concurrency, 2)
1.6
>>> t.overlap_ms("k0", "k1")
1.5
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

from .plot import HOST_KINDS, KINDS, check_kind  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class Span:
    """One piece of work: a name, the row it ran on, its kind, start and end in ms."""

    name: str
    row: str
    kind: str
    start_ms: float
    end_ms: float

    def __post_init__(self):
        check_kind(self.kind)
        for field_name in ("start_ms", "end_ms"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"span {self.name!r}: {field_name} must be a number of "
                                f"milliseconds, got {value!r}")
        if not self.end_ms >= self.start_ms:
            raise ValueError(
                f"span {self.name!r} ends ({self.end_ms:.4f} ms) before it starts "
                f"({self.start_ms:.4f} ms): were its start and end events swapped?"
            )

    @property
    def duration_ms(self) -> float:
        """How long it ran, in ms."""
        return self.end_ms - self.start_ms


@dataclass(frozen=True)
class Row:
    """A row of the timeline: a stream, or a host thread."""

    label: str
    detail: str = ""  # e.g. "blocking stream", "host thread"
    host: bool = False


@dataclass(frozen=True)
class Metrics:
    """Summary numbers of a trace, in ms.

    ``busy_ms`` sums the durations of the chosen spans; ``concurrency`` is
    ``busy_ms / makespan_ms``: 1.0 when they ran one after another, about 8 when
    eight equal spans ran at once.
    """

    makespan_ms: float
    busy_ms: float
    concurrency: float
    spans: int

    def __str__(self) -> str:
        return (
            f"makespan {self.makespan_ms:.3f} ms, busy {self.busy_ms:.3f} ms, "
            f"concurrency {self.concurrency:.2f} over {self.spans} spans"
        )


@dataclass(frozen=True)
class Trace:
    """The spans of a finished timeline, its rows, and the device it measured."""

    spans: tuple[Span, ...]
    rows: tuple[Row, ...]
    device: str = "unknown device"
    simulated: bool = False
    device_id: int = 0
    host_origin_s: float = 0.0  # time.perf_counter() at the origin (0 ms)
    clock_uncertainty_ms: float = 0.0  # of the GPU-to-host clock alignment
    notes: tuple[str, ...] = field(default=())
    model: str = ""  # "model of an NVIDIA H200, not a measurement" when it is one

    @property
    def what(self) -> str:
        """What the times are: the device measured, or the model that placed them."""
        if self.model:
            return self.model
        if self.simulated:
            return f"{self.device} (sequential, host clock: not GPU timing)"
        return self.device

    @classmethod
    def from_spans(cls, spans, **kwargs) -> "Trace":
        """A trace from spans alone; rows appear in order of first use.

        A row whose first span is host work (kind "host" or "hostfn") is a host
        thread's row.
        """
        rows: dict[str, Row] = {}
        for s in spans:
            rows.setdefault(s.row, Row(s.row, host=s.kind in HOST_KINDS))
        return cls(tuple(spans), tuple(rows.values()), **kwargs)

    # --- looking things up -------------------------------------------------------
    def span(self, name: str) -> Span:
        """The one span called ``name``; an error if there is none or several."""
        found = [s for s in self.spans if s.name == name]
        if not found:
            names = ", ".join(sorted({s.name for s in self.spans})) or "none"
            raise KeyError(f"no span called {name!r}; the spans are: {names}")
        if len(found) > 1:
            raise KeyError(
                f"{len(found)} spans are called {name!r}; give them distinct names "
                f"to refer to one"
            )
        return found[0]

    @property
    def host_rows(self) -> set[str]:
        """The labels of the host threads' rows."""
        return {r.label for r in self.rows if r.host}

    def on_row(self, row: str) -> list[Span]:
        """The spans on row ``row``, in the order recorded."""
        return [s for s in self.spans if s.row == row]

    def select(self, kinds=None, rows=None) -> list[Span]:
        """Spans of the given kinds and rows (None: all)."""
        if kinds is not None:
            kinds = {check_kind(k) for k in ([kinds] if isinstance(kinds, str) else kinds)}
        if rows is not None:
            rows = {rows} if isinstance(rows, str) else set(rows)
            known = {r.label for r in self.rows}
            unknown = rows - known
            if unknown:
                raise KeyError(f"no row called {sorted(unknown)}; the rows are {sorted(known)}")
        return [
            s for s in self.spans
            if (kinds is None or s.kind in kinds) and (rows is None or s.row in rows)
        ]

    # --- numbers ---------------------------------------------------------------
    def metrics(self, kinds=None, rows=None, include_host: bool = False) -> Metrics:
        """Makespan, busy time and concurrency of the chosen spans.

        By default all spans on stream rows; pass ``kinds`` or ``rows`` to choose,
        or ``include_host=True`` to count the host threads' rows too.
        """
        spans = self.select(kinds, rows)
        if not include_host and rows is None:
            host = self.host_rows
            spans = [s for s in spans if s.row not in host]
        if not spans:
            raise ValueError("no spans to measure: the trace (or the selection) is empty")
        start = min(s.start_ms for s in spans)
        end = max(s.end_ms for s in spans)
        makespan = end - start
        busy = sum(s.duration_ms for s in spans)
        return Metrics(makespan, busy, busy / makespan if makespan > 0 else 1.0, len(spans))

    def overlap_ms(self, a: str, b: str) -> float:
        """How long spans ``a`` and ``b`` (by name) ran at the same time, in ms."""
        sa, sb = self.span(a), self.span(b)
        return max(0.0, min(sa.end_ms, sb.end_ms) - max(sa.start_ms, sb.start_ms))

    # --- views -----------------------------------------------------------------
    def table(self) -> str:
        """A fixed-width table of the spans, in start order."""
        head = ("name", "row", "kind", "start ms", "end ms", "ms")
        lines = [
            (s.name, s.row, s.kind, f"{s.start_ms:.3f}", f"{s.end_ms:.3f}", f"{s.duration_ms:.3f}")
            for s in sorted(self.spans, key=lambda s: (s.start_ms, s.row))
        ]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *lines, strict=True)]
        right = {3, 4, 5}

        def fmt(row):
            return "  ".join(
                str(x).rjust(w) if i in right else str(x).ljust(w)
                for i, (x, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()

        out = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in lines]
        return "\n".join(out)

    def plot(self, **kwargs):
        """Draw the trace as a Gantt chart; see :func:`streamlab.plot`."""
        from .plot import plot

        return plot(self, **kwargs)

    def to_chrome_trace(self, path=None):
        """Chrome trace JSON (for Perfetto); see :func:`streamlab.to_chrome_trace`."""
        from .chrome import to_chrome_trace

        return to_chrome_trace(self, path)

    def __str__(self) -> str:
        return self.table()
