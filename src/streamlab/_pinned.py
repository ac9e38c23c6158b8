"""Pinned and mapped host memory on the simulator, told apart from pageable memory.

The simulator has no page-locked memory; streamlab's fills (:mod:`streamlab._simfill`)
hand out these array types and remember the arrays ``cuda.pinned`` registered, so that
:func:`streamlab.is_pinned` answers on the simulator as it does on a GPU.
"""

from __future__ import annotations

import numpy as np

_pinned_ids: set[int] = set()  # ids of arrays pinned by cuda.pinned(...) right now


class SimPinnedArray(np.ndarray):
    """A numpy array standing for page-locked host memory on the simulator."""


class SimMappedArray(SimPinnedArray):
    """Mapped (zero-copy) pinned host memory: kernels read and write it directly."""


def is_pinned(ary) -> bool:
    """Is this host array pinned (page-locked), as the simulator pretends?"""
    base = ary
    while base is not None:
        if isinstance(base, SimPinnedArray) or id(base) in _pinned_ids:
            return True
        base = getattr(base, "base", None)
    return False
