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
  ``complete``; the graph's ``upload``, ``launch``, ``update``), and
  :mod:`streamlab.sim.capture` holds the graph stand-in: this module's calls of the same
  names are replaced by its own when this module is imported there. It records the work
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

from ._device import on_simulator
from .graph_types import (CAPTURE_IMPLICIT, CAPTURE_INVALIDATED, CAPTURE_ISOLATION,  # noqa: F401
                          CAPTURE_UNJOINED, CAPTURE_UNSUPPORTED, CAPTURED_EVENT,
                          GRAPH_EXEC_UPDATE_FAILURE, INVALIDATED_MESSAGE, CAPTURE_MODES, GraphError,
                          GraphNode, GraphShape, check_builder,
                          check_stream_to_capture)


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
    from .streams import capturing, handle_of

    try:
        building = builder.is_building
    except Exception:  # noqa: BLE001  (cuda.core: "invalidated ... must now be ended")
        building = True
    if building:
        return None if capturing(handle_of(builder.stream)) else True
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

    if not _made.get("keeper"):
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
    check_stream_to_capture(stream)
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
    check_builder(builder)
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
    from .streams import capturing, handle_of

    inner = getattr(stream, "stream", None)  # a GraphBuilder: its stream
    handle = handle_of(inner if inner is not None and hasattr(stream, "begin_building")
                       else stream)
    return handle not in (0, 1, 2) and capturing(handle)


# --- the shape of a graph ----------------------------------------------------------------
def graph_shape(builder) -> GraphShape:
    """The nodes and edges of the graph ``builder`` captured (after ``end_building``),
    read from the graph itself: cuda.core's graph definition on a GPU, the stand-in's
    record on the simulator."""
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


if on_simulator():  # chosen once, at import: the simulator's stand-ins take these names
    from .sim.capture import (core_stream, end_capture, end_capture_of,  # noqa: E402, F811
                              graph_builder, graph_shape, is_capturing)
else:
    _register_exit_keeper()
