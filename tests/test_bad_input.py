"""The helper package refuses bad input with a message that says what to do, one case at
a time (the cases a learner ran into, each once passed silently or gave an obscure
traceback), and gives the right answer where the input was right after all."""

import math

import matplotlib
import numpy as np
import pytest
from numba import cuda

import streamlab
from streamlab import Span, Trace, TimelineError, check

matplotlib.use("Agg")


@cuda.jit
def touch(x):
    x[0] = 1


def test_a_number_is_not_a_stream():
    tl = streamlab.Timeline()
    for bad in (5, 1.7):
        with pytest.raises(TypeError, match="is not a stream|is not a CUDA stream"):
            with tl.span("x", bad):
                pass
    with pytest.raises(TypeError, match="is not a CUDA stream"):
        streamlab.stream_info(3.9)
    with pytest.raises(TypeError, match="cuda.external_stream"):
        streamlab.stream_info(12345)
    assert streamlab.stream_info(0).kind == "legacy default"  # 0 is the default stream


def test_a_label_cannot_take_another_rows_name():
    tl = streamlab.Timeline()
    a, b = cuda.stream(), cuda.stream()
    with tl.span("first", a):
        touch[1, 1, a](cuda.device_array(1))
    with pytest.raises(ValueError, match="already used"):
        tl.name_stream(b, "stream 1")                      # a's automatic label
    tl.name_stream(b, "stream 2")                          # taken first by a name...
    c = cuda.stream()
    with tl.span("third", c):                              # ...so c is numbered past it
        touch[1, 1, c](cuda.device_array(1))
    rows = [r.label for r in tl.trace().rows]
    assert len(rows) == len(set(rows)) == 2 and "stream 3" in rows
    with pytest.raises(ValueError, match="host thread's row"):
        tl.name_stream(c, "host: MainThread")


def test_spans_on_one_stream_cannot_nest_and_an_open_span_is_named():
    tl = streamlab.Timeline()
    s = cuda.stream()
    with tl.span("outer", s):
        with pytest.raises(ValueError, match="opens inside span 'outer'"):
            with tl.span("inner", s):
                pass
    assert tl.metrics().spans == 1
    with tl.span("same name", s):                 # one name twice is still a nest
        with pytest.raises(ValueError, match="opens inside span 'same name'"):
            with tl.span("same name", s):
                pass
    assert tl.metrics().spans == 2
    block = tl.span("once", s)
    with block:
        with pytest.raises(RuntimeError, match="entered already"):
            with block:                           # the same block inside itself
                pass
    with pytest.raises(RuntimeError, match="entered already"):
        with block:                               # or again after it closed
            pass
    assert tl.metrics().spans == 3
    open_span = tl.span("never closed", s)
    open_span.__enter__()
    with pytest.raises(TimelineError, match="'never closed' was opened and not closed"):
        tl.trace()


def test_a_priority_no_gpu_has_is_refused_on_the_simulator_too():
    low, high = streamlab.priority_range()
    with pytest.raises(ValueError, match="outside"):
        streamlab.stream(priority=99)
    with pytest.raises(ValueError, match="outside"):
        streamlab.stream(priority=high - 1)
    assert streamlab.stream_info(streamlab.stream(priority=high)).priority == high
    with pytest.raises(TypeError, match="priority must be an int"):
        streamlab.stream(priority=True)


def test_two_timelines_in_one_plot_keep_their_rows_apart():
    traces = []
    for _ in range(2):
        tl = streamlab.Timeline()
        s = cuda.stream()
        with tl.span("k", s):
            touch[1, 1, s](cuda.device_array(1))
        traces.append(tl)
    ax = streamlab.plot(traces)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 2 and labels[0] != labels[1]
    doc = streamlab.to_chrome_trace(traces)               # takes what plot takes
    threads = [e for e in doc["traceEvents"] if e["name"] == "thread_name"]
    assert len(threads) == 2
    with pytest.raises(TypeError, match="not the path"):
        streamlab.to_chrome_trace("trace.json")


def test_a_host_functions_row_is_a_host_row():
    t = Trace.from_spans([Span("post", "host: driver", "hostfn", 0, 1),
                          Span("k", "stream 1", "kernel", 0, 2)])
    assert t.host_rows == {"host: driver"}
    assert t.metrics().spans == 1


