"""cuda.core's streams and events in the learner's hands, on either path: the real ones on
a GPU (seen through CUPTI while something listens), streamlab's stand-in on the simulator
(streamlab.sim.core). The same lines, the same records, the same verdicts."""

import numpy as np
import pytest
from numba import cuda

import streamlab
from cuda.core import Device, EventOptions, StreamOptions

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")


@cuda.jit
def _fill(x, value):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = value


@cuda.jit
def _copy(src, dst):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]


def _needs_cupti():
    if not streamlab.on_simulator():
        from streamlab import _driverwatch

        if not _driverwatch.available():
            pytest.skip(f"cupti-python is needed to see cuda.core's calls: "
                        f"{_driverwatch.missing()}")


def test_streams_keep_their_kind_and_priority():
    dev = Device()
    dev.set_current()
    s = dev.create_stream(options=StreamOptions(nonblocking=True, priority=-1))
    plain = dev.create_stream()  # cuda.core's default: non-blocking, lowest priority
    blocking = dev.create_stream(options={"nonblocking": False})
    assert (s.is_nonblocking, s.priority) == (True, -1)
    assert plain.is_nonblocking and blocking.is_nonblocking is False
    assert streamlab.stream_info(s).describe() == "non-blocking stream, priority -1"
    assert streamlab.stream_info(blocking).kind == "blocking"
    least, greatest = streamlab.priority_range()
    assert plain.priority == least


def test_a_priority_out_of_range_is_refused_in_cuda_cores_words():
    least, greatest = streamlab.priority_range()
    dev = Device()
    for priority in (greatest - 50, least + 50):
        with pytest.raises(ValueError, match=rf"priority={priority} is out of range "
                                             rf"\[{greatest}, {least}\]"):
            dev.create_stream(options=StreamOptions(priority=priority))


def test_numba_work_runs_in_cuda_core_streams_in_order():
    dev = Device()
    s1, s2 = dev.create_stream(), dev.create_stream()
    a = cuda.device_array(64, np.float32)
    b = cuda.device_array(64, np.float32)
    _fill[1, 64, s1](a, 3.0)
    s2.wait(s1)
    _copy[1, 64, s2](a, b)
    h = cuda.pinned_array(64, np.float32)
    b.copy_to_host(h, stream=s2)
    s2.sync()
    assert (np.asarray(h) == 3.0).all()


def test_cuda_core_calls_are_recorded_with_the_learners_line():
    _needs_cupti()
    dev = Device()
    s1, s2 = dev.create_stream(), dev.create_stream()
    a = cuda.device_array(64, np.float32)
    with streamlab.record_ops() as ops:
        _fill[1, 64, s1](a, 1.0)
        ev = s1.record(options=EventOptions(blocking_sync=True))
        s2.wait(ev)
        ev.sync()
        assert ev.is_done
        s1.sync()
        dev.sync()
    kinds = [(op.kind, op.name) for op in ops.user()]
    assert kinds == [("launch", "_fill"), ("record", "event"), ("wait", "event"),
                     ("sync", "event"), ("query", "event"), ("sync", "stream"),
                     ("sync", "device")], kinds
    record, wait = ops.user()[1], ops.user()[2]
    assert wait.event is record.event, "the wait must meet its record"
    assert ops.user()[4].detail["result"] is True
    assert all("test_core.py" in op.where or "line" in op.where for op in ops.user()), \
        [op.where for op in ops.user()]
    assert streamlab.streams.is_blocking_sync(record.event) is True


def test_the_race_check_sees_cuda_core_waits():
    _needs_cupti()
    dev = Device()
    s1, s2 = dev.create_stream(), dev.create_stream()
    a = cuda.device_array(1 << 12, np.float32)
    b = cuda.device_array(1 << 12, np.float32)
    with streamlab.race_check(raises=False, quiet=True) as unordered:
        _fill[16, 256, s1](a, 2.0)
        _copy[16, 256, s2](a, b)  # reads a with nothing ordering it after the fill
        dev.sync()
    with streamlab.race_check(raises=False, quiet=True) as ordered:
        _fill[16, 256, s1](a, 2.0)
        s2.wait(s1.record())
        _copy[16, 256, s2](a, b)
        s2.sync()
    assert unordered.races and not ordered.races
    h = cuda.pinned_array(1 << 12, np.float32)
    with streamlab.race_check(raises=False, quiet=True) as early:
        _fill[16, 256, s1](a, 4.0)
        a.copy_to_host(h, stream=s1)
        streamlab.host_access([h])  # the host reads h: nothing waited for s1
    with streamlab.race_check(raises=False, quiet=True) as waited:
        _fill[16, 256, s1](a, 4.0)
        a.copy_to_host(h, stream=s1)
        s1.sync()
        streamlab.host_access([h])
    assert early.races and not waited.races


