"""The simulator's side of streamlab: what stands in for the GPU's libraries there.

Used only when streamlab chose Numba's CUDA simulator; the GPU path imports nothing
from here. It holds:

* :mod:`streamlab.sim.fill`: numba's simulator with its gaps filled (streams with
  handles, events with the model GPU's times, synchronize, nanosleep), and the wrappers
  through which the recorder sees its copies, element access and launches;
* :mod:`streamlab.sim.pinned`: pinned and mapped host arrays;
* :mod:`streamlab.sim.driver`: host functions, run as a GPU's driver would run them;
* :mod:`streamlab.sim.core` and :mod:`streamlab.sim.graph`: the stand-ins for the parts
  of cuda.core the course uses, and :mod:`streamlab.sim.capture`, the graph stand-in;
* :mod:`streamlab.sim.bindings`: cuda.bindings' ``cuLaunchHostFunc`` and priority range;
* :mod:`streamlab.sim.stream` and :mod:`streamlab.sim.made`: the simulator's streams and
  events, and the table of the streams it made (their flags and priorities);
* :mod:`streamlab.sim.device`: the simulated device's attributes, the model GPU's;
* :mod:`streamlab.sim.pool`: the stream-ordered memory pool (cuda.core's
  ``DeviceMemoryResource`` and ``Buffer``).
"""
