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

#: the kernel the call is issued behind, and the host time above which the call waited
HOLD_MS = 20.0
WAITED = 0.5
SMALL, LARGE = 16 * 1024, 64 * 1024 * 1024  # bytes: under the guide's 64 KB, and well over


def _f32(nbytes: int) -> int:
    return nbytes // 4


def cases() -> tuple:
    """The cases, each (what, prepare): ``prepare()`` makes what the call needs (untimed,
    before the hold) and returns the call; and the list that keeps what the calls made,
    cleared after each case."""
    kept: list = []  # what the calls allocate, freed once the row is done

    def launch_in_own_stream():
        c = cuda.stream()
        return lambda: streamlab.spin[1, 1, c](1)

    def free():
        d = cuda.device_array(_f32(LARGE), np.float32)
        holder = [d]
        del d

        def call():
            holder.clear()
            pending = getattr(cuda.current_context(), "deallocations", None)
            if pending is not None:  # numba's deferred frees, now (the simulator has none)
                pending.clear()
        return call

    def copy(kind: str, nbytes: int, stream: bool, pinned: bool = False):
        def prepare():
            n = _f32(nbytes)
            c = cuda.stream() if stream else 0
            h = cuda.pinned_array(n, np.float32) if pinned else np.ones(n, np.float32)
            d = cuda.device_array(n, np.float32)
            if kind == "h2d":
                return lambda: d.copy_to_device(h, stream=c)
            if kind == "d2h":
                return lambda: d.copy_to_host(h, stream=c)
            d2 = cuda.device_array(n, np.float32)
            return lambda: d2.copy_to_device(d, stream=c)
        return prepare

    def memset(stream: bool):
        def prepare():
            d, c = cuda.device_array(_f32(LARGE), np.float32), cuda.stream()
            return lambda: driver.device_memset(d, 0, LARGE, stream=c if stream else 0)
        return prepare

    def ordered_alloc():
        from cuda.core import Device

        dev = Device()
        dev.set_current()
        c = dev.create_stream()
        return lambda: kept.append(dev.allocate(LARGE, stream=c))

    def legacy_record():
        ev = cuda.event()
        return lambda: ev.record()

    def other_stream_sync():
        c = cuda.stream()
        return lambda: c.synchronize()

    return [
        ("a kernel launch, in a stream of its own", launch_in_own_stream),
        ("a kernel launch on the legacy default stream",
         lambda: lambda: streamlab.spin[1, 1](1)),
        ("cuda.device_array, 64 MB (cuMemAlloc)",
         lambda: lambda: kept.append(cuda.device_array(_f32(LARGE), np.float32))),
        ("a device array freed, 64 MB (cuMemFree)", free),
        ("cuda.pinned_array, 64 MB (cuMemHostAlloc)",
         lambda: lambda: kept.append(cuda.pinned_array(_f32(LARGE), np.float32))),
        ("stream-ordered allocation, 64 MB (cuda.core Device.allocate)", ordered_alloc),
        ("copy to the device from pageable memory, 16 KB, no stream",
         copy("h2d", SMALL, stream=False)),
        ("copy to the device from pageable memory, 64 KB, no stream",
         copy("h2d", 64 * 1024, stream=False)),
        ("copy to the device from pageable memory, 128 KB, no stream",
         copy("h2d", 128 * 1024, stream=False)),
        ("copy to the device from pageable memory, 64 MB, no stream",
         copy("h2d", LARGE, stream=False)),
        ("copy to the device from pageable memory, 16 KB, in a stream",
         copy("h2d", SMALL, stream=True)),
        ("copy to the device from pageable memory, 64 MB, in a stream",
         copy("h2d", LARGE, stream=True)),
        ("copy to the device from pinned memory, 64 MB, in a stream",
         copy("h2d", LARGE, stream=True, pinned=True)),
        ("copy to the host into pageable memory, 16 KB, no stream",
         copy("d2h", SMALL, stream=False)),
        ("copy to the host into pageable memory, 16 KB, in a stream",
         copy("d2h", SMALL, stream=True)),
        ("copy to the host into pinned memory, 64 MB, in a stream",
         copy("d2h", LARGE, stream=True, pinned=True)),
        ("copy between two device arrays, 64 MB, no stream", copy("d2d", LARGE, stream=False)),
        ("copy between two device arrays, 64 MB, in a stream",
         copy("d2d", LARGE, stream=True)),
        ("memset, 64 MB, no stream (driver.device_memset)", memset(stream=False)),
        ("memset, 64 MB, in a stream", memset(stream=True)),
        ("cuda.stream()", lambda: lambda: kept.append(cuda.stream())),
        ("cuda.event()", lambda: lambda: kept.append(cuda.event())),
        ("an event recorded on the legacy default stream", legacy_record),
        ("another, idle stream's synchronize()", other_stream_sync),
        ("cuda.synchronize()", lambda: cuda.synchronize),
    ], kept


