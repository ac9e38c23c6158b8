"""streamlab.profile(): CUPTI's records beside the event timeline.

Without a GPU, the parsing and every metric are checked on records that CUPTI really
produced, captured on a GPU by scripts/gpu/capture_cupti_fixture.py
(tests/fixtures/cupti_records.json). The test marked ``gpu`` compares event spans with
CUPTI's kernel times on a GPU and publishes the differences.
"""

import contextlib
import json
import random
import statistics
from pathlib import Path

import pytest

import streamlab
from streamlab.profiler import (Profile, ProfileError, Record, compare_spans, cupti_status,
                               profile)
from streamlab.trace import Span, Trace

FIXTURE = Path(__file__).parent / "fixtures" / "cupti_records.json"


@pytest.fixture(scope="module")
def captured():
    if not FIXTURE.exists():
        pytest.fail(f"{FIXTURE} is missing: run scripts/gpu/capture_cupti_fixture.py on a GPU",
                    pytrace=False)
    doc = json.loads(FIXTURE.read_text())
    return doc, Profile.from_json(doc)


def test_the_fixture_was_captured_on_a_gpu_and_parses(captured):
    doc, prof = captured
    assert doc["captured_on"].startswith("NVIDIA")
    kinds = {r.kind for r in prof.records}
    assert {"kernel", "memcpy", "memset", "driver", "sync"} <= kinds
    copies = prof.of("memcpy")
    assert {c.name for c in copies} >= {"HTOD", "DTOH"}
    assert {c.src for c in copies if c.name == "HTOD"} == {"PINNED"}
    assert {c.dst for c in copies if c.name == "DTOH"} == {"PAGEABLE"}
    assert all(k.grid == (1, 1, 1) and k.block == (1, 1, 1) for k in prof.of("kernel"))
    assert set(prof.streams.values()) == {"producer", "consumer"}
    # every GPU record was issued by a driver call the profile also holds
    calls = {r.correlation_id for r in prof.of("driver")}
    assert all(r.correlation_id in calls for r in prof.gpu_records)
    assert Profile.from_json(prof.to_json()).records == prof.records


def test_the_trace_has_a_row_per_stream_named_as_the_timeline_and_host_rows(captured):
    _, prof = captured
    t = prof.trace()
    stream_rows = [r.label for r in t.rows if not r.host]
    assert set(stream_rows) == {"producer", "consumer"}
    assert any(r.host and "driver calls" in r.label for r in t.rows)
    kernels = [s for s in t.spans if s.kind == "kernel"]
    assert len(kernels) == 6 and {s.row for s in kernels} == {"producer", "consumer"}
    assert {s.kind for s in t.spans} >= {"h2d", "d2h", "other", "host"}
    doc = streamlab.to_chrome_trace(t)  # exports like any trace
    assert any(e.get("ph") == "X" for e in doc["traceEvents"])


def test_the_profile_sits_on_the_timelines_axis(captured):
    """The CUPTI kernels fall inside the event spans that bracket them."""
    doc, prof = captured
    spans = tuple(Span(*s) for s in doc["timeline"]["spans"])
    events = Trace.from_spans(spans, clock_uncertainty_ms=doc["timeline"]["clock_uncertainty_ms"])
    pairs = compare_spans(prof, events)
    assert len(pairs) == 6
    for p in pairs:
        assert p["difference_ms"] >= -0.01, p       # a span holds its kernel
        assert p["start_late_ms"] >= -0.01, p
    consume = [p for p in pairs if p["span"].startswith("consume")]
    assert all(abs(p["kernel_ms"] - 0.1) < 0.05 for p in consume)


def test_launch_delay_short_kernels_idle_and_queue_depth(captured):
    _, prof = captured
    delays = prof.launch_delays()
    assert len(delays) == 6
    assert all(d["queued_ms"] >= 0 and abs(d["queued_ms"] + d["latency_ms"] - d["delay_ms"]) < 1e-9
               for d in delays)
    # a kernel may start before its launch call returns, never before the call began
    assert all(d["delay_ms"] > -d["call_ms"] - prof.clock_error_ms for d in delays)
    assert all(d["call_ms"] > 0 for d in delays)
    assert all(d["gpu_ms"] < d["call_ms"] for d in prof.short_kernels())
    idle = prof.idle()
    assert set(idle) == {"producer", "consumer"}
    for split in idle.values():
        assert set(split) == {"host", "another stream", "other"}
        assert all(v >= 0 for v in split.values())
    # the consumer's first kernel waited for the producer's event
    assert idle["consumer"]["another stream"] > 0
    for row, line in prof.queue_depth().items():
        depths = [n for _, n in line]
        assert depths[-1] == 0 and min(depths) >= 0 and max(depths) >= 1, row
    assert "kernels" in prof.summary() and "idle on producer" in prof.summary()


