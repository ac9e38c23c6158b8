"""Spans, metrics, overlap and the table: pure data, the same on any device."""

import pytest

from streamlab import Span, Trace


def trace():
    return Trace.from_spans([
        Span("copy in", "stream 1", "h2d", 0.0, 1.0),
        Span("kernel A", "stream 1", "kernel", 1.0, 4.0),
        Span("kernel B", "stream 2", "kernel", 2.0, 5.0),
        Span("prepare", "host: MainThread", "host", -1.0, 0.5),
    ], device="test GPU")


def test_metrics_count_gpu_spans_by_default():
    m = trace().metrics()
    assert m.makespan_ms == pytest.approx(5.0)
    assert m.busy_ms == pytest.approx(7.0)
    assert m.concurrency == pytest.approx(1.4)
    assert m.spans == 3


def test_metrics_by_kind_row_and_with_host():
    t = trace()
    assert t.metrics(kinds="kernel").concurrency == pytest.approx(6.0 / 4.0)
    assert t.metrics(rows="stream 2").makespan_ms == pytest.approx(3.0)
    assert t.metrics(include_host=True).makespan_ms == pytest.approx(6.0)


def test_serial_spans_have_concurrency_one():
    t = Trace.from_spans([Span(f"k{i}", "s", "kernel", i, i + 1) for i in range(8)])
    assert t.metrics().concurrency == pytest.approx(1.0)


def test_overlap_between_named_spans():
    t = trace()
    assert t.overlap_ms("kernel A", "kernel B") == pytest.approx(2.0)
    assert t.overlap_ms("copy in", "kernel B") == 0.0


def test_lookup_errors_name_what_exists():
    t = trace()
    with pytest.raises(KeyError, match="spans are: copy in, kernel A"):
        t.span("kernel C")
    dup = Trace.from_spans([Span("k", "s", "kernel", 0, 1), Span("k", "s", "kernel", 1, 2)])
    with pytest.raises(KeyError, match="2 spans are called 'k'"):
        dup.span("k")
    with pytest.raises(KeyError, match="no row called"):
        t.select(rows="stream 9")
    with pytest.raises(ValueError, match="unknown span kind 'kernal'"):
        t.select(kinds="kernal")
    with pytest.raises(ValueError, match="empty"):
        Trace.from_spans([]).metrics()


def test_a_span_cannot_end_before_it_starts():
    with pytest.raises(ValueError, match="swapped"):
        Span("k", "s", "kernel", 2.0, 1.0)
    with pytest.raises(ValueError, match="use one of"):
        Span("k", "s", "gpu", 0.0, 1.0)


def test_table_lists_spans_in_start_order_with_durations():
    lines = trace().table().splitlines()
    assert lines[0].split() == ["name", "row", "kind", "start", "ms", "end", "ms", "ms"]
    assert lines[2].startswith("prepare")
    assert "kernel B" in lines[-1] and lines[-1].endswith("3.000")


def test_host_rows_are_left_out_of_gpu_metrics_whatever_their_kind():
    from streamlab import Row
    t = Trace((Span("cb", "host: driver", "hostfn", 0.0, 10.0),
               Span("k", "stream 1", "kernel", 0.0, 1.0)),
              (Row("host: driver", "host thread", True), Row("stream 1")))
    assert t.metrics().makespan_ms == 1.0
    assert t.metrics(include_host=True).makespan_ms == 10.0
    assert t.host_rows == {"host: driver"}
