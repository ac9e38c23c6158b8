"""Which arguments a kernel reads, writes, or updates atomically: read from its own code.

The race check needs to know, for each array a kernel is given, whether the kernel may
write it. Guessing from names would be wrong as often as right, so this reads the
kernel's Python function as numba's front end sees it (numba IR, before typing):

* ``a[i] = v`` (``SetItem`` / ``StaticSetItem``) on an argument, or on a view of one
  (``row = a[i]; row[j] = v``), writes it;
* ``cuda.atomic.add(a, i, v)`` (any ``atomic.*``) updates it atomically;
* a call to a ``@cuda.jit(device=True)`` function passes on whatever that function does
  to its own parameters (read the same way);
* everything else (``a[i]`` on the right, ``a.size``, ``len(a)``) only reads.

(access_modes shows an example.)

If the code cannot be read (a kernel built in a way the front end does not follow),
every array argument counts as written: the check may then report a race that is not
one, but never misses one for this reason.

The recorder (:func:`launch_op`) asks once per kernel, at its first
launch, and keeps the answer.
"""

from __future__ import annotations

import functools
import re
import weakref
from dataclasses import replace

import numpy as np

from .ops import emit
from .regions import Region, extent, merge_pieces, region_of

READ, WRITE, ATOMIC = "read", "write", "atomic"
_RANK = {READ: 0, ATOMIC: 1, WRITE: 2}
_ATOMIC_CALL = re.compile(r"(^|\.)atomic\.\w+$")


def py_function(kernel):
    """The Python function behind a numba CUDA kernel or device function (GPU or
    simulator), or None."""
    fn = getattr(kernel, "py_func", None)
    if fn is None:
        fn = getattr(kernel, "fn", None)  # the simulator's FakeCUDAKernel
    return fn if callable(fn) else None


def access_modes(kernel) -> tuple[str, ...] | None:
    """For each parameter of ``kernel``: 'read', 'write' or 'atomic'. None if unknown.

    >>> from numba import cuda
    >>> @cuda.jit
    ... def k(src, dst, counter):
    ...     i = cuda.grid(1)
    ...     dst[i] = src[i]
    ...     cuda.atomic.add(counter, 0, 1)
    >>> access_modes(k)
    ('read', 'write', 'atomic')
    """
    fn = py_function(kernel)
    if fn is None:
        return None
    try:
        return _modes(fn)
    except Exception:  # noqa: BLE001  (any front-end failure means "unknown")
        return None


def parameter_names(kernel) -> tuple[str, ...]:
    """The names of ``kernel``'s parameters, in order (for messages)."""
    fn = py_function(kernel)
    if fn is None:
        return ()
    code = fn.__code__
    return code.co_varnames[:code.co_argcount]


@functools.lru_cache(maxsize=512)
def _modes(fn) -> tuple[str, ...]:
    from numba.core import ir
    from numba.core.compiler import run_frontend

    fir = run_frontend(fn)
    nargs = len(fir.arg_names)
    modes = [READ] * nargs

    def mark(params, mode):
        for p in params:
            if _RANK[mode] > _RANK[modes[p]]:
                modes[p] = mode

    stmts = [st for blk in fir.blocks.values() for st in blk.body]
    # Which parameters each variable may stand for (a view of an argument is the
    # argument), to a fixed point: assignments may come in any order across blocks.
    alias: dict[str, set[int]] = {}
    dotted: dict[str, str] = {}  # variable -> "cuda.atomic.add" for global attribute chains
    globals_: dict[str, object] = {}
    changed = True
    while changed:
        changed = False
        for st in stmts:
            if not isinstance(st, ir.Assign):
                continue
            target, value = st.target.name, st.value
            found: set[int] = set()
            if isinstance(value, ir.Arg):
                found = {value.index}
            elif isinstance(value, ir.Var):
                found = alias.get(value.name, set())
            elif isinstance(value, (ir.Global, ir.FreeVar)):
                globals_[target] = value.value
                dotted[target] = value.name
            elif isinstance(value, ir.Expr):
                if value.op in ("getitem", "static_getitem", "getattr"):
                    found = alias.get(value.value.name, set())
                    if value.op == "getattr" and value.value.name in dotted:
                        name = f"{dotted[value.value.name]}.{value.attr}"
                        if dotted.get(target) != name:
                            dotted[target] = name
                            changed = True
                elif value.op == "cast":
                    found = alias.get(value.value.name, set())
            if found and not found <= alias.get(target, set()):
                alias.setdefault(target, set()).update(found)
                changed = True

    for st in stmts:
        if isinstance(st, (ir.SetItem, ir.StaticSetItem)):
            mark(alias.get(st.target.name, ()), WRITE)
        elif isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) \
                and st.value.op == "call":
            call = st.value
            func = call.func.name
            args = [a.name for a in call.args]
            if _ATOMIC_CALL.search(dotted.get(func, "")) and args:
                mark(alias.get(args[0], ()), ATOMIC)
                continue
            callee = globals_.get(func)
            inner = access_modes(callee) if callee is not None and \
                py_function(callee) is not None else None
            if inner is None:
                continue
            for arg, mode in zip(args, inner):
                mark(alias.get(arg, ()), mode)
    return tuple(modes)


