"""Chrome trace JSON: what Perfetto needs to show named rows."""

import json

from streamlab import Row, Span, Trace, to_chrome_trace


def test_named_rows_and_complete_events(tmp_path):
    t = Trace((Span("k", "producer 0", "kernel", 1.0, 3.5),
               Span("cpu", "host: MainThread", "host", 0.0, 1.0)),
              (Row("host: MainThread", "host thread", True),
               Row("producer 0", "blocking stream")), device="NVIDIA H100")
    path = tmp_path / "trace.json"
    doc = to_chrome_trace(t, path)
    assert json.loads(path.read_text()) == doc
    meta = {(e["name"], e["tid"]): e["args"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert meta[("process_name", 0)] == {"name": "NVIDIA H100"}
    assert meta[("thread_name", 1)] == {"name": "host: MainThread (host thread)"}
    assert meta[("thread_name", 2)] == {"name": "producer 0 (blocking stream)"}
    (k,) = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "k"]
    assert (k["ts"], k["dur"], k["tid"], k["cat"]) == (1000.0, 2500.0, 2, "kernel")


def test_simulator_traces_say_so():
    t = Trace.from_spans([Span("k", "s", "kernel", 0, 1)], device="CUDA simulator",
                         simulated=True)
    names = [e["args"]["name"] for e in to_chrome_trace(t)["traceEvents"]
             if e["name"] == "process_name"]
    assert names == ["CUDA simulator (sequential, host clock: not GPU timing)"]
    modelled = Trace.from_spans([Span("k", "s", "kernel", 0, 1)], device="CUDA simulator",
                                simulated=True, model="model of an NVIDIA H200, not a "
                                "measurement")
    names = [e["args"]["name"] for e in to_chrome_trace(modelled)["traceEvents"]
             if e["name"] == "process_name"]
    assert names == ["model of an NVIDIA H200, not a measurement"]
