"""CUDA graphs for numba code: capture stream work once, replay it with one launch.

numba has no graph API. cuda.core has one, and numba accepts a cuda.core
``GraphBuilder`` as a kernel's stream (``kernel[grid, block, builder](...)``); copies
take ``stream=builder.stream``. The course writes cuda.core's own calls:
``Device().create_stream(s).create_graph_builder()`` captures a numba stream ``s``
(``Device().create_stream()`` a new one), ``GraphBuilder.join(*branches)`` joins what
``split`` made, and a graph launches into ``Device().create_stream(s)``.

- On a GPU those are cuda.core's own objects: nothing is wrapped. This module reads a
  graph's shape (:func:`graph_shape`), ends a capture that a refused call invalidated
  (:func:`end_capture`, which cuda.core 1.2 cannot), and keeps every builder still
  alive at the interpreter's exit from being collected after the context is gone
  (cuda-python#2834; see ``_keep_builders_at_exit``).
- On Numba's simulator, which has no driver for cuda.core, ``streamlab.sim.core``
  stands in for ``cuda.core`` (and ``cuda.core.graph``) with the same methods
  (``begin_building``, ``split``, ``join``, ``callback``, ``end_building``,
  ``complete``; the graph's ``upload``, ``launch``, ``update``). It records the work
  issued to a capturing stream instead of running it, refuses what a GPU refuses inside
  a capture (a synchronize, an event's query or synchronize, an allocation in the
  strict modes, work on the legacy default stream while a blocking stream captures)
  with the GPU's error, and replays the work at each launch, branch by branch on
  streams of its own, so that the model GPU (:mod:`streamlab.model`) times a replay as a
  GPU would run it: one host call, and the branches side by side.

What the simulator cannot show: the driver's own cost of a graph (instantiation,
upload, the launch itself, which the model charges as one kernel launch); a node's
parameters changed in place (``Graph.update`` replaces every node's work). A GPU accepts
a pageable copy in a capture, in every mode, and each launch then holds the host for the
copy (measured on an H200); the model GPU charges that wait too, as for any pageable copy.

A graph is launched into a cuda.core stream: ``graph.launch(Device().create_stream(s))``
(a numba stream is refused with cuda.core's TypeError, on both paths).
:func:`graph_builder`, :func:`join` and :func:`core_stream` are the names this
module once gave those calls; the course no longer writes them.

>>> import numpy as np, streamlab
>>> from numba import cuda
>>> from cuda.core import Device
>>> @cuda.jit
... def double(x):
...     i = cuda.grid(1)
...     if i < x.size:
...         x[i] *= 2
>>> h = cuda.pinned_array(4, np.float32); h[:] = 1
>>> d = cuda.device_array(4, np.float32)
>>> b = Device().create_stream().create_graph_builder().begin_building()
>>> d.copy_to_device(h, stream=b.stream)
>>> double[1, 4, b](d)
>>> _ = d.copy_to_host(h, stream=b.stream)
>>> _ = b.end_building()
>>> [n.kind for n in streamlab.graph_shape(b).nodes]
['copy h2d', 'kernel', 'copy d2h']
>>> g = b.complete(); s = cuda.stream()
>>> cs = Device().create_stream(s)                  # cuda.core's view of the numba stream
>>> g.launch(cs); g.launch(cs); s.synchronize()
>>> h.tolist()
[4.0, 4.0, 4.0, 4.0]
"""

from __future__ import annotations

import copy as _copy
import itertools
import threading
import weakref
from dataclasses import dataclass

from ._device import on_simulator

CAPTURE_UNSUPPORTED = 900  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
CAPTURE_INVALIDATED = 901  # CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
CAPTURE_UNJOINED = 904  # CUDA_ERROR_STREAM_CAPTURE_UNJOINED
CAPTURE_ISOLATION = 905  # CUDA_ERROR_STREAM_CAPTURE_ISOLATION
CAPTURE_IMPLICIT = 906  # CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
CAPTURED_EVENT = 907  # CUDA_ERROR_CAPTURED_EVENT
# cuda.core's words when end_building() meets a capture that an earlier call invalidated
INVALIDATED_MESSAGE = ("Build process encountered an error and has been invalidated. "
                       "Build process must now be ended.")
GRAPH_EXEC_UPDATE_FAILURE = 910  # CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
MODES = ("global", "thread_local", "relaxed")


class GraphError(RuntimeError):
    """A graph call used wrongly; the message says what to do."""


# --- the calls, the same on both paths ----------------------------------------------
# is the exit keeper registered in this process? (a dict, changed in place: the
# grader watches the package's module-level settings for learner code replacing them)
_made = {"keeper": False}

# A capture that a refused call invalidated, or that ended unjoined, has no graph: the
# driver ends it without one. cuda.core 1.2's GraphBuilder does not know: when such a
# builder is collected it ends the capture again and destroys a graph the driver never
# gave it (cuStreamEndCapture and cuGraphDestroy both refused, seen under cuda-gdb), and
# at the interpreter's exit, after the context is gone, on streams that may be gone too
# (NVIDIA/cuda-python#2834, fixed for cuda.core 1.3). It killed lesson 07's kernel, and
# a test's program (eight invalidated captures, then an unjoined one) died at exit in 6
# of 6 runs on an H100. So such a builder is never collected: each builder graph_builder
# makes is held in _live until its capture has ended, then either let go (it ended with
# a graph) or kept for the life of the process in _dead, with one reference more than
# it has owners, so that not even the interpreter's teardown collects it. With this,
# the same program exited cleanly in 6 of 6 runs. Which builders ended without a graph is
# read from the driver (_ended_without_graph): cuda.core's is_building alone reads False
# for both kinds of ending, which let every one of them go before (found on the GPU).
_live: list = []
_dead: list = []


