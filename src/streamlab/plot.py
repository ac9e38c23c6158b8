"""What a timeline looks like: the kinds of span it draws, each with one colour everywhere
in the course (:data:`KINDS`, :data:`COLOURS`); one trace from what ``plot`` and
``to_chrome_trace`` accept (:func:`as_trace`: a Trace, a Timeline, or a list of them,
drawn one above the other); and the drawing, a Gantt chart with one row per stream or
host thread.

>>> import matplotlib; matplotlib.use("Agg")
>>> from streamlab import Span, Trace, plot
>>> t = Trace.from_spans([Span("copy", "stream 1", "h2d", 0, 1),
...                       Span("kernel", "stream 1", "kernel", 1, 3)], device="demo")
>>> ax = plot(t)
>>> ax.get_title()
'demo: makespan 3.000 ms'
>>> from streamlab.plot import check_kind
>>> check_kind("kernel")
'kernel'

:func:`as_trace` works on any object with a trace's fields (``spans``, ``rows``,
``device``, ...), so that this module need not import the one that defines traces.
"""

from __future__ import annotations

from dataclasses import replace

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
