"""Pinned and mapped host memory on the simulator, told apart from pageable memory.

The simulator has no page-locked memory; streamlab's fills (:mod:`streamlab.sim.fill`)
hand out these array types and remember the arrays ``cuda.pinned`` registered, so that
:func:`streamlab.is_pinned` answers on the simulator as it does on a GPU.
"""

from __future__ import annotations

import contextlib
import weakref

import numpy as np

_pinned_ids: set[int] = set()  # ids of arrays pinned by cuda.pinned(...) right now
# id -> a weak reference to an array that owns page-locked memory on the simulator (made
# by pinned_array or mapped_array): memory, not a class, is what is pinned
_allocations: dict[int, weakref.ref] = {}


class SimPinnedArray(np.ndarray):
    """A numpy array standing for page-locked host memory on the simulator."""


class SimMappedArray(SimPinnedArray):
    """Mapped (zero-copy) pinned host memory: kernels read and write it directly."""


def allocated(ary: np.ndarray) -> np.ndarray:
    """Remember ``ary`` (and the buffer it views) as a page-locked allocation; returns it.
    Views of it are pinned too (the same memory); a copy (``h.copy()``, ``h + 1``,
    ``np.empty_like(h)``) is new, pageable memory, as on a GPU, though numpy gives it the
    same class."""
    for owner in (ary, ary.base):
        if isinstance(owner, np.ndarray):
            key = id(owner)
            _allocations[key] = weakref.ref(
                owner, lambda _ref, key=key: _allocations.pop(key, None))
    return ary


@contextlib.contextmanager
def pinned(arylist):
    """``cuda.pinned(*arylist)`` on the simulator: the arrays count as pinned inside."""
    ids = {id(a) for a in arylist} - _pinned_ids
    _pinned_ids.update(ids)
    try:
        yield
    finally:
        _pinned_ids.difference_update(ids)


def is_pinned(ary) -> bool:
    """Is this host array's memory pinned (page-locked), as the simulator pretends: in an
    allocation of pinned_array or mapped_array, or registered by ``cuda.pinned`` now?"""
    base = ary
    while base is not None:
        ref = _allocations.get(id(base))
        if id(base) in _pinned_ids or (ref is not None and ref() is base):
            return True
        base = getattr(base, "base", None)
    return False
