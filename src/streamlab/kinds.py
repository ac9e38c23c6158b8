"""The kinds of span a timeline draws, each with one colour everywhere in the course.

>>> from streamlab.kinds import check_kind
>>> check_kind("kernel")
'kernel'
"""

from __future__ import annotations

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
