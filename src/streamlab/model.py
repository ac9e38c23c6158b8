"""A model GPU: the recorded operations replayed under CUDA's ordering rules, with times.

Numba's simulator runs every operation in the order it was issued, to the end, on the
host, so its own clock shows no overlap at all. The order of operations
(:mod:`streamlab.order`) knows what CUDA's rules *allow* to overlap; this module says
what a GPU *would* do with it, by replaying the operations on a discrete-event model of
one GPU:

* the host issues each call at its own cost (numba's launch costs the host about 20-30 us),
  and the host's own work between calls takes the time it really took;
* a stream runs its work in order; an event wait, the legacy default stream, a
  synchronize and a blocking copy order work as :mod:`streamlab.order` says;
* kernels share the SMs by their blocks, first come first served: a one-block kernel
  takes a sliver of the GPU, a kernel of thousands of blocks all of it;
* copies queue on copy engines, one per direction when the GPU has two or more;
  copies to or from pageable memory hold the host until they are done;
* host functions run one at a time on the driver's thread.

Durations: the spin kernel runs for exactly what it was asked (plus the little it
overruns on the GPU); a copy takes its latency plus its bytes over the measured
bandwidth; any other kernel a simple roofline, ``floor + bytes / min(DRAM bandwidth,
threads x one thread's bandwidth)``, unless a cost is stated with :func:`kernel_cost`.
Every figure comes from a profile measured on a real GPU by ``scripts/gpu/measure_profile.py``
(``streamlab/profiles/*.json``); none is typed in by hand.

On the simulator the model is on: events, ``elapsed_time``, ``query()``, every
:class:`~streamlab.Timeline` and host functions' times show the modelled GPU, and a
trace says so ("model of an NVIDIA H200, not a measurement"). ``streamlab.size(gpu=...,
sim=...)`` tells it the GPU's problem size, so that the simulator's small arrays are
timed as the GPU's big ones. ``STREAMLAB_MODEL=off`` turns it off, and
``STREAMLAB_MODEL=nvidia-h100`` models another GPU. On a GPU, :func:`predict` gives the
model's prediction of code beside its measurement.

>>> import streamlab
>>> p = streamlab.model.load_profile("nvidia-h200")
>>> p.label
'model of an NVIDIA H200, not a measurement'
"""

from __future__ import annotations

import contextlib
import heapq
import os
import threading
import time
from dataclasses import dataclass, field

from . import ops as _ops
from .gpu_profiles import (DEFAULT_PROFILE, GpuProfile, ModelError,  # noqa: F401 (the
                           load_profile, profile_for, profiles)      # model's, as before)

MAX_RESIDENT_KERNELS = 128  # kernels one GPU runs at once (compute capability 7.0 on)
WARP = 32  # threads: a grid above one warp may be sized to the data (see _size)
BYTES_PER_THREAD = 32  # more touched per thread: a fixed grid looping over the data


_END, _START = 0, 1  # the kinds of a host thread's break points (ModelGPU.breaks)


# --- what a kernel costs ---------------------------------------------------------------
_costs: dict = {}  # the kernel's Python function -> ms, or a function (grid, block) -> ms


def _py_func(kernel):
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    if fn is None or not callable(fn):
        raise TypeError(f"kernel_cost takes a @cuda.jit kernel, got {kernel!r}")
    return fn


def kernel_cost(kernel, ms) -> None:
    """State what one launch of ``kernel`` costs on the model GPU, in ms.

    ``ms`` is a number, or a function ``ms(grid, block)`` of the launch's grid and block
    (tuples of three) that returns the ms, or None for the model's own estimate.
    ``kernel_cost(kernel, None)`` forgets the stated cost.
    """
    fn = _py_func(kernel)
    if ms is None:
        _costs.pop(fn, None)
        return
    if not callable(ms):
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not ms >= 0:
            raise ValueError(f"a kernel's cost is a number of ms (0 or more), or a function "
                             f"of (grid, block) giving one; got {ms!r}")
        ms = float(ms)
    _costs[fn] = ms


