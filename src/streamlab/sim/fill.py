"""Fill the gaps of Numba's CUDA simulator so that real numba.cuda code runs unchanged.

Applied only when streamlab chose the simulator; the GPU path is never touched. Every
fill goes through streamlab's one registry of patches (:mod:`streamlab._patching`), and
``streamlab.uninstall()`` takes them all out again.
What each fill does (numba-cuda 0.30's simulator alone, then with streamlab):

- ``cuda.event(timing=...)``: TypeError -> accepted.
- ``ev.elapsed_time(end)``: always -1.0 -> milliseconds on the model GPU
  (:mod:`streamlab.model`; on the host clock with ``STREAMLAB_MODEL=off``).
- ``ev.query()``: missing -> whether the model GPU has reached the event by now.
- ``cuda.event_elapsed_time(a, b)``: missing -> as on a GPU.
- ``cuda.stream()`` and the default streams: one handle-less object -> distinct
  streams with handles 0 (default), 1 (legacy), 2 (per-thread), like the GPU's.
- ``cuda.external_stream(ptr)``: left as numba has it (RuntimeError: external streams
  are unsupported in the simulator), so that numba-cuda's own tests give the same
  results with streamlab imported as without (``scripts/gpu/numba_own_tests.py``).
- ``cuda.pinned(a, b, ...)``: one array only -> any number.
- ``cuda.mapped_array(...)``: a device array -> a host array kernels write.
- ``cuda.pinned_array`` / ``cuda.pinned(a)``: unmarked -> marked as pinned, so that
  :func:`is_pinned` can tell pinned from pageable memory as on a GPU.
- ``Stream.add_callback`` / ``async_done``: missing -> a clear error, since they
  are broken on a GPU too.
- a stream or event made before ``cuda.close()``: accepted -> refused with the GPU's
  codes (:mod:`streamlab.sim.stream`, where the stream and event classes live).
- ``cuda.nanosleep(ns)`` in a kernel: missing -> the model GPU counts the time (the
  host sleeps only with the model off).
- kernels launched from several host threads at once: a race inside the simulator (it
  swaps the kernel's global ``cuda`` during a launch) -> launches take turns. They run
  synchronously anyway, so this changes nothing else.
- a block's threads: a Python thread each, polled without pause (1,024 threads of a
  one-line kernel: 0.28 s here) -> one simulated thread that takes each thread's index in
  turn (0.013 s), for a kernel that names no barrier (syncthreads, the warp functions, a
  grid's sync); a kernel that names one runs as numba runs it.

Timing errors mirror the GPU's: an event created with ``timing=False``, or never
recorded, makes ``elapsed_time`` raise ``CudaAPIError`` (CUDA_ERROR_INVALID_HANDLE on
a GPU), here with a message that says which and what to do.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time

import numpy as np

from . import capture
from .device import report_attributes
from .stream import calls as stream_calls, flush
from .pinned import SimMappedArray, SimPinnedArray, allocated, is_pinned  # noqa: F401
from .pinned import pinned as _pin
from .._patching import patch, patch_everywhere, wrap_attribute
from ..kernels import copy_op, Footprint, launch_op
from ..regions import describe_array, region_of
from ..ops import emit, launch_watched, observing, recording, timed

def apply(cuda) -> None:
    """Patch the simulator's ``numba.cuda`` module object in place (see the module)."""
    from numba.cuda.simulator import api as sim_api

    fills = {**stream_calls(), **_memory_calls()}
    for name, value in fills.items():
        patch(cuda, name, value)
    patch(sim_api, "synchronize", fills["synchronize"])  # the same function by any name
    _contexts_synchronize(cuda)
    report_attributes()
    _to_device_takes_pinned_arrays()
    _launches_take_turns()
    _each_configuration_its_own()
    _kernels_get_nanosleep()
    _blocks_without_barriers_run_in_one_thread()


