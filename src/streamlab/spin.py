"""A kernel that runs for a chosen time: the ruler the course measures timelines with.

``spin[1, 1, stream](ns)`` keeps one thread busy for ``ns`` nanoseconds. On a GPU it
reads the GPU's own nanosecond clock (PTX ``%globaltimer``, through :func:`globaltimer`)
in a loop, so its length does not depend on the SM clock and needs no calibration;
numba-cuda 0.30 has no ``cuda.clock64`` or global timer of its own. On the simulator
it sleeps for ``ns`` on the host.

>>> import streamlab
>>> from numba import cuda
>>> s = cuda.stream()
>>> streamlab.spin[1, 1, s](200_000)   # 0.2 ms
>>> s.synchronize()
"""

from __future__ import annotations

from numba import cuda

from ._device import on_simulator

if on_simulator():

    def globaltimer():
        """Not available on the simulator: it has no GPU clock."""
        raise NotImplementedError("globaltimer() reads a GPU register; the simulator has none")

    @cuda.jit
    def spin(ns):
        """Busy-wait one thread for ``ns`` nanoseconds (simulator: sleep on the host)."""
        cuda.nanosleep(ns)

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def globaltimer(typingctx):
        """The GPU's global nanosecond timer (PTX ``%globaltimer``), in a kernel."""
        sig = types.uint64()

        def codegen(context, builder, sig, args):
            asm = ir.InlineAsm(ir.FunctionType(ir.IntType(64), []),
                               "mov.u64 $0, %globaltimer;", "=l", side_effect=True)
            return builder.call(asm, [])

        return sig, codegen

    @cuda.jit
    def spin(ns):
        """Busy-wait one thread for ``ns`` nanoseconds of GPU time."""
        start = globaltimer()
        while globaltimer() - start < ns:
            pass


def ms_to_ns(ms: float) -> int:
    """Milliseconds as the integer nanoseconds that :data:`spin` takes."""
    if not ms >= 0:
        raise ValueError(f"a spin time cannot be negative, got {ms!r} ms")
    return int(round(ms * 1e6))