# --- the operations, as the model sees them ------------------------------------------
@dataclass(eq=False)
class MOp:
    """One operation on the model GPU: when the host issued it, what it waits for, and
    (once simulated) when it started and ended, in seconds on the host's clock."""

    uid: int
    kind: str  # launch, copy, memset, record, wait, hostfn
    name: str
    agent: tuple
    issue: float
    deps: list = field(default_factory=list)
    work: float = 0.0  # seconds alone on the GPU (kernels), or on its engine
    share: float = 0.0  # kernels: the fraction of the GPU's block slots it fills
    engine: str | None = None  # copies, memsets, host functions: the queue they take
    ready_after: float = 0.0  # seconds from issue before the GPU can start it
    lead: float = 0.0  # host functions: seconds from their turn to the body's start
    start: float | None = None
    end: float | None = None
    frozen: bool = False


class ModelGPU:
    """The model: fed operations in issue order (as :func:`streamlab.ops.emit` makes
    them), it keeps each host thread's clock and replays the GPU work when a time is
    asked for."""

    def __init__(self, profile: GpuProfile | None = None, scale: float = 1.0):
        self.profile = profile or load_profile()
        self.scale = scale
        self.lock = threading.RLock()
        self.host: dict[str, float] = {}  # host thread -> model time now (s)
        self.mark: dict[str, float] = {}  # host thread -> real time its clock was last set
        # host thread -> its wait for a CPU (ops.run_delay) when its clock was last set
        self.mark_delay: dict[str, float] = {}
        # host thread -> the latest time a host span of it was placed at after its last
        # call (to_model): its next call is placed no earlier
        self.floor: dict[str, float] = {}
        # host thread -> [(real, model, END or START)] for mapping: where each wrapped call
        # ended, and where the next began after a gap the model shortened (see _gap)
        self.breaks: dict[str, list] = {}
        # host thread (or host function uid) -> the latest now() it read: now() never
        # gives it less (a thread that loses the CPU between reading the time and its wait
        # for a CPU (_gap) went back). Only now(): where the model places calls is its own
        self.read: dict = {}
        self.ops: list[MOp] = []  # this epoch's operations (not yet frozen)
        self.by_uid: dict[int, MOp] = {}
        self.last: dict[tuple, MOp] = {}  # stream agent -> its last operation
        self.kinds: dict[tuple, object] = {}  # stream agent -> StreamRef
        self.events: dict = {}  # event object -> MOp of its latest record
        self._dirty = True
        self.busy_s = 0.0  # host time spent in the model itself (benchmarks/notebook_times.py)
        self._feeding = False
        #: has it been fed an operation? (the thread hand-overs are watched from then on:
        #: streamlab.handovers)
        self.fed = False

    # --- the host's clock ----------------------------------------------------------
    def _gap(self, thread: str, real: float, delay: float) -> float:
        """The host work ``thread`` did from its clock's last setting to ``real``: the
        time that passed, less the time it waited for a CPU (``delay``, as
        :func:`streamlab.ops.run_delay` reads it, against its value then): another
        process's turn on the CPU is not the learner's host work."""
        waited = delay - self.mark_delay.get(thread, delay)
        return max(0.0, real - self.mark[thread] - max(0.0, waited))

    def _thread_clock(self, thread: str, real: float, delay: float = 0.0) -> float:
        """Advance ``thread``'s model clock by the host work it did since its last call."""
        if thread not in self.host:  # a thread not seen starting: the main one's offset
            main = threading.main_thread().name
            offset = self.host[main] - self.mark[main] if main in self.host else 0.0
            self.host[thread] = real + offset
            self.mark[thread], self.mark_delay[thread] = real, delay
        if real > self.mark[thread]:
            gap = self._gap(thread, real, delay)
            if gap < real - self.mark[thread] and thread in self.breaks:
                # a gap shortened by a wait for a CPU: where the call began, on both clocks
                self.breaks[thread].append((real, self.host[thread] + gap, _START))
            self.host[thread] += gap
            self.mark[thread], self.mark_delay[thread] = real, delay
        if self.floor.get(thread, 0.0) > self.host[thread]:
            # a host span that closed before this call, placed where its thread's clock
            # then stood: the call comes after it
            self.host[thread] = self.floor.pop(thread)
        return self.host[thread]

    def now(self, thread: str | None = None) -> float:
        """The model's host clock of ``thread`` (default: the calling one), in seconds."""
        thread = thread or threading.current_thread().name
        with self.lock:
            # inside a wrapped call, the clock stops where the call began: the call's own
            # real time is the model's to say (a query must not see time it did not wait)
            mine = thread == threading.current_thread().name
            real = _ops.call_started_at() if mine else time.perf_counter()
            # (another thread's wait for a CPU cannot be read from here: none taken off)
            delay = _ops.call_started_delay() if mine else self.mark_delay.get(thread, 0.0)
            m = self.by_uid.get(_ops.current_host_function()) if mine else None
            if m is not None:  # a host function's body: its own clock starts where the
                self._end(m)  # model's stream reached it
                waited = max(0.0, delay - _ops.host_function_began_delay())
                key, t = m.uid, m.start + max(0.0, real - _ops.host_function_began() - waited)
            elif thread in self.host:
                key, t = thread, self.host[thread] + self._gap(thread, real, delay)
            else:
                return real  # (the real clock: it never goes back)
            t = max(t, self.read.get(key, t))
            if mine:  # (another thread's look takes no wait off: it sets no floor)
                self.read[key] = t
            return t

    def call_ended(self, thread: str, real: float, delay: float = 0.0) -> None:
        """A wrapped call returned at ``real`` (the thread's wait for a CPU then:
        ``delay``): the time it took is the model's to say."""
        with self.lock:
            if thread in self.host:
                self.mark[thread], self.mark_delay[thread] = real, delay
                self.breaks.setdefault(thread, []).append((real, self.host[thread], _END))

    def to_model(self, thread: str, real: float) -> float:
        """A host time read with ``time.perf_counter()`` in ``thread``, on the model's clock."""
        import bisect

        points = self.breaks.get(thread)
        if not points:
            return real
        i = bisect.bisect_right(points, (real, float("inf"))) - 1
        if i < 0:
            return points[0][1] - (points[0][0] - real)
        r, m, _ = points[i]
        if i + 1 < len(points) and points[i + 1][2] == _START:
            # between a call's end and the next call's start, a gap the model shortened by
            # the thread's wait for a CPU: the wait is spread over the gap, so a host span
            # inside it keeps its share of the gap's model time
            r1, m1, _ = points[i + 1]
            return m + (real - r) * (m1 - m) / (r1 - r)
        if i == len(points) - 1 and thread == threading.current_thread().name and \
                thread in self.mark_delay:
            # after the thread's last call, before its next (Timeline.host maps a span's
            # ends as it closes): the next call's place will leave out this thread's wait
            # for a CPU since the last, so a time's place leaves out the part of that wait
            # that surely came before it (all of it, less the time since), or a span would
            # end after the call that follows it (seen in CI, under load)
            for _ in range(5):  # the clock and the wait read together: no wait between
                delay = _ops.run_delay()  # (one read with the one but not the other puts
                now = time.perf_counter()  # a time on the wrong side of it)
                if _ops.run_delay() == delay:
                    break
            waited = delay - self.mark_delay[thread]
            before = max(0.0, waited - max(0.0, now - real))
            out = m + max(0.0, real - r - before)
            self.floor[thread] = max(self.floor.get(thread, out), out)
            return out
        return m + (real - r)

    # --- feeding -------------------------------------------------------------------
    def feed(self, op) -> None:
        """Take the next operation (a :class:`streamlab.ops.Op`)."""
        with self.lock:
            t0 = time.perf_counter()
            self._feeding = True
            try:
                self._feed(op)
            finally:
                self._feeding = False
                self.busy_s += time.perf_counter() - t0
        if not self.fed:  # its first: the threads' hand-overs matter to it from now on
            self.fed = True
            _ops.observers_changed()

    def _feed(self, op) -> None:
        thread = op.thread
        real = _ops.call_started_at()
        h = self._thread_clock(thread, real, _ops.call_started_delay())
        if op.kind == "sync" and op.name == "thread start":
            child = op.detail["child"]
            self.host[child], self.mark[child] = h, real
            # (its own wait for a CPU is read in it, from its first call on)
            self.mark_delay.pop(child, None)
            return
        if op.kind == "sync" and op.name == "thread join":
            child = self.host.get(op.detail["child"])
            if child is not None:
                self.host[thread] = max(h, child)
            return
        if op.kind == "host" or op.detail.get("in_host_function"):
            return
        h += self._host_cost(op)
        self.host[thread] = h
        if op.stream is not None and op.kind not in ("sync", "query", "host", "graph"):
            m = self._gpu_op(op, h)
            if op.blocking or self._holds_the_host(op):
                self.host[thread] = max(h, self._end(m))
                self._freeze(thread)
            return
        if op.kind == "sync":
            waited = self._waited_for(op)
            if waited:
                self.host[thread] = max(h, max(self._end(m) for m in waited))
                self._freeze(thread)

    def _holds_the_host(self, op) -> bool:
        """A copy to or from pageable memory holds the host until it is done (beyond the
        64 KB that CUDA stages at once for a host-to-device copy)."""
        if op.kind != "copy" or op.pinned is not False or op.name not in ("h2d", "d2h"):
            return False
        return op.name == "d2h" or self._copy_bytes(op) > 64 * 1024

    def _copy_bytes(self, op) -> float:
        """The bytes a copy or memset moves, at the GPU's size on the simulator."""
        return max([r.hi - r.lo for r in op.reads + op.writes] or [0]) * self.scale

    def _host_cost(self, op) -> float:
        if op.detail.get("graph_node") is not None:
            return 0.0  # issued by the driver for a graph's launch: the host paid once
        us = self.profile.host_us
        # A graph's launch is one call; the model charges it as a kernel launch (seen on
        # an H200: 30-40 us for a graph's launch, 18-33 us for a kernel's).
        cost = {"launch": us["launch"], "graph": us["launch"], "copy": us["copy"],
                "memset": us["copy"],
                "record": us["record"], "wait": us["wait"], "query": us["query"],
                "hostfn": us["hostfn"]}.get(op.kind)
        if op.kind == "sync":
            cost = {"event": us["sync_event"], "stream": us["sync_stream"],
                    "device": us["sync_device"]}.get(op.name, 0.0)
        return (cost or 0.0) / 1e6

    def _gpu_op(self, op, issue: float) -> MOp:
        agent = ("stream", op.stream.key())
        self.kinds.setdefault(agent, op.stream)
        m = MOp(op.uid, op.kind, op.name, agent, issue)
        prev = self.last.get(agent)
        if prev is not None:
            m.deps.append(prev)
        for other in op.stream.implicit_waits(self.kinds):
            if other in self.last:
                m.deps.append(self.last[other])
        if op.kind == "wait" and op.event in self.events:
            m.deps.append(self.events[op.event])
        self._size(m, op)
        self.last[agent] = m
        if op.kind == "record":
            self.events[op.event] = m
        self.ops.append(m)
        self.by_uid[m.uid] = m
        self._dirty = True
        return m

    def _size(self, m: MOp, op) -> None:
        p = self.profile
        latency = p.latency["gpu_us"] / 1e6
        if op.kind == "launch":
            m.ready_after = latency
            grid, block = op.detail.get("grid", (1, 1, 1)), op.detail.get("block", (1, 1, 1))
            blocks, threads = _volume(grid), _volume(block)
            # A grid sized to the data has, at the GPU's size, `scale` times the blocks and
            # touches `scale` times the bytes: a grid of more than a warp whose threads
            # touch a few elements each. A smaller grid (a spin, a counter's update), or a
            # fixed one that loops over the data (Harris's <<<1, 64>>>), keeps its blocks;
            # the looping one's bytes grow with the data all the same.
            touched = op.detail.get("bytes_touched")
            looping = touched is not None and touched > BYTES_PER_THREAD * blocks * threads
            sized = blocks * threads > WARP and not looping
            scale_bytes = self.scale if sized or looping else 1.0
            blocks = max(1, round(blocks * (self.scale if sized else 1.0)))
            per_sm = max(1, min(p.max_blocks_per_sm, p.max_threads_per_sm // max(1, threads)))
            m.share = min(1.0, blocks / (p.sm_count * per_sm))
            m.work = self._kernel_seconds(op, grid, block, blocks * threads, scale_bytes)
        elif op.kind in ("copy", "memset"):
            m.ready_after = latency
            nbytes = self._copy_bytes(op)
            if op.kind == "memset":
                m.engine, m.work = "memset", nbytes / (p.dram_gbs * 1e9)
            else:
                key = op.name if op.name == "d2d" else \
                    f"{op.name}_{'pinned' if op.pinned else 'pageable'}"
                c = p.copies[key]
                m.work = c["latency_us"] / 1e6 + nbytes / (c["gbs"] * 1e9)
                m.engine = op.name if p.async_engine_count >= 2 else "copy"
        elif op.kind == "hostfn":
            m.engine = "hostfn"
            m.lead = p.latency["hostfn_us"] / 1e6  # the driver's thread wakes up
            m.work = 0.0  # until its body has run (hostfn_ran)

    def _kernel_seconds(self, op, grid, block, threads: int, scale: float) -> float:
        p = self.profile
        stated = op.detail.get("py_func")
        cost = _costs.get(stated) if stated is not None else None
        if callable(cost):
            cost = cost(tuple(grid), tuple(block))
        if cost is not None:
            return float(cost) / 1000.0
        spin_ns = op.detail.get("spin_ns")
        if spin_ns is not None:
            return spin_ns / 1e9 + p.spin_extra_us / 1e6
        slept = op.detail.get("slept_ns", 0) / 1e9  # the simulator saw its threads sleep
        nbytes = op.detail.get("bytes_touched")  # the simulator counts what it touched
        if nbytes is None:  # on a GPU: the arguments, whole
            nbytes = sum(r.hi - r.lo for r in op.reads + op.writes + op.atomics)
        nbytes *= scale
        active = min(threads, p.sm_count * p.max_threads_per_sm)
        rate = min(p.dram_gbs, active * p.thread_gbs) * 1e9
        return p.kernel_floor_us / 1e6 + nbytes / rate + slept

    def _waited_for(self, op) -> list:
        if op.name == "stream":
            agent = ("stream", op.stream.key())
            found = [self.last[agent]] if agent in self.last else []
            if op.stream.is_legacy_default:
                found += [self.last[a] for a in op.stream.implicit_waits(self.kinds)
                          if a in self.last]
            return found
        if op.name == "device":
            device = op.detail.get("device", 0)
            return [m for a, m in self.last.items() if self.kinds[a].device == device]
        if op.name == "event":
            return [self.events[op.event]] if op.event in self.events else []
        if op.name == "awaited":  # (a host function's body runs on the driver's thread)
            m = self.by_uid.get(op.detail.get("after"))
            return [m] if m is not None else []
        return []

    def hostfn_ran(self, uid: int, seconds: float) -> None:
        """A host function's body took ``seconds``: its length on the model."""
        with self.lock:
            m = self.by_uid.get(uid)
            if m is not None and not m.frozen:
                m.work = seconds
                self._dirty = True

    # --- answers -------------------------------------------------------------------
    def _end(self, m: MOp) -> float:
        if m.frozen:
            return m.end
        if self._dirty or m.end is None:
            self._simulate()
        return m.end

    def times(self, uid: int) -> tuple[float, float] | None:
        """(start, end) of the operation ``uid`` in model seconds, or None if unseen."""
        with self.lock:
            m = self.by_uid.get(uid)
            if m is None:
                return None
            self._end(m)
            return m.start, m.end

    def done(self, uid: int, thread: str | None = None) -> bool:
        """Has operation ``uid`` finished by the host clock of ``thread`` now?"""
        with self.lock:
            m = self.by_uid.get(uid)
            if m is None:
                return True
            return self._end(m) <= self.now(thread)

    def _simulate(self) -> None:
        """Replay this epoch's operations (see :func:`_replay`)."""
        t0 = time.perf_counter()
        _replay(self.ops)
        self._dirty = False
        if not self._feeding:  # (feed counts its own time)
            self.busy_s += time.perf_counter() - t0

    def _freeze(self, thread: str) -> None:
        """Once ``thread`` has waited for all the GPU's work, that work's times are fixed:
        a new epoch begins, and replays no longer go back over it."""
        if not self.ops:
            return
        if self._dirty:
            self._simulate()
        if self.host[thread] >= max(m.end for m in self.ops):
            for m in self.ops:
                m.frozen = True
            self.ops = []


def _volume(dims) -> int:
    n = 1
    for d in (dims if isinstance(dims, (tuple, list)) else (dims,)):
        n *= int(d)
    return n


def _replay(ops: list[MOp]) -> None:
    """The discrete-event replay: set every operation's start and end.

    Times inside are relative to the first issue (host clocks read thousands of seconds,
    where a float cannot tell nanoseconds apart)."""
    if not ops:
        return
    base = min(m.issue for m in ops)
    pending, dependents, ready = {}, {}, []
    for m in ops:
        m.start = m.end = None
    for seq, m in enumerate(ops):
        at = m.issue - base + m.ready_after
        waiting = 0
        for d in m.deps:
            if d.frozen:
                at = max(at, d.end - base)
            else:
                waiting += 1
                dependents.setdefault(id(d), []).append(m)
        pending[m] = [waiting, at, seq]
        if waiting == 0:
            heapq.heappush(ready, (at, seq, m))
    running: list = []  # [MOp, remaining seconds, rate] in start order
    engines: dict[str, list] = {}  # engine -> [busy op or None, queue]
    t = 0.0

    def finish(m: MOp, when: float) -> None:
        m.end = when
        for d in dependents.get(id(m), ()):
            entry = pending[d]
            entry[0] -= 1
            entry[1] = max(entry[1], when)
            if entry[0] == 0:
                heapq.heappush(ready, (entry[1], entry[2], d))

    def rates() -> None:
        avail = 1.0
        for i, k in enumerate(running):
            if i >= MAX_RESIDENT_KERNELS or avail <= 1e-12:
                k[2] = 0.0
            elif k[0].share <= avail:
                k[2], avail = 1.0, avail - k[0].share
            else:
                k[2], avail = avail / k[0].share, 0.0

    while True:
        while ready and ready[0][0] <= t:  # start what is ready now
            _, _, m = heapq.heappop(ready)
            m.start = t
            if m.kind in ("record", "wait"):
                finish(m, t)
            elif m.kind == "launch":
                running.append([m, m.work, 0.0])
            else:
                engines.setdefault(m.engine, [None, []])[1].append(m)
        for eng in engines.values():
            if eng[0] is None and eng[1]:
                m = eng[1].pop(0)
                m.start = t + m.lead
                m.end = m.start + m.work
                eng[0] = m
        rates()
        # the next moment something happens
        nxt = [ready[0][0]] if ready else []
        nxt += [eng[0].end for eng in engines.values() if eng[0] is not None]
        ends = [t + k[1] / k[2] if k[2] > 0 else None for k in running]
        nxt += [e for e in ends if e is not None]
        if not nxt:
            break
        t_next = max(t, min(nxt))
        done = [k for k, e in zip(running, ends) if e is not None and e <= t_next]
        for k in running:
            k[1] -= k[2] * (t_next - t)
        t = t_next
        for k in done:
            running.remove(k)
            finish(k[0], t)
        for eng in engines.values():
            m = eng[0]
            if m is not None and m.end <= t:
                eng[0] = None
                finish(m, m.end)
    for m in ops:
        if m.end is None:  # cannot happen: every dependency is an earlier operation
            raise ModelError(f"the model could not finish operation #{m.uid} ({m.kind} "
                             f"{m.name}): report this with the code that issued it")
        m.start += base
        m.end += base


# --- the simulator's model, and predictions on a GPU ---------------------------------
_sim: dict = {"model": None}


def simulator_model() -> ModelGPU | None:
    """The model behind the simulator's events and timelines (None when it is off)."""
    return _sim["model"]


def start_simulator_model() -> ModelGPU | None:
    """Put the model under the simulator (``STREAMLAB_MODEL``: off, or a profile)."""
    choice = os.environ.get("STREAMLAB_MODEL", "").strip()
    if choice.lower() in ("off", "0", "no", "false"):
        return None
    from . import _device

    model = ModelGPU(load_profile(choice or None))
    _sim["model"] = model
    _ops.add_model(model)
    _device.set_model_label(model.profile.label)  # for the banner (streamlab.describe)
    return model


def now() -> float:
    """The host's clock in seconds, as ``time.perf_counter()`` reads it on a GPU; on the
    simulator, the model GPU's host clock (what the host would read there: its own work
    counts, the simulator's slowness does not). Time code with it, as with perf_counter:

    >>> import streamlab
    >>> t0 = streamlab.now()
    >>> streamlab.now() >= t0
    True
    """
    model = _sim["model"]
    return model.now() if model is not None else time.perf_counter()


def set_scale(factor: float) -> None:
    """Time the simulator's memory as ``factor`` times bigger (see :func:`size`)."""
    model = _sim["model"]
    if model is not None:
        model.scale = float(factor)


def size(*, gpu: int, sim: int) -> int:
    """A problem size: ``gpu`` elements on a real GPU, ``sim`` on the simulator, where
    the model GPU then times every copy and kernel as if its arrays had the GPU's size
    (``gpu / sim`` times the bytes). One call per notebook, for its main size; any other
    value that differs between the two is :func:`streamlab.pick`'s, which tells the model
    nothing.

    >>> import streamlab
    >>> n = streamlab.size(gpu=1 << 20, sim=1 << 10)
    >>> n == (1 << 10 if streamlab.on_simulator() else 1 << 20)
    True
    """
    from ._device import on_simulator

    for what, value in (("gpu", gpu), ("sim", sim)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"size({what}=...) is a number of elements, a whole number of "
                             f"1 or more; got {value!r}")
    if not on_simulator():
        return gpu
    set_scale(gpu / sim)
    return sim


class Prediction:
    """What :func:`predict` yields: the model fed the block's operations."""

    def __init__(self, profile: GpuProfile):
        self.model = ModelGPU(profile)
        self.timelines: list = []

    def trace(self, timeline=None):
        """The predicted :class:`~streamlab.Trace` of ``timeline`` (default: the last
        Timeline made inside the block), on the model's clock. (On the simulator every
        timeline is the model's already: this is ``timeline.trace()``.)"""
        if timeline is None:
            alive = self.timelines
            if not alive:
                raise ModelError("no Timeline was made inside the `with streamlab.predict()` "
                                 "block: make the timeline inside it, so that the model sees "
                                 "its origin event")
            timeline = alive[-1]
        if self.model is _sim["model"]:
            return timeline.trace()
        return timeline.predicted(self.model)


_predictions: list[Prediction] = []


@contextlib.contextmanager
def predict(profile: str | None = None):
    """Run the block (on the GPU, as usual) and model it: ``p.trace()`` is then the model's
    prediction of the block's last :class:`~streamlab.Timeline`.

    The profile is the GPU's own when one comes with streamlab (``profile`` names
    another). On the simulator the model is always on, and this only hands it over.
    """
    from ._device import device_name, on_simulator

    if on_simulator() and _sim["model"] is not None:
        p = Prediction(_sim["model"].profile)
        p.model = _sim["model"]
    else:
        p = Prediction(load_profile(profile) if profile else profile_for(device_name()))
        _ops.add_model(p.model)
    _predictions.append(p)
    try:
        yield p
    finally:
        _predictions.remove(p)
        if p.model is not _sim["model"]:
            _ops.remove_model(p.model)


def timeline_made(timeline) -> None:
    """A Timeline was made: the predictions open now will trace it."""
    for p in _predictions:
        p.timelines.append(timeline)


def hostfn_ran(uid: int | None, seconds: float) -> None:
    """Tell every model how long a host function's body ran."""
    if uid is None:
        return
    for model in _ops.models():
        model.hostfn_ran(uid, seconds)
