"""Measure the figures of streamlab's model GPU on a real GPU and write them to a profile.

    python scripts/gpu/measure_profile.py                 # writes src/streamlab/profiles/<gpu>.json
    python scripts/gpu/measure_profile.py --out DIR       # writes DIR/<gpu>.json instead

Every parameter of :mod:`streamlab.model` comes from here; none is typed in by hand.
GPU times come from CUDA event pairs, host times from ``time.perf_counter`` (medians of
many calls, the calls as numba makes them, with streamlab's wrappers installed, as a
learner's code runs). It prints what it measured as a table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import warnings

import numpy as np

os.environ.setdefault("STREAMLAB_QUIET", "1")
os.environ.setdefault("STREAMLAB_DEVICE", "gpu")
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "src")))

import streamlab  # noqa: E402
from numba import cuda  # noqa: E402

MB = 1 << 20
warnings.simplefilter("ignore")  # numba's low-occupancy warnings: one-block grids on purpose


def gpu_ms(stream, work, reps: int = 5) -> float:
    """The median GPU time of ``work()`` issued to ``stream``, by an event pair.

    A spin kernel goes first, so that the stream is busy while the host issues the pair
    and the work: the pair then times the GPU's work, not the host's issue time."""
    times = []
    for _ in range(reps):
        a, b = cuda.event(), cuda.event()
        streamlab.spin[1, 1, stream](streamlab.ms_to_ns(2.0))
        a.record(stream)
        work()
        b.record(stream)
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def host_us(call, reps: int = 300, between=None) -> float:
    """The median host time of one ``call()``, in microseconds."""
    times = []
    for _ in range(reps):
        if between is not None:
            between()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


@cuda.jit
def empty(x, n):
    pass


@cuda.jit
def scale(data):  # the course's memory-bound kernel (notebook 04's kernel1)
    i = cuda.grid(1)
    if i < data.size:
        data[i] *= 2.0


@cuda.jit
def one_block(x, n):  # the course's one-block kernel (notebook 01, after Rennich)
    tid = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    for i in range(tid, n, cuda.blockDim.x * cuda.gridDim.x):
        x[i] = math.sqrt(math.pow(3.14159, i % 600))


def fit(points):
    """latency (us) and bandwidth (GB/s) through (bytes, ms) points: ms = lat + bytes/bw."""
    (b0, t0), (b1, t1) = points[0], points[-1]
    per_byte_ms = (t1 - t0) / (b1 - b0)
    latency_ms = max(0.0, t0 - per_byte_ms * b0)
    return latency_ms * 1000.0, 1.0 / per_byte_ms / 1e6


def copies(s) -> dict:
    out = {}
    sizes = (4 * MB, 256 * MB)
    d = cuda.device_array(sizes[-1] // 4, dtype=np.float32)
    d2 = cuda.device_array(sizes[-1] // 4, dtype=np.float32)
    hosts = {"pinned": cuda.pinned_array(sizes[-1] // 4, dtype=np.float32),
             "pageable": np.ones(sizes[-1] // 4, dtype=np.float32)}
    hosts["pinned"][:] = 1.0
    for memory, h in hosts.items():
        for direction in ("h2d", "d2h"):
            points = []
            for size in sizes:
                n = size // 4
                if direction == "h2d":
                    work = lambda n=n, h=h: d[:n].copy_to_device(h[:n], stream=s)  # noqa: E731
                else:
                    work = lambda n=n, h=h: d[:n].copy_to_host(h[:n], stream=s)  # noqa: E731
                work()
                s.synchronize()
                points.append((size, gpu_ms(s, work)))
            lat, bw = fit(points)
            out[f"{direction}_{memory}"] = {"latency_us": lat, "gbs": bw}
    points = []
    for size in sizes:
        n = size // 4
        work = lambda n=n: d2[:n].copy_to_device(d[:n], stream=s)  # noqa: E731
        work()
        points.append((size, gpu_ms(s, work)))
    lat, bw = fit(points)
    out["d2d"] = {"latency_us": lat, "gbs": bw}
    return out


def kernels(s) -> dict:
    out = {}
    # a full-grid memory-bound kernel: bytes of its argument over its time
    n = 256 * MB // 4
    d = cuda.device_array(n, dtype=np.float32)
    threads = 256
    scale[(n + threads - 1) // threads, threads, s](d)
    s.synchronize()
    ms = gpu_ms(s, lambda: scale[(n + threads - 1) // threads, threads, s](d))
    out["dram_gbs"] = 4 * n / ms / 1e6
    # the GPU time of a kernel that does nothing: 200 queued behind a spin
    x = cuda.device_array(1, dtype=np.float32)
    empty[1, 1, s](x, 0)
    s.synchronize()
    a, b = cuda.event(), cuda.event()
    count = 200
    streamlab.spin[1, 1, s](streamlab.ms_to_ns(count * 0.1))  # longer than issuing them
    a.record(s)
    for _ in range(count):
        empty[1, 1, s](x, 0)
    b.record(s)
    b.synchronize()
    out["kernel_floor_us"] = a.elapsed_time(b) * 1000.0 / count
    # one block of 64 threads: the bytes one thread moves per second
    n = 1 << 20
    y = cuda.device_array(n, dtype=np.float32)
    one_block[1, 64, s](y, n)
    s.synchronize()
    ms = gpu_ms(s, lambda: one_block[1, 64, s](y, n))
    out["thread_gbs"] = 4 * n / 64 / ms / 1e6
    # the spin kernel: how much longer than asked it runs
    streamlab.spin[1, 1, s](1000)
    ms = gpu_ms(s, lambda: streamlab.spin[1, 1, s](streamlab.ms_to_ns(1.0)))
    out["spin_extra_us"] = max(0.0, (ms - 1.0) * 1000.0)
    return out


def host_costs(s) -> dict:
    """Microseconds of host time per call, on an idle GPU."""
    x = cuda.device_array(1024, dtype=np.float32)
    h = cuda.pinned_array(1024, dtype=np.float32)
    scale[4, 256, s](x)
    s.synchronize()
    ev, ev2 = cuda.event(), cuda.event()
    ev.record(s)
    s.synchronize()
    out = {}
    out["launch"] = host_us(lambda: scale[4, 256, s](x), between=s.synchronize)
    out["record"] = host_us(lambda: ev2.record(s), between=s.synchronize)
    out["wait"] = host_us(lambda: ev.wait(s), between=s.synchronize)
    out["query"] = host_us(ev.query)
    out["sync_event"] = host_us(ev.synchronize)
    out["sync_stream"] = host_us(s.synchronize)
    out["sync_device"] = host_us(cuda.synchronize)
    out["copy"] = host_us(lambda: x.copy_to_device(h, stream=s), between=s.synchronize)
    noop = lambda: None  # noqa: E731
    out["hostfn"] = host_us(lambda: streamlab.launch_host_func(s, noop),
                            reps=100, between=s.synchronize)
    # a round trip on an idle GPU: record, then wait for it
    def record_and_wait():
        ev2.record(s)
        ev2.synchronize()
    trip = host_us(record_and_wait)
    latency = {"gpu_us": max(0.0, trip - out["record"] - out["sync_event"])}

    def hostfn_round_trip():
        streamlab.launch_host_func(s, noop).wait(timeout=10)
    trip = host_us(hostfn_round_trip, reps=100)
    latency["hostfn_us"] = max(0.0, trip - out["hostfn"])
    return {"host_us": out, "latency": latency}


#: what the GPU reports of itself, kept in the profile: the model GPU answers
#: streamlab.attribute() with them on the simulator
ATTRIBUTES = ("MULTIPROCESSOR_COUNT", "ASYNC_ENGINE_COUNT", "MEMORY_CLOCK_RATE",
              "GLOBAL_MEMORY_BUS_WIDTH", "CLOCK_RATE", "L2_CACHE_SIZE")


def attributes() -> dict:
    return {name: streamlab.attribute(name) for name in ATTRIBUTES}


def measure() -> dict:
    s = cuda.stream()
    dev = cuda.get_current_device()
    profile = {
        "name": streamlab.device_name(),
        "measured": datetime.date.today().isoformat(),
        "by": "scripts/gpu/measure_profile.py",
        "numba_cuda": __import__("numba_cuda").__version__,
        "compute_capability": ".".join(map(str, dev.compute_capability)),
        "sm_count": streamlab.attribute("MULTIPROCESSOR_COUNT"),
        "max_threads_per_sm": streamlab.attribute("MAX_THREADS_PER_MULTIPROCESSOR"),
        "max_blocks_per_sm": streamlab.attribute("MAX_BLOCKS_PER_MULTIPROCESSOR"),
        "async_engine_count": streamlab.attribute("ASYNC_ENGINE_COUNT"),
        "attributes": attributes(),
        "copies": copies(s),
    }
    profile.update(kernels(s))
    profile.update(host_costs(s))
    return profile


def slug(name: str) -> str:
    words = name.lower().replace("nvidia ", "").split()
    return "nvidia-" + words[0] if words else "gpu"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="folder for the profile (default: the package's)")
    parser.add_argument("--attributes-only", action="store_true",
                        help="read the device's attributes into its existing profile, "
                             "and measure nothing else")
    args = parser.parse_args(argv)
    if streamlab.on_simulator():
        print("measure_profile.py measures a real GPU; this machine has none.")
        return 2
    folder = args.out or os.path.join(os.path.dirname(streamlab.__file__), "profiles")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, slug(streamlab.device_name()) + ".json")
    if args.attributes_only:
        with open(path) as f:
            profile = json.load(f)
        profile["attributes"] = attributes()
        with open(path, "w") as f:
            json.dump(profile, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{profile['name']}: attributes {profile['attributes']} -> {path}")
        return 0
    profile = measure()
    with open(path, "w") as f:
        json.dump(profile, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{profile['name']}: {profile['sm_count']} SMs, "
          f"{profile['async_engine_count']} copy engines -> {path}")
    for key, c in profile["copies"].items():
        print(f"  copy {key:<14} {c['gbs']:8.1f} GB/s  latency {c['latency_us']:6.1f} us")
    print(f"  kernel: DRAM {profile['dram_gbs']:.0f} GB/s, one thread {profile['thread_gbs']:.4f}"
          f" GB/s, floor {profile['kernel_floor_us']:.2f} us, spin +{profile['spin_extra_us']:.1f} us")
    for key, us in profile["host_us"].items():
        print(f"  host {key:<12} {us:7.1f} us")
    for key, us in profile["latency"].items():
        print(f"  latency {key:<9} {us:7.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