def _keep_for_good(builder) -> None:
    """Keep ``builder`` (whose capture ended without a graph) until the process ends."""
    import ctypes

    if not any(b is builder for b in _dead):
        _dead.append(builder)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(builder))


def _ended_without_graph(builder) -> bool | None:
    """True: ``builder``'s capture ended without a graph (the driver ended an invalidated
    capture, or refused to end an unjoined one). False: it ended with a graph. None: still
    capturing, an invalidated capture not yet ended included.

    Read from the driver, not from cuda.core's state alone (measured with cuda.core 1.2
    on an H100): while an invalidated capture is still open, ``is_building`` raises;
    once the driver has ended it, or refused an unjoined one, ``is_building`` is False
    as after a capture that made a graph. What tells them apart is the graph the builder
    holds: the driver's own graph, or none it will take."""
    from .streams import _capturing, handle_of

    try:
        building = builder.is_building
    except Exception:  # noqa: BLE001  (cuda.core: "invalidated ... must now be ended")
        building = True
    if building:
        return None if _capturing(handle_of(builder.stream)) else True
    return not _holds_graph(builder)


def _holds_graph(builder) -> bool:
    """Whether an ended ``builder`` holds a graph the driver knows: a capture ended without
    one leaves cuda.core 1.2 with a handle the driver never filled (NULL) or refuses."""
    from cuda.bindings import driver

    try:
        handle = builder.graph_definition.handle
    except Exception:  # noqa: BLE001  (no graph to read: none was made)
        return False
    if handle is None or not int(handle):
        return False
    err = driver.cuGraphGetNodes(handle, 0)[0]
    return err == driver.CUresult.CUDA_SUCCESS


def _settle(only=None) -> None:
    """Let go of the builders in ``_live`` whose capture ended with a graph, keep for
    good those whose capture ended without one (``only``: just those builders)."""
    for builder in list(_live):
        if only is not None and not any(builder is o for o in only):
            continue
        ended = _ended_without_graph(builder)
        if ended is None:
            continue
        if ended:
            _keep_for_good(builder)
        _live[:] = [b for b in _live if b is not builder]


def _keep_builders_at_exit() -> None:
    """At the interpreter's exit, on a GPU: every cuda.core ``GraphBuilder`` still alive,
    whoever made it, has its open capture ended by the driver and is kept, so that the
    interpreter's teardown never collects it after the context is gone (the crash of
    cuda-python#2834, measured on an H100: a process that kept an invalidated builder to
    the end died there in 6 of 6 runs). Builders are found by the garbage collector's
    list, as cuda.core's classes cannot take a hook of ours (their types are immutable);
    those ``_live`` holds are among them."""
    import gc

    try:
        from cuda.core.graph import GraphBuilder
    except ImportError:  # no cuda.core: no builders
        return
    from .streams import handle_of

    for obj in gc.get_objects():
        if type(obj) is not GraphBuilder or any(obj is b for b in _dead):
            continue
        try:
            _end_driver_capture(handle_of(obj.stream))
        except Exception:  # noqa: BLE001, S110  (at exit: keep it, say nothing)
            pass
        _keep_for_good(obj)


def _register_exit_keeper() -> None:
    import atexit

    if not on_simulator() and not _made.get("keeper"):
        atexit.register(_keep_builders_at_exit)
        _made["keeper"] = True


def graph_builder(stream=None):
    """A graph builder that captures the work issued to ``stream``.

    ``stream``: a numba stream (``cuda.stream()``, ``streamlab.stream()``) whose work,
    between ``begin_building()`` and ``end_building()``, goes into the graph instead of
    running; other streams join the capture by waiting on an event recorded in it.
    ``None`` (the default): a new stream of the builder's own, ``builder.stream``.
    On a GPU this is cuda.core's ``GraphBuilder``; on the simulator, a stand-in.
    """
    if stream is not None and not (hasattr(stream, "__cuda_stream__") or hasattr(stream, "handle")):
        raise TypeError(f"graph_builder captures a stream: pass a numba stream "
                        f"(cuda.stream()) or nothing, got {stream!r}")
    if on_simulator():
        return SimGraphBuilder(stream)
    from cuda.core import Device

    dev = Device()
    dev.set_current()
    core = dev.create_stream(stream) if stream is not None else dev.create_stream()
    _settle()
    builder = core.create_graph_builder()
    _live.append(builder)
    return builder


def join(*builders):
    """Join the branches ``split`` made back into one builder, which is returned (the
    first one): ``GraphBuilder.join`` by a name that reads the same on both paths."""
    if len(builders) < 2:
        raise GraphError(f"join takes the builders to join, two or more; got "
                         f"{len(builders)}: pass every branch that split() returned")
    return type(builders[0]).join(*builders)


def core_stream(stream):
    """``stream`` as cuda.core takes it, for ``graph.upload`` and ``graph.launch`` (on
    the simulator, a stand-in that carries the stream)."""
    if on_simulator():
        if isinstance(stream, SimCoreStream):
            return stream
        if stream is None or not hasattr(stream, "__cuda_stream__"):
            raise TypeError(f"core_stream takes a stream (cuda.stream()), got {stream!r}")
        return SimCoreStream(stream)
    from cuda.core import Device

    return Device().create_stream(stream)


