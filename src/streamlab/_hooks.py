"""Where streamlab sees numba's stream-ordered calls: one set of wrappers at the bottom.

Installed once, by ``import streamlab`` (which says so), and undone exactly by
:func:`uninstall`. Each wrapper calls numba's own function first, then, only while a
recorder or race check listens (:func:`streamlab.ops.recording`), describes what the
call did with :func:`streamlab.ops.emit`. The wrappers sit where every path meets:

on a GPU (numba-cuda's driver layer, here)
    ``driver.host_to_device`` / ``device_to_host`` / ``device_to_device`` /
    ``device_memset`` (every copy, the implicit ones of ``to_device``, ``copy_to_host()``
    and of host arrays passed to kernels included), ``Event.record/wait/synchronize/
    query``, ``Stream.synchronize``, ``Context.synchronize`` (``cuda.synchronize()`` by
    any name), and the kernel launch (``CUDADispatcher.call`` notes the kernel, the stream
    of its launch configuration and its arguments; the launch itself is recorded when
    numba hands it to the driver, after the arguments' implicit copies).

on the simulator (:func:`streamlab.sim.fill.install_recording`)
    its ``to_device``, ``FakeCUDAArray.copy_to_host/copy_to_device`` and element access
    from the host, and the kernel call. Events, streams and ``cuda.synchronize`` are
    streamlab's own there (:mod:`streamlab.sim.fill`), which record themselves.

on both, between host threads (:func:`streamlab.handovers.watch_threads`)
    ``Thread.start`` and ``Thread.join``, and what one thread hands another
    (``loop.call_soon_threadsafe``, ``threading.Event``, ``concurrent.futures.Future``,
    ``queue.Queue``): how a host function's news, or a worker's, orders the thread that
    receives it.

What a copy or a launch reads and writes is described once, for both modes, by the
recorder (:func:`streamlab.kernels.copy_op`, :func:`streamlab.kernels.launch_op`).
"""

from __future__ import annotations

import functools
import inspect
import threading

import numpy as np

from . import _device, _patching, handovers, ops
from .kernels import copy_op, launch_op
from .ops import emit, observing
from .regions import (Region, allocation, describe_array, device_owner, host_owner, is_pinned,
                      pinned_address, region_of)

_tls = threading.local()
_installed = {"done": False}


def _patch(owner, name: str, make, timed: bool = True) -> None:
    """Replace ``owner.name`` with ``make(original)``, in the registry that
    :func:`uninstall` undoes; ``timed``: a model GPU is told when the call begins and ends
    (see :func:`streamlab.ops.timed`)."""
    _patching.wrap_attribute(owner, name, make, ops.timed if timed else None)


def install() -> None:
    """Wrap numba's calls for this mode (once), and let the recorder see host threads."""
    if _installed["done"]:
        return
    if _device.SIMULATOR:
        from .sim import fill

        fill.install_recording()
    else:
        _install_gpu()
    handovers.watch_threads()
    _installed["done"] = True


def uninstall() -> None:
    """Put back every object streamlab replaced: numba's functions that :func:`install`
    wrapped, the simulator's gaps that :mod:`streamlab.sim.fill` filled, the simulator's
    stand-in for cuda.core (``sys.modules["cuda.core"]``), the thread hooks and IPython's
    error display (one registry, :mod:`streamlab._patching`, latest first). The choice of
    the simulator itself (``NUMBA_ENABLE_CUDASIM``, set before numba was imported) stays.
    Afterwards numba behaves as if streamlab had never been imported; recording, race
    checks and, on the simulator, the model GPU's times are gone with it."""
    handovers.stop_watching()
    _patching.undo_all()
    _installed["done"] = False


def installed() -> bool:
    """Are numba's calls wrapped (by :func:`install`)?"""
    return _installed["done"]


def banner() -> str:
    """One line: what streamlab changed in numba, and how to undo it."""
    import os

    sim = ("fills the simulator's gaps (events with times, streams with handles, pinned "
           "and mapped memory, nanosleep; see streamlab.sim.fill), stands in for cuda.core's "
           "devices, streams and events (streamlab.sim.core) and for the driver's "
           "cuLaunchHostFunc (streamlab.sim.bindings), and ") if _device.SIMULATOR \
        else ("sees cuda.core's stream and event calls through CUPTI while recording "
              "(streamlab._driverwatch), records cuda.bindings' cuLaunchHostFunc while "
              "recording (streamlab.hostfn), ")
    race = " Every operation is race-checked (STREAMLAB_RACE_CHECK=1)." if \
        os.environ.get("STREAMLAB_RACE_CHECK", "") not in ("", "0") else ""
    return (f"streamlab: {sim}watches numba's launches, copies, events and synchronizes "
            f"(and threads starting and joining, and what a host function hands to "
            f"another thread) for record_ops and race_check; "
            f"streamlab.uninstall() undoes it.{race}")


# --- the GPU -------------------------------------------------------------------------
def _device_memory(arg) -> bool:
    """Is a kernel's argument device memory (not a host array numba copies)?"""
    return bool(getattr(arg, "__cuda_memory__", False)) or \
        hasattr(arg, "__cuda_array_interface__")


