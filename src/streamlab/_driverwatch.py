"""On a GPU, the stream and event calls that numba does not make, seen through CUPTI.

numba's calls are seen by wrappers in Python (:mod:`streamlab._hooks`). cuda.core's
``Stream.sync/record/wait``, ``Event.sync/is_done`` and ``Device.sync`` are methods of
compiled classes that no Python wrapper can reach, and other libraries (CuPy, PyTorch,
``cuda.bindings`` called directly) reach the driver without numba too. CUPTI's callback
API sees every driver call of a kind, on the thread that makes it, before the call
returns (measured on an H200 with cupti-python 13.4: ``Stream.record``, ``Stream.wait`` of
an event or of a stream, ``Event.sync``, ``Event.is_done``, ``Stream.sync`` and
``Device.sync`` each arrived with its stream and event handles and the learner's line on
the Python stack).

So while a recorder or race check listens (:func:`streamlab.ops.recording`), streamlab
subscribes to these driver calls, and describes each one it sees as numba's wrappers
describe theirs: ``cuStreamSynchronize``, ``cuEventSynchronize``, ``cuEventQuery``,
``cuStreamQuery``, ``cuEventRecord`` (with flags, per-thread variants included),
``cuStreamWaitEvent``, ``cuCtxSynchronize``. A call made from numba's or streamlab's own
Python code is left to the wrappers, which have described it already. When nobody
listens, streamlab is unsubscribed: each watched call then costs what it costs (a
cuda.core event record, 0.47 us on the H200, took 10.5 us with the callback on).

Without cupti-python (``pip install cupti-python``), these calls are not seen: a record
that needs them says so (:func:`missing`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import warnings
import sys
import threading

from . import ops
from .streams import PER_THREAD_HANDLE, DriverEvent, DriverStream

_state = {"subscriber": None, "unavailable": None, "taken": "", "errors": [],
          "exit": None}  # exit: CUPTI's API_EXIT site, once subscribed
_lock = threading.Lock()


_events: dict = {}  # handle -> DriverEvent


def event_for(handle: int) -> DriverEvent:
    """The one :class:`~streamlab.streams.DriverEvent` of ``handle``."""
    ev = _events.get(handle)
    if ev is None:
        if len(_events) > 65536:  # events come and go; a record and its wait are near
            _events.clear()
        ev = _events[handle] = DriverEvent(handle)
    return ev


@functools.lru_cache(maxsize=1)
def _own_dirs() -> tuple:
    """numba's and streamlab's folders (not cuda.core's or cuda.bindings': their calls are
    the ones to see)."""
    import numba
    from numba import cuda

    return tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                 for m in (sys.modules[__package__], numba, cuda))


def _from_numba_or_streamlab(frame) -> bool:
    return frame is not None and frame.f_code.co_filename.startswith(_own_dirs())


def _stream(handle: int, per_thread_variant: bool):
    if handle == 0 and per_thread_variant:
        return DriverStream(PER_THREAD_HANDLE)
    return handle if handle in (0, 1, 2) else DriverStream(handle)


def _result(data) -> bool:
    ptr = data.function_return_value
    return bool(ptr) and ctypes.c_int.from_address(int(ptr)).value == 0


def _table():
    from cupti import cupti

    cb = cupti.DriverApiTraceCbid
    P = cupti  # noqa: N806  (the params classes)
    return {
        cb.cuStreamSynchronize: ("stream sync", P.CuStreamSynchronizeParams, False),
        cb.cuStreamSynchronize_ptsz: ("stream sync", P.CuStreamSynchronizeParams, True),
        cb.cuEventSynchronize: ("event sync", P.CuEventSynchronizeParams, False),
        cb.cuEventQuery: ("event query", P.CuEventQueryParams, False),
        cb.cuStreamQuery: ("stream query", P.CuStreamQueryParams, False),
        cb.cuStreamQuery_ptsz: ("stream query", P.CuStreamQueryParams, True),
        cb.cuEventRecord: ("record", P.CuEventRecordParams, False),
        cb.cuEventRecord_ptsz: ("record", P.CuEventRecordParams, True),
        cb.cuEventRecordWithFlags: ("record", P.CuEventRecordWithFlagsParams, False),
        cb.cuEventRecordWithFlags_ptsz: ("record", P.CuEventRecordWithFlagsParams, True),
        cb.cuStreamWaitEvent: ("wait", P.CuStreamWaitEventParams, False),
        cb.cuStreamWaitEvent_ptsz: ("wait", P.CuStreamWaitEventParams, True),
        cb.cuCtxSynchronize: ("device sync", None, False),
        cb.cuCtxSynchronize_v2: ("device sync", None, False),
        cb.cuEventCreate: ("create event", P.CuEventCreateParams, False),
        # stream-ordered allocation, from any API (streamlab.memory.allocations_seen)
        cb.cuMemAllocFromPoolAsync: ("alloc", P.CuMemAllocFromPoolAsyncParams, False),
        cb.cuMemAllocFromPoolAsync_ptsz: ("alloc", P.CuMemAllocFromPoolAsyncPtszParams, True),
        cb.cuMemAllocAsync: ("alloc", P.CuMemAllocAsyncParams, False),
        cb.cuMemAllocAsync_ptsz: ("alloc", P.CuMemAllocAsyncPtszParams, True),
        cb.cuMemFreeAsync: ("free", P.CuMemFreeAsyncParams, False),
        cb.cuMemFreeAsync_ptsz: ("free", P.CuMemFreeAsyncPtszParams, True),
    }


_watched: dict = {}  # cbid -> (what, params class, per-thread variant)
#: the calls noted whoever makes them (an event's flags; stream-ordered allocations)
_ANY_CALLER = frozenset(("create event", "alloc", "free"))


def _callback(userdata, domain, cbid, data) -> None:
    # every watched call comes twice, on entry and on exit: the entry is dropped at once,
    # without an import (the span benchmark's profile found the import a large part of a
    # callback's cost while a recorder listens; issue 54)
    try:
        if data.callback_site != _state["exit"]:
            return
        what, params_cls, ptsz = _watched[cbid]
        if what not in _ANY_CALLER and _from_numba_or_streamlab(sys._getframe(1)):
            return  # numba's wrappers describe it (or it is streamlab's own): before the
            # parameters are read, as most calls while a recorder listens are these
        params = params_cls.from_ptr(data.function_params, readonly=True) \
            if params_cls is not None else None
        if what == "create event":  # its flags, for blocking_sync(); any caller's
            if _result(data):
                handle = ctypes.c_void_p.from_address(int(params.ph_event)).value or 0
                _events.pop(handle, None)  # a new event: a handle may be reused
                event_for(handle).blocking_sync = bool(int(params.flags_) & 1)
            return
        if what in ("alloc", "free"):  # whoever calls (the learner's pool is wrapped)
            if _result(data):
                from .memory import note_allocation

                stream = _stream(int(params.h_stream), ptsz)
                handle = stream.handle if isinstance(stream, DriverStream) else stream
                if what == "alloc":  # dptr: where the driver wrote the new address
                    address = ctypes.c_uint64.from_address(int(params.dptr)).value or None
                else:  # dptr: the address freed
                    address = int(params.dptr) or None
                note_allocation(what, handle, int(getattr(params, "bytesize", 0)) or None,
                                address)
            return
        detail = {"driver": data.function_name}
        if what == "stream sync":
            ops.emit("sync", "stream", _stream(int(params.h_stream), ptsz), detail=detail)
        elif what == "event sync":
            ops.emit("sync", "event", event=event_for(int(params.h_event)), detail=detail)
        elif what == "event query":
            ops.emit("query", "event", event=event_for(int(params.h_event)),
                     detail={**detail, "result": _result(data)})
        elif what == "stream query":
            ops.emit("query", "stream", _stream(int(params.h_stream), ptsz),
                     detail={**detail, "result": _result(data)})
        elif what == "record":
            ops.emit("record", "event", _stream(int(params.h_stream), ptsz),
                     event=event_for(int(params.h_event)), detail=detail)
        elif what == "wait":
            ops.emit("wait", "event", _stream(int(params.h_stream), ptsz),
                     event=event_for(int(params.h_event)), detail=detail)
        elif what == "device sync":
            from numba import cuda

            ops.emit("sync", "device", detail={**detail,
                                               "device": cuda.get_current_device().id})
    except Exception as err:  # never raise into the driver: keep it for errors()
        _state["errors"].append(f"{data.function_name}: {type(err).__name__}: {err}")


def errors() -> list:
    """What went wrong inside the callback (it may not raise into the driver)."""
    return list(_state["errors"])


def available() -> bool:
    """Can CUPTI's callbacks be used here (a GPU, and cupti-python installed)?"""
    if _state["unavailable"] is not None:
        return not _state["unavailable"]
    try:
        from cupti import cupti  # noqa: F401
    except Exception as err:  # noqa: BLE001  (missing, or no libcupti for this driver)
        _state["unavailable"] = f"{type(err).__name__}: {err}"
        return False
    _state["unavailable"] = ""
    return True


