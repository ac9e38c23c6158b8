"""Which calls make the host wait for the GPU, and which keep two streams from overlapping?

    python benchmarks/implicit_sync.py [--json results.json] [--out docs/implicit-sync.md]
    python benchmarks/implicit_sync.py --page results.json --out docs/implicit-sync.md
    python benchmarks/implicit_sync.py --smoke     # every case once, on the simulator too

Issue 57, item 3: one measured reference of implicit synchronisation. The CUDA C
Programming Guide lists the calls that return before the device is done ("asynchronous
commands"), and Mark Harris's *GPU Pro Tip: CUDA 7 Streams Simplify Concurrency* quotes
that list: kernel launches; copies between two addresses of the same device's memory;
copies from host to device of 64 KB or less; copies by functions with the Async suffix;
memset calls. numba's own docstring of ``driver.device_memset`` says a memset with no
stream is synchronous. This measures each call as numba-cuda 0.30 and cuda.core make it:

* **host**: the host time of the call, issued just after a kernel of ``HOLD_MS`` was
  launched into a blocking stream (median of three): a call that waits for the GPU takes
  about as long as the kernel has left; and the same behind a kernel in a non-blocking
  stream, which tells a call that waits for every stream's work (a device-wide wait) from
  one that waits for the legacy default stream's turn (behind the blocking streams alone);
* **blocking streams**: whether a kernel in a second blocking stream, issued after the
  call, still overlaps the first stream's kernel, issued before it (event times): work on
  the legacy default stream waits for every blocking stream, and they for it;
* **non-blocking streams**: the same with streams made non-blocking
  (``streamlab.stream(nonblocking=True)``), which the legacy default stream does not
  order.

Each row says what the call did: "waits for the GPU" (the host held), "orders the streams"
(the host free, the second kernel after the first), or "asynchronous". ``--out`` writes
the results page (``--page`` rebuilds it from a kept ``--json``).

A table, not a test. GPU only: these are facts of a driver, and the simulator's answers
would be its model's, which this reference is meant to check, not to quote (``--smoke``
runs each case once there, to try the code, and measures nothing).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import kept_page  # (beside this script)
import numpy as np
import streamlab
from numba import cuda
from numba.cuda.cudadrv import driver

#: the kernel a call is issued behind (ms), at least: a call whose own host time is long
#: (a 64 MB pinned allocation takes tens of milliseconds) gets a longer kernel, three times
#: its own time more, so that a call that does not wait still returns while it runs
HOLD_MS = 20.0
#: a call waited for the kernel when it held the host for more than this share of the
#: kernel beyond its own time on an idle GPU
WAITED = 0.5
SMALL, LARGE = 16 * 1024, 64 * 1024 * 1024  # bytes: under the guide's 64 KB, and well over

EVERY = "waits for every stream's work"
BLOCKING = "waits for the blocking streams' work"
OWN = "waits for its own stream's work"
ORDERS_ALL = "orders every stream"
ORDERS_BLOCKING = "orders the blocking streams"
ORDERS_NONBLOCKING = "orders the non-blocking streams"
ASYNC = "asynchronous"


def _f32(nbytes: int) -> int:
    return nbytes // 4


def _pending_frees():
    """numba's queue of device frees not yet made (its memory manager's, not the
    context's), or None where there is none (the simulator)."""
    ctx = cuda.current_context()
    return getattr(getattr(ctx, "memory_manager", None), "deallocations", None)


