"""Host arrays whose reads and writes by host code are recorded, for the order of operations.

numba's calls are recorded where they happen (see :mod:`streamlab.ops`), but the host's
own reads and writes of a pinned buffer (``np.copyto(h_in, chunk)``, ``h_out.copy()``)
are plain numpy. A lab check that hands a learner a buffer hands it *watched*: the same
memory, viewed as a :class:`WatchedArray`, which records each host access while a
recorder listens. A host write to a pinned buffer that a copy may still be reading, or a
host read of one that a copy may not have filled yet, is then a race like any other.

>>> import numpy as np, streamlab
>>> from streamlab.watched import watch
>>> h = watch(np.zeros(4), "h_out")
>>> with streamlab.record_ops() as ops:
...     total = float(h.sum())
...     np.copyto(h, np.ones(4))
>>> [(op.name, op.reads + op.writes) for op in ops][0][1][0].what
'h_out'
>>> [op.name for op in ops]
['read', 'write']

What is seen: indexing (``h[i]``, ``h[a:b] = x``), numpy functions (``np.copyto``,
``np.sum``, ``np.array_equal``, ...), ufuncs and reductions (``h * 2``, ``h.sum()``), and the
methods ``copy``, ``astype``, ``tolist``, ``tobytes``, ``item`` and iteration. Not seen: code
that takes the raw buffer (``np.array(h)``, ``memoryview(h)``): a check may miss a race
there, never report one that is not.
"""

from __future__ import annotations

import sys

import numpy as np

from .ops import emit, library_dirs, recording
from .regions import region_of

# numpy functions whose first argument (or ``out=``) is written
_WRITES_FIRST = {"copyto", "put", "place", "putmask", "fill_diagonal"}


class WatchedArray(np.ndarray):
    """A view of a host array whose host reads and writes are recorded (see module)."""

    _label = "a host array"

    def __array_finalize__(self, obj):
        self._label = getattr(obj, "_label", "a host array")

    # --- recording -----------------------------------------------------------------
    def _access(self, mode: str, part=None) -> None:
        if not recording() or _from_library():
            return
        target = self if part is None else part
        region = region_of(target.view(np.ndarray) if isinstance(target, WatchedArray)
                           else target, self._label)
        if region is None:
            return
        if mode == "read":
            emit("host", "read", reads=(region,))
        else:
            emit("host", "write", writes=(region,))

    def _part(self, idx):
        """The array view that ``self[idx]`` addresses (a 1-element view for a scalar)."""
        base = self.view(np.ndarray)
        sub = base[idx]
        if isinstance(sub, np.ndarray):
            return sub
        if not isinstance(idx, tuple):
            idx = (idx,)
        try:
            return base[tuple(slice(i, i + 1) if isinstance(i, (int, np.integer)) and i >= 0
                              else i for i in idx)]
        except (IndexError, TypeError):
            return base

    # --- indexing --------------------------------------------------------------------
    def __getitem__(self, idx):
        out = super().__getitem__(idx)
        if not isinstance(out, np.ndarray):  # an element: read now (a view reads later)
            self._access("read", self._part(idx))
        return out

    def __setitem__(self, idx, value):
        super().__setitem__(idx, value)
        self._access("write", self._part(idx))

    # --- numpy functions and ufuncs ----------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        name = getattr(func, "__name__", "")
        for i, arg in enumerate(args):
            if isinstance(arg, WatchedArray):
                arg._access("write" if i == 0 and name in _WRITES_FIRST else "read")
        out = kwargs.get("out")
        for arr in (out if isinstance(out, tuple) else (out,)):
            if isinstance(arr, WatchedArray):
                arr._access("write")
        plain = tuple(a.view(np.ndarray) if isinstance(a, WatchedArray) else a for a in args)
        kw = {k: (v.view(np.ndarray) if isinstance(v, WatchedArray) else v)
              for k, v in kwargs.items()}
        if isinstance(out, tuple):
            kw["out"] = tuple(a.view(np.ndarray) if isinstance(a, WatchedArray) else a
                              for a in out)
        return func(*plain, **kw)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for arr in inputs:
            if isinstance(arr, WatchedArray):
                arr._access("read")
        outs = kwargs.get("out", ())
        for arr in outs:
            if isinstance(arr, WatchedArray):
                arr._access("write")
        plain = tuple(a.view(np.ndarray) if isinstance(a, WatchedArray) else a for a in inputs)
        if outs:
            kwargs["out"] = tuple(a.view(np.ndarray) if isinstance(a, WatchedArray) else a
                                  for a in outs)
        return getattr(ufunc, method)(*plain, **kwargs)

    # --- methods that read without a ufunc -----------------------------------------------
    def copy(self, order="C"):
        self._access("read")
        return self.view(np.ndarray).copy(order=order)

    def astype(self, *args, **kwargs):
        self._access("read")
        return self.view(np.ndarray).astype(*args, **kwargs)

    def tolist(self):
        self._access("read")
        return self.view(np.ndarray).tolist()

    def tobytes(self, order="C"):
        self._access("read")
        return self.view(np.ndarray).tobytes(order=order)

    def item(self, *args):
        self._access("read")
        return self.view(np.ndarray).item(*args)

    def __iter__(self):
        self._access("read")
        return iter(self.view(np.ndarray))

    def __float__(self):
        self._access("read")
        return float(self.view(np.ndarray))

    def __int__(self):
        self._access("read")
        return int(self.view(np.ndarray))


_HERE = __file__


def _from_library() -> bool:
    """Is the code touching the array numba's or streamlab's own (a copy reading the
    buffer it copies), not the host program's?"""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == _HERE:
        frame = frame.f_back
    if frame is None:
        return False
    path = frame.f_code.co_filename
    return path.startswith(library_dirs()) and "numpy" not in path


def watch(array: np.ndarray, label: str) -> WatchedArray:
    """``array``'s memory, viewed so that host reads and writes of it are recorded."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"watch takes a numpy array, got {type(array).__name__}")
    if not isinstance(label, str) or not label:
        raise TypeError(f"watch needs a label for messages (a str), got {label!r}")
    out = array.view(WatchedArray)
    out._label = label
    return out