def _memory_calls() -> dict:
    """cuda.pinned (any number of arrays), pinned_array(_like) and mapped_array; and
    device_array(_like), refused inside a strict graph capture (see streamlab.sim.capture)."""
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    @contextlib.contextmanager
    def pinned(*arylist):
        for ary in arylist:
            if not isinstance(ary, np.ndarray):
                raise TypeError(f"cuda.pinned takes numpy arrays, got {type(ary).__name__}")
        with _pin(arylist):
            yield

    def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
        return allocated(np.ndarray(shape=shape, dtype=dtype, strides=strides,
                                    order=order).view(SimPinnedArray))

    def pinned_array_like(ary):  # the layout numba's own gives (a Fortran array's too)
        return pinned_array(ary.shape, ary.dtype, strides=sim_da._contiguous_strides_like_array(ary),
                            order=sim_da._order_like_array(ary))

    def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0,
                     portable=False, wc=False):
        return allocated(np.ndarray(shape=shape, dtype=dtype, strides=strides,
                                    order=order).view(SimMappedArray))

    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    # Device arrays start zeroed. A GPU's fresh memory holds whatever was there, and its
    # arithmetic on garbage is silent; the simulator's kernels run as numpy scalars, which
    # print a RuntimeWarning when garbage happens to be NaN or inf (at random, from run
    # to run). A kernel that reads memory nobody wrote still reads wrong values: zeros.
    def device_array(*args, **kwargs):
        if capture.capturing:
            capture.sim_refuse_allocation("cuda.device_array")
        out = sim_da.device_array(*args, **kwargs)
        out._ary.fill(0)
        return out

    def device_array_like(ary, stream=0):
        if capture.capturing:
            capture.sim_refuse_allocation("cuda.device_array_like")
        out = sim_da.device_array_like(ary, stream=stream)
        out._ary.fill(0)
        return out

    return {
        "device_array": device_array,
        "device_array_like": device_array_like,
        "pinned": pinned,
        "pinned_array": pinned_array,
        "pinned_array_like": pinned_array_like,
        "mapped_array": mapped_array,
    }


def _contexts_synchronize(cuda) -> None:
    """``cuda.current_context().synchronize()`` waits for the whole device on a GPU (and
    the course records it as ``cuda.synchronize()``); the simulator's context has no such
    method (AttributeError). Give it one: ``cuda.synchronize()``, looked up when called,
    so that the record of what code did sees the same host wait."""
    from numba.cuda.simulator.cudadrv import devices

    def synchronize(self):
        return cuda.synchronize()

    patch(devices.FakeCUDAContext, "synchronize", synchronize)


def _to_device_takes_pinned_arrays() -> None:
    """The simulator's to_device keeps the host array's class for the device copy (a GPU's
    device array never has it), and a device array made of an ndarray subclass breaks
    when sliced, and so at its next copy_to_device (a SimPinnedArray's; a checker's
    WatchedArray's, copied in at a graph's replay): copy any subclass as the plain
    ndarray it is. Replaced by every name numba gives it, so that the hooks (installed
    next) find and wrap this one."""
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    original = sim_da.to_device

    def to_device(ary, stream=0, copy=True, to=None):
        if isinstance(ary, np.ndarray) and type(ary) is not np.ndarray:
            ary = ary.view(np.ndarray)  # (a view: a watched array records no read here)
        return original(ary, stream=stream, copy=copy, to=to)

    patch_everywhere(original, to_device)


def _launches_take_turns() -> None:
    """Launches from several host threads, one at a time (see the module docstring)."""
    from numba.cuda.simulator import kernel as sim_kernel

    launch_lock = threading.RLock()
    original_call = sim_kernel.FakeCUDAKernel.__call__

    def locked_call(self, *args):
        if self._device:
            return original_call(self, *args)  # a device function, called inside a kernel
        with launch_lock:
            return original_call(self, *args)

    patch(sim_kernel.FakeCUDAKernel, "__call__", locked_call)