def cases() -> tuple:
    """The cases, each (what, make, in_stream, claim): ``make(c)`` makes what the call needs
    (untimed, before the kernel it is issued behind) and returns the call, issued in
    stream ``c`` where ``in_stream`` (a blocking stream the benchmark made), else with no
    stream; ``claim`` is what the reference says the call does, checked on every GPU run.
    And the list that keeps what the calls made, cleared after each measurement."""
    kept: list = []  # what the calls allocate, freed once a measurement is done

    def launch(c):
        return lambda: streamlab.spin[1, 1, c](1)

    def free(c):
        d = cuda.device_array(_f32(LARGE), np.float32)
        holder = [d]
        del d

        def call():
            holder.clear()  # numba queues the free ...
            pending = _pending_frees()
            if pending is not None:  # ... and makes it here (the simulator has no queue)
                if len(pending) == 0:
                    raise RuntimeError("numba queued no free: the case would time nothing")
                pending.clear()
        return call

    def copy(kind: str, nbytes: int, pinned: bool = False):
        def make(c):
            n = _f32(nbytes)
            h = cuda.pinned_array(n, np.float32) if pinned else np.ones(n, np.float32)
            d = cuda.device_array(n, np.float32)
            if kind == "h2d":
                return lambda: d.copy_to_device(h, stream=c)
            if kind == "d2h":
                return lambda: d.copy_to_host(h, stream=c)
            if kind == "to_device":
                return lambda: kept.append(cuda.to_device(h, stream=c))
            d2 = cuda.device_array(n, np.float32)
            return lambda: d2.copy_to_device(d, stream=c)
        return make

    def memset(c):
        d = cuda.device_array(_f32(LARGE), np.float32)
        return lambda: driver.device_memset(d, 0, LARGE, stream=c)

    def ordered_alloc(c):
        from cuda.core import Device

        dev = Device()
        dev.set_current()
        core = dev.create_stream(c)  # the same stream, as cuda.core sees it
        return lambda: kept.append(dev.allocate(LARGE, stream=core))

    def legacy_record(c):
        ev = cuda.event()
        return lambda: ev.record()

    def other_stream_sync(c):
        other = cuda.stream()
        return lambda: other.synchronize()

    return [
        ("a kernel launch, in a stream", launch, True, ASYNC),
        ("a kernel launch on the legacy default stream", launch, False, ORDERS_BLOCKING),
        ("cuda.device_array, 64 MB (cuMemAlloc)",
         lambda c: lambda: kept.append(cuda.device_array(_f32(LARGE), np.float32)), False,
         ASYNC),
        ("a device array freed, 64 MB (numba's queued cuMemFree)", free, False, EVERY),
        ("cuda.pinned_array, 64 MB (cuMemHostAlloc)",
         lambda c: lambda: kept.append(cuda.pinned_array(_f32(LARGE), np.float32)), False,
         ASYNC),
        ("stream-ordered allocation, 64 MB (cuda.core Device.allocate)", ordered_alloc, True,
         ASYNC),
        ("copy to the device from pageable memory, 16 KB, no stream",
         copy("h2d", SMALL), False, BLOCKING),
        ("copy to the device from pageable memory, 64 KB, no stream",
         copy("h2d", 64 * 1024), False, BLOCKING),
        ("copy to the device from pageable memory, 128 KB, no stream",
         copy("h2d", 128 * 1024), False, BLOCKING),
        ("copy to the device from pageable memory, 64 MB, no stream",
         copy("h2d", LARGE), False, BLOCKING),
        ("cuda.to_device, 16 KB of pageable memory, no stream",
         copy("to_device", SMALL), False, BLOCKING),
        ("copy to the device from pageable memory, 16 KB, in a stream",
         copy("h2d", SMALL), True, ASYNC),
        ("copy to the device from pageable memory, 64 MB, in a stream",
         copy("h2d", LARGE), True, OWN),
        ("copy to the device from pinned memory, 64 MB, in a stream",
         copy("h2d", LARGE, pinned=True), True, ASYNC),
        ("copy to the host into pageable memory, 16 KB, no stream",
         copy("d2h", SMALL), False, BLOCKING),
        ("copy to the host into pageable memory, 16 KB, in a stream",
         copy("d2h", SMALL), True, OWN),
        ("copy to the host into pinned memory, 64 MB, in a stream",
         copy("d2h", LARGE, pinned=True), True, ASYNC),
        ("copy between two device arrays, 64 MB, no stream", copy("d2d", LARGE), False,
         ORDERS_BLOCKING),
        ("copy between two device arrays, 64 MB, in a stream", copy("d2d", LARGE), True,
         ASYNC),
        ("memset, 64 MB, no stream (driver.device_memset)", memset, False, ORDERS_BLOCKING),
        ("memset, 64 MB, in a stream", memset, True, ASYNC),
        ("cuda.stream()", lambda c: lambda: kept.append(cuda.stream()), False, ASYNC),
        ("cuda.event()", lambda c: lambda: kept.append(cuda.event()), False, ASYNC),
        ("an event recorded on the legacy default stream", legacy_record, False,
         ORDERS_BLOCKING),
        ("another, idle stream's synchronize()", other_stream_sync, False, ASYNC),
        ("cuda.synchronize()", lambda c: cuda.synchronize, False, EVERY),
    ], kept


