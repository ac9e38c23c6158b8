"""Stream-ordered device memory for numba code: allocate and free *in a stream*.

``cuda.device_array`` allocates at once, on the host's word (``cuMemAlloc``), and numba
frees later, in batches. CUDA also allocates *in stream order* (``cuMemAllocAsync``,
``cuMemFreeAsync``): the allocation is an operation in a stream, like a launch, and memory
freed in one stream is reused by the next allocation there without a trip to the driver.
numba-cuda 0.30 has no API for it; cuda.core has (``Device().memory_resource``, a memory
pool), and its buffers become numba arrays through the CUDA array interface.

>>> import numpy as np
>>> import streamlab
>>> from numba import cuda
>>> from cuda.core import Device
>>> s = cuda.stream()
>>> cs = Device().create_stream(s)                  # cuda.core's view of the numba stream
>>> mr = Device().memory_resource
>>> buf = mr.allocate(4 * 1024, stream=cs)          # in stream s
>>> a = streamlab.as_array(buf, 1024, np.float32)   # a numba device array
>>> a.copy_to_device(np.ones(1024, np.float32), stream=s)
>>> buf.close(cs)                                   # freed in stream s
>>> s.synchronize()

On the simulator, cuda.core cannot run (it needs the driver): ``Device().memory_resource``
(and :func:`memory_resource`, this module's older name for it) gives a stand-in with the
same calls, whose buffers are simulator arrays.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
from numba import cuda

from ._device import on_simulator

_listeners: list = []  # callables (kind, stream handle, bytes, address, explicit)


class Allocation(NamedTuple):
    """One stream-ordered allocation or free that :func:`allocations_seen` saw."""

    kind: str  #: "alloc" or "free"
    stream: int | None  #: the stream's handle
    nbytes: int | None  #: the bytes allocated (None for a free)
    address: int | None  #: the buffer's device address (None where it is not known)
    #: a free: True, by a call of ``close``; False, because nothing held the buffer any
    #: more; None, not known (a GPU, where CUPTI sees the driver's free alone)
    explicit: bool | None
    at: object  #: what ``at()`` answered when it was seen (None without ``at``)


@contextlib.contextmanager
def allocations_seen(at=None):
    """Every stream-ordered allocation and free made inside, through any API (a pool's
    ``allocate``, ``Device().allocate``, a buffer's ``close``, and one freed because
    nothing holds it any more, which cuda.core frees in the stream it was allocated in):
    a list of :class:`Allocation`. ``at``: a function called at each, whose answer is
    kept (a position in a record of operations, say). On a GPU they are seen through
    CUPTI while a recorder listens (:mod:`streamlab._driverwatch`:
    ``cuMemAllocFromPoolAsync``, ``cuMemAllocAsync``, ``cuMemFreeAsync``), so without
    cupti-python nothing is seen there; on the simulator the stand-in says so itself."""
    if at is not None and not callable(at):
        raise TypeError(f"at is a function whose answer is kept with each allocation "
                        f"(or None), got {at!r}")
    seen: list = []

    def listen(entry) -> None:
        seen.append(Allocation(*entry, at() if at is not None else None))

    _listeners.append(listen)
    try:
        yield seen
    finally:
        if listen in _listeners:  # (code inside may have replaced the list's entries)
            _listeners.remove(listen)


def note_allocation(kind: str, handle: int | None, nbytes: int | None = None,
                    address: int | None = None, explicit: bool | None = None) -> None:
    """Tell :func:`allocations_seen` of an allocation or a free (see :class:`Allocation`)."""
    for listen in list(_listeners):
        listen((kind, handle, nbytes, address, explicit))


def memory_resource(device: int | None = None):
    """The stream-ordered memory pool of ``device`` (default: numba's current GPU):
    cuda.core's ``DeviceMemoryResource``, whose ``allocate(nbytes, stream=...)`` gives a
    ``Buffer`` and whose buffers' ``close(stream)`` frees them, both in stream order.
    Streams go in as cuda.core takes them: ``Device().create_stream(s)`` for a numba
    stream ``s``. On the simulator, a stand-in
    with the same two calls."""
    if device is not None and (isinstance(device, bool) or not isinstance(device, int)):
        raise TypeError(f"device is a GPU's number (0, 1, ...) or None, got {device!r}")
    if on_simulator():  # (where cuda.core's Device is the simulator's stand-in)
        if device not in (None, 0):
            raise ValueError(f"the simulator has one GPU, number 0; got device={device}")
        device = 0
    from cuda.core import Device

    dev = Device(cuda.get_current_device().id if device is None else device)
    dev.set_current()
    return dev.memory_resource


def as_array(buffer, shape, dtype):
    """A numba device array over ``buffer`` (from ``memory_resource().allocate``), of
    ``shape`` and ``dtype``. The array keeps the buffer alive, but not valid: once the
    buffer is closed, the array points at freed memory (as a C pointer would)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"an array's shape has no negative sizes, got {shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    size = getattr(buffer, "size", None)
    if size is None or not hasattr(buffer, "close"):
        raise TypeError(f"as_array takes a buffer from memory_resource().allocate(...), "
                        f"got {type(buffer).__name__}")
    if nbytes > size:
        raise ValueError(f"{shape} of {dtype} needs {nbytes} bytes; the buffer has {size}: "
                         f"allocate at least {nbytes}")
    if on_simulator() and hasattr(buffer, "array"):  # the simulator's pool's (sim.pool)
        return buffer.array(shape, dtype)
    desc = {"shape": shape, "typestr": dtype.str, "data": (int(buffer.handle), False),
            "version": 3, "strides": None}
    return cuda.from_cuda_array_interface(desc, owner=buffer, sync=False)
