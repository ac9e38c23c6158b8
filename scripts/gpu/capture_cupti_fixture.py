"""Capture real CUPTI records for the tests that run without a GPU.

    python scripts/gpu/capture_cupti_fixture.py [--out tests/fixtures/cupti_records.json]

On a GPU with cupti-python: a small job of the course's kinds (pinned and pageable
copies in and out, a memset, spin kernels on two streams, one stream waiting on the
other's event, a stream synchronize), inside a Timeline and a streamlab.profile(). It
writes the profile's records (streamlab.profiler.Profile.to_json) and the event
timeline's spans beside them, so tests/test_profile.py checks the parsing and every
metric on what CUPTI really said. Nothing in the file is written by hand.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import streamlab
from numba import cuda
from numba.cuda.cudadrv.driver import device_memset
from streamlab.profiler import profile

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "cupti_records.json")
    a = ap.parse_args()
    if streamlab.on_simulator():
        print("capture_cupti_fixture: needs a GPU with CUPTI", file=sys.stderr)
        return 1
    n = 1 << 20
    pinned = cuda.pinned_array(n, dtype=np.float32)
    pageable = np.ones(n, dtype=np.float32)
    d = cuda.device_array(n, dtype=np.float32)
    a_stream, b_stream = cuda.stream(), cuda.stream()
    streamlab.spin[1, 1, a_stream](1000)
    cuda.synchronize()
    tl = streamlab.Timeline()
    tl.name_stream(a_stream, "producer")
    tl.name_stream(b_stream, "consumer")
    done = cuda.event()
    with profile(tl) as prof:
        with tl.span("copy in", a_stream, kind="h2d"):
            d.copy_to_device(pinned, stream=a_stream)
        for i in range(3):
            with tl.span(f"produce {i}", a_stream):
                streamlab.spin[1, 1, a_stream](streamlab.ms_to_ns(0.2 * (i + 1)))
        done.record(a_stream)
        done.wait(b_stream)
        for i in range(3):
            with tl.span(f"consume {i}", b_stream):
                streamlab.spin[1, 1, b_stream](streamlab.ms_to_ns(0.1))
        with tl.span("clear", b_stream, kind="other"):
            device_memset(d, 0, 4 * n, stream=b_stream)
        with tl.span("copy out", b_stream, kind="d2h"):
            d.copy_to_host(pageable, stream=b_stream)
        b_stream.synchronize()
    if not prof.available:
        print(f"capture_cupti_fixture: {prof.reason}", file=sys.stderr)
        return 1
    doc = prof.to_json()
    trace = tl.trace()
    doc["timeline"] = {"clock_uncertainty_ms": trace.clock_uncertainty_ms,
                       "host_origin_s": trace.host_origin_s,
                       "spans": [[s.name, s.row, s.kind, s.start_ms, s.end_ms]
                                 for s in trace.spans]}
    doc["captured_on"] = streamlab.device_name()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(prof.summary())
    print(f"{len(prof.records)} records written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