def _timed(call) -> float:
    t0 = time.perf_counter()
    call()
    took = time.perf_counter() - t0
    cuda.synchronize()
    return took * 1e3


def host_ms(make, in_stream: bool, hold_ns: int, behind: str) -> float:
    """The host time of the call (ms), issued just behind a kernel of ``hold_ns``:
    ``behind`` "idle" (no kernel), "blocking" or "non-blocking" (in a stream of its own,
    of that kind), or "own" (in the call's own stream: the legacy default stream for a
    call with no stream)."""
    c = cuda.stream() if in_stream else 0
    call = make(c)
    if behind == "own":
        streamlab.spin[1, 1, c](hold_ns)
    elif behind != "idle":
        s = streamlab.stream(nonblocking=True) if behind == "non-blocking" else cuda.stream()
        streamlab.spin[1, 1, s](hold_ns)
    return _timed(call)


def overlapped(make, in_stream: bool, hold_ns: int, hold_ms: float,
               nonblocking: bool) -> bool:
    """Does a kernel issued after the call in a second stream start before the kernel
    issued before it in a first stream ends? (Both streams blocking, or both not.)"""
    new = (lambda: streamlab.stream(nonblocking=True)) if nonblocking else cuda.stream
    a, b = new(), new()
    call = make(cuda.stream() if in_stream else 0)
    a0, a1, b0 = cuda.event(), cuda.event(), cuda.event()
    a0.record(a)
    streamlab.spin[1, 1, a](hold_ns)
    a1.record(a)
    call()
    b0.record(b)
    streamlab.spin[1, 1, b](hold_ns)
    cuda.synchronize()
    return cuda.event_elapsed_time(a0, b0) < cuda.event_elapsed_time(a0, a1) - 0.1 * hold_ms


def verdict(r: dict) -> str:
    """What the call did, from its row's figures: it waited where it held the host for more
    than ``WAITED`` of the kernel beyond its own time on an idle GPU (behind a
    non-blocking stream's kernel: every stream's work; behind a blocking stream's only:
    the blocking streams'; behind its own stream's only: its own stream's); else it
    ordered the streams whose later kernel did not overlap; else it was asynchronous."""
    def waited(key):
        return r[key] - r["idle_ms"] > WAITED * r["hold_ms"]

    if waited("host_nonblocking_ms"):
        return EVERY
    if waited("host_ms"):
        return BLOCKING
    if waited("host_own_ms"):
        return OWN
    blocking, nonblocking = r["blocking_overlap"], r["nonblocking_overlap"]
    if not blocking and not nonblocking:
        return ORDERS_ALL
    if not blocking or not nonblocking:
        return ORDERS_BLOCKING if not blocking else ORDERS_NONBLOCKING
    return ASYNC


def measure(smoke: bool = False) -> list:
    rounds = 1 if smoke else 3
    streamlab.spin[1, 1](1)  # compiled
    cuda.synchronize()
    listed, kept = cases()
    rows = []
    for what, make, in_stream, claim in listed:
        def median(behind, hold_ns=0):
            took = []
            for _ in range(rounds):
                took.append(host_ms(make, in_stream, hold_ns, behind))
                kept.clear()
                cuda.synchronize()
            return statistics.median(took)
        try:
            idle = median("idle")
            hold_ms = 1.0 if smoke else HOLD_MS + 3 * idle
            hold_ns = streamlab.ms_to_ns(hold_ms)
            row = dict(what=what, in_stream=in_stream, claim=claim, idle_ms=idle,
                       hold_ms=hold_ms, host_ms=median("blocking", hold_ns),
                       host_nonblocking_ms=median("non-blocking", hold_ns),
                       host_own_ms=median("own", hold_ns))
            for key, nonblocking in (("blocking_overlap", False),
                                     ("nonblocking_overlap", True)):
                row[key] = overlapped(make, in_stream, hold_ns, hold_ms, nonblocking)
                kept.clear()
                cuda.synchronize()
        except Exception as e:  # noqa: BLE001  (a failed case is a row, not the end)
            rows.append(dict(what=what, claim=claim, error=repr(e)))
            print(f"{what:<62} failed: {e!r}", flush=True)
            continue
        finally:
            kept.clear()
            cuda.synchronize()
        rows.append(row)
        if smoke:
            said = "ran (smoke: nothing measured)"
        else:
            did = verdict(row)
            said = (f"idle {idle:7.3f}  behind {row['host_ms']:7.3f} / "
                    f"{row['host_nonblocking_ms']:7.3f} / {row['host_own_ms']:7.3f} ms  "
                    f"overlap {row['blocking_overlap']!s:<5} / "
                    f"{row['nonblocking_overlap']!s:<5}  {did}"
                    + ("" if did == claim else f"  (the reference says: {claim})"))
        print(f"{what:<62} {said}", flush=True)
    return rows


