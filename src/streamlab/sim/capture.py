"""The simulator's stand-in for CUDA graphs: what ``streamlab.sim.core``'s
``create_graph_builder`` returns, and the capture it records.

It records the work issued to a capturing stream instead of running it, refuses what a
GPU refuses inside a capture (a synchronize, an event's query or synchronize, an
allocation in the strict modes, work on the legacy default stream while a blocking stream
captures) with the GPU's error, and replays the work at each launch, branch by branch on
streams of its own, so that the model GPU (:mod:`streamlab.model`) times a replay as a GPU
would run it: one host call, and the branches side by side. :mod:`streamlab.graphs` says
what the simulator cannot show.

The ``sim_*`` functions are the hooks that the simulator's stream, event, copy and launch
stand-ins call. :func:`graph_builder`, :func:`core_stream`, :func:`end_capture`,
:func:`end_capture_of`, :func:`is_capturing` and :func:`graph_shape` are the simulator's
versions of :mod:`streamlab.graphs`' calls of the same names, which take their place on
the simulator (chosen once, when ``streamlab.graphs`` is imported).
"""

from __future__ import annotations

import copy as _copy
import itertools
import threading
import weakref

from ..graph_types import (CAPTURE_IMPLICIT, CAPTURE_INVALIDATED, CAPTURE_ISOLATION,
                           CAPTURE_UNJOINED, CAPTURE_UNSUPPORTED, CAPTURED_EVENT,
                           GRAPH_EXEC_UPDATE_FAILURE, INVALIDATED_MESSAGE, CAPTURE_MODES, GraphError,
                           GraphNode, GraphShape, check_builder, check_stream_to_capture)

_lock = threading.RLock()
#: stream key -> _Lane, for every stream capturing now. Empty while no capture is on (nearly
#: always): the simulator's streams, events and launches read it, and call the guards
#: below only when it is not, so that code that builds no graph never enters this module.
#: Only this module writes it.
capturing: dict = {}
_graph_ids = itertools.count(1)
_builder_streams: weakref.WeakSet = weakref.WeakSet()  # builders' streams (cuda.core's)


def _capture_error(code: int, name: str, message: str):
    from numba.cuda.simulator.cudadrv.driver import CudaAPIError

    return CudaAPIError(code, f"[{name}] {message}")


def _key(stream):
    from ..streams import StreamRef

    if isinstance(stream, SimGraphBuilder):
        stream = stream.stream
    return StreamRef.of(stream).key()


def sim_lane(stream) -> "_Lane | None":
    """The capture lane of ``stream`` if it is capturing now (simulator only)."""
    if not capturing:
        return None
    if stream is None or stream == 0:
        return None
    if isinstance(stream, SimCoreStream):
        stream = stream._stream
    if isinstance(stream, SimGraphBuilder):  # not begun: its stream, and work runs, as on a GPU
        lane = stream._lane
        return lane if lane is not None and lane.capture.building else None
    with _lock:
        return capturing.get(_key(stream))


def sim_refuse_sync(what: str) -> None:
    """A synchronize or an event query while a capture is on: refused, and every capture
    on is invalidated, as on a GPU (a pageable copy is refused by the lane's copy)."""
    if not capturing:
        return
    with _lock:
        captures = {lane.capture for lane in capturing.values()}
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
    if not capturing:
        return
    from ..streams import LEGACY_DEFAULT, NON_BLOCKING, stream_info

    if stream is not None and stream != 0:
        if isinstance(stream, (SimGraphBuilder, SimCoreStream)) or \
                stream_info(stream).kind != LEGACY_DEFAULT:
            return
    with _lock:
        blocking = {lane.capture for lane in capturing.values()
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
    if not capturing:
        return
    with _lock:
        strict = [lane.capture for lane in capturing.values() if lane.capture.mode != "relaxed"]
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
            from ..hostfn import launch_host_func

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
                capturing[_key(stream)] = lane
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
            for key in [k for k, lane in capturing.items() if lane.capture is self]:
                del capturing[key]

    def shape(self) -> GraphShape:
        nodes = tuple(GraphNode(n.index, n.kind, n.name) for n in self.nodes)
        edges = frozenset((d, n.index) for n in self.nodes for d in n.deps)
        return GraphShape(nodes, edges)


class SimGraphBuilder:
    """cuda.core's GraphBuilder, on the simulator (see the module)."""

    def __init__(self, stream=None, *, _capture=None, _lane=None):
        from numba import cuda

        if _capture is None:
            from ..streams import stream as nonblocking_stream

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
        if mode not in CAPTURE_MODES:
            raise ValueError(f"Unsupported build mode: {mode!r}; use one of {', '.join(CAPTURE_MODES)}")
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
        from ..streams import stream as nonblocking_stream

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
                capturing.pop(_key(b._lane.stream), None)
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

    from .. import ops
    from . import driver as sim_driver

    stream = _stream_of(stream)
    if sim_lane(stream) is not None:
        raise _capture_error(CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                             "a graph launched into a stream that is being captured: "
                             "capture the work itself instead")

    @ops.timed
    def launch():
        if sim_driver.driver.outstanding:
            sim_driver.flush(stream)
        ops.emit("graph", "launch", stream, detail={"graph": graph._id,
                                                    "nodes": len(graph._capture.nodes)})
        graph.launches += 1
        with ops.replaying_graph(graph._id), ops.internal():
            _replay(graph, stream, cuda)

    launch()


def _replay(graph: SimGraph, stream, cuda) -> None:
    from ..streams import stream as make_stream

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


# --- the calls of streamlab.graphs, on the simulator ------------------------------------
def graph_builder(stream=None):
    """The simulator's :func:`streamlab.graphs.graph_builder`."""
    check_stream_to_capture(stream)
    return SimGraphBuilder(stream)


def core_stream(stream):
    """The simulator's :func:`streamlab.graphs.core_stream`: a stand-in that carries the
    stream."""
    if isinstance(stream, SimCoreStream):
        return stream
    if stream is None or not hasattr(stream, "__cuda_stream__"):
        raise TypeError(f"core_stream takes a stream (cuda.stream()), got {stream!r}")
    return SimCoreStream(stream)


def end_capture(builder) -> None:
    """The simulator's :func:`streamlab.graphs.end_capture`."""
    check_builder(builder)
    if isinstance(builder, SimGraphBuilder):
        c = builder._capture
        if c.building:
            c.stop()
            c.ended = True


def end_capture_of(stream) -> None:
    """The simulator's :func:`streamlab.graphs.end_capture_of`."""
    lane = sim_lane(stream)
    if lane is not None:
        lane.capture.stop()
        lane.capture.ended = True


def is_capturing(stream) -> bool:
    """The simulator's :func:`streamlab.graphs.is_capturing`: with no capture on (nearly
    always), no stream is capturing, and no lane is looked for."""
    if not capturing or stream is None or isinstance(stream, int):
        return False
    return sim_lane(stream) is not None


def graph_shape(builder) -> GraphShape:
    """The simulator's :func:`streamlab.graphs.graph_shape`: the stand-in's record."""
    if isinstance(builder, (SimGraphBuilder, SimGraph)):
        return builder._capture.shape()
    raise TypeError(f"graph_shape reads a graph builder (from streamlab.graph_builder), "
                    f"got {type(builder).__name__}")


def _register() -> None:
    """launch_host_func asks the stand-in whether its stream is capturing (hostfn does
    not import this module: this one imports it)."""
    from .. import hostfn

    hostfn.on_simulator_capture(sim_lane)


_register()
