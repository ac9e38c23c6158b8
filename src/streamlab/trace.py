"""A timeline's trace: plain data (spans, rows, metrics), and two ways to look at it.

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

What a trace looks like (below the data): the kinds of span, each with one colour
everywhere in the course (:data:`KINDS`, :data:`COLOURS`); one trace from what ``plot``
and ``to_chrome_trace`` accept (:func:`as_trace`: a Trace, a Timeline, or a list of them,
drawn one above the other); the drawing, a Gantt chart with one row per stream or host
thread; and the Chrome trace JSON that Perfetto (ui.perfetto.dev) opens, each row a named
thread of one process named after the device, each span a complete ("X") event with its
kind as category, times in microseconds.

>>> import matplotlib; matplotlib.use("Agg")
>>> from streamlab import plot, to_chrome_trace
>>> t = Trace.from_spans([Span("copy", "stream 1", "h2d", 0, 1),
...                       Span("kernel", "stream 1", "kernel", 1, 3)], device="demo")
>>> plot(t).get_title()
'demo: makespan 3.000 ms'
>>> [e for e in to_chrome_trace(t)["traceEvents"] if e["ph"] == "X"][1]["dur"]
2000.0
>>> check_kind("kernel")
'kernel'
"""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass, field, replace
from pathlib import Path



# --- the kinds of span ---------------------------------------------------------------
KINDS = {
    "h2d": "host-to-device copy",
    "kernel": "kernel",
    "d2h": "device-to-host copy",
    "hostfn": "host function (run by a stream)",
    "host": "host work",
    "wait": "wait",
    "other": "other GPU work",
}
HOST_KINDS = ("host", "hostfn")  # kinds a span on a host thread's row may have

# A fixed colour per kind (matplotlib's tab10), so every plot in the course reads alike.
COLOURS = {
    "h2d": "#1f77b4",  # blue
    "kernel": "#2ca02c",  # green
    "d2h": "#ff7f0e",  # orange
    "hostfn": "#9467bd",  # purple
    "host": "#7f7f7f",  # grey
    "wait": "#d62728",  # red
    "other": "#8c564b",  # brown
}


def check_kind(kind: str) -> str:
    """``kind`` if it is one of :data:`KINDS`; a ValueError that lists them if not."""
    if kind not in KINDS:
        choices = ", ".join(repr(k) for k in KINDS)
        raise ValueError(f"unknown span kind {kind!r}: use one of {choices}")
    return kind



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
        return plot(self, **kwargs)

    def to_chrome_trace(self, path=None):
        """Chrome trace JSON (for Perfetto); see :func:`streamlab.to_chrome_trace`."""
        return to_chrome_trace(self, path)

    def __str__(self) -> str:
        return self.table()


# --- one trace from a Trace, a Timeline or a list of them -------------------------
def _is_trace(obj) -> bool:
    return hasattr(obj, "spans") and hasattr(obj, "rows")


def as_trace(obj, what: str = "plot"):
    """``obj`` (a Trace, a Timeline, or a list or tuple of them) as one trace."""
    if isinstance(obj, (str, bytes)) or hasattr(obj, "__fspath__"):
        raise TypeError(f"{what} takes a Trace or a Timeline (or a list of them), not the "
                        f"path {obj!r}: to write a file, pass the path as the second argument")
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    if not items:
        raise ValueError(f"nothing to {what}: an empty list")
    traces = []
    for item in items:
        if hasattr(item, "trace") and not _is_trace(item):
            item = item.trace()
        if not _is_trace(item):
            raise TypeError(f"{what} takes a Trace or a Timeline (or a list of them), "
                            f"got {item!r}")
        traces.append(item)
    return traces[0] if len(traces) == 1 else _merge(traces)