def claimed(rows: list) -> list:
    """The rows, each with the claim the reference makes today for its call (a kept run's
    page, written again, is read against today's reference; a call no longer in it keeps
    the claim it was run against)."""
    today = {what: claim for what, _, _, claim in cases()[0]}
    return [dict(r, claim=today.get(r["what"], r.get("claim"))) for r in rows]


def failed_claims(rows: list) -> list:
    """The rows whose call did not do what the reference says (or did not run)."""
    return [r for r in claimed(rows) if "error" in r or verdict(r) != r["claim"]]


#: the list of asynchronous commands that Mark Harris's *GPU Pro Tip: CUDA 7 Streams
#: Simplify Concurrency* quotes from the CUDA C Programming Guide ("they return control to
#: the calling host thread before the device has finished"), each with the rows that
#: measure it as numba makes the call
HARRIS = (
    ("Kernel launches", ("a kernel launch, in a stream",
                         "a kernel launch on the legacy default stream")),
    ("Memory copies between two addresses to the same device memory",
     ("copy between two device arrays, 64 MB, no stream",
      "copy between two device arrays, 64 MB, in a stream")),
    ("Memory copies from host to device of a memory block of 64 KB or less",
     ("copy to the device from pageable memory, 16 KB, no stream",
      "copy to the device from pageable memory, 64 KB, no stream",
      "copy to the device from pageable memory, 16 KB, in a stream")),
    ("Memory copies performed by functions with the Async suffix",
     ("copy to the device from pageable memory, 16 KB, in a stream",
      "copy to the device from pageable memory, 64 MB, in a stream",
      "copy to the device from pinned memory, 64 MB, in a stream",
      "copy to the host into pageable memory, 16 KB, in a stream",
      "copy to the host into pinned memory, 64 MB, in a stream")),
    ("Memory set function calls", ("memset, 64 MB, no stream (driver.device_memset)",
                                   "memset, 64 MB, in a stream")),
)


def harris_list(rows: list) -> list[str]:
    """The section on Harris's list: each entry, and the measured calls that held the host
    behind a kernel (those for which "returns before the device has finished" is not
    true as the entry reads), or that every call of it left the host free."""
    by = {r["what"]: r for r in rows if "error" not in r}
    lines = ["## Harris's list of asynchronous commands, measured", "",
             "Mark Harris's *GPU Pro Tip: CUDA 7 Streams Simplify Concurrency* quotes the "
             "CUDA C Programming Guide's list of commands that return to the host before "
             "the device has finished. Each entry, against the calls above that make it "
             "from numba:", ""]
    for entry, whats in HARRIS:
        measured = [by[w] for w in whats if w in by]
        held = [r for r in measured if verdict(r).startswith("waits")]
        if not measured:
            said = "not measured in this run"
        elif not held:
            said = "true here: every call of it left the host free"
        else:
            said = ("**not so here**: " + "; ".join(
                f"{r['what']} {verdict(r)} ({r['host_ms']:.1f} ms behind a blocking "
                f"stream's kernel, {r['host_own_ms']:.1f} ms behind its own stream's, "
                f"{r['idle_ms']:.2f} ms idle)" for r in held))
        lines.append(f"- *{entry}*: {said}.")
    return lines + [""]