# --- what a copy and a launch read and write: one description for both modes ---------
def copy_op(direction: str, stream, *, host: Region | None, device: Region | None,
            src: Region | None = None, pinned: bool | None, synchronous: bool) -> None:
    """Record a copy as CUDA defines it (the CUDA Runtime API's "API synchronization
    behavior"): which stream, what it reads and writes, and whether the host waited.

    * host to device, pinned: asynchronous, unless called without a stream;
    * host to device, pageable: the host buffer is read before the call returns (staged),
      the device is written later, in stream order;
    * device to host: the host waits unless the buffer is pinned and a stream is given;
    * device to device: never waits.
    """
    stream = stream if stream else 0
    if direction == "h2d":
        if pinned:
            emit("copy", "h2d", stream, pinned=True, blocking=synchronous,
                 reads=(host,), writes=(device,))
        else:
            emit("copy", "h2d", stream, pinned=False, writes=(device,), host_reads=(host,))
    elif direction == "d2h":
        emit("copy", "d2h", stream, pinned=pinned, blocking=synchronous or not pinned,
             reads=(device,), writes=(host,))
    elif direction == "d2d":
        emit("copy", "d2d", stream, reads=(src,), writes=(device,))
    else:
        emit("memset", "memset", stream, writes=(device,))


#: a kernel's Python function -> (access modes, parameter names), read at its first launch
_kernels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _read_kernel(kernel) -> tuple:
    """What ``kernel`` does to its arguments and what they are called
    (:mod:`streamlab.kernels`), read once per kernel and kept."""
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    known = _kernels.get(fn) if fn is not None else None
    if known is None:
        known = (access_modes(kernel), parameter_names(kernel))
        if fn is not None:
            _kernels[fn] = known
    return known


def launch_op(kernel, name: str, args, stream, grid, block, footprint=None,
              slept_ns=None, touched=None, *, visible) -> None:
    """Record a kernel launch with the memory it may read, write or update atomically.

    Which arguments it writes comes from its code (:func:`streamlab.kernels.access_modes`).
    ``visible(arg)`` says whether an argument is device memory (a host array is copied by
    numba, and the copies are recorded). On the simulator, ``footprint`` holds the
    elements it really touched, so two kernels that write different parts of one array
    are not taken for a race."""
    modes, names = _read_kernel(kernel)
    reads, writes, atomics = [], [], []
    for i, arg in enumerate(args):
        if not visible(arg):
            continue  # a host array: numba copies it (the copies are recorded)
        label = f"argument {names[i]!r}" if i < len(names) else f"argument {i}"
        region = region_of(arg, label)
        if region is None:
            continue
        mode = modes[i] if modes is not None and i < len(modes) else "write"
        if footprint is None:
            (writes if mode == "write" else atomics if mode == "atomic" else reads).append(region)
            continue
        read, written = footprint.within(region)
        if mode == "atomic":
            atomics.append(_with_parts(region, read + written))
            continue
        if written:
            writes.append(_with_parts(region, written))
        if read:
            reads.append(_with_parts(region, read))
    # the numbers it was given, by name (a check may need one: lab 08's step_ns)
    scalars = {(names[i] if i < len(names) else str(i)): a.item() if isinstance(
        a, np.generic) else a for i, a in enumerate(args)
        if isinstance(a, (int, float, np.integer, np.floating)) and not isinstance(a, bool)}
    emit("launch", name, stream, reads=reads, writes=writes, atomics=atomics,
         detail={"grid": grid, "block": block, "args": names, **_kernel_facts(kernel, args),
                 **({"scalars": scalars} if scalars else {}),
                 **({"slept_ns": slept_ns} if slept_ns else {}),
                 **({"bytes_touched": touched} if touched is not None else {}),
                 "modes": modes if modes is not None else "unknown: all written",
                 "footprint": "elements touched" if footprint is not None
                 else "whole arguments"})


def _kernel_facts(kernel, args) -> dict:
    """What a model GPU needs to time a launch: the kernel's Python function (a cost may
    be stated for it) and, for :data:`streamlab.spin`, the nanoseconds asked for."""
    from .spin import spin

    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    facts = {"py_func": fn}
    if fn is not None and fn is (getattr(spin, "py_func", None) or getattr(spin, "fn", None)) \
            and args:
        facts["spin_ns"] = int(args[0])
    return facts


def _with_parts(region: Region, pieces) -> Region:
    parts = merge_pieces(pieces)
    return replace(region, lo=parts[0][0], hi=parts[-1][1], parts=parts)


class Footprint:
    """The elements a simulated kernel touched: (lo, hi) byte ranges read and written."""

    def __init__(self):
        self.reads: set = set()
        self.writes: set = set()

    def touch(self, ary, idx, write: bool) -> None:
        """Note that a simulated thread read (or wrote) ``ary[idx]``."""
        face = ary.__array_interface__
        base = face["data"][0]
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) == ary.ndim and all(isinstance(i, (int, np.integer)) for i in idx):
            off = 0
            for i, n, st in zip(idx, ary.shape, ary.strides):
                off += (i + n if i < 0 else i) * st
            piece = (base + off, base + off + ary.itemsize)
        else:
            sub = ary[idx]
            if hasattr(sub, "__array_interface__") and getattr(sub, "ndim", 0):
                piece = extent(sub.__array_interface__)
            else:
                piece = extent(face)
        (self.writes if write else self.reads).add(piece)

    def within(self, region: Region):
        """The pieces read, and written, inside ``region``."""
        def inside(pieces):
            return [p for p in pieces if region.lo <= p[0] < region.hi]
        return inside(self.reads), inside(self.writes)