def end_capture(builder) -> None:
    """End ``builder``'s capture if it is still on, whatever ended it early; the error an
    invalidated capture gives at its end is expected and dropped.

    Needed because cuda.core (1.2) cannot end a capture that a refused call invalidated:
    its ``end_building()`` raises "Build process must now be ended" and leaves the streams
    capturing, and then every ``cuda.synchronize()`` in the process is refused (measured
    on an H200). This ends it with the driver's own ``cuStreamEndCapture`` on the
    builder's stream, which ends the whole capture, split() branches included. The
    simulator's stand-in behaves the same way."""
    if builder is None or not hasattr(builder, "end_building"):
        raise TypeError(f"end_capture takes a graph builder (streamlab.graph_builder()), "
                        f"got {builder!r}")
    if isinstance(builder, SimGraphBuilder):
        c = builder._capture
        if c.building:
            c.stop()
            c.ended = True
        return
    try:  # a capture still active: cuda.core ends it (and knows it ended)
        if builder.is_building:
            builder.end_building()
    except Exception:  # noqa: BLE001, S110  (invalidated: cuda.core refuses; see below)
        pass
    from .streams import handle_of

    _end_driver_capture(handle_of(builder.stream))
    if not any(b is builder for b in _live):
        _live.append(builder)  # made by cuda.core itself: kept out of harm the same way
    _settle(only=[builder])


def end_capture_of(stream) -> None:
    """End the capture that ``stream`` (a numba stream) is in, if any: as
    :func:`end_capture`, for when the builder is out of reach, such as a learner's
    function that began a capture and raised before ending it."""
    if on_simulator():
        lane = sim_lane(stream)
        if lane is not None:
            lane.capture.stop()
            lane.capture.ended = True
        return
    from .streams import handle_of

    raw = handle_of(stream)
    _end_driver_capture(raw)
    _settle(only=[b for b in _live if handle_of(b.stream) == raw])


def _end_driver_capture(raw: int) -> None:
    """cuStreamEndCapture on the stream ``raw`` if it is capturing (an invalidated
    capture's error is expected: there is no graph to keep)."""
    from cuda.bindings import driver

    handle = driver.CUstream(raw)
    err, status = driver.cuStreamIsCapturing(handle)
    if err == driver.CUresult.CUDA_SUCCESS and \
            status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE:
        _err, graph = driver.cuStreamEndCapture(handle)  # INVALIDATED: expected, no graph
        if graph is not None and int(graph):
            driver.cuGraphDestroy(graph)


def is_capturing(stream) -> bool:
    """Is ``stream`` (a numba or cuda.core stream, or a graph builder) being captured
    into a graph now? On a GPU, the driver's answer (``cuStreamIsCapturing``), whoever
    began the capture."""
    if stream is None or isinstance(stream, int):
        return False
    if on_simulator():
        return sim_lane(stream) is not None
    from .streams import _capturing, handle_of

    inner = getattr(stream, "stream", None)  # a GraphBuilder: its stream
    handle = handle_of(inner if inner is not None and hasattr(stream, "begin_building")
                       else stream)
    return handle not in (0, 1, 2) and _capturing(handle)


# --- the shape of a graph ----------------------------------------------------------------
@dataclass(frozen=True)
class GraphNode:
    """One node: its place in the graph, its kind ('kernel', 'copy h2d', 'copy d2h',
    'copy d2d', 'copy', 'memset', 'host', 'record', 'wait', 'empty', 'alloc', 'free',
    'graph', 'other') and, for a kernel or host function, its name."""

    index: int
    kind: str
    name: str = ""

    def describe(self) -> str:
        """'kernel transform', 'copy h2d', ..."""
        return f"{self.kind} {self.name}".strip()


@dataclass(frozen=True)
class GraphShape:
    """A graph's nodes and its edges (``(i, j)``: node j runs after node i)."""

    nodes: tuple
    edges: frozenset

    def of(self, kind: str) -> list:
        """The nodes of one kind ('kernel', 'host', ...; 'copy' matches every copy)."""
        return [n for n in self.nodes if n.kind == kind or n.kind.startswith(kind + " ")]

    def preds(self, i: int) -> set:
        """The nodes node i waits for directly."""
        return {a for a, b in self.edges if b == i}

    def succs(self, i: int) -> set:
        """The nodes that wait for node i directly."""
        return {b for a, b in self.edges if a == i}

    def reaches(self, i: int, j: int) -> bool:
        """Does node j run after node i (through any path)?"""
        seen, todo = set(), [i]
        while todo:
            for b in self.succs(todo.pop()):
                if b == j:
                    return True
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return False

    def concurrent(self, i: int, j: int) -> bool:
        """May nodes i and j run at the same time (neither waits for the other)?"""
        return i != j and not self.reaches(i, j) and not self.reaches(j, i)

    def roots(self) -> list:
        """The nodes that wait for nothing: where the graph's work starts."""
        return [n for n in self.nodes if not self.preds(n.index)]

    def leaves(self) -> list:
        """The nodes nothing waits for: the launch stream's next work waits for these."""
        return [n for n in self.nodes if not self.succs(n.index)]

    def describe(self) -> str:
        """One line per node, with what it waits for."""
        lines = []
        for n in self.nodes:
            after = sorted(self.preds(n.index))
            lines.append(f"{n.index}: {n.describe()}" +
                         (f"  (after {', '.join(map(str, after))})" if after else ""))
        return "\n".join(lines)