#: other sources' words on these calls, each read against the rows that measure it:
#: (who says it, what they say, the rows, what the rows must all do for it to be so)
OTHERS = (
    ("The CUDA C Programming Guide's section *Implicit Synchronization*",
     "a device memory allocation or a page-locked host memory allocation issued between "
     "two streams' commands keeps them from running concurrently",
     ("cuda.device_array, 64 MB (cuMemAlloc)", "cuda.pinned_array, 64 MB (cuMemHostAlloc)"),
     (ORDERS_ALL, EVERY)),
    ("numba's docstring of `driver.device_memset`",
     "with no stream given, the memset is synchronous (the host waits for it)",
     ("memset, 64 MB, no stream (driver.device_memset)",), (EVERY, BLOCKING)),
)


def others(rows: list) -> list[str]:
    """Other sources' words on these calls, each said to be so or not so here."""
    by = {r["what"]: r for r in rows if "error" not in r}
    lines = ["## What other sources say, measured", ""]
    for who, says, whats, so in OTHERS:
        measured = [by[w] for w in whats if w in by]
        if not measured:
            lines.append(f"- {who}: {says}. Not measured in this run.")
            continue
        each = "; ".join(f"{r['what']}: {verdict(r)}" for r in measured)
        held = all(verdict(r) in so for r in measured)
        lines.append(f"- {who}: {says}. {'So here' if held else '**Not so here**'}: {each}.")
    return lines + [""]


def page(result: dict) -> str:
    """The results page: one row a call, what it did and whether that is what the
    reference says."""
    rows = claimed(result["rows"])
    missed = failed_claims(rows)
    lines = [
        "# Which calls make the host wait, and which order the streams", "",
        f"Written by `benchmarks/implicit_sync.py` from its run on {result['device']} "
        f"({result.get('date', 'date not kept')}). Each call is made on an idle GPU, then "
        f"just after a kernel of at least {HOLD_MS:g} ms (three times the call's idle time "
        "more, so that a call that does not wait returns while the kernel runs): in "
        "another blocking stream, in a non-blocking stream, and in the call's own stream "
        "(the legacy default stream for a call with no stream). Host times are medians of "
        "three, in ms. The overlap columns say whether a kernel issued after the call in a "
        "second stream still ran beside the first stream's kernel, for two blocking "
        "streams and for two non-blocking ones.", "",
        f"A call **waited** where it held the host for more than {WAITED:g} of the kernel "
        "beyond its idle time; it **orders** streams whose later kernel did not overlap.",
        "",
        ("**Every call did what the reference says.**" if not missed else
         f"**{len(missed)} call(s) did not do what the reference says:** "
         + "; ".join(r["what"] for r in missed) + "."), "",
        "| the call | idle | behind a blocking stream | behind a non-blocking stream | "
        "behind its own stream | blocking streams overlap | non-blocking streams overlap "
        "| what it did | the reference |",
        "|---|---:|---:|---:|---:|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['what']} | failed: {r['error']} | | | | | | | "
                         f"{r['claim']}: **not shown** |")
            continue
        did = verdict(r)
        held = "holds" if did == r["claim"] else "**does not hold**"
        lines.append(f"| {r['what']} | {r['idle_ms']:.3f} | {r['host_ms']:.3f} | "
                     f"{r['host_nonblocking_ms']:.3f} | {r['host_own_ms']:.3f} | "
                     f"{r['blocking_overlap']} | {r['nonblocking_overlap']} | {did} | "
                     f"{r['claim']}: {held} |")
    return "\n".join(lines + [""] + harris_list(rows) + others(rows)).rstrip("\n") + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kept_page.add_options(ap)
    ap.add_argument("--smoke", action="store_true",
                    help="each case once with a 1 ms hold, figures not kept (the simulator too)")
    a = ap.parse_args(argv)
    again = kept_page.page_again(a, page)
    if again is not None:
        return again
    if a.smoke:
        rows = measure(smoke=True)
        return 1 if any("error" in r for r in rows) else 0
    if streamlab.on_simulator():
        print("implicit_sync: a driver's facts, which the simulator's model would only "
              "guess at. Run it on a GPU (--smoke tries the code here).", file=sys.stderr)
        return 2
    print(f"implicit synchronisation on {streamlab.device_name()}")
    rows = measure()
    kept_page.keep(a, page, streamlab.device_name(), rows=rows)
    missed = failed_claims(rows)
    if missed:
        print(f"{len(missed)} call(s) did not do what the reference says: "
              + "; ".join(r["what"] for r in missed), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