def missing() -> str:
    """Why calls outside numba are not seen, or '' when they are (or will be, once
    someone listens)."""
    available()
    return _state["unavailable"] or _state["taken"]


def _listening(on: bool) -> None:
    with _lock:
        if on and _state["subscriber"] is None and available():
            from cupti import cupti

            if not _watched:
                _watched.update({int(k): v for k, v in _table().items()})
            _state["exit"] = cupti.ApiCallbackSite.API_EXIT
            try:
                sub = cupti.subscribe(_callback, None)
            except Exception as err:  # noqa: BLE001  (CUPTI takes one subscriber at a time)
                _state["taken"] = (
                    f"CUPTI's callbacks are taken by another subscriber in this process "
                    f"({type(err).__name__}: {err}): a profiler or tool of yours, or a "
                    f"second copy of streamlab")
                warnings.warn(
                    f"streamlab cannot see cuda.core's or the driver's stream and event "
                    f"calls in this recording: {_state['taken']}. record_ops and race_check "
                    f"see numba's calls only; stop the other subscriber to see them all",
                    RuntimeWarning, stacklevel=2)
                return
            _state["taken"] = ""
            for cbid in _watched:
                cupti.enable_callback(1, sub, cupti.CallbackDomain.DRIVER_API, cbid)
            _state["subscriber"] = sub
        elif not on and _state["subscriber"] is not None:
            from cupti import cupti

            sub, _state["subscriber"] = _state["subscriber"], None
            for cbid in _watched:
                cupti.enable_callback(0, sub, cupti.CallbackDomain.DRIVER_API, cbid)
            cupti.unsubscribe(sub)


def taken() -> str:
    """Why the last recording could not subscribe (another CUPTI subscriber), or ''."""
    return _state["taken"]


def install() -> None:
    """Subscribe whenever someone listens (GPU only)."""
    ops.on_listening(_listening)


def subscribed() -> bool:
    """Is streamlab subscribed to CUPTI's callbacks now?"""
    return _state["subscriber"] is not None