def graph_shape(builder) -> GraphShape:
    """The nodes and edges of the graph ``builder`` captured (after ``end_building``),
    read from the graph itself: cuda.core's graph definition on a GPU, the stand-in's
    record on the simulator."""
    if isinstance(builder, SimGraphBuilder):
        return builder._capture.shape()
    if isinstance(builder, SimGraph):
        return builder._capture.shape()
    try:
        definition = builder.graph_definition
    except AttributeError:
        raise TypeError(f"graph_shape reads a graph builder (from streamlab.graph_builder), "
                        f"got {type(builder).__name__}") from None
    except RuntimeError as e:
        raise GraphError(f"graph_shape reads a builder that has finished: call "
                         f"builder.end_building() first ({e})") from None
    return _shape_of_definition(definition)


def _shape_of_definition(definition) -> GraphShape:
    # cuda.core 1.2: nodes() and edges() are methods (properties in some earlier releases)
    found = definition.nodes() if callable(definition.nodes) else definition.nodes
    pairs = definition.edges() if callable(definition.edges) else definition.edges
    pairs = [(a, b) for a, b in pairs]
    nodes = _topological(list(found), pairs)
    index = {n: i for i, n in enumerate(nodes)}
    out = tuple(GraphNode(i, *_describe_core_node(n)) for i, n in enumerate(nodes))
    edges = frozenset((index[a], index[b]) for a, b in pairs)
    return GraphShape(out, edges)


def _topological(nodes: list, pairs: list) -> list:
    """The nodes in an order where every node comes after its predecessors (ties broken
    by the driver's node handle, so that the order is the same from run to run of one
    process and indices read as the capture order)."""
    preds = {n: 0 for n in nodes}
    for _, b in pairs:
        preds[b] += 1
    ready = sorted((n for n in nodes if preds[n] == 0), key=lambda n: int(n.handle))
    out = []
    while ready:
        n = ready.pop(0)
        out.append(n)
        for a, b in pairs:
            if a == n:
                preds[b] -= 1
                if preds[b] == 0:
                    ready.append(b)
        ready.sort(key=lambda n: int(n.handle))
    return out + [n for n in nodes if n not in out]  # a cycle cannot happen; never dropped


def _describe_core_node(node) -> tuple[str, str]:
    kind = type(node).__name__
    if kind == "KernelNode":
        return "kernel", _kernel_name(node)
    if kind == "MemcpyNode":
        return _copy_direction(node.src, node.dst), ""
    simple = {"MemsetNode": "memset", "HostCallbackNode": "host", "EventRecordNode": "record",
              "EventWaitNode": "wait", "EmptyNode": "empty", "AllocNode": "alloc",
              "FreeNode": "free", "ChildGraphNode": "graph"}
    return simple.get(kind, "other"), ""


def _kernel_name(node) -> str:
    """A numba kernel's Python name, from its mangled one (``_ZN8__main__6doubleB2v1...``:
    the names in the nested name, the function's last)."""
    from cuda.bindings import driver

    # The node's own parameters name the function numba launched (cuda.core's
    # node.kernel.handle is not a CUfunction: cuFuncGetName refuses it, measured).
    try:
        err, params = driver.cuGraphKernelNodeGetParams(node.handle)
        if err != driver.CUresult.CUDA_SUCCESS:
            return ""
        err, raw = driver.cuFuncGetName(params.func)
        if err != driver.CUresult.CUDA_SUCCESS or raw is None:
            return ""
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
    except Exception:  # noqa: BLE001  (no name from this driver: the kind is enough)
        return ""
    return demangle(name)


def demangle(name: str) -> str:
    """The last name of an Itanium-mangled nested name (numba's kernels), or the name."""
    if not name.startswith("_ZN"):
        return name
    i, found = 3, ""
    while i < len(name) and name[i].isdigit():
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        n = int(name[i:j])
        found, i = name[j:j + n], j + n
    return found or name


def _copy_direction(src, dst) -> str:
    from cuda.bindings import driver

    def is_device(ptr) -> bool | None:
        attr = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        err, kind = driver.cuPointerGetAttribute(attr, int(ptr))
        if err != driver.CUresult.CUDA_SUCCESS:
            return False  # pageable host memory is unknown to the driver
        return int(kind) == int(driver.CUmemorytype.CU_MEMORYTYPE_DEVICE)

    try:
        s, d = is_device(src), is_device(dst)
    except Exception:  # noqa: BLE001
        return "copy"
    return "copy " + {(False, True): "h2d", (True, False): "d2h", (True, True): "d2d"}.get(
        (s, d), "h2h")


# --- the simulator's stand-in ----------------------------------------------------------
_lock = threading.RLock()
_active: dict = {}  # stream key -> _Lane, for every stream capturing now
_graph_ids = itertools.count(1)
_builder_streams: weakref.WeakSet = weakref.WeakSet()  # builders' streams (cuda.core's)


def _capture_error(code: int, name: str, message: str):
    from numba.cuda.simulator.cudadrv.driver import CudaAPIError

    return CudaAPIError(code, f"[{name}] {message}")


