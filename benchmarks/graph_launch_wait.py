"""Does a graph's launch call wait for the work already in its stream? By graph shape and
by how the graph was captured and instantiated.

    python benchmarks/graph_launch_wait.py [--json results.json] [--out docs/graph-launch-wait.md]
    python benchmarks/graph_launch_wait.py --page results.json --out docs/graph-launch-wait.md

Issue 54: lesson 07's rendezvous graph (m = n = 64, captured with cuda.core 1.2's
``GraphBuilder``) held the host 2.05 ms behind a 2 ms hold and 10.15 ms behind a 10 ms
hold, while the same program captured through the driver's own calls did not wait. This
prints, for each graph, the host time of one ``launch`` call with the stream idle and
behind a hold (best of three), and the graph's nodes and edges:

* the lesson's program captured with cuda.core: m producers, a rendezvous stream that only
  waits and records, n consumers. The rendezvous stream holds no node, so the capture ties
  every consumer to every producer (m x n edges), for m = n = 4 to 64, and for 64
  producers with 8 consumers and 8 with 64;
* the same with a rendezvous node: a one-thread kernel in the rendezvous stream between
  its m waits and its record (m + n edges);
* the m = n = 64 programs made executable and launched each other way: cuda.core's
  ``complete()`` without ``upload``, launched with ``cuGraphLaunch``, uploaded to another
  stream; cuda.core's capture instantiated with the driver's ``cuGraphInstantiate``
  (flags 0), with and without ``cuGraphUpload``, and with ``cuGraphInstantiateWithParams``
  (the call cuda.core's source makes) with each instantiate flag and with the flags
  ``complete()``'s own executable reports (``cuGraphExecGetFlags``); the program captured
  with the driver's ``cuStreamBeginCapture``: which step makes the launch wait.

``--out`` writes the results page (``--page`` rebuilds it from a kept ``--json``).

A table, not a test. GPU only: the simulator charges a graph launch one call by design.
"""

import argparse
import sys
import time

import numpy as np
import kept_page  # (beside this script)
import streamlab
from numba import cuda
from streamlab.streams import handle_of

PART, THREADS = 1024, 256
HOLD_MS = 10.0


@cuda.jit
def produce(b, start, count):
    i = cuda.grid(1)
    if i < count:
        b[start + i] = 1.0


@cuda.jit
def consume(b, start, count):
    i = cuda.grid(1)
    if i < count:
        b[start + i] += 1.0


@cuda.jit
def meet(b):
    """The rendezvous node: nothing to do but be a node."""
    pass


class Program:
    """Lesson 07's rendezvous program with k producers and n consumers (n = k unless
    given); with k != n, every element is right only where both wrote."""

    def __init__(self, k: int, node: bool, n: int | None = None):
        n = k if n is None else n
        self.k, self.node, self.n = k, node, n
        self.buf = cuda.device_array(max(k, n) * PART, dtype=np.float32)
        self.prod = [cuda.stream() for _ in range(k)]
        self.cons = [cuda.stream() for _ in range(n)]
        self.rdv, self.origin = cuda.stream(), cuda.stream()
        self.produced = [cuda.event() for _ in range(k)]
        self.finished = [cuda.event() for _ in range(n)]
        self.fork, self.barrier = cuda.event(), cuda.event()

    def issue(self):
        grid = (PART + THREADS - 1) // THREADS
        self.fork.record(self.origin)
        for i, s in enumerate(self.prod):
            self.fork.wait(s)
            produce[grid, THREADS, s](self.buf, i * PART, PART)
            self.produced[i].record(s)
        for ev in self.produced:
            ev.wait(self.rdv)
        if self.node:
            meet[1, 1, self.rdv](self.buf)
        self.barrier.record(self.rdv)
        for i, s in enumerate(self.cons):
            self.barrier.wait(s)
            consume[grid, THREADS, s](self.buf, i * PART, PART)
            self.finished[i].record(s)
        for ev in self.finished:
            ev.wait(self.origin)
        self.barrier.wait(self.origin)


def driver():
    from cuda.bindings import driver as drv
    return drv


def ok(result):
    """The value of a cuda.bindings call ((error, value...)), or a RuntimeError."""
    if not isinstance(result, tuple):
        result = (result,)
    if int(result[0]) != 0:
        raise RuntimeError(f"driver call failed: {result[0]!r}")
    return result[1] if len(result) == 2 else result[1:] or None


def shape_of(graph_handle):
    """(nodes, edges) of a driver CUgraph."""
    drv = driver()
    _, nodes, n = drv.cuGraphGetNodes(graph_handle, 0)
    res = drv.cuGraphGetEdges(graph_handle, 0)
    edges = res[-1]
    return int(n), int(edges)


def capture_core(p: Program):
    from cuda.core import Device
    b = Device().create_stream(p.origin).create_graph_builder().begin_building()
    p.issue()
    b.end_building()
    graph_handle = b.graph_definition.handle
    shape = shape_of(graph_handle)
    return b, graph_handle, shape