def _merge(traces):
    """Several traces on one axis (aligned on the host clock), each row prefixed by its
    GPU, or by its timeline's number when they measured the same device."""
    base = min(t.host_origin_s for t in traces)
    ids = [t.device_id for t in traces]
    distinct = len(set(ids)) == len(ids)
    rows, spans = [], []
    for i, t in enumerate(traces, 1):
        shift = (t.host_origin_s - base) * 1000.0
        prefix = f"GPU {t.device_id}: " if distinct else f"timeline {i}: "
        rows += [replace(r, label=prefix + r.label) for r in t.rows]
        spans += [replace(s, row=prefix + s.row, start_ms=s.start_ms + shift,
                          end_ms=s.end_ms + shift) for s in t.spans]
    names = sorted({t.device for t in traces})
    return replace(traces[0], spans=tuple(spans), rows=tuple(rows),
                   device=" + ".join(names), simulated=any(t.simulated for t in traces),
                   host_origin_s=base,
                   model=" + ".join(sorted({t.model for t in traces if t.model})))


# --- the drawing ---------------------------------------------------------------------
SIM_MARK = "simulator: sequential, not GPU timing"
MIN_BAR = 0.0025  # the shortest bar drawn, as a fraction of the time axis


def plot(trace, ax=None, *, title: str | None = None, labels: bool = True,
         width: float = 10.0):
    """Draw ``trace`` (a Trace, a Timeline, or a list of them) and return the Axes.

    Rows: host threads first, then streams, each labelled with its name and kind
    (legacy default, per-thread default, blocking, non-blocking). Bars are coloured
    by kind, labelled with their names where the name fits; a span too short to see is
    drawn :data:`MIN_BAR` of the axis wide (its true times are in the table). The title gives the
    device (or the model GPU that placed the spans, or marks a simulator trace timed on
    the host clock) and the makespan of the stream rows (dotted
    lines), as :meth:`Trace.metrics` reports it.
    """
    import matplotlib.pyplot as plt

    merged = as_trace(trace, "plot")
    rows, spans = list(merged.rows), list(merged.spans)
    device, simulated = merged.device, merged.simulated
    if not spans:
        raise ValueError("nothing to plot: the timeline has no spans yet")
    if ax is None:
        _, ax = plt.subplots(figsize=(width, 0.55 * len(rows) + 1.4))
    n = len(rows)
    index = {r.label: n - 1 - i for i, r in enumerate(rows)}  # first row at the top
    t0 = min(s.start_ms for s in spans)
    t1 = max(s.end_ms for s in spans)
    span_ms = max(t1 - t0, 1e-9)

    kinds_seen = []
    for s in spans:
        y = index[s.row]
        ax.broken_barh([(s.start_ms, max(s.duration_ms, span_ms * MIN_BAR))], (y - 0.4, 0.8),
                       facecolors=COLOURS[s.kind], edgecolor="white", linewidth=0.5)
        if s.kind not in kinds_seen:
            kinds_seen.append(s.kind)

    ax.set_xlim(t0 - 0.02 * span_ms, t1 + 0.02 * span_ms)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_yticks(range(n))
    ax.set_yticklabels([_row_text(r) for r in reversed(rows)])
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", alpha=0.3)

    if labels:
        _label_bars(ax, spans, index)

    # The makespan is that of the stream rows, as Trace.metrics() reports it (the
    # host rows' work is shown but not counted), unless there are only host rows.
    host = {r.label for r in rows if r.host}
    gpu = [s for s in spans if s.row not in host] or spans
    m0, m1 = min(s.start_ms for s in gpu), max(s.end_ms for s in gpu)
    makespan = m1 - m0
    ax.axvline(m0, color="black", lw=0.6, ls=":")
    ax.axvline(m1, color="black", lw=0.6, ls=":")
    if title is None:
        title = f"{device}: makespan {makespan:.3f} ms"
        if merged.model:
            title = f"{merged.model}: makespan {makespan:.3f} ms"
        elif simulated:
            title = f"{SIM_MARK} ({device}): makespan {makespan:.3f} ms"
    ax.set_title(title)

    from matplotlib.patches import Patch

    handles = [Patch(color=COLOURS[k], label=KINDS[k]) for k in COLOURS if k in kinds_seen]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0),
              fontsize="small", frameon=False)
    ax.figure.tight_layout()
    return ax


