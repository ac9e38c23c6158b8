"""What made each simulated stream: its flags, known from its creation.

A GPU's driver knows a stream's flags (non-blocking, priority) from its creation alone;
so does the simulator, which notes them here when :func:`streamlab.stream` or cuda.core's
``Device.create_stream`` makes a stream (:func:`note_stream`), and answers
:func:`streamlab.stream_info` from them (:func:`flags_of`). An attribute set on a stream
later (``s.priority = -5``) changes nothing, as on a GPU.
"""

from __future__ import annotations

_made: dict = {}  # simulated stream handle -> (nonblocking, priority)


def note_stream(handle: int, nonblocking: bool, priority: int) -> None:
    """Keep how the simulated stream ``handle`` was made."""
    _made[handle] = (bool(nonblocking), int(priority))


def flags_of(handle: int) -> tuple[bool, int]:
    """(nonblocking, priority) of the simulated stream ``handle``; a stream made without
    flags (``cuda.stream()``) is blocking, at the default priority 0."""
    return _made.get(handle, (False, 0))
