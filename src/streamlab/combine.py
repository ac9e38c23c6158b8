"""One trace from what ``plot`` and ``to_chrome_trace`` accept: a Trace, a Timeline, or
a list of them (drawn one above the other, each row named for its GPU or timeline).

It works on any object with a trace's fields (``spans``, ``rows``, ``device``, ...), so
that the modules that draw and export traces need not import the one that defines them.
"""

from __future__ import annotations

from dataclasses import replace


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