def test_a_span_needs_numbers_for_its_times():
    with pytest.raises(TypeError, match="start_ms must be a number"):
        Span("k", "stream 1", "kernel", "0", 1)
    assert Span("k", "stream 1", "kernel", np.float32(0), 1).duration_ms == 1


def test_host_function_name_is_the_label_not_the_functions_argument():
    s = cuda.stream()

    def greet(name):
        return f"hello {name}"

    with pytest.raises(TypeError, match="functools.partial"):
        streamlab.launch_host_func(s, greet, name="a label")
    call = streamlab.launch_host_func(s, lambda: 7, name="seven")
    assert call.wait(timeout=10) == 7 and call.name == "seven"


def test_a_keyboard_interrupt_in_a_host_function_stays_on_the_drivers_thread(sim_only):
    """As on a GPU, where the driver's thread runs it: the error is kept (and printed),
    the stream goes on, and later host functions still run."""
    s = cuda.stream()

    def interrupted():
        raise KeyboardInterrupt

    call = streamlab.launch_host_func(s, interrupted)
    s.synchronize()                     # it runs on the simulator's driver thread
    assert isinstance(call.exception, KeyboardInterrupt)
    with pytest.raises(streamlab.HostFuncError, match="KeyboardInterrupt"):
        call.wait(timeout=10)
    assert streamlab.launch_host_func(s, lambda: 7).wait(timeout=10) == 7


def test_nan_equals_nan_in_a_check():
    check.equal([math.nan, 1.0], [math.nan, 1.0], "values")
    with pytest.raises(check.CheckFailed, match="1 of 2 values are wrong"):
        check.equal([math.nan, 1.0], [1.0, 1.0], "values")


class _SaysEqual:
    def __eq__(self, other):
        return True


class _FloatSaysEqual(float):
    def __eq__(self, other):
        return True


class _NumpySaysEqual(np.float64):
    def __eq__(self, other):
        return True


def _object_array(n):
    out = np.empty(n, dtype=object)
    out[:] = [_SaysEqual() for _ in range(n)]
    return out


@pytest.mark.parametrize("got, says", [
    (_SaysEqual(), "_SaysEqual"),
    ([_SaysEqual(), 1.0], "a list holding"),
    (_FloatSaysEqual(2.0), "_FloatSaysEqual"),
    (_NumpySaysEqual(2.0), "_NumpySaysEqual"),
    (_object_array(2), "an array of object"),
    ("2", "str"),
    (None, "NoneType"),
    ([[1.0, 2.0], [3.0]], "lists of different lengths"),
], ids=["object", "list of objects", "float subclass", "numpy scalar subclass",
        "object array", "string", "None", "ragged lists"])
def test_a_check_compares_numbers_only(got, says):
    """Issue 56: an object that says it equals anything passed a check that compared
    object arrays with == (lab 04 part 2, tests/runner_answers/l04p2_anyeq.py). Only plain
    numbers are compared; anything else fails, saying what it got, and its __eq__ never
    runs."""
    want = [2.0, 2.0] if isinstance(got, (list, np.ndarray)) else 2.0
    with pytest.raises(check.CheckFailed, match=says):
        check.equal(got, want, "the result")


@pytest.mark.parametrize("got, want", [
    (2, 2.0), (True, 1), (np.float32(2.5), 2.5), ((1, np.int64(2)), [1, 2]),
    (np.arange(3, dtype=np.uint8), [0, 1, 2]), ([1 + 2j], [1 + 2j]),
])
def test_plain_numbers_of_any_numeric_type_are_compared(got, want):
    check.equal(got, want, "the result")


def test_checks_take_what_they_can_judge():
    s = cuda.stream()
    with streamlab.record_ops() as ops:
        touch[1, 1, s](cuda.device_array(1))
        cuda.synchronize()
    launch, sync = ops.launches()[0], ops.syncs()[0]
    with pytest.raises(TypeError, match="two operations issued to streams"):
        check.waits_for(ops, launch, sync)
    with pytest.raises(ValueError, match="at least one stream"):
        with check.time_per_stream([]):
            pass
    with pytest.raises(ValueError, match="2 streams and 1 labels"):
        with check.time_per_stream([s, cuda.stream()], labels=["only one"]):
            pass
    assert check.concurrency_at_least(Trace.from_spans([Span("k", "s", "kernel", 0, 1)]),
                                      0.5, "one kernel") is None
    assert streamlab.CheckFailed is check.CheckFailed