def _install_gpu() -> None:
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import driver

    def device_region(obj, size):
        ptr = driver.device_pointer(obj)
        what = f"the device array ({describe_array(obj)})"
        return Region(ptr, ptr + size, what, allocation(device_owner(obj)))

    def host_region(obj, size):
        ptr = driver.host_pointer(obj, readonly=True)
        owner = host_owner(obj) if not isinstance(obj, int) else None
        return Region(ptr, ptr + size, f"the host array ({describe_array(obj)})",
                      allocation(owner), host=True), pinned_address(ptr)

    def regions(direction, dst, src, size):
        """What one of numba's four driver copy functions reads and writes."""
        if direction == "h2d":
            host, pinned = host_region(src, size)
            return dict(host=host, device=device_region(dst, size), pinned=pinned)
        if direction == "d2h":
            host, pinned = host_region(dst, size)
            return dict(host=host, device=device_region(src, size), pinned=pinned)
        if direction == "d2d":
            return dict(host=None, device=device_region(dst, size),
                        src=device_region(src, size), pinned=None)
        return dict(host=None, device=device_region(dst, size), pinned=None)  # memset

    def wrap(direction):
        def make(orig):
            signature = inspect.signature(orig)  # numba calls them by keyword too

            @functools.wraps(orig)
            def copy(*args, **kwargs):
                out = orig(*args, **kwargs)
                if observing():
                    bound = signature.bind(*args, **kwargs)
                    bound.apply_defaults()
                    a = bound.arguments
                    stream = a["stream"]
                    copy_op(direction, stream,
                            synchronous=not stream and direction in ("h2d", "d2h"),
                            **regions(direction, a["dst"], a.get("src"), a["size"]))
                return out
            return copy
        return make

    for name, direction in (("host_to_device", "h2d"), ("device_to_host", "d2h"),
                            ("device_to_device", "d2d"), ("device_memset", "memset")):
        _patch(driver, name, wrap(direction))
    _install_events(driver.Event)
    _patch(driver.Stream, "synchronize", _stream_sync)

    def context_sync(orig):
        def synchronize(self):
            out = orig(self)
            emit("sync", "device", detail={"device": self.device.id})
            return out
        return synchronize

    _patch(driver.Context, "synchronize", context_sync)

    def call(orig):
        def call(self, args, launch_config):
            if not observing() or getattr(_tls, "launch", None) is not None:
                return orig(self, args, launch_config)
            _tls.launch = (self, args, launch_config)
            ops.launch_watched(launch_config.stream)
            try:
                return orig(self, args, launch_config)
            finally:
                _tls.launch = None
        return call

    def launch(orig):
        def launch(stream, config, kernel, *kernel_args):
            out = orig(stream, config, kernel, *kernel_args)
            pending = getattr(_tls, "launch", None)
            if pending is not None and observing():
                _tls.launch = None  # one launch per call
                disp, args, cfg = pending
                launch_op(disp, disp.py_func.__name__, args, cfg.stream, cfg.griddim,
                          cfg.blockdim, visible=_device_memory)
            return out
        return launch

    _patch(dispatcher.CUDADispatcher, "call", call)
    _patch(dispatcher, "launch", launch)
    _install_gpu_argument_copies()


def _install_gpu_argument_copies() -> None:
    """A host array passed to a kernel: numba-cuda 0.30 copies it in (and, unless it is
    an ``In`` argument, back out after the kernel) with the driver directly, in the
    launch's stream, not through the copy functions above."""
    from numba.cuda import args as nb_args

    def regions(hint, devary):
        nbytes = devary.size * devary.dtype.itemsize
        what = f"the host array ({describe_array(hint.value)})"
        device = Region(devary.ptr, devary.ptr + nbytes,
                        f"the device copy of {what[4:]}", allocation(devary))
        return region_of(hint.value, what), device, is_pinned(hint.value)

    def handle(stream) -> int:
        return int(getattr(stream, "handle", stream) or 0)

    def out_to_device(orig):
        def to_device(self, retr, stream=0):
            before = len(retr)
            devary = orig(self, retr, stream)
            if len(retr) > before and observing():  # converted: a host array
                host, device, pinned = regions(self, devary)
                if type(self).copy_input:
                    copy_op("h2d", stream, host=host, device=device, pinned=pinned,
                            synchronous=False)
                back = retr[-1]

                def copy_back():
                    out = back()
                    if observing():
                        copy_op("d2h", stream, host=host, device=device, pinned=pinned,
                                synchronous=handle(stream) == 0)
                    return out

                retr[-1] = copy_back
            return devary
        return to_device

    def in_to_device(orig):
        def to_device(self, retr, stream=0):
            devary = orig(self, retr, stream)
            value = self.value
            if observing() and isinstance(value, np.ndarray) and \
                    not getattr(value, "__cuda_memory__", False):
                host, device, pinned = regions(self, devary)
                copy_op("h2d", stream, host=host, device=device, pinned=pinned,
                        synchronous=False)
            return devary
        return to_device

    _patch(nb_args.Out, "to_device", out_to_device)
    _patch(nb_args.In, "to_device", in_to_device)


def _install_events(event_cls) -> None:
    """Event.record/wait/synchronize/query (the GPU's; the simulator's record themselves)."""

    def record(orig):
        def record(self, stream=0):
            out = orig(self, stream)
            emit("record", "event", stream, event=self)
            return out
        return record

    def wait(orig):
        def wait(self, stream=0):
            out = orig(self, stream)
            emit("wait", "event", stream, event=self)
            return out
        return wait

    def synchronize(orig):
        def synchronize(self):
            out = orig(self)
            emit("sync", "event", event=self)
            return out
        return synchronize

    def query(orig):
        def query(self):
            out = orig(self)
            emit("query", "event", event=self, detail={"result": bool(out)})
            return out
        return query

    for name, make in (("record", record), ("wait", wait), ("synchronize", synchronize),
                       ("query", query)):
        _patch(event_cls, name, make)


def _stream_sync(orig):
    def synchronize(self):
        out = orig(self)
        emit("sync", "stream", self)
        return out
    return synchronize