def _row_text(row) -> str:
    return f"{row.label}\n({row.detail})" if row.detail else row.label


def _label_bars(ax, spans, index) -> None:
    """Write a span's name on its bar when the name fits inside it."""
    fig = ax.figure
    fig.canvas.draw()  # sizes are known only once laid out
    renderer = fig.canvas.get_renderer()
    for s in spans:
        x_mid = (s.start_ms + s.end_ms) / 2
        text = ax.text(x_mid, index[s.row], s.name, ha="center", va="center",
                       fontsize="x-small", color="white", clip_on=True)
        bar_px = abs(ax.transData.transform((s.end_ms, 0))[0]
                     - ax.transData.transform((s.start_ms, 0))[0])
        if text.get_window_extent(renderer).width > bar_px - 8:
            text.remove()


def compare(predicted, measured, *, width: float = 10.0):
    """Draw the model's prediction above the measurement, on one time axis (after Mark
    Harris's pictures of predicted and measured overlap); return the two Axes.

    Each title says what it is: the model, or the GPU measured, with the makespan, and
    the prediction's error against the measurement.
    """
    import matplotlib.pyplot as plt

    pred, meas = as_trace(predicted, "compare"), as_trace(measured, "compare")
    rows = max(len(pred.rows), len(meas.rows))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(width, 2 * (0.55 * rows + 1.2)),
                                      sharex=True)
    p_ms, m_ms = pred.metrics().makespan_ms, meas.metrics().makespan_ms
    error = (p_ms - m_ms) / m_ms * 100 if m_ms > 0 else float("nan")
    plot(pred, ax=top, title=f"predicted ({pred.model or pred.device}): "
                             f"makespan {p_ms:.3f} ms, {error:+.0f} % against measured")
    plot(meas, ax=bottom, title=f"measured ({meas.what}): makespan {m_ms:.3f} ms")
    t0 = min(s.start_ms for s in pred.spans + meas.spans)
    t1 = max(s.end_ms for s in pred.spans + meas.spans)
    top.set_xlim(t0 - 0.02 * (t1 - t0), t1 + 0.02 * (t1 - t0))
    fig.tight_layout()
    return top, bottom


# --- the Chrome trace ------------------------------------------------------------------
def to_chrome_trace(trace, path=None) -> dict:
    """The trace as a Chrome-trace dict; also written to ``path`` if one is given.

    ``trace`` is what :func:`streamlab.plot` takes: a Trace, a Timeline, or a list of
    them (one above the other)."""
    trace = as_trace(trace, "to_chrome_trace")
    pid = 1
    tids = {row.label: i + 1 for i, row in enumerate(trace.rows)}
    for s in trace.spans:  # rows not declared (a hand-built trace): add them
        tids.setdefault(s.row, len(tids) + 1)
    process = trace.what
    events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
               "args": {"name": process}}]
    details = {r.label: r.detail for r in trace.rows}
    for label, tid in tids.items():
        name = f"{label} ({details[label]})" if details.get(label) else label
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": name}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})
    for s in trace.spans:
        events.append({
            "ph": "X", "name": s.name, "cat": s.kind, "pid": pid, "tid": tids[s.row],
            "ts": round(s.start_ms * 1000.0, 3), "dur": round(s.duration_ms * 1000.0, 3),
            "args": {"kind": s.kind, "row": s.row},
        })
    doc = {"traceEvents": events, "displayTimeUnit": "ms",
           "otherData": {"device": trace.device, "simulated": trace.simulated,
                         "model": trace.model}}
    if path is not None:
        Path(path).write_text(json.dumps(doc, indent=1))
    return doc
