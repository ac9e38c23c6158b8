"""What CUDA graphs look like to the course on both paths: a graph's shape (its nodes and
edges, :class:`GraphShape`), the error a graph call used wrongly raises
(:class:`GraphError`), and the driver's error codes that a capture's refusals carry.
:mod:`streamlab.graphs` (a GPU, through cuda.core) and :mod:`streamlab.sim.capture` (the
simulator's stand-in) both use them; neither imports the other's code."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GraphError", "GraphNode", "GraphShape", "CAPTURE_MODES", "INVALIDATED_MESSAGE", "check_builder",
           "check_stream_to_capture"]

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
CAPTURE_MODES = ("global", "thread_local", "relaxed")


class GraphError(RuntimeError):
    """A graph call used wrongly; the message says what to do."""


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

    def plain(self) -> dict:
        """The shape as plain values, as a transcript carries it (:mod:`streamlab.transcript`):
        ``{"nodes": [[index, kind, name], ...], "edges": [[i, j], ...]}``."""
        return {"nodes": [[n.index, n.kind, n.name] for n in self.nodes],
                "edges": sorted([a, b] for a, b in self.edges)}

    @classmethod
    def from_plain(cls, data) -> "GraphShape":
        """The shape :meth:`plain` gave (an error of Python's if ``data`` is not of its
        form: a grader that cannot judge a transcript fails the part)."""
        return cls(tuple(GraphNode(*node) for node in data["nodes"]),
                   frozenset(tuple(edge) for edge in data["edges"]))

    def describe(self) -> str:
        """One line per node, with what it waits for."""
        lines = []
        for n in self.nodes:
            after = sorted(self.preds(n.index))
            lines.append(f"{n.index}: {n.describe()}" +
                         (f"  (after {', '.join(map(str, after))})" if after else ""))
        return "\n".join(lines)


def check_stream_to_capture(stream) -> None:
    """What :func:`streamlab.graphs.graph_builder` takes, on both paths: a stream, or None."""
    if stream is not None and not (hasattr(stream, "__cuda_stream__") or hasattr(stream, "handle")):
        raise TypeError(f"graph_builder captures a stream: pass a numba stream "
                        f"(cuda.stream()) or nothing, got {stream!r}")


def check_builder(builder) -> None:
    """What :func:`streamlab.graphs.end_capture` takes, on both paths: a graph builder."""
    if builder is None or not hasattr(builder, "end_building"):
        raise TypeError(f"end_capture takes a graph builder (streamlab.graph_builder()), "
                        f"got {builder!r}")
