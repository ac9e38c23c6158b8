"""The stream-order record and the race check (any device).

The record must see every stream-ordered call whatever name it was reached by and from
whichever thread; the order of operations must follow CUDA's rules; and the race check
must find the source documents' races and nothing in their correct versions.
"""

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from numba import cuda
from numba.cuda import synchronize as aliased_synchronize  # before any recording

import streamlab
from streamlab import order
from streamlab.kernels import access_modes

sys.path.insert(0, str(Path(__file__).resolve().parent))
import race_cases  # noqa: E402


@cuda.jit
def write(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = 1


@cuda.jit
def read(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i]


@cuda.jit(device=True)
def store(a, i, v):
    a[i] = v


@cuda.jit
def through_a_device_function(a, b):
    i = cuda.grid(1)
    store(a, i, b[i])


@cuda.jit
def through_a_view(m):
    row = m[cuda.grid(1)]
    row[0] = 1


# --- which arguments a kernel writes: from its code ---------------------------------
def test_access_modes_come_from_the_kernels_code():
    assert access_modes(write) == ("write",)
    assert access_modes(read) == ("read", "write")
    assert access_modes(through_a_device_function) == ("write", "read")
    assert access_modes(through_a_view) == ("write",)
    assert access_modes(race_cases.update_counter) == ("atomic", "read")


@cuda.jit
def add_one_to_part(buffer, start, size):
    i = cuda.grid(1)
    if i < size:
        buffer[start + i] += 1


def test_kernels_on_different_parts_of_one_array_race_only_where_the_parts_meet():
    s0, s1 = cuda.stream(), cuda.stream()
    buffer = cuda.to_device(np.zeros(64, np.int32))
    with streamlab.record_ops() as apart:
        add_one_to_part[1, 32, s0](buffer, 0, 32)
        add_one_to_part[1, 32, s1](buffer, 32, 32)
    with streamlab.record_ops() as meeting:
        add_one_to_part[1, 32, s0](buffer, 0, 32)
        add_one_to_part[1, 32, s1](buffer, 31, 32)
    assert len(streamlab.find_races(meeting)) >= 1
    if streamlab.on_simulator():   # the simulator sees every element a kernel touches
        assert streamlab.find_races(apart) == []
        (launch,) = meeting.launches()[1:]
        assert launch.writes[0].parts == ((launch.writes[0].lo, launch.writes[0].lo + 128),)
    else:                          # a GPU's record knows only the whole argument
        assert len(streamlab.find_races(apart)) == 1


# --- the record: nothing escapes it ---------------------------------------------------
def test_an_aliased_synchronize_and_a_bound_method_kept_from_before_are_recorded():
    s = cuda.stream()
    bound = s.synchronize
    with streamlab.record_ops() as ops:
        write[1, 4, s](cuda.device_array(4))
        aliased_synchronize()
        bound()
    assert [(op.kind, op.name) for op in ops.user()] == [
        ("launch", "write"), ("sync", "device"), ("sync", "stream")]


def test_operations_from_threads_the_recorder_did_not_start_are_recorded():
    s = [cuda.stream() for _ in range(3)]
    d = cuda.device_array(4)
    go = threading.Event()

    def worker(i):
        go.wait(10)
        write[1, 4, s[i]](d)

    threads = [threading.Thread(target=worker, args=(i,), name=f"w{i}") for i in range(3)]
    for t in threads:
        t.start()
    with streamlab.record_ops() as ops:
        go.set()
        for t in threads:
            t.join()
    assert sorted(op.thread for op in ops.launches()) == ["w0", "w1", "w2"]
    # three threads write one array in three streams: a race, each pair
    assert len(streamlab.find_races(ops)) >= 2


def test_recorders_that_end_out_of_order_leave_recording_on():
    d = cuda.device_array(4)
    first, second = streamlab.record_ops(), streamlab.record_ops()
    a = first.__enter__()
    b = second.__enter__()
    first.__exit__(None, None, None)     # the first one ends first
    write[1, 4](d)
    second.__exit__(None, None, None)
    with streamlab.record_ops() as c:
        write[1, 4](d)
    assert len(a) == 0 and len(b.launches()) == 1 and len(c.launches()) == 1


def test_streamlabs_own_calls_are_marked_internal_and_left_out_of_the_questions():
    s = cuda.stream()
    with streamlab.record_ops() as ops:
        tl = streamlab.Timeline()          # records and synchronizes to calibrate
        with tl.span("k", s):
            write[1, 4, s](cuda.device_array(4))
        tl.trace()                        # synchronizes the span's end event
    assert ops.syncs() == [] and ops.records() == []
    assert [op.kind for op in ops.user()] == ["launch"]
    assert any(op.internal and op.kind == "sync" for op in ops)


def test_a_launch_configured_before_recording_goes_to_its_own_stream():
    s1, s2 = cuda.stream(), cuda.stream()
    d = cuda.device_array(4)
    on_s1 = write[1, 4, s1]
    on_s2 = write[1, 4, s2]               # configured after, launched before
    with streamlab.record_ops() as ops:
        on_s2(d)
        on_s1(d)
    assert [op.stream for op in ops.launches()] == [streamlab.StreamRef.of(s2),
                                                   streamlab.StreamRef.of(s1)]


def test_implicit_copies_are_recorded_with_what_the_host_waits_for():
    d = cuda.device_array(4)
    host = np.zeros(4)
    with streamlab.record_ops() as ops:
        d2 = cuda.to_device(host)             # a synchronous copy, default stream
        out = d.copy_to_host()                # likewise
        read[1, 4](host, d2)                  # a host array: copied in and back out
    copies = ops.copies()
    assert [c.name for c in copies[:2]] == ["h2d", "d2h"]
    assert copies[1].blocking and copies[1].stream.is_legacy_default
    assert [c.name for c in copies[2:]] == ["h2d", "d2h"]
    assert out.shape == (4,)


def test_events_are_told_apart_by_object_not_by_a_reused_id():
    s0, s1 = cuda.stream(), cuda.stream()
    with streamlab.record_ops() as ops:
        first = cuda.event()
        first.record(s0)
        del first                             # its id may now be reused...
        second = cuda.event()
        second.wait(s1)                       # ...but this event was never recorded
    rec, wait = ops.records()[0], ops.waits()[0]
    assert rec.event is not wait.event and ops.recorded_before(wait) is None


# --- the order of operations: CUDA's rules ---------------------------------------------
def scenario(steps, s0=None, s1=None):
    s0 = s0 or cuda.stream()
    s1 = s1 or cuda.stream()
    ev = cuda.event()
    x, out = cuda.device_array(4), cuda.device_array(4)
    actions = {"write s0": lambda: write[1, 4, s0](x), "read s1": lambda: read[1, 4, s1](x, out),
               "read legacy": lambda: read[1, 4](x, out), "record s0": lambda: ev.record(s0),
               "wait s1": lambda: ev.wait(s1), "sync s0": lambda: s0.synchronize(),
               "sync event": lambda: ev.synchronize(), "query": lambda: ev.query(),
               "sync device": lambda: cuda.synchronize()}
    with streamlab.record_ops() as ops:
        for step in steps:
            actions[step]()
    return order.analyze(ops)


@pytest.mark.parametrize("steps, races", [
    (["write s0", "read s1"], 1),
    (["write s0", "record s0", "wait s1", "read s1"], 0),
    (["record s0", "write s0", "wait s1", "read s1"], 1),     # recorded before the work
    (["write s0", "wait s1", "record s0", "read s1"], 1),     # waited before it was recorded
    (["write s0", "sync s0", "read s1"], 0),                  # the host waited, then issued
    (["write s0", "record s0", "sync event", "read s1"], 0),
    (["write s0", "record s0", "query", "read s1"], 0),       # query() returned True
    (["write s0", "sync device", "read s1"], 0),
    (["write s0", "read legacy"], 0),                         # the legacy stream waits
])
def test_the_order_follows_cudas_rules(steps, races):
    if "query" in steps and not streamlab.on_simulator():
        pytest.skip("query() is True at once only on the simulator")
    assert len(scenario(steps).races) == races, steps


def test_the_legacy_stream_does_not_wait_for_a_non_blocking_stream():
    nb = streamlab.stream(nonblocking=True)
    assert len(scenario(["write s0", "read legacy"], s0=nb).races) == 1


def test_a_wait_on_an_event_never_recorded_is_named():
    found = scenario(["write s0", "wait s1", "read s1"])
    assert found.races and "never recorded" in order.note(found.notes[0])
    assert "Note: event.wait in " in order.report(found.races, found.notes)


def test_atomic_updates_do_not_race_each_other_but_do_race_a_plain_read():
    s0, s1 = streamlab.stream(nonblocking=True), streamlab.stream(nonblocking=True)
    counter = cuda.to_device(np.zeros(1, np.int32))
    with streamlab.record_ops() as ops:
        race_cases.update_counter[1, 1, s0](counter, 1)
        race_cases.update_counter[1, 1, s1](counter, 2)
    assert streamlab.find_races(ops) == []
    with streamlab.record_ops() as ops:
        race_cases.update_counter[1, 1, s0](counter, 1)
        counter.copy_to_host(stream=s1)
    assert len(streamlab.find_races(ops)) == 1


def test_a_freed_arrays_reused_address_is_not_the_same_memory():
    s0, s1 = cuda.stream(), cuda.stream()
    with streamlab.record_ops() as ops:
        for s in (s0, s1):       # each array dies before the next one is made
            write[1, 4, s](cuda.device_array(4))
    assert streamlab.find_races(ops) == []


def test_declared_host_reads_race_with_unwaited_copies():
    s = cuda.stream()
    d, h = cuda.device_array(4), cuda.pinned_array(4)
    with streamlab.record_ops() as ops:
        d.copy_to_host(h, stream=s)
        streamlab.host_access([h], "read", what="the result")
    (race,) = streamlab.find_races(ops)
    assert "the host (line" in race.message() and "synchronize" in race.message()
    with pytest.raises(TypeError, match=r"host \(numpy\) arrays"):
        streamlab.host_access([d])
    with pytest.raises(ValueError, match="'read' or 'write'"):
        streamlab.host_access([h], "peek")


# --- the race check on the source documents ---------------------------------------------
@pytest.mark.parametrize("name", list(race_cases.RACES))
def test_the_race_check_finds_each_race_of_the_source_documents(name):
    rc = race_cases.RACES[name]()
    assert rc.races, f"{name}: no race found"
    assert "nothing orders the two" in rc.report()


@pytest.mark.parametrize("name", list(race_cases.CORRECT))
def test_the_race_check_finds_nothing_in_their_correct_versions(name):
    rc = race_cases.CORRECT[name]()
    assert not rc.races, rc.report()


def test_race_check_raises_with_the_report_and_prints_it(capsys):
    s0, s1 = cuda.stream(), cuda.stream()
    x, out = cuda.device_array(4), cuda.device_array(4)
    with pytest.raises(streamlab.RaceError, match="kernel read .* reads argument 'x'"):
        with streamlab.race_check():
            write[1, 4, s0](x)
            read[1, 4, s1](x, out)
    assert "race check: 1 race" in capsys.readouterr().out


def test_an_exception_in_the_block_is_not_hidden_by_the_check():
    with pytest.raises(ZeroDivisionError):
        with streamlab.race_check():
            raise ZeroDivisionError("inside")


def test_the_report_names_streams_as_the_learner_does_and_refuses_bad_names():
    s0, s1 = cuda.stream(), cuda.stream()
    x, out = cuda.device_array(4), cuda.device_array(4)
    with streamlab.race_check(raises=False, names={"producer": s0, "consumer": s1},
                              file=open("/dev/null", "w")) as rc:
        write[1, 4, s0](x)
        read[1, 4, s1](x, out)
    assert "kernel read in consumer" in rc.report() and "record it in producer" in rc.report()
    with pytest.raises(TypeError, match="name -> stream"):
        with streamlab.race_check(names=[s0]):
            pass
    with pytest.raises(TypeError, match="is not a CUDA stream"):
        with streamlab.race_check(names={"x": "not a stream"}):
            pass


def test_a_pageable_copy_with_no_stream_is_not_waited_for_by_a_non_blocking_stream():
    nb = streamlab.stream(nonblocking=True)
    out = cuda.device_array(4)
    with streamlab.race_check(raises=False, file=open("/dev/null", "w")) as rc:
        x = cuda.to_device(np.ones(4))          # returns once staged (CUDA's rule)
        read[1, 4, nb](x, out)
    assert rc.races and "returns once x is staged" in rc.report()
    with streamlab.race_check(raises=False) as rc:
        x = cuda.to_device(np.ones(4), stream=nb)
        read[1, 4, nb](x, out)
        nb.synchronize()
    assert not rc.races


def test_a_thread_that_synchronizes_orders_the_host_only_once_joined():
    s = cuda.stream()
    x, out = cuda.device_array(4), cuda.device_array(4)
    for joined in (False, True):
        with streamlab.record_ops() as ops:
            write[1, 4, s](x)
            t = threading.Thread(target=s.synchronize)
            t.start()
            if joined:
                t.join()
            read[1, 4, cuda.stream()](x, out)
        t.join()
        assert bool(streamlab.find_races(ops)) is not joined


@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def test_one_race_per_pair_of_operations_and_slices_kept_apart():
    """A kernel that reads and writes its array clashes with another such kernel in three
    ways (write-write, read-write, write-read): one race, not three. And kernels given
    disjoint slices of one buffer do not race; overlapping slices do."""
    buf = cuda.device_array(1024, dtype=np.int32)
    s0, s1, s2 = cuda.stream(), cuda.stream(), cuda.stream()
    with streamlab.race_check(raises=False, quiet=True) as rc:
        add_one[2, 256, s0](buf[:512])
        add_one[2, 256, s1](buf[512:])          # disjoint: no race
        add_one[2, 256, s2](buf[256:768])       # overlaps both: two races
        cuda.synchronize()
    pairs = sorted((r.first.stream.handle, r.second.stream.handle) for r in rc.races)
    assert len(rc.races) == 2, rc.report()
    assert len(set(pairs)) == 2