def _key(stream):
    from .ops import StreamRef

    if isinstance(stream, SimGraphBuilder):
        stream = stream.stream
    return StreamRef.of(stream).key()


def sim_lane(stream) -> "_Lane | None":
    """The capture lane of ``stream`` if it is capturing now (simulator only)."""
    if not _active:
        return None
    if stream is None or stream == 0:
        return None
    if isinstance(stream, SimCoreStream):
        stream = stream._stream
    if isinstance(stream, SimGraphBuilder):  # not begun: its stream, and work runs, as on a GPU
        lane = stream._lane
        return lane if lane is not None and lane.capture.building else None
    with _lock:
        return _active.get(_key(stream))


def sim_refuse_sync(what: str) -> None:
    """A synchronize or an event query while a capture is on: refused, and every capture
    on is invalidated, as on a GPU (a pageable copy is refused by the lane's copy)."""
    if not _active:
        return
    with _lock:
        captures = {lane.capture for lane in _active.values()}
    for c in captures:
        c.invalidate(what)
    raise _capture_error(
        CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        f"{what} while a stream is being captured into a graph: the host cannot wait for "
        f"work that has not run (it is only being recorded). Take the call out of the "
        f"capture: synchronize after graph.launch(stream) instead. The capture is now "
        f"invalid; end_building() will say so.")


def sim_refuse_event(event, what: str) -> None:
    """An event's query or synchronize: an event recorded inside a capture marks a point
    in a graph, not a time. While the capture is on the GPU refuses the call with
    CUDA_ERROR_CAPTURED_EVENT and invalidates the capture; after it (the record never
    ran), with CUDA_ERROR_INVALID_VALUE. Any other event: as a synchronize."""
    captured = getattr(event, "_streamlab_captured", None)
    if captured:
        capture = captured[0]
        if capture.building:
            capture.invalidate(what)
            raise _capture_error(
                CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
                f"{what} on an event recorded inside a capture: in a graph being built an "
                f"event marks a point between nodes, and nothing has run, so there is "
                f"nothing to wait for. Wait on it from another stream (event.wait) to "
                f"fork or join the capture. The capture is now invalid.")
        raise _capture_error(
            1, "CUDA_ERROR_INVALID_VALUE",
            f"{what} on an event whose only record was inside a capture: that record "
            f"became an edge of the graph, not a node, so a replay does not record the "
            f"event. Record it outside the capture (after graph.launch(stream)) to time "
            f"or wait for a replay.")
    sim_refuse_sync(what)


def sim_refuse_legacy(what: str, stream) -> None:
    """Work on the legacy default stream while a blocking stream (a numba stream) is
    capturing: the legacy stream would wait for that stream's work, which has not run,
    so a GPU refuses with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates the capture.
    cuda.core's own streams (the builder's, split()'s) are non-blocking: no refusal."""
    if not _active:
        return
    from .streams import LEGACY_DEFAULT, NON_BLOCKING, stream_info

    if stream is not None and stream != 0:
        if isinstance(stream, (SimGraphBuilder, SimCoreStream)) or \
                stream_info(stream).kind != LEGACY_DEFAULT:
            return
    with _lock:
        blocking = {lane.capture for lane in _active.values()
                    if stream_info(lane.stream).kind != NON_BLOCKING}
    if not blocking:
        return
    for c in blocking:
        c.invalidate(what)
    raise _capture_error(
        CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
        f"{what} on the legacy default stream while a blocking stream is being captured: "
        f"the legacy stream waits for every blocking stream, and the captured work has "
        f"not run. Give the call the capturing stream (stream=...), or capture into "
        f"a non-blocking stream. The capture is now invalid.")


def sim_refuse_allocation(what: str) -> None:
    """cuda.device_array (or to_device's allocation) while a capture in 'global' or
    'thread_local' mode is on: refused, as on a GPU (in 'relaxed' mode, allowed)."""
    if not _active:
        return
    with _lock:
        strict = [lane.capture for lane in _active.values() if lane.capture.mode != "relaxed"]
    if not strict:
        return
    for c in set(strict):
        c.invalidate(what)
    raise _capture_error(
        CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        f"{what} while a capture in {strict[0].mode!r} mode is on: allocating memory is a "
        f"call CUDA treats as unsafe during capture. Allocate before begin_building(); the "
        f"graph then reuses the same memory at every replay.")


def sim_event_record(event, stream) -> bool:
    """An event recorded in a capturing stream marks a point in the graph (a later wait
    on it, from any stream, joins that stream to the capture). True if it did."""
    lane = sim_lane(stream)
    if lane is None:
        event._streamlab_captured = None
        return False
    event._streamlab_captured = (lane.capture, frozenset(lane.tail))
    return True


def sim_event_wait(event, stream) -> bool:
    """A wait on an event recorded in a capture: the waiting stream joins the capture
    after that point (the fork of a graph, or its join). True if it did."""
    captured = getattr(event, "_streamlab_captured", False)  # False: never recorded
    lane = sim_lane(stream)
    if captured is None and lane is not None:
        # measured on an H200: the wait is refused, and the capture invalidated
        lane.capture.invalidate("a wait on an event recorded outside the capture")
        raise _capture_error(
            CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
            "a capturing stream waits on an event recorded outside the capture (in a "
            "stream that is not being captured, or before begin_building): a graph cannot "
            "depend on work outside it. Fork that stream into the capture first, by "
            "having it wait on an event recorded in the capturing stream. The capture is "
            "now invalid.")
    if not captured or not captured[0].building:
        return False
    capture, tail = captured
    if lane is not None and lane.capture is not capture:
        raise _capture_error(
            CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
            "a stream waits on an event recorded in another graph's capture: one capture "
            "cannot depend on another. Capture the work into one graph.")
    if lane is None:
        lane = capture.add_lane(stream)
        lane.tail = set(tail)
    else:
        lane.tail |= tail
    return True


