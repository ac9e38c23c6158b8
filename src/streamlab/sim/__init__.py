"""The simulator's side of streamlab: what stands in for the GPU's libraries there.

Used only when streamlab chose Numba's CUDA simulator; the GPU path imports nothing
from here. Today it holds :mod:`streamlab.sim.core` and :mod:`streamlab.sim.graph`, the
stand-ins for the parts of cuda.core the course uses, :mod:`streamlab.sim.capture`, the
graph stand-in they use, and :mod:`streamlab.sim.bindings`. (The simulator's other
pieces, the gaps of numba's simulator filled, the memory pool and host functions, still
live beside the GPU code in ``_simfill``, ``_hooks``, ``memory`` and ``hostfn``.)
"""