def test_calibrations_must_be_a_number_of_tries():
    with pytest.raises(TypeError, match="whole number of tries"):
        streamlab.Timeline(calibrations="3")
    with pytest.raises(ValueError, match="at least 1"):
        streamlab.Timeline(calibrations=0)


@pytest.mark.parametrize("source, refused", [
    ("def time_on():\n    return 1.0\n", "takes 0 positional arguments but 1 was given"),
    ("def time_on(stream, d_x):\n    return 1.0\n", "missing 1 required positional argument"),
    ("def time_on(*, stream):\n    return 1.0\n", "takes 0 positional arguments"),
])
def test_a_learners_function_with_other_parameters_is_told_so_not_blamed_on_the_course(
        source, refused):
    """Issue 58: the check calls the learner's function as the stub declares it; a function
    written with other parameters is refused by Python at that call, in the check's own
    line. The learner is told which call was refused and what their function takes, not
    that the course has a bug."""
    from test_exercises import run

    with pytest.raises(check.CheckFailed) as e:
        run("00", 1, "time_on", source)
    said = str(e.value)
    assert said.startswith("Exercise 1: the check called time_on as the exercise's stub "
                           "declares it, and Python refused the call"), said
    assert refused in said and "(yours takes time_on(" in said, said
    assert "bug in the course" not in said, said


@pytest.mark.parametrize("number, name, source, says, not_said", [
    (1, "time_on", """
def time_on(stream):
    start, end = cuda.event(timing=False), cuda.event(timing=False)
    start.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""", "an event made with cuda.event(timing=False) keeps no time. Make both with "
     "cuda.event()", "another context"),
    (1, "time_on", """
def time_on(stream):
    start, end = cuda.event(), cuda.event(timing=False)
    start.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    end.synchronize()
    return cuda.event_elapsed_time(start, end)
""", "an event made with cuda.event(timing=False) keeps no time", "another context"),
    (2, "launch_on", """
def launch_on(stream, d_x):
    add_one[blocks_for(d_x), THREADS, stream](d_x)
""", "blocks_for takes a number of elements, such as blocks_for(d_x.size), not the array",
     "\n"),
    (2, "launch_on", """
def launch_on(stream, d_x):
    add_one[blocks_for(d_x.size), THREADS, cuda.stream()](d_x)
""", "Exercise 2: the stream you were given got 0 launches of 'add_one'", "stream 0"),
])
def test_a_natural_mistake_gets_advice_that_names_it(number, name, source, says, not_said):
    """Issue 58's wrong advice, each kept with the message it should give: events made with
    timing=False were told of "another context, or one already destroyed";
    blocks_for(d_x) (the array, not its size) got numba's "launch configuration was not
    specified" (over four lines: the message is one line now); and lesson 00's exercise 2
    said "stream 0" for the learner's one stream, in a course that teaches stream 0 as the
    legacy default stream."""
    from test_exercises import run

    with pytest.raises(check.CheckFailed) as e:
        run("00", number, name, source)
    said = str(e.value)
    assert says in said and not_said not in said, said
    assert "bug in the course" not in said, said


def test_a_check_that_fails_in_its_own_code_under_a_tracer_says_so():
    """A check whose own code fails says it is a bug in the course; but with a trace
    function set (a debugger, or code that silenced check.fail with a tracer and put it
    back, issue 56: the check ran on past its silenced failure into a crash) it says a
    tracer was set, which can change what a check's code does, and not that the course
    is wrong."""
    import sys

    def crash():
        with check.part(1, print):  # (a function with no code of the learner's to blame)
            raise ValueError("the check's own line")

    with pytest.raises(check.InternalError, match="This is a bug in the course"):
        crash()
    kept = sys.gettrace()
    sys.settrace(lambda *args: None)
    try:
        with pytest.raises(check.InternalError, match="while a trace function was set") as e:
            crash()
    finally:
        sys.settrace(kept)
    assert "bug in the course" not in str(e.value)