class _Node:
    __slots__ = ("index", "kind", "name", "deps", "lane", "run")

    def __init__(self, index, kind, name, deps, lane, run):
        self.index, self.kind, self.name = index, kind, name
        self.deps, self.lane, self.run = deps, lane, run


class _Lane:
    """One stream's part of a capture: the nodes its next work will follow."""

    def __init__(self, capture: "_Capture", stream, number: int):
        self.capture, self.stream, self.number = capture, stream, number
        self.tail: set = set()

    def add(self, kind: str, name: str, run) -> _Node:
        """A node after this lane's last work; ``run(stream)`` issues it at a replay."""
        return self.capture.add_node(self, kind, name, run)

    # the work a capturing stream is given, recorded to run at each replay
    def kernel(self, launch, args) -> None:
        """A kernel node: the configured launch, with its arguments."""
        def run(stream):
            again = _copy.copy(launch)
            again._streamlab_stream = stream
            again(*args)
        self.add("kernel", launch.fn.__name__, run)

    def copy(self, direction: str, dst, src) -> None:
        """A copy node. Pageable host memory is accepted, as on a GPU (in every capture
        mode): the replay reads and writes the buffer when it runs."""
        if direction == "d2h":
            def run(stream):
                src.copy_to_host(dst, stream=stream)
        else:
            def run(stream):
                dst.copy_to_device(src, stream=stream)
        self.add(f"copy {direction}", "", run)

    def host(self, fn, args=(), kwargs=None, name=None) -> None:
        """A host node: ``fn(*args, **kwargs)`` at each replay."""
        kwargs = kwargs or {}

        def run(stream):
            from .hostfn import launch_host_func

            launch_host_func(stream, fn, *args, name=name, **kwargs)
        self.add("host", name or getattr(fn, "__name__", "host function"), run)


class _Capture:
    """What one builder captured: its nodes and edges, and its lanes."""

    def __init__(self, mode: str):
        self.mode = mode
        self.nodes: list[_Node] = []
        self.lanes: list[_Lane] = []
        self.building = False
        self.ended = False
        self.invalid: str | None = None

    def add_lane(self, stream) -> _Lane:
        lane = _Lane(self, stream, len(self.lanes))
        self.lanes.append(lane)
        if stream is not None:
            with _lock:
                _active[_key(stream)] = lane
        return lane

    def add_node(self, lane: _Lane, kind: str, name: str, run) -> _Node:
        if self.invalid:
            raise _capture_error(
                CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
                f"this capture was invalidated by {self.invalid}; end it with "
                f"streamlab.end_capture(builder) and begin again without that call")
        node = _Node(len(self.nodes), kind, name, frozenset(lane.tail), lane, run)
        self.nodes.append(node)
        lane.tail = {node.index}
        return node

    def unjoined(self, origin: _Lane) -> list:
        """The lanes whose last work the origin's next work would not follow: a GPU
        refuses to end such a capture (a branch left hanging)."""
        seen, todo = set(origin.tail), list(origin.tail)
        while todo:
            for d in self.nodes[todo.pop()].deps:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return [lane for lane in self.lanes
                if lane is not origin and not lane.tail <= seen]

    def invalidate(self, what: str) -> None:
        if self.invalid is None:
            self.invalid = what

    def stop(self) -> None:
        self.building = False
        with _lock:
            for key in [k for k, lane in _active.items() if lane.capture is self]:
                del _active[key]

    def shape(self) -> GraphShape:
        nodes = tuple(GraphNode(n.index, n.kind, n.name) for n in self.nodes)
        edges = frozenset((d, n.index) for n in self.nodes for d in n.deps)
        return GraphShape(nodes, edges)