def _each_configuration_its_own() -> None:
    """``kernel[grid, block, stream]`` configures the kernel object itself in the
    simulator (and forgets the stream), so two configurations made before either launch,
    or in two threads, overwrite each other. As on a GPU, each configuration is its own."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.kernel import normalize_kernel_dimensions

    def configure(self, configuration):
        if not isinstance(configuration, tuple) or not 2 <= len(configuration) <= 4:
            raise ValueError(
                f"a kernel launch is configured as kernel[grid, block] or "
                f"kernel[grid, block, stream] (or with shared memory bytes as well), got "
                f"kernel[{configuration!r}]")
        launch = copy.copy(self)
        launch.grid_dim, launch.block_dim = normalize_kernel_dimensions(*configuration[:2])
        launch._streamlab_stream = configuration[2] if len(configuration) > 2 else 0
        if len(configuration) == 4:
            launch.dynshared_size = configuration[3]
        return launch

    patch(sim_kernel.FakeCUDAKernel, "__getitem__", configure)


#: what, in a kernel's code, makes a block's threads wait for one another (or see each
#: other's lanes): a kernel that names one runs as numba's simulator runs it
_BARRIERS = frozenset({
    "syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or", "syncwarp",
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "shfl_sync_intrinsic",
    "all_sync", "any_sync", "eq_sync", "ballot_sync", "match_any_sync", "match_all_sync",
    "activemask", "lanemask_lt", "this_grid", "sync", "cg", "threadfence",
    "threadfence_block", "threadfence_system", "laneid"})
_barrier_free: dict = {}  # code object -> whether nothing it reaches names a barrier


def _no_barriers(fn, seen=None) -> bool:
    """Whether nothing the kernel ``fn`` runs names a barrier: its code, the code nested
    in it, and every function (a device function, or plain Python) it reaches by a global
    name, a module's attribute or a closure. Anything it cannot look into counts as one."""
    import types

    from numba.cuda.simulator.kernel import FakeCUDAKernel

    if isinstance(fn, FakeCUDAKernel):
        fn = fn.fn
    if not isinstance(fn, types.FunctionType):
        return False
    code = fn.__code__
    if code in _barrier_free:
        return _barrier_free[code]
    seen = set() if seen is None else seen
    if code in seen:
        return True  # (a recursion: judged where it began)
    seen.add(code)
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    ok = not (names & _BARRIERS)
    if ok:
        reached = [fn.__globals__.get(n) for n in names]
        reached += [getattr(m, n, None) for m in reached if isinstance(m, types.ModuleType)
                    for n in names]
        reached += [cell.cell_contents for cell in fn.__closure__ or ()
                    if cell.cell_contents is not None]
        for value in reached:
            if isinstance(value, FakeCUDAKernel) or (
                    isinstance(value, types.FunctionType)
                    and not (value.__module__ or "").startswith(("numpy", "math"))):
                if not _no_barriers(value, seen):
                    ok = False
                    break
    _barrier_free[code] = ok
    return ok


