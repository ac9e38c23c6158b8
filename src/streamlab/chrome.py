"""Export a trace as Chrome trace JSON, which Perfetto (ui.perfetto.dev) opens.

Each row becomes a named thread of one process named after the device; each span a
complete ("X") event with its kind as category. Times are in microseconds.

>>> import json
>>> from streamlab import Span, Trace, to_chrome_trace
>>> t = Trace.from_spans([Span("k", "stream 1", "kernel", 0.5, 1.5)], device="demo")
>>> doc = to_chrome_trace(t)
>>> [e for e in doc["traceEvents"] if e["ph"] == "X"][0]["dur"]
1000.0
"""

from __future__ import annotations

import json
from pathlib import Path

from .plot import as_trace


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