class SimGraphBuilder:
    """cuda.core's GraphBuilder, on the simulator (see the module)."""

    def __init__(self, stream=None, *, _capture=None, _lane=None):
        from numba import cuda

        if _capture is None:
            from .streams import stream as nonblocking_stream

            self._capture = _Capture("relaxed")
            # as cuda.core's Device().create_stream(): non-blocking unless one is given
            self._stream = stream if stream is not None else \
                nonblocking_stream(nonblocking=True)
            self._lane = None
        else:
            self._capture, self._lane = _capture, _lane
            self._stream = _lane.stream
        _builder_streams.add(self._stream)

    @property
    def stream(self):
        """The stream to give copies (``stream=builder.stream``)."""
        return self._stream

    @property
    def handle(self):
        """The handle of the stream being captured."""
        return self._stream.handle

    def __cuda_stream__(self):
        return (0, self._stream.handle)

    @property
    def is_building(self) -> bool:
        """Is the capture on (between begin_building and end_building)? Once a refused
        call invalidated it, cuda.core raises here instead (the capture is still on, and
        only streamlab.end_capture ends it), and so does the stand-in."""
        if self._capture.building and self._capture.invalid:
            raise GraphError(f"{INVALIDATED_MESSAGE} (It was invalidated by "
                             f"{self._capture.invalid}.)")
        return self._capture.building

    @property
    def is_join_required(self) -> bool:
        """Would end_building() now refuse, with a branch not joined back?"""
        return self._capture.building and bool(self._capture.unjoined(self._lane))

    def begin_building(self, mode: str | None = "relaxed") -> "SimGraphBuilder":
        """Start capturing: work issued to the stream is recorded, not run. ``mode`` as
        cuda.core's: 'relaxed' (its default) allows allocation in the capture; 'global'
        and 'thread_local' refuse it."""
        mode = "relaxed" if mode is None else mode
        if mode not in MODES:
            raise ValueError(f"Unsupported build mode: {mode!r}; use one of {', '.join(MODES)}")
        c = self._capture
        if c.building or c.ended:
            raise GraphError("this builder has begun building already: make a new one with "
                             "streamlab.graph_builder() for another graph")
        if sim_lane(self._stream) is not None:
            raise _capture_error(
                CAPTURE_UNSUPPORTED, "CUDA_ERROR_ILLEGAL_STATE",
                "this stream is already capturing into another graph: end that capture first")
        c.mode, c.building = mode, True
        self._lane = c.add_lane(self._stream)
        return self

    def end_building(self) -> "SimGraphBuilder":
        """Stop capturing; refused if the capture was invalidated or a branch was never
        joined back, with the GPU's error."""
        c = self._capture
        if not c.building:
            raise GraphError("end_building() without begin_building(): nothing is being "
                             "captured")
        if c.invalid:  # as cuda.core: refused, and the streams stay capturing
            raise GraphError(
                f"{INVALIDATED_MESSAGE} (The capture was invalidated by {c.invalid}, so "
                f"there is no graph. cuda.core cannot end it: its streams stay capturing, "
                f"and every synchronize in the process is refused, until "
                f"streamlab.end_capture(builder) ends it. Then build it again without "
                f"that call.)")
        unjoined = c.unjoined(self._lane)
        c.stop()
        c.ended = True
        if unjoined:
            c.invalidate("a branch that was never joined")
            raise _capture_error(
                CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
                f"{len(unjoined)} stream(s) joined this capture (by waiting on one of its "
                f"events, or by split()) and were never joined back: record an event at "
                f"the end of each branch and wait on it in the origin stream (or "
                f"streamlab.join the builders) before end_building().")
        return self

    def split(self, count: int) -> tuple:
        """``count`` builders (this one first) whose work runs side by side after the
        work captured so far."""
        if not isinstance(count, int) or count < 2:
            raise ValueError(f"split(count) makes count >= 2 branches, got {count!r}")
        if not self._capture.building:
            raise GraphError("split() only while building: call begin_building() first")
        from .streams import stream as nonblocking_stream

        out = [self]
        for _ in range(count - 1):
            lane = self._capture.add_lane(nonblocking_stream(nonblocking=True))
            lane.tail = set(self._lane.tail)
            out.append(SimGraphBuilder(_capture=self._capture, _lane=lane))
        return tuple(out)

    @staticmethod
    def join(*graph_builders) -> "SimGraphBuilder":
        """One builder (the first) whose next work waits for every branch given."""
        if len(graph_builders) < 2:
            raise ValueError("join needs at least two builders")
        first = graph_builders[0]
        for b in graph_builders:
            if not isinstance(b, SimGraphBuilder) or b._capture is not first._capture:
                raise GraphError("join takes builders that split() made from one builder")
        tail = set()
        for b in graph_builders:
            tail |= b._lane.tail
        first._lane.tail = tail
        with _lock:
            for b in graph_builders[1:]:
                _active.pop(_key(b._lane.stream), None)
        return first

    def callback(self, fn, *, user_data=None) -> None:
        """A host node: ``fn()`` is called at each replay, in its place in the graph."""
        if user_data is not None:
            raise ValueError("user_data is only for ctypes function pointers")
        if not callable(fn):
            raise TypeError(f"callback needs a function to call, got {fn!r}")
        if not self._capture.building:
            raise GraphError("callback() only while building: call begin_building() first")
        self._lane.host(fn)

    def complete(self, options=None) -> "SimGraph":
        """The executable graph, to launch as many times as needed."""
        c = self._capture
        if c.building:
            raise GraphError("complete() a builder that has ended: call end_building() first")
        if not c.ended:
            raise GraphError("nothing was captured: begin_building(), issue the work, "
                             "end_building(), then complete()")
        if c.invalid:
            raise GraphError(f"this capture was invalidated by {c.invalid}: build it again")
        return SimGraph(c)

    @property
    def graph_definition(self):
        """cuda.core's graph definition: none on the simulator (use graph_shape)."""
        raise GraphError("the simulator has no graph definition: read the graph with "
                         "streamlab.graph_shape(builder)")

    def close(self) -> None:
        """Give the builder up (a capture still on is stopped)."""
        if self._capture.building:
            self._capture.stop()

    def __repr__(self):
        state = "building" if self._capture.building else "ended" if self._capture.ended \
            else "not begun"
        return f"<GraphBuilder (simulator), {state}, {len(self._capture.nodes)} nodes>"