def _blocks_without_barriers_run_in_one_thread() -> None:
    """Numba's simulator starts one Python thread for each CUDA thread of a block, and its
    own thread polls them all, without pause, until they end: 1,024 threads of a one-line
    kernel took 0.28 s here, nearly all of it starting threads and polling. A block's
    threads need each other only at a barrier (syncthreads and its kin, the warp
    functions, a grid's sync). Where a kernel names none of them, its block's threads run
    one after another in one simulated thread, which takes each thread's index in turn
    (the same kernel: 0.013 s). Results are the same: nothing in such a kernel orders its
    threads, and the simulator runs its blocks one after another already. A kernel that
    names a barrier runs as numba runs it. One kind differs: threads of a block that wait
    for each other without a barrier (one spins on a flag that another sets) wait for ever
    here, as threads of two blocks already did in numba's simulator, though on a GPU since
    Volta such a wait can end (each thread is scheduled on its own). No kernel of the
    course waits so."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.kernelapi import Dim3

    original = sim_kernel.BlockManager.run

    def run(self, grid_point, *args):
        if not _no_barriers(self._f) or any(isinstance(a, sim_kernel.FakeCUDAKernel)
                                            for a in args):
            return original(self, grid_point, *args)
        points = list(np.ndindex(*self._block_dim))
        bx, by = self._block_dim[0], self._block_dim[1] if len(self._block_dim) > 1 else 1

        def each_thread():
            me = threading.current_thread()
            for point in points:
                point = tuple(point) + (0,) * (3 - len(point))
                me.threadIdx = Dim3(*point)
                me.thread_id = point[0] + bx * (point[1] + by * point[2])
                self._f(*args)

        thread = sim_kernel.BlockThread(each_thread, self, grid_point, points[0], self._debug)
        thread.start()
        thread.join()
        if thread.exception:
            raise thread.exception[0].with_traceback(thread.exception[1])

    patch(sim_kernel.BlockManager, "run", run)


def _kernels_get_nanosleep() -> None:
    """Inside a simulated kernel, ``cuda`` is a FakeCUDAModule: give it nanosleep. (No
    clock64: numba-cuda 0.30 has none on a GPU either.)"""
    from numba.cuda.simulator import kernelapi

    from ..model import simulator_model

    def nanosleep(self, ns):
        if simulator_model() is None or not slept(ns):  # the model times the sleep
            time.sleep(ns / 1e9)

    fake = kernelapi.FakeCUDAModule
    if not hasattr(fake, "nanosleep"):
        patch(fake, "nanosleep", nanosleep)


# --- what the recorder sees: the simulator's copies, element access and launches -------
_tls = threading.local()
#: the simulated launch running now (launches take turns): the elements it touched, while
#: recording (a Footprint); the ns each simulated thread slept (cuda.nanosleep); and
#: [bytes] it read and wrote. None outside a launch
_launch: dict = {"footprint": None, "slept": None, "touched": None}


def _patch(owner, name: str, make, timed_: bool = True) -> None:
    wrap_attribute(owner, name, make, timed if timed_ else None)


def install_recording() -> None:
    """The simulator's copies, element access from the host, and kernel launches, seen by
    the recorder (:mod:`streamlab.ops`); called once, by ``streamlab._hooks.install``."""
    _sim_copies()
    _sim_element_access()
    _sim_launches()


def slept(ns: int) -> bool:
    """A simulated thread calls ``cuda.nanosleep(ns)``: note it for the model GPU (which
    adds the longest sleep of a launch to the kernel's time). False outside a launch."""
    current = _launch["slept"]
    if current is None:
        return False
    me = threading.current_thread()  # a CUDA thread (its block's threads may share one)
    key = (tuple(getattr(me, "blockIdx", ())), tuple(getattr(me, "threadIdx", ())),
           threading.get_ident())
    current[key] = current.get(key, 0) + int(ns)
    return True


def _in_kernel() -> bool:
    """Is this a simulated CUDA thread (a BlockThread): is array access the kernel's?"""
    from numba.cuda.simulator import kernel as sim_kernel

    return isinstance(threading.current_thread(), sim_kernel.BlockThread)


def _sim_device_region(dev):
    return region_of(dev, f"the device array ({describe_array(dev)})")


def _sim_host_region(ary):
    return region_of(ary, f"the host array ({describe_array(ary)})")


def _sim_copies() -> None:  # noqa: C901  (three copies, each with its capture)
    """to_device (by every name), copy_to_host and copy_to_device: recorded, and after
    the host functions queued in their stream (see streamlab.sim.driver)."""
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    from .pinned import is_pinned

    fake = sim_da.FakeCUDAArray
    def to_device_wrap(orig):
        def to_device(ary, stream=0, copy=True, to=None):
            lane = None if _in_kernel() or not capture.capturing else capture.sim_lane(stream)
            if lane is None and copy and capture.capturing and not _in_kernel():
                capture.sim_refuse_legacy("cuda.to_device", stream)
            if lane is not None:  # the copy is captured; the allocation happens now
                if to is not None:
                    lane.copy("h2d", to, ary)
                    return None
                capture.sim_refuse_allocation("cuda.to_device (it allocates)")
                out = orig(ary, stream=0, copy=False)
                out.stream = stream
                if copy:
                    lane.copy("h2d", out, ary)
                return out
            if not _in_kernel():
                flush(stream)  # host functions queued in the stream run first
            out = orig(ary, stream=stream, copy=copy, to=to)
            if to is None and isinstance(out, fake):
                out.stream = stream  # as on a GPU: the array remembers its stream
                if copy and observing() and not _in_kernel():
                    host = ary if hasattr(ary, "__array_interface__") else None
                    copy_op("h2d", stream, host=_sim_host_region(host) if host is not None
                            else None, device=_sim_device_region(out),
                            pinned=host is not None and is_pinned(host),
                            synchronous=not stream)
            return out
        return to_device

    def copy_to_host(orig):
        def copy_to_host(self, ary=None, stream=0):
            lane = None if _in_kernel() or not capture.capturing \
                else capture.sim_lane(stream or self.stream)
            if lane is None and capture.capturing and not _in_kernel():
                capture.sim_refuse_legacy("copy_to_host", stream or self.stream)
            if lane is not None:  # captured into a graph: it runs at each replay
                if ary is None:
                    ary = np.empty(self.shape, self.dtype)  # pageable: accepted, as on a GPU (filled at each replay)
                lane.copy("d2h", ary, self)
                return ary
            if not _in_kernel():
                flush(stream or self.stream)
            out = orig(self, ary, stream)
            if observing() and not _in_kernel():
                stream = stream or self.stream  # as numba does on a GPU
                copy_op("d2h", stream, host=_sim_host_region(out),
                        device=_sim_device_region(self),
                        pinned=is_pinned(out), synchronous=not stream)
            return out
        return copy_to_host

    def copy_to_device(orig):
        def copy_to_device(self, ary, stream=0):
            lane = None if _in_kernel() or not capture.capturing \
                else capture.sim_lane(stream or self.stream)
            if lane is None and capture.capturing and not _in_kernel():
                capture.sim_refuse_legacy("copy_to_device", stream or self.stream)
            if lane is not None:  # captured into a graph: it runs at each replay
                lane.copy("d2d" if isinstance(ary, fake) else "h2d", self, ary)
                return None
            if not _in_kernel():
                flush(stream or self.stream)
            out = orig(self, ary, stream)
            if observing() and not _in_kernel():
                stream = stream or self.stream
                if isinstance(ary, fake):
                    copy_op("d2d", stream, host=None, device=_sim_device_region(self),
                            src=_sim_device_region(ary), pinned=None, synchronous=False)
                else:
                    copy_op("h2d", stream, host=_sim_host_region(ary),
                            device=_sim_device_region(self),
                            pinned=is_pinned(ary), synchronous=not stream)
            return out
        return copy_to_device

    original_to_device = sim_da.to_device
    wrapped = timed(to_device_wrap(original_to_device))
    patch_everywhere(original_to_device, wrapped)
    _patch(fake, "copy_to_host", copy_to_host)
    _patch(fake, "copy_to_device", copy_to_device)



def _sim_element_access() -> None:
    """``d[i]`` and ``d[i] = v`` on a device array from the host: a copy on a GPU."""
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    fake = sim_da.FakeCUDAArray
    def getitem(orig):
        def __getitem__(self, idx):
            out = orig(self, idx)
            if not isinstance(out, fake) and observing() and not _in_kernel():
                # an element read from the host: a device-to-host copy on a GPU
                emit("copy", "d2h", self.stream or 0, pinned=False, blocking=True,
                     reads=(_sim_device_region(self),))
            return out
        return __getitem__

    def setitem(orig):
        def __setitem__(self, idx, val):
            out = orig(self, idx, val)
            if observing() and not _in_kernel():
                # an element written from the host: a copy and a synchronize on a GPU
                emit("copy", "h2d", self.stream or 0, pinned=False, blocking=True,
                     writes=(_sim_device_region(self),))
            return out
        return __setitem__

    _patch(fake, "__getitem__", getitem)
    _patch(fake, "__setitem__", setitem)


def _sim_launches() -> None:
    """A kernel launch, recorded once its grid has run (before the copies back of host
    arrays), with the elements it touched; mapped arrays passed as device memory."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    from .pinned import SimMappedArray

    fake = sim_da.FakeCUDAArray

    def call(orig):
        def __call__(self, *args):
            if self._device:
                return orig(self, *args)
            if capture.capturing:  # (nothing captures: the graph stand-in is not asked)
                lane = capture.sim_lane(getattr(self, "_streamlab_stream", 0))
                if lane is not None:  # captured into a graph: it runs at each replay
                    return lane.kernel(self, args)
                capture.sim_refuse_legacy(f"a launch of {self.fn.__name__}",
                                           getattr(self, "_streamlab_stream", 0))
            flush(getattr(self, "_streamlab_stream", 0))
            # mapped host memory: the kernel writes the host array itself, as on a GPU
            args = tuple(fake(a) if isinstance(a, SimMappedArray) else a for a in args)
            if not observing():
                return orig(self, *args)
            _tls.launch = (self, args)
            stream = getattr(self, "_streamlab_stream", 0)
            launch_watched(stream)
            try:
                return orig(self, *args)
            finally:
                _tls.launch = None
        return __call__

    def swapped(orig):
        @contextlib.contextmanager
        def swapped_cuda_module(fn, fake_cuda_module):
            pending = getattr(_tls, "launch", None)
            if pending is None:
                with orig(fn, fake_cuda_module):
                    yield
                return
            _tls.launch = None
            # the elements touched, for the race check (a model GPU needs only the arrays)
            footprint = Footprint() if recording() else None
            slept, touched = {}, [0]  # (launches take turns: see streamlab.sim.fill)
            _launch.update(footprint=footprint, slept=slept, touched=touched)
            try:
                with orig(fn, fake_cuda_module):
                    yield
            finally:
                _launch.update(footprint=None, slept=None, touched=None)
            if observing():
                kernel, args = pending
                launch_op(kernel, kernel.fn.__name__, args,
                          getattr(kernel, "_streamlab_stream", 0), kernel.grid_dim,
                          kernel.block_dim, footprint, max(slept.values(), default=0),
                          touched[0], visible=lambda arg: isinstance(arg, fake))
        return swapped_cuda_module

    inner = sim_da.FakeWithinKernelCUDAArray

    def kernel_getitem(orig):
        def __getitem__(self, idx):
            out = orig(self, idx)
            touched = _launch["touched"]
            if touched is not None and not isinstance(out, inner):
                touched[0] += self._item._ary.itemsize
                footprint = _launch["footprint"]
                if footprint is not None:
                    footprint.touch(self._item._ary, idx, False)
            return out
        return __getitem__

    def kernel_setitem(orig):
        def __setitem__(self, idx, val):
            out = orig(self, idx, val)
            touched = _launch["touched"]
            if touched is not None:
                touched[0] += self._item._ary.itemsize
                footprint = _launch["footprint"]
                if footprint is not None:
                    footprint.touch(self._item._ary, idx, True)
            return out
        return __setitem__

    _patch(inner, "__getitem__", kernel_getitem, timed_=False)  # inside kernels: hot
    _patch(inner, "__setitem__", kernel_setitem, timed_=False)

    _patch(sim_kernel.FakeCUDAKernel, "__call__", call)
    _patch(sim_kernel, "swapped_cuda_module", swapped)
