"""Memory identity: which bytes an operation reads and writes, and whose they are.

A :class:`Region` is a range of addresses with the allocation it belongs to (a serial
number never reused, so that a freed array's address, reused by a new array, is not
taken for the same memory). :func:`region_of` finds an array's region, host or device;
:func:`is_pinned` says whether a host array is page-locked. The recorder
(:mod:`streamlab.ops`) keeps regions on its records; :mod:`streamlab.order` compares
them.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass

from . import _device


@dataclass(frozen=True)
class Region:
    """A range of addresses [lo, hi) that an operation reads or writes, and what it is.

    ``alloc`` names the allocation the range belongs to (a serial number, never reused;
    0 when unknown), so that a freed array's address, reused by a new array, is not
    taken for the same memory. ``parts``, when known, are the exact [lo, hi) pieces
    inside the range that were touched (the simulator watches every element a kernel
    reads and writes; on a GPU a kernel's region is its whole argument)."""

    lo: int
    hi: int
    what: str  # e.g. "argument 'data'", "the host array", "the device array"
    alloc: int = 0
    host: bool = False  # host memory (pageable, pinned or mapped), not device memory
    parts: tuple | None = None

    def _pieces(self):
        return self.parts if self.parts is not None else ((self.lo, self.hi),)

    def overlaps(self, other: "Region") -> bool:
        """Do the two share a byte (in the same allocation)?"""
        if self.alloc and other.alloc and self.alloc != other.alloc:
            return False
        if not (self.lo < other.hi and other.lo < self.hi):
            return False
        if self.parts is None and other.parts is None:
            return True
        a, b = self._pieces(), other._pieces()
        i = j = 0
        while i < len(a) and j < len(b):
            if a[i][0] < b[j][1] and b[j][0] < a[i][1]:
                return True
            if a[i][1] <= b[j][1]:
                i += 1
            else:
                j += 1
        return False

    def covers(self, other: "Region") -> bool:
        """Is every byte of ``other`` inside this region?"""
        if self.alloc and other.alloc and self.alloc != other.alloc:
            return False
        mine = self._pieces()
        for lo, hi in other._pieces():
            if not any(a <= lo and hi <= b for a, b in mine):
                return False
        return True


def merge_pieces(pieces) -> tuple:
    """Sorted, merged [lo, hi) pieces."""
    out = []
    for lo, hi in sorted(pieces):
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)

def is_pinned(ary) -> bool:
    """Is the host array ``ary`` in pinned (page-locked) memory?"""
    if _device.SIMULATOR:
        from .sim.pinned import is_pinned as sim_is_pinned

        return sim_is_pinned(ary)
    return pinned_address(ary.__array_interface__["data"][0])


def pinned_address(ptr: int) -> bool:
    """Is the host address ``ptr`` in pinned memory (GPU: the driver knows it)?"""
    from cuda.bindings import driver

    err, _ = driver.cuMemHostGetFlags(ptr)
    return err == driver.CUresult.CUDA_SUCCESS

# --- memory regions ------------------------------------------------------------------
def extent(interface: dict) -> tuple[int, int]:
    """[lo, hi) of the bytes an array interface (numpy's or CUDA's) spans."""
    import numpy as np

    ptr = interface["data"][0]
    shape = interface["shape"]
    itemsize = np.dtype(interface["typestr"]).itemsize
    if any(n == 0 for n in shape):
        return ptr, ptr
    strides = interface.get("strides") or None
    if strides is None:
        size = itemsize
        for n in shape:
            size *= n
        return ptr, ptr + size
    lo = hi = ptr
    for n, st in zip(shape, strides):
        if st >= 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return lo, hi + itemsize


_alloc_lock = threading.Lock()
_alloc_serials = itertools.count(1)
_allocs: dict[int, tuple[int, object]] = {}  # id(owner) -> (serial, weakref to owner)


def allocation(owner) -> int:
    """A serial number for the object that owns some memory, never reused (id()s are)."""
    if owner is None:
        return 0
    key = id(owner)
    with _alloc_lock:
        entry = _allocs.get(key)
        if entry is not None and entry[1]() is owner:
            return entry[0]
        serial = next(_alloc_serials)
        try:
            ref = weakref.ref(owner, lambda _r, k=key, s=serial: _forget(k, s))
        except TypeError:  # cannot be watched: keep it (rare: bytes-like owners)
            ref = (lambda o=owner: o)
        _allocs[key] = (serial, ref)
        return serial


def _forget(key: int, serial: int) -> None:
    with _alloc_lock:
        entry = _allocs.get(key)
        if entry is not None and entry[0] == serial:
            del _allocs[key]


def host_owner(ary):
    """The object at the end of a numpy array's ``base`` chain: what owns its memory."""
    while getattr(ary, "base", None) is not None:
        ary = ary.base
    return ary


def device_owner(obj):
    """The allocation behind a numba device array or memory pointer."""
    mem = getattr(obj, "gpu_data", obj)
    return getattr(mem, "owner", mem)


def region_of(ary, what: str) -> Region | None:
    """The memory an array spans: device arrays by their device address, host arrays
    (numpy, pinned, mapped) by their host address; None for anything else."""
    inner = getattr(ary, "_ary", None)  # the simulator's device array wraps a numpy array
    if inner is not None and hasattr(inner, "__array_interface__"):
        face, owner, host = inner.__array_interface__, host_owner(inner), False
    elif hasattr(ary, "__array_interface__"):  # host memory first: mapped arrays too
        face, owner, host = ary.__array_interface__, host_owner(ary), True
    elif hasattr(type(ary), "__cuda_array_interface__") or \
            "__cuda_array_interface__" in getattr(ary, "__dict__", {}):
        face, owner, host = _cuda_face(ary), device_owner(ary), False
    else:
        return None
    lo, hi = extent(face)
    return Region(lo, hi, what, allocation(owner), host)


def _cuda_face(ary) -> dict:
    """The CUDA array interface of ``ary``. numba-cuda 0.30's own fails for an array made
    with ``stream=`` a cuda.core stream (it calls ``int()`` on the stream it remembers,
    which a cuda.core Stream refuses, seen on an H100): for such a numba array the same
    facts are read from the array itself."""
    try:
        return ary.__cuda_array_interface__
    except TypeError:
        pointer = getattr(ary, "device_ctypes_pointer", None)
        if pointer is None:
            raise
        return {"data": (pointer.value or 0, False), "shape": tuple(ary.shape),
                "strides": tuple(ary.strides), "typestr": ary.dtype.str}


def describe_array(ary) -> str:
    """'a 1048576 float32 array' for messages, or 'an array'."""
    shape, dtype = getattr(ary, "shape", None), getattr(ary, "dtype", None)
    if shape is None or dtype is None:
        return "an array"
    dims = "x".join(str(n) for n in shape) or "scalar"
    return f"a {dims} {dtype} array"