class SimCoreStream:
    """cuda.core's Stream, on the simulator: a numba stream as ``graph.launch`` takes it
    (from :func:`core_stream`)."""

    def __init__(self, stream):
        self._stream = stream

    def __cuda_stream__(self):
        return (0, self._stream.handle)

    @property
    def handle(self):
        """The numba stream's handle."""
        return self._stream.handle

    def sync(self) -> None:
        """Wait for the stream's work (cuda.core's name for synchronize)."""
        self._stream.synchronize()

    def __repr__(self):
        return f"<cuda.core Stream of {self._stream!r} (simulator)>"


class SimGraph:
    """cuda.core's Graph, on the simulator: each launch replays the captured work, each
    branch on a stream of its own, and costs the host one call (see the module)."""

    def __init__(self, capture: _Capture):
        self._capture = capture
        self._id = next(_graph_ids)
        self._lane_streams: dict = {}
        self.launches = 0

    def upload(self, stream) -> None:
        """Nothing to upload on the simulator (on a GPU, the graph's first launch is
        cheaper after it); the stream is checked."""
        _stream_of(stream)  # nothing to upload on the simulator; the stream is checked

    def update(self, source) -> None:
        """Take the work of another capture of the same topology (same nodes, same
        edges): new arrays, sizes or values, with no new graph."""
        if isinstance(source, SimGraphBuilder):
            new = source._capture
            if new.building or not new.ended:
                raise GraphError("update() takes a builder that has ended: call "
                                 "end_building() on it first")
        else:
            raise TypeError(f"update takes a graph builder, got {type(source).__name__}")
        old_shape, new_shape = self._capture.shape(), new.shape()
        if [n.kind for n in old_shape.nodes] != [n.kind for n in new_shape.nodes] or \
                old_shape.edges != new_shape.edges:
            raise _capture_error(
                GRAPH_EXEC_UPDATE_FAILURE, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
                "the new capture's topology differs (other nodes, or other edges): an "
                "update may change a node's parameters (its arrays, sizes, grid, values), "
                "never what the nodes are or what waits for what. Build a new graph with "
                "complete() instead.")
        self._capture = new

    def launch(self, stream) -> None:
        """Replay the graph after the work already in ``stream`` (see the module)."""
        _launch_sim_graph(self, stream)

    def close(self) -> None:
        """Nothing to free on the simulator."""

    def __repr__(self):
        return f"<Graph (simulator), {len(self._capture.nodes)} nodes>"


def _stream_of(stream):
    """The numba stream inside a cuda.core stream (or a builder's stream); anything else
    is refused as cuda.core refuses it."""
    if isinstance(stream, SimCoreStream):  # streamlab.sim.core's Stream is one too
        return stream._stream
    if isinstance(stream, SimGraphBuilder):
        raise TypeError("launch a graph into a stream, not a graph builder: "
                        "graph.launch(Device().create_stream(cuda.stream()))")
    try:
        if stream in _builder_streams:
            return stream  # a builder's stream is a cuda.core stream on a GPU
    except TypeError:
        pass
    kind = type(stream).__name__
    raise TypeError(f"Argument 'stream' has incorrect type (expected "
                    f"cuda.core._stream.Stream, got {kind}), as on a GPU: cuda.core "
                    f"launches graphs into its own streams. Pass "
                    f"Device().create_stream(s) (from cuda.core import Device) for a numba "
                    f"stream s.")


def _launch_sim_graph(graph: SimGraph, stream) -> None:
    from numba import cuda

    from . import ops
    from .hostfn import sim_flush

    stream = _stream_of(stream)
    if sim_lane(stream) is not None:
        raise _capture_error(CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                             "a graph launched into a stream that is being captured: "
                             "capture the work itself instead")

    @ops.timed
    def launch():
        sim_flush(stream)
        ops.emit("graph", "launch", stream, detail={"graph": graph._id,
                                                    "nodes": len(graph._capture.nodes)})
        graph.launches += 1
        before = getattr(ops._tls, "graph", None)
        ops._tls.graph = graph._id  # the nodes' ops say so: the model charges no host cost
        try:
            with ops.internal():
                _replay(graph, stream, cuda)
        finally:
            ops._tls.graph = before

    launch()


def _replay(graph: SimGraph, stream, cuda) -> None:
    from .streams import stream as make_stream

    capture = graph._capture
    if not capture.nodes:
        return
    lanes = {}
    for n in capture.nodes:
        if n.lane.number not in lanes:
            if n.lane.number not in graph._lane_streams:  # made once, kept for each replay
                graph._lane_streams[n.lane.number] = make_stream(nonblocking=True)
            lanes[n.lane.number] = graph._lane_streams[n.lane.number]
    start = cuda.event(timing=False)
    start.record(stream)
    has_succ = {d for n in capture.nodes for d in n.deps}
    done = {}
    started = set()
    for n in capture.nodes:
        s = lanes[n.lane.number]
        if n.lane.number not in started:
            start.wait(s)
            started.add(n.lane.number)
        for d in n.deps:
            if capture.nodes[d].lane.number != n.lane.number:
                done[d].wait(s)
        n.run(s)
        ev = cuda.event(timing=False)
        ev.record(s)
        done[n.index] = ev
    for n in capture.nodes:
        if n.index not in has_succ:
            done[n.index].wait(stream)


def _register() -> None:
    """launch_host_func asks the stand-in whether its stream is capturing (hostfn does
    not import this module: this one imports it)."""
    from . import hostfn

    if not hostfn._capture_lane:
        hostfn._capture_lane.append(sim_lane)


_register()
_register_exit_keeper()