def test_metrics_on_a_hand_made_case():
    """Two kernels on one stream: the second issued 1 ms after the first ended (the
    host), a third after an event wait (another stream)."""
    ms = 1_000_000
    recs = [Record("driver", "cuLaunchKernel", 0, 10_000, 1, thread_id=7),
            Record("kernel", "a", 20_000, 1 * ms, 1, stream_id=5),
            Record("driver", "cuLaunchKernel", 2 * ms - 10_000, 2 * ms, 2, thread_id=7),
            Record("kernel", "b", 2 * ms + 5_000, 3 * ms, 2, stream_id=5),
            Record("sync", "STREAM_WAIT_EVENT", 2 * ms + 100_000, 2 * ms + 110_000, 3, stream_id=5),
            Record("driver", "cuLaunchKernel", 2 * ms + 200_000, 2 * ms + 210_000, 4, thread_id=7),
            Record("kernel", "c", 4 * ms, 5 * ms, 4, stream_id=5)]
    prof = Profile(recs, streams={5: "work"})
    idle = prof.idle()["work"]
    assert idle["host"] == pytest.approx(1.0)
    assert idle["another stream"] == pytest.approx(1.0)
    assert idle["other"] == pytest.approx(0.005)
    delays = {d["kernel"]: d["delay_ms"] for d in prof.launch_delays()}
    assert delays == pytest.approx({"a": 0.01, "b": 0.005, "c": 1.79})
    # c's call returned at 2.21 ms, b ran until 3 ms: 0.79 ms queued behind b, 1 ms more
    c = [d for d in prof.launch_delays() if d["kernel"] == "c"][0]
    assert c["queued_ms"] == pytest.approx(0.79) and c["latency_ms"] == pytest.approx(1.0)
    assert [n for _, n in prof.queue_depth()["work"]] == [1, 0, 1, 2, 1, 0]


def test_work_whose_launch_call_was_not_recorded_is_not_blamed_on_the_host():
    ms = 1_000_000
    prof = Profile([Record("kernel", "a", 0, ms, 1, stream_id=5),
                    Record("kernel", "b", 3 * ms, 4 * ms, 2, stream_id=5)])
    assert prof.idle()["stream (CUPTI id 5)"] == \
        {"host": 0.0, "another stream": 0.0, "other": 2.0}
    assert prof.launch_delays() == []              # no call, no delay to tell


def test_bad_records_and_profiles_get_clear_errors():
    with pytest.raises(ValueError, match="not one of"):
        Record("launch", "x", 0, 1)
    with pytest.raises(ValueError, match="ends .* before it starts"):
        Record("kernel", "x", 5, 1)
    empty = Profile([], available=False, reason="CUPTI needs a real GPU")
    with pytest.raises(ProfileError, match="no CUPTI records: CUPTI needs a real GPU"):
        empty.trace()
    for not_a_timeline in ("tl", Trace.from_spans([])):
        with pytest.raises(TypeError, match="Timeline of the same code"):
            with profile(timeline=not_a_timeline):
                pass


def test_where_cupti_cannot_run_one_line_says_so(capsys):
    if not streamlab.on_simulator():
        pytest.skip("checks the simulator's answer")
    ok, why = cupti_status()
    assert not ok and "simulator" in why
    with profile() as p:
        pass
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("streamlab.profile: no CUPTI records here")
    assert not p.available and "no CUPTI records" in p.summary()


def _spans_against_cupti(recording: bool):
    """120 spin kernels of 0.05 to 5 ms on 4 streams, each in a span, under CUPTI: each
    span beside its kernel. ``recording``: while record_ops is on (each span's records
    also told to the recorder), else alone."""
    from numba import cuda

    rng = random.Random(14)
    streams = [cuda.stream() for _ in range(4)]
    streamlab.spin[1, 1, streams[0]](1000)
    cuda.synchronize()
    tl = streamlab.Timeline()
    for i, s in enumerate(streams):
        tl.name_stream(s, f"stream {i}")
    recorder = streamlab.record_ops() if recording else contextlib.nullcontext()
    with recorder, profile(tl) as prof:
        for i in range(120):
            s = streams[i % 4]
            with tl.span(f"k{i}", s):
                streamlab.spin[1, 1, s](streamlab.ms_to_ns(rng.uniform(0.05, 5.0)))
    return prof, compare_spans(prof, tl.trace())


