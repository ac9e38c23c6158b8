"""Lesson 07's exercises: capture one slot's copy in, kernel and copy out from a stream
into a graph; point that graph at another slot with ``graph.update``.

A slot and the ``transform`` kernel (out = 2 inp + 1) are lab 07's; the checks read the
graph itself (:func:`streamlab.graph_shape`) and replay it on fresh data."""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..graphs import end_capture_of, graph_builder, graph_shape, is_capturing
from ..labs.lab07 import (BLOCKS, CHUNK, THREADS, Slot, explain_capture_error,
                          no_capture_left_open, pipeline_shape_ok, transform, warm_up)
from . import exercise

__all__ = ["transform", "BLOCKS", "THREADS", "CHUNK", "check_exercise1", "check_exercise2"]

def _fresh(slot, rng) -> np.ndarray:
    """New data in the slot's h_in, -1 in its h_out; the expected h_out."""
    data = rng.random(CHUNK, dtype=np.float32)
    np.copyto(slot.h_in, data)
    slot.h_out.view(np.ndarray)[:] = -1.0
    return 2 * data + 1


def _replays(graph, stream, slot, rng, label: str, times: int = 2) -> None:
    """Launch ``graph`` ``times`` times, each on new data in the slot, and check h_out."""
    for n in range(times):
        expected = _fresh(slot, rng)
        graph.launch(streamlab.core_stream(stream))
        stream.synchronize()
        try:
            check.equal(slot.h_out, expected, f"{label} after graph launch {n + 1}")
        except streamlab.CheckFailed as failed:
            check.fail(f"{failed} Each launch replays the copies as captured, with the "
                       f"buffers they named: copy slot.h_in into slot.d_in and slot.d_out "
                       f"into slot.h_out themselves")


def _issued(label: str, stream, call):
    """Run the learner's ``call()``, which captures from ``stream``; whatever it does to
    the stream, the capture is ended after it. A refused call or update is explained."""
    try:
        out = call()
    except (NotImplementedError, streamlab.CheckFailed):
        end_capture_of(stream)
        raise
    except Exception as exc:  # noqa: BLE001  (a refused capture or update, explained)
        end_capture_of(stream)
        if "UPDATE_FAILURE" in str(exc) or "TOPOLOGY_CHANGED" in str(exc):  # sim, cuda.core
            check.fail(f"graph.update refused the capture: its topology differs from the "
                       f"graph's (the same three calls, in the same order, on one "
                       f"stream). CUDA said: {exc}")
        explain_capture_error(exc, label)
    if is_capturing(stream):
        end_capture_of(stream)
        check.fail(f"{label} returned with the stream still capturing: call "
                   f"builder.end_building() before you use the builder")
    return out


class _Updatable:
    """The graph exercise 2 hands the learner: its ``update`` first checks that the
    capture it is given has ended (cuda.core's own refusal does not say so)."""

    def __init__(self, graph):
        self._graph = graph

    def update(self, builder) -> None:
        """``graph.update(builder)``, for a builder whose capture has ended."""
        try:
            building = builder.is_building
        except Exception:  # noqa: BLE001  (an invalidated capture: the update explains)
            building = False
        if building:
            check.fail("graph.update was given a capture still being built: call "
                       "builder.end_building() first")
        self._graph.update(builder)

    def launch(self, stream) -> None:
        """``graph.launch(stream)``."""
        self._graph.launch(stream)


def _captured(fn, stream, slot, label: str):
    """The learner's capture of ``slot`` from ``stream``: its builder, of the right shape."""
    builder = _issued(label, stream, lambda: fn(stream, slot))
    if builder is None or not hasattr(builder, "begin_building"):
        check.fail(f"{label} returned {type(builder).__name__}: return the builder "
                   f"(Device().create_stream(stream).create_graph_builder()), after "
                   f"end_building(), not a graph")
    try:
        shape = graph_shape(builder)
    except Exception as exc:  # noqa: BLE001
        check.fail(f"{label}'s builder cannot be read ({exc}): begin_building() on "
                   f"Device().create_stream(stream).create_graph_builder(), issue the "
                   f"work, end_building()")
    pipeline_shape_ok(shape, 1, label)
    return builder


def check_exercise1(capture_slot, *, seed=None):
    """``capture_slot(stream, slot)``: begin building a graph on
    ``Device().create_stream(stream).create_graph_builder()``, issue the slot's copy in
    (slot.h_in into slot.d_in), ``transform`` (slot.d_out from slot.d_in) and copy out
    (slot.d_out into slot.h_out), all in ``stream``, end building and return the
    builder. Nothing runs while it captures; the check replays the graph twice, on new data each time."""
    with exercise(1, capture_slot):
        no_capture_left_open()
        warm_up()
        rng = np.random.default_rng(seed)
        slot, s = Slot(0), cuda.stream()
        _fresh(slot, rng)
        builder = _captured(capture_slot, s, slot, "capture_slot")
        if not (slot.h_out.view(np.ndarray) == -1.0).all():
            check.fail("slot.h_out changed while capturing: the work ran instead of being "
                       "recorded. Issue it to the capturing stream, between "
                       "begin_building() and end_building()")
        graph = builder.complete()
        _replays(graph, s, slot, rng, "slot.h_out")
        print("captured once, replayed twice on new data")


def check_exercise2(retarget, *, seed=None):
    """``retarget(graph, stream, slot)``: ``graph`` replays another slot's copy in,
    transform and copy out. Capture the same three calls on ``slot`` from ``stream`` and
    ``graph.update(builder)`` with them, so that the same graph now works on ``slot``; no
    new graph. The check then launches ``graph`` itself."""
    with exercise(2, retarget):
        no_capture_left_open()
        warm_up()
        rng = np.random.default_rng(seed)
        old, new, s = Slot(0), Slot(1), cuda.stream()
        b = graph_builder(s).begin_building()
        old.d_in.copy_to_device(old.h_in, stream=s)
        transform[BLOCKS, THREADS, s](old.d_out, old.d_in)
        old.d_out.copy_to_host(old.h_out, stream=s)
        b.end_building()
        graph = b.complete()
        _fresh(new, rng)
        mine = _Updatable(graph)
        out = _issued("retarget", s, lambda: retarget(mine, s, new))
        if out is not None and out is not mine:
            check.fail("retarget returned a new graph, but the caller keeps launching the one "
                       "it has: update that one, graph.update(builder), and return nothing")
        old.h_out.view(np.ndarray)[:] = -1.0
        graph.launch(streamlab.core_stream(s))
        s.synchronize()
        if not (old.h_out.view(np.ndarray) == -1.0).all():
            check.fail("the graph still works on the old slot: graph.update(builder) with "
                       "the capture of the new slot, and the caller's graph follows")
        _replays(graph, s, new, rng, "the new slot's h_out")
        print("the same graph, updated, replayed twice on the new slot")

