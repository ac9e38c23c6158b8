"""The simulator's stream-ordered memory pool: cuda.core's ``DeviceMemoryResource`` and
``Buffer``, which need the driver, stood in for with simulator arrays.

``Device().memory_resource`` (:mod:`streamlab.sim.core`) and
:func:`streamlab.memory_resource` give a :class:`SimMemoryResource` on the simulator;
:func:`streamlab.as_array` views a :class:`SimBuffer` as a simulator array. Allocations and
frees are told to :func:`streamlab.memory.allocations_seen`, as CUPTI tells them on a GPU.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..memory import note_allocation


class SimMemoryResource:
    """cuda.core's DeviceMemoryResource, on the simulator: ``allocate`` and the buffers'
    ``close`` take a stream and return at once, as on a GPU."""

    def allocate(self, size: int, *, stream) -> "SimBuffer":
        """A buffer of ``size`` bytes, allocated in ``stream`` (a cuda.core stream)."""
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"allocate takes a number of bytes (0 or more), got {size!r}")
        _stream_of(stream, "allocate")
        from ..streams import handle_of

        handle = handle_of(stream)
        buf = SimBuffer(int(size), handle)
        note_allocation("alloc", handle, int(size), buf.address)
        return buf

    def __repr__(self):
        return "<DeviceMemoryResource (simulator stand-in)>"


class SimBuffer:
    """cuda.core's Buffer, on the simulator: ``size`` bytes of simulator device memory, of
    which every :func:`as_array` is a view (two views of one buffer share it, as on a GPU)."""

    def __init__(self, size: int, stream_handle: int | None = None):
        self.size = size
        self.closed = False
        self._stream_handle = stream_handle  # where it was allocated: a free's default
        self._bytes = cuda.device_array(size, np.uint8)
        # its "device address": where the simulator keeps its bytes (what the race check
        # and the recorded launches call the address of an array viewing it)
        self.address = int(self._bytes._ary.__array_interface__["data"][0])

    def array(self, shape, dtype):
        """A view of the buffer's first bytes as an array of ``shape`` and ``dtype``."""
        if self.closed:
            raise RuntimeError("this buffer was closed (freed): allocate a new one")
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        view = self._bytes[:nbytes].view(dtype).reshape(shape)
        view._streamlab_buffer = self  # as on a GPU, the array keeps its buffer alive
        return view

    def close(self, stream=None) -> None:
        """Free the buffer in ``stream``'s order (None: the stream it was allocated in)."""
        if self.closed:
            return
        if stream is not None:
            _stream_of(stream, "close")
        from ..streams import handle_of

        self.closed = True
        note_allocation("free", handle_of(stream) if stream is not None
                        else self._stream_handle, None, self.address, True)

    def __del__(self):
        # as cuda.core's Buffer: one nothing holds any more is freed in its stream
        if not getattr(self, "closed", True):
            self.closed = True
            note_allocation("free", self._stream_handle, None, getattr(self, "address", None),
                            False)

    def __repr__(self):
        return f"<Buffer of {self.size} bytes (simulator stand-in)>"


def _stream_of(stream, call: str):
    if stream is None or not hasattr(stream, "__cuda_stream__"):
        raise TypeError(f"{call} takes stream=Device().create_stream(s) for a numba stream s, "
                        f"got {stream!r}")
    return stream