def capture_driver(p: Program):
    drv = driver()
    h = drv.CUstream(handle_of(p.origin))
    ok(drv.cuStreamBeginCapture(h, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
    p.issue()
    graph = ok(drv.cuStreamEndCapture(h))
    return graph, shape_of(graph)


def driver_exec(graph_handle):
    drv = driver()
    return ok(drv.cuGraphInstantiate(graph_handle, 0))


def driver_exec_with_params(graph_handle, flags: int = 0):
    """cuGraphInstantiateWithParams with these instantiate flags (default parameters
    otherwise)."""
    drv = driver()
    params = drv.CUDA_GRAPH_INSTANTIATE_PARAMS()
    params.flags = flags
    return ok(drv.cuGraphInstantiateWithParams(graph_handle, params))


def exec_flags(exec_handle) -> int:
    """The flags an executable graph was instantiated with (cuGraphExecGetFlags)."""
    drv = driver()
    return int(ok(drv.cuGraphExecGetFlags(exec_handle)))


def launch_ms(p: Program, launch, hold_ms: float) -> float:
    """Host time of one launch call, the stream held ``hold_ms`` first; best of three."""
    best = []
    for _ in range(3):
        p.origin.synchronize()
        if hold_ms:
            streamlab.spin[1, 1, p.origin](streamlab.ms_to_ns(hold_ms))
        t0 = time.perf_counter()
        launch()
        best.append((time.perf_counter() - t0) * 1000)
        p.origin.synchronize()
    return min(best)


def right(p: Program) -> bool:
    both = min(p.k, p.n) * PART
    return bool((p.buf.copy_to_host()[:both] == 2.0).all())


flags_seen: list = []  # the instantiate flags of complete()'s executables


def variants(k: int, node: bool, row) -> None:
    """The k = n = 64 graph made and launched each other way: which step makes the launch
    wait (each from a capture of its own)."""
    from cuda.core import Device
    drv = driver()

    def fresh():
        p = Program(k, node)
        p.issue()
        p.origin.synchronize()
        return p

    p = fresh()
    b, gh, shape = capture_core(p)
    g = b.complete()
    cst = Device().create_stream(p.origin)
    row("cuda.core complete(), no upload", k, node, shape, lambda: g.launch(cst), p)
    p = fresh()
    b, gh, shape = capture_core(p)
    g = b.complete()
    g.upload(Device().create_stream(p.origin))
    hs = drv.CUstream(handle_of(p.origin))
    row("complete()+upload, cuGraphLaunch", k, node, shape,
        lambda: ok(drv.cuGraphLaunch(g.handle, hs)), p)
    p = fresh()
    b, gh, shape = capture_core(p)
    ex = driver_exec(gh)
    hs = drv.CUstream(handle_of(p.origin))
    row("cuda.core capture, cuGraphInstantiate", k, node, shape,
        lambda: ok(drv.cuGraphLaunch(ex, hs)), p)
    p = fresh()
    b, gh, shape = capture_core(p)
    ex = driver_exec(gh)
    hs = drv.CUstream(handle_of(p.origin))
    ok(drv.cuGraphUpload(ex, hs))
    row("cuGraphInstantiate + cuGraphUpload", k, node, shape,
        lambda: ok(drv.cuGraphLaunch(ex, hs)), p)
    p = fresh()
    b, gh, shape = capture_core(p)
    g = b.complete()
    made_with = exec_flags(g.handle)
    print(f"complete()'s executable graph: instantiate flags {made_with:#x}", flush=True)
    flags_seen.append(made_with)
    # each instantiate flag alone, and complete()'s own, through the driver
    for flag in sorted({0, 1, 4, 8, made_with}):
        if flag & 2:  # UPLOAD needs an upload stream: the upload rows cover it
            continue
        p = fresh()
        b, gh, shape = capture_core(p)
        try:
            ex3 = driver_exec_with_params(gh, flag)
        except Exception as e:  # a flag this graph refuses: a row saying so
            row(f"cuGraphInstantiateWithParams, flags {flag:#x}", k, node, shape,
                lambda: (_ for _ in ()).throw(e), p)
            continue
        hs3 = drv.CUstream(handle_of(p.origin))
        row(f"cuGraphInstantiateWithParams, flags {flag:#x}", k, node, shape,
            lambda: ok(drv.cuGraphLaunch(ex3, hs3)), p)
    p = fresh()
    other = cuda.stream()
    b, gh, shape = capture_core(p)
    g = b.complete()
    g.upload(Device().create_stream(other))
    other.synchronize()
    cst = Device().create_stream(p.origin)
    row("complete(), uploaded to another stream", k, node, shape,
        lambda: g.launch(cst), p)
    p = fresh()
    graph, shape2 = capture_driver(p)
    ex2 = driver_exec(graph)
    hs2 = drv.CUstream(handle_of(p.origin))
    row("driver capture, cuGraphInstantiate", k, node, shape2,
        lambda: ok(drv.cuGraphLaunch(ex2, hs2)), p)


def page(result: dict) -> str:
    """The results page: every row, then what the rows show."""
    rows = [r for r in result["rows"] if "error" not in r]
    lines = [
        "# Does a graph's launch wait for the work already in its stream?", "",
        f"Written by `benchmarks/graph_launch_wait.py` from its run on "
        f"{result['device']} ({result.get('date', 'date not kept')}). Each graph is "
        f"lesson 07's rendezvous program (k producers, a rendezvous stream, n consumers) "
        f"captured once; \"node\": with a one-thread kernel in the rendezvous stream. "
        f"The host time of one launch call, best of three, with the stream idle and "
        f"behind a {rows[0]['hold_ms']:g} ms hold.", "",
        "| made and launched | k | n | node | nodes | edges | launch, idle (ms) "
        "| launch, behind the hold (ms) | waited | right |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        waited = r["behind_hold_ms"] > 0.5 * r["hold_ms"]
        lines.append(f"| {r['how']} | {r['k']} | {r.get('n', r['k'])} | "
                     f"{'yes' if r['rendezvous_node'] else 'no'} | {r['nodes']} | "
                     f"{r['edges']} | {r['idle_ms']:.3f} | {r['behind_hold_ms']:.3f} | "
                     f"{'yes' if waited else 'no'} | {r['right']} |")
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"| {r['how']} | {r['k']} | | | | | failed: {r['error']} | | | |")
    waited = [r for r in rows if r["behind_hold_ms"] > 0.5 * r["hold_ms"]]
    core = [r for r in rows if r["how"].startswith(("cuda.core capture, complete()",
                                                     "cuda.core complete()",
                                                     "complete()"))]
    lines += ["", "## What the rows show", ""]
    if result.get("complete_flags"):
        lines.append("- cuda.core's `complete()` made its executable graphs with instantiate "
                     "flags " + ", ".join(f"`{f:#x}`" for f in result["complete_flags"]) +
                     " (`cuGraphExecGetFlags`); the rows `cuGraphInstantiateWithParams, "
                     "flags ...` make the same captured graph with each flag through the "
                     "driver.")
    if waited:
        made = sorted({r["how"] for r in waited})
        lines.append(f"- Launches that returned only after the hold: {len(waited)} of "
                     f"{len(rows)} rows, made as: " + "; ".join(made) + ".")
        lines.append("- Of the graphs made by cuda.core's `complete()`, those that waited "
                     "had n = " + ", ".join(sorted({str(r.get('n', r['k'])) for r in core
                                                     if r in waited}, key=int)) +
                     " consumers; those that did not, n = " +
                     ", ".join(sorted({str(r.get('n', r['k'])) for r in core
                                       if r not in waited}, key=int)) + ".")
    else:
        lines.append("- No launch waited for the hold in this run.")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kept_page.add_options(ap)
    a = ap.parse_args(argv)
    again = kept_page.page_again(a, page)
    if again is not None:
        return again
    if streamlab.on_simulator():
        print("graph_launch_wait: a GPU fact; the simulator charges a graph launch one call "
              "by design. Run it on a GPU.", file=sys.stderr)
        return 2
    from cuda.core import Device
    drv = driver()
    rows = []

    def row(how, k, node, shape, launch, p):
        try:
            one_row(how, k, node, shape, launch, p)
        except Exception as e:  # a failed way is a row of the table, not the end of it
            rows.append(dict(how=how, k=k, rendezvous_node=node, error=repr(e)))
            print(f"{how:<34} k={k:<3} failed: {e!r}", flush=True)

    def one_row(how, k, node, shape, launch, p):
        p.buf.copy_to_device(np.zeros(max(p.k, p.n) * PART, dtype=np.float32),
                             stream=p.origin)
        launch()
        p.origin.synchronize()
        good = right(p)
        idle, held = launch_ms(p, launch, 0.0), launch_ms(p, launch, HOLD_MS)
        rows.append(dict(how=how, k=k, n=p.n, rendezvous_node=node, nodes=shape[0],
                         edges=shape[1], idle_ms=idle, behind_hold_ms=held,
                         hold_ms=HOLD_MS, right=good))
        print(f"{how:<34} k={k:<3} node={'yes' if node else 'no ':<3} "
              f"{shape[0]:>4} nodes {shape[1]:>5} edges   launch idle {idle:7.3f} ms   "
              f"behind {HOLD_MS:g} ms hold {held:7.3f} ms   right {good}", flush=True)

    print(f"graph launch wait on {streamlab.device_name()}")
    for node in (False, True):
        for k, n in ((4, 4), (8, 8), (16, 16), (32, 32), (40, 40), (48, 48), (56, 56),
                     (64, 8), (8, 64), (64, 64)):
            if node and k != n:
                continue
            p = Program(k, node, n)
            p.issue()                    # compile before capturing
            p.origin.synchronize()
            b, gh, shape = capture_core(p)
            g = b.complete()
            cst = Device().create_stream(p.origin)
            g.upload(cst)
            row("cuda.core capture, complete()", k, node, shape,
                lambda: g.launch(cst), p)
            if k == 64 and n == 64:
                variants(k, node, row)
    kept_page.keep(a, page, streamlab.device_name(), rows=rows, complete_flags=sorted(set(flags_seen)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