def host_ms(call, hold_ns: int, nonblocking: bool = False) -> float:
    """The host time of ``call()`` issued just behind a kernel of ``hold_ns`` in a stream of
    its own, blocking or not (ms)."""
    s = streamlab.stream(nonblocking=True) if nonblocking else cuda.stream()
    streamlab.spin[1, 1, s](hold_ns)
    t0 = time.perf_counter()
    call()
    took = time.perf_counter() - t0
    cuda.synchronize()
    return took * 1e3


def overlapped(call, hold_ns: int, nonblocking: bool) -> bool:
    """Does a kernel issued after ``call()`` in a second stream start before the kernel
    issued before it in a first stream ends?"""
    make = (lambda: streamlab.stream(nonblocking=True)) if nonblocking else cuda.stream
    a, b = make(), make()
    a0, a1, b0 = cuda.event(), cuda.event(), cuda.event()
    a0.record(a)
    streamlab.spin[1, 1, a](hold_ns)
    a1.record(a)
    call()
    b0.record(b)
    streamlab.spin[1, 1, b](hold_ns)
    cuda.synchronize()
    return cuda.event_elapsed_time(a0, b0) < cuda.event_elapsed_time(a0, a1) - 0.1 * HOLD_MS


def verdict(host: float, host_nb: float, blocking: bool, nonblocking: bool,
            hold_ms: float) -> str:
    """What the call did, from its figures (``host_nb``: behind a non-blocking stream)."""
    if host > WAITED * hold_ms:
        return ("waits for every stream's work" if host_nb > WAITED * hold_ms else
                "waits for the blocking streams' work")
    if not blocking and not nonblocking:
        return "orders every stream"
    if not blocking or not nonblocking:
        return f"orders the {'blocking' if not blocking else 'non-blocking'} streams"
    return "asynchronous"


def measure(smoke: bool = False) -> list:
    hold_ns = streamlab.ms_to_ns(1.0 if smoke else HOLD_MS)
    streamlab.spin[1, 1](1)  # compiled
    cuda.synchronize()
    listed, kept = cases()
    rows = []
    for what, prepare in listed:
        try:
            hosts = [host_ms(prepare(), hold_ns) for _ in range(1 if smoke else 3)]
            hosts_nb = [host_ms(prepare(), hold_ns, nonblocking=True)
                        for _ in range(1 if smoke else 3)]
            blocking = overlapped(prepare(), hold_ns, nonblocking=False)
            nonblocking = overlapped(prepare(), hold_ns, nonblocking=True)
        except Exception as e:  # noqa: BLE001  (a failed case is a row, not the end)
            rows.append(dict(what=what, error=repr(e)))
            print(f"{what:<66} failed: {e!r}", flush=True)
            continue
        finally:
            kept.clear()
            cuda.synchronize()
        host, host_nb = statistics.median(hosts), statistics.median(hosts_nb)
        rows.append(dict(what=what, host_ms=host, host_nonblocking_ms=host_nb,
                         blocking_overlap=blocking, nonblocking_overlap=nonblocking,
                         hold_ms=HOLD_MS))
        said = ("ran (smoke: nothing measured)" if smoke else
                f"host {host:7.3f} / {host_nb:7.3f} ms   overlap {blocking!s:<5} / "
                f"{nonblocking!s:<5} {verdict(host, host_nb, blocking, nonblocking, HOLD_MS)}")
        print(f"{what:<66} {said}", flush=True)
    return rows


def page(result: dict) -> str:
    """The results page: one row a call."""
    lines = [
        "# Which calls make the host wait, and which order the streams", "",
        f"Written by `benchmarks/implicit_sync.py` from its run on {result['device']} "
        f"({result.get('date', 'date not kept')}). Each call is issued just after a "
        f"{HOLD_MS:g} ms kernel in a stream: \"host\" is how long the call held the host "
        f"(median of three), behind a blocking stream's kernel and behind a non-blocking "
        f"one's; the overlap columns say whether a kernel issued after the call in a second "
        f"stream still ran beside the first stream's kernel, for two blocking streams and "
        f"for two non-blocking ones.", "",
        "| the call | host, blocking (ms) | host, non-blocking (ms) | blocking streams "
        "overlap | non-blocking streams overlap | what it did |",
        "|---|---:|---:|---|---|---|"]
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"| {r['what']} | failed: {r['error']} | | | | |")
            continue
        did = verdict(r["host_ms"], r["host_nonblocking_ms"], r["blocking_overlap"],
                      r["nonblocking_overlap"], r["hold_ms"])
        lines.append(f"| {r['what']} | {r['host_ms']:.3f} | {r['host_nonblocking_ms']:.3f} | "
                     f"{r['blocking_overlap']} | {r['nonblocking_overlap']} | {did} |")
    return "\n".join(lines) + "\n"


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