@pytest.mark.gpu
@pytest.mark.parametrize("recording", [True, False], ids=["recording", "alone"])
def test_event_spans_against_cupti_over_a_hundred_kernels(recording, figures):
    """Issue 14: event spans against CUPTI's kernel times; published: the median and the
    largest difference, for spans while record_ops is on and alone."""
    ok, why = cupti_status()
    assert ok, why
    prof, pairs = _spans_against_cupti(recording)
    assert len(pairs) == 120, f"only {len(pairs)} spans matched a CUPTI kernel"
    diffs = [p["difference_ms"] * 1000 for p in pairs]
    late = [p["start_late_ms"] * 1000 for p in pairs]
    how = "while record_ops is on" if recording else "the pool's events"
    figures(f"span minus CUPTI kernel time, median of 120 (0.05-5 ms, 4 streams), {how}",
            round(statistics.median(diffs), 2), "us")
    figures(f"span minus CUPTI kernel time, largest of 120, {how}", round(max(diffs), 2), "us")
    figures(f"kernel start after its span's start, median, {how}",
            round(statistics.median(late), 2), "us")
    if not recording:
        figures("CUPTI-to-host clock alignment error", round(prof.clock_error_ms * 1000, 2), "us")
        launches = prof.launch_delays()
        figures("launch delay (launch call's end to kernel start), median of 120",
                round(statistics.median(d["delay_ms"] for d in launches) * 1000, 2), "us")
        figures("the same, less the time queued behind the stream's earlier work, median",
                round(statistics.median(d["latency_ms"] for d in launches) * 1000, 2), "us")
    assert min(diffs) > -5, "a span shorter than its kernel: the span misses work"


def test_a_kernel_shorter_than_its_launch_call_is_named():
    """The host sets the pace when a kernel takes less GPU time than its launch call."""
    recs = [Record("driver", "cuLaunchKernel", 0, 20_000, 1, thread_id=1),
            Record("kernel", "tiny", 15_000, 17_000, 1, stream_id=3),
            Record("driver", "cuLaunchKernel", 30_000, 40_000, 2, thread_id=1),
            Record("kernel", "long", 45_000, 2_045_000, 2, stream_id=3)]
    short = Profile(recs).short_kernels()
    assert [d["kernel"] for d in short] == ["tiny"]
    assert short[0]["delay_ms"] == pytest.approx(-0.005)   # it began before the call returned


class _FakeCupti:
    """Enough of cupti-python's API for profile()'s control flow, on any machine: it hands
    the session an old record (from before the block) and a new one at the flush."""

    import enum as _enum

    class ActivityKind(_enum.IntEnum):
        CONCURRENT_KERNEL, KERNEL, MEMCPY, MEMSET, SYNCHRONIZATION, DRIVER = range(1, 7)

    def __init__(self, refuse=False):
        self.refuse, self.enabled, self.clock = refuse, set(), 10_000_000

    def get_timestamp(self):
        self.clock += 1000
        return self.clock

    def activity_register_callbacks(self, requested, completed):
        self.completed = completed

    def activity_enable(self, kind):
        if self.refuse:
            raise RuntimeError("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
        self.enabled.add(kind)

    def activity_disable(self, kind):
        self.enabled.discard(kind)

    def activity_flush_all(self, flag):
        from types import SimpleNamespace as NS
        kernel = dict(kind=self.ActivityKind.CONCURRENT_KERNEL, name="k", stream_id=3,
                      grid_x=1, grid_y=1, grid_z=1, block_x=1, block_y=1, block_z=1,
                      correlation_id=1)
        self.completed([NS(start=5, end=6, **kernel),                      # before the block
                        NS(start=self.clock - 10, end=self.clock - 5, **kernel),
                        NS(start=9, end=1, **kernel)])                      # incomplete


def _fake(monkeypatch, refuse=False):
    import sys
    import types

    import streamlab.profiler as profiler

    fake = _FakeCupti(refuse)
    package = types.ModuleType("cupti")
    package.cupti = fake
    monkeypatch.setitem(sys.modules, "cupti", package)
    monkeypatch.setitem(sys.modules, "cupti.cupti", fake)
    monkeypatch.setattr(profiler, "cupti_status", lambda: (True, "fake CUPTI"))
    return fake


def test_profile_keeps_the_blocks_records_and_always_lets_the_next_profile_start(monkeypatch):
    fake = _fake(monkeypatch)
    with profile() as prof:
        pass
    assert prof.available and [r.start_ns for r in prof.records] == [fake.clock - 10]
    assert prof.dropped == 1 and not fake.enabled and isinstance(prof.clock_offset_ns, int)
    with pytest.raises(ZeroDivisionError):            # an error in the block...
        with profile():
            1 / 0
    assert not fake.enabled
    with profile() as again:                           # ...does not block the next profile
        with pytest.raises(ProfileError, match="cannot nest"):
            with profile():
                pass
    assert again.available


def test_a_driver_that_refuses_cupti_gives_one_line_and_an_empty_profile(monkeypatch, capsys):
    _fake(monkeypatch, refuse=True)
    with profile() as prof:
        pass
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "refused CUPTI" in out[0] and not prof.available
    _fake(monkeypatch)
    with profile() as prof:                            # the lock was released
        pass
    assert prof.available