def test_timing_events_subtract_and_others_refuse():
    dev = Device()
    s = dev.create_stream()
    t0 = s.record(options=EventOptions(timing_enabled=True))
    streamlab.spin[1, 1, s](streamlab.ms_to_ns(1))
    t1 = s.record(options=EventOptions(timing_enabled=True))
    t1.sync()
    assert t1 - t0 > 0
    untimed = s.record()
    untimed.sync()
    with pytest.raises(RuntimeError, match="Both Events must be created with timing enabled"):
        untimed - t0
    never = Device().create_event(options=EventOptions(timing_enabled=True))
    with pytest.raises(RuntimeError, match="Both Events must be recorded"):
        never - t0


def test_a_flag_set_afterwards_is_not_taken():
    ev = Device().create_event()
    with pytest.raises(AttributeError):
        ev.is_blocking_sync = True
    assert ev.is_blocking_sync is False


def test_a_numba_stream_becomes_a_cuda_core_stream():
    s = cuda.stream()
    core = Device().create_stream(s)
    assert int(core.handle) == streamlab.streams.handle_of(s)


@pytest.mark.skipif("not streamlab.on_simulator()")
def test_the_stand_in_says_what_it_is_and_uninstall_takes_it_out():
    import sys

    import cuda.core

    assert "simulator" in repr(Device()) and cuda.core.__name__ == "streamlab.sim.core"
    assert cuda.core.Program.__module__.startswith("cuda.core")  # the rest is cuda.core's own
    with pytest.raises(ValueError, match="one GPU"):
        Device(1)
    with pytest.raises(TypeError, match="StreamOptions"):
        Device().create_stream(options=3)
    assert sys.modules["cuda.core"].__name__ == "streamlab.sim.core"


@pytest.mark.gpu
def test_an_array_that_remembers_a_cuda_core_stream_has_no_array_interface():
    """What the README says numba-cuda 0.30 does not tell you: a device array made with
    stream= a cuda.core stream remembers it, and its __cuda_array_interface__ calls int()
    on it, which a cuda.core Stream refuses. numba's own launch does not ask for the
    interface; other consumers do (CuPy, PyTorch). streamlab's recorder reads the array
    itself instead."""
    s = Device().create_stream()
    remembering = cuda.to_device(np.zeros(4, np.float32), stream=s)
    with pytest.raises(TypeError, match="int"):
        remembering.__cuda_array_interface__  # noqa: B018
    _fill[1, 4, s](remembering, 1.0)  # numba's launch does not ask for the interface
    with streamlab.record_ops() as ops:  # nor does streamlab's recorder any more
        _fill[1, 4, s](remembering, 2.0)
    (launch,) = ops.launches()
    assert launch.writes and launch.writes[0].hi - launch.writes[0].lo == 16
    s.sync()
    assert remembering.copy_to_host().tolist() == [2.0] * 4
    plain = cuda.to_device(np.zeros(4, np.float32))
    assert plain.__cuda_array_interface__["stream"] is None


def test_what_the_stand_in_and_cuda_core_share_in_the_details():
    """Found by a review against cuda.core 1.2.2 (each held on a GPU by the real library):
    the default stream without importing it first, options taken as cuda.core takes them,
    handles that are not ints, allocate's stream required, wait's refusal, flags fixed at
    creation, Device of a Device."""
    dev = Device(Device())
    assert int(dev.default_stream.handle) in (1, 2)  # legacy or per-thread, as set
    s = dev.create_stream(options=StreamOptions(nonblocking=0, priority=np.int64(0)))
    assert s.is_nonblocking is False and s.priority == 0
    with pytest.raises(TypeError, match="Expected int, got str"):
        StreamOptions(priority="high")
    with pytest.raises(TypeError, match="Expected bool, got int"):
        EventOptions(blocking_sync=1)
    with pytest.raises(TypeError):
        f"{s.handle:#x}"  # noqa: B018  (a CUstream is not an int; int() of it is)
    assert isinstance(int(s.handle), int)
    with pytest.raises(TypeError):
        dev.allocate(64)  # noqa: B018  (stream= is required, keyword-only)
    with pytest.raises(ValueError, match="only an Event, Stream, or object supporting"):
        s.wait(object())
    options = EventOptions()
    ev = s.record(options=options)
    options.blocking_sync = True
    assert ev.is_blocking_sync is False
    s.close()
    assert s.is_closed
