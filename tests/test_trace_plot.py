"""The Gantt chart: rows, colours, labels that fit, the title and the makespan."""

import matplotlib
import pytest

matplotlib.use("Agg")

from matplotlib.colors import to_hex  # noqa: E402

from streamlab import COLOURS, KINDS, Row, Span, Trace, plot  # noqa: E402


def trace(**kw):
    spans = (
        Span("copy in", "stream 1", "h2d", 0.0, 4.0),
        Span("kernel", "stream 1", "kernel", 4.0, 9.0),
        Span("k", "stream 2", "kernel", 4.0, 4.01),
        Span("cpu", "host: MainThread", "host", 0.0, 2.0),
    )
    rows = (Row("host: MainThread", "host thread", True),
            Row("stream 1", "blocking stream"), Row("stream 2", "non-blocking stream"))
    return Trace(spans, rows, **kw)


def test_every_kind_has_its_own_colour():
    assert set(COLOURS) == set(KINDS)
    assert len(set(COLOURS.values())) == len(COLOURS)


def test_rows_top_to_bottom_with_their_kind():
    ax = plot(trace(device="NVIDIA H100 80GB HBM3"))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # y ticks go bottom to top: the last is the top row
    assert labels[::-1] == ["host: MainThread\n(host thread)", "stream 1\n(blocking stream)",
                            "stream 2\n(non-blocking stream)"]


def test_bars_are_coloured_by_kind():
    ax = plot(trace())
    colours = {to_hex(c.get_facecolor()[0]) for c in ax.collections}
    assert colours == {COLOURS["h2d"], COLOURS["kernel"], COLOURS["host"]}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [KINDS["h2d"], KINDS["kernel"], KINDS["host"]]


def test_labels_only_on_bars_they_fit():
    ax = plot(trace())
    texts = {t.get_text() for t in ax.texts}
    assert {"copy in", "kernel"} <= texts
    assert "k" not in texts  # a 0.01 ms bar in a 9 ms chart has no room


def test_title_names_the_device_and_makespan():
    assert plot(trace(device="NVIDIA H200")).get_title() == "NVIDIA H200: makespan 9.000 ms"
    title = plot(trace(device="CUDA simulator", simulated=True)).get_title()
    assert title.startswith("simulator: sequential, not GPU timing")


def test_traces_of_two_devices_side_by_side_on_the_host_clock():
    a = trace(device="GPU A", host_origin_s=100.0, device_id=0)
    b = trace(device="GPU B", host_origin_s=100.002, device_id=1)  # made 2 ms later
    ax = plot([a, b])
    labels = [t.get_text().split("\n")[0] for t in ax.get_yticklabels()][::-1]
    assert labels[0] == "GPU 0: host: MainThread" and labels[3] == "GPU 1: host: MainThread"
    assert ax.get_title() == "GPU A + GPU B: makespan 11.000 ms"


def test_nothing_to_plot_is_an_error():
    with pytest.raises(ValueError, match="no spans"):
        plot(Trace.from_spans([]))
    with pytest.raises(TypeError, match="Trace or a Timeline"):
        plot("trace")


def test_makespan_in_the_title_is_the_stream_rows_one_as_metrics_says():
    t = Trace.from_spans([Span("cpu", "host: MainThread", "host", 0.0, 20.0),
                          Span("k", "stream 1", "kernel", 5.0, 8.0)], device="GPU")
    assert plot(t).get_title() == f"GPU: makespan {t.metrics().makespan_ms:.3f} ms"


def test_a_very_short_span_is_still_visible():
    from streamlab.trace import MIN_BAR
    t = Trace.from_spans([Span("long", "s1", "kernel", 0.0, 20.0),
                          Span("blip", "s2", "kernel", 10.0, 10.005)])
    ax = plot(t)
    widths = sorted(p.get_paths()[0].get_extents().width for p in ax.collections)
    assert widths[0] == pytest.approx(20.0 * MIN_BAR)
    assert widths[1] == pytest.approx(20.0)
