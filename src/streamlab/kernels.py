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

The recorder (:func:`streamlab.ops.launch_op`) asks once per kernel, at its first
launch, and keeps the answer.
"""

from __future__ import annotations

import functools
import re

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
