"""Recording the stream and event operations code issues (any device)."""

import os
import threading

import numpy as np
import pytest
from numba import cuda

import streamlab


@cuda.jit
def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


@cuda.jit
def twice(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = helper(x[i])


@cuda.jit(device=True)
def helper(v):
    return 2 * v


def test_each_kind_of_operation_with_its_stream():
    s1, s2 = cuda.stream(), streamlab.stream(nonblocking=True)
    host = cuda.pinned_array(4)
    host[:] = 1
    ev = cuda.event()
    with streamlab.record_ops() as ops:
        d = cuda.to_device(host, stream=s1)
        inc[1, 4, s1](d)
        ev.record(s1)
        ev.wait(s2)
        twice[1, 4, s2](d)
        out = d.copy_to_host(stream=s2)
        s2.synchronize()
        ev.synchronize()
        cuda.synchronize()
    assert list(out) == [4, 4, 4, 4]
    # (user(): a test process's own threads, pytest-xdist's, may hand over to others while
    # it records, and those records are streamlab's, internal; see conftest.py)
    assert [(op.kind, op.name) for op in ops.user()] == [
        ("copy", "h2d"), ("launch", "inc"), ("record", "event"), ("wait", "event"),
        ("launch", "twice"), ("copy", "d2h"), ("sync", "stream"), ("sync", "event"),
        ("sync", "device")]
    k1, k2 = ops.launches()
    assert k1.stream.kind == "blocking" and k2.stream.kind == "non-blocking"
    assert k1.stream != k2.stream
    assert ops.recorded_before(ops.waits()[0]).stream == k1.stream
    assert ops.waits()[0].stream == k2.stream
    assert [op.name for op in ops.on_stream(s1)] == ["h2d", "inc", "event"]


def test_launches_and_records_without_a_stream_go_to_the_legacy_default_stream():
    d = cuda.device_array(4)
    ev = cuda.event()
    with streamlab.record_ops() as ops:
        inc[1, 4](d)
        ev.record()
    assert all(op.stream.is_legacy_default for op in ops.user())


def test_pinned_and_pageable_copies_are_told_apart():
    d = cuda.device_array(4)
    pageable, pinned, later = np.zeros(4), cuda.pinned_array(4), np.zeros(4)
    s = cuda.stream()
    with streamlab.record_ops() as ops:
        d.copy_to_host(pageable, stream=s)
        d.copy_to_host(pinned, stream=s)
        with cuda.pinned(later):
            d.copy_to_host(later, stream=s)
        d.copy_to_host(later, stream=s)
    assert [op.pinned for op in ops.copies("d2h")] == [False, True, True, False]
    assert streamlab.is_pinned(pinned) and not streamlab.is_pinned(pageable)
    assert streamlab.is_pinned(pinned[1:3])


def test_to_device_is_one_copy_not_two_and_device_functions_are_not_launches():
    with streamlab.record_ops() as ops:
        d = cuda.to_device(np.zeros(4))
        twice[1, 4](d)
    assert [(op.kind, op.name) for op in ops.user()] == [("copy", "h2d"), ("launch", "twice")]


def test_nothing_is_recorded_outside_and_nested_recorders_both_see():
    d = cuda.device_array(4)
    with streamlab.record_ops() as outer:
        inc[1, 4](d)
        with streamlab.record_ops() as inner:
            inc[1, 4](d)
        inc[1, 4](d)
    inc[1, 4](d)
    assert len(outer) == 3 and len(inner) == 1
    assert cuda.synchronize.__name__ == "synchronize"
    assert cuda.to_device.__module__ != "streamlab.ops"


def test_operations_from_several_host_threads():
    streams = [cuda.stream() for _ in range(4)]
    data = [cuda.device_array(4) for _ in range(4)]

    def work(i):
        inc[1, 4, streams[i]](data[i])

    with streamlab.record_ops() as ops:
        threads = [threading.Thread(target=work, args=(i,), name=f"t{i}") for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(op.thread for op in ops.user()) == ["t0", "t1", "t2", "t3"]
    assert len({op.stream.key() for op in ops.launches()}) == 4


def test_per_thread_default_streams_are_one_per_thread():
    def work(out):
        s = cuda.per_thread_default_stream()
        with streamlab.record_ops() as ops:
            inc[1, 1, s](cuda.device_array(1))
        out.append(ops.user()[0].stream)

    refs = []
    for i in range(2):
        t = threading.Thread(target=work, args=(refs,), name=f"w{i}")
        t.start()
        t.join()
    assert refs[0].kind == "per-thread default" and refs[0].key() != refs[1].key()


def test_an_exception_inside_still_restores_numba():
    original = cuda.synchronize
    with pytest.raises(ZeroDivisionError):
        with streamlab.record_ops():
            raise ZeroDivisionError("inside the block")
    assert cuda.synchronize is original


def test_host_functions_are_recorded_in_their_stream():
    s = cuda.stream()
    with streamlab.record_ops() as ops:
        call = streamlab.launch_host_func(s, lambda: None, name="post 0")
    call.wait(timeout=10)
    (op,) = ops.host_functions()
    assert op.name == "post 0" and op.stream == streamlab.streams.ref_of(s)


def test_waits_for_accepts_event_order_and_explains_each_mistake():
    from streamlab import check

    @cuda.jit
    def k(x):
        x[0] = 1

    a, b = cuda.stream(), cuda.stream()
    d = cuda.device_array(1)

    def scenario(steps):
        ev = cuda.event()
        with streamlab.record_ops() as ops:
            for step in steps:
                {"P": lambda: k[1, 1, a](d), "C": lambda: k[1, 1, b](d),
                 "rec a": lambda: ev.record(a), "rec b": lambda: ev.record(b),
                 "wait b": lambda: ev.wait(b)}[step]()
        producer, consumer = ops.launches("k")  # P comes before C in every scenario
        return ops, producer, consumer

    ops, p, c = scenario(["P", "rec a", "wait b", "C"])
    check.waits_for(ops, p, c)
    for steps, phrase in [(["P", "C"], "never waits"),
                          (["P", "wait b", "rec a", "C"], "not been recorded yet"),
                          (["rec a", "P", "wait b", "C"], "before the producer was launched"),
                          (["P", "rec b", "wait b", "C"], "recorded in another stream")]:
        ops, p, c = scenario(steps)
        with pytest.raises(check.CheckFailed, match=phrase):
            check.waits_for(ops, p, c)


def test_stream_ref_of_a_stream_matches_what_the_recorder_saw():
    s = cuda.stream()
    with streamlab.record_ops() as ops:
        inc[1, 1, s](cuda.device_array(1))
    assert streamlab.StreamRef.of(s) == ops.user()[0].stream


def test_equal_takes_last_bits_near_zero_but_not_wrong_values():
    from streamlab import check

    expected = np.array([1.0, -2.0235777e-4, 0.5], np.float32)
    last_bits = np.array([1.0, -2.0232797e-4, 0.5], np.float32)   # seen on an H100
    check.equal(last_bits, expected, "out", rtol=1e-4, atol=1e-5)
    with pytest.raises(check.CheckFailed, match="1 of 3 values are wrong; the first at index 1"):
        check.equal(last_bits, expected, "out", rtol=1e-4)
    for wrong in (np.zeros(3, np.float32), expected * 1.01, np.array([1.0, 0.1, 0.5])):
        with pytest.raises(check.CheckFailed, match="values are wrong"):
            check.equal(wrong, expected, "out", rtol=1e-4, atol=1e-5)
    with pytest.raises(check.CheckFailed, match="expected shape"):
        check.equal(expected[:2], expected, "out")


def test_streamlab_loaded_through_a_path_with_dotdot_still_knows_its_own_code():
    """A script that puts ``scripts/../src`` on sys.path (scripts/gpu/model_vs_gpu.py did) loads
    the package under that path; its own marking of internal work (a Timeline's events)
    must still be accepted as streamlab's, not refused as the learner's."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import streamlab\n"
            "assert '..' in streamlab.__file__, streamlab.__file__\n"
            "streamlab.Timeline()\n"
            "print('ok')" % str(root / "scripts" / ".." / "src"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env={**__import__("os").environ, "STREAMLAB_DEVICE": "sim",
                                         "STREAMLAB_QUIET": "1"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_streamlab_loaded_through_a_path_with_dots_is_still_the_librarys_code(tmp_path):
    """A script that puts ``scripts/../src`` on sys.path loads streamlab by that path, and
    its code objects carry it: the recorder must still take streamlab's frames for the
    library's, never for the learner's (the folder, as an absolute path alone, did not
    match them: a GPU run of the model's checks named streamlab's own line as the
    learner's)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    dotted = f"{root / 'scripts'}{os.sep}..{os.sep}src"
    code = (f"import sys; sys.path.insert(0, {dotted!r})\n"
            "import streamlab.ops as ops\n"
            "f = ops.__file__; print('LOADED', f)\n"
            "print('LIBRARY', f.startswith(ops.library_dirs()))\n")
    env = dict(os.environ, STREAMLAB_QUIET="1", NUMBA_ENABLE_CUDASIM="1",
               STREAMLAB_DEVICE="sim")  # (a GPU run of the tests exports STREAMLAB_DEVICE=gpu)
    env.pop("PYTHONPATH", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert f"LOADED {dotted}" in out.stdout, out.stdout + out.stderr
    assert "LIBRARY True" in out.stdout, out.stdout + out.stderr


def test_an_emitted_operation_has_every_field_of_an_op_and_no_other():
    """emit makes its Op without the dataclass's __init__ (for a lean span while a recorder
    listens): a field added to Op and not to emit would be missing from every record."""
    import dataclasses

    from streamlab.ops import Op, emit

    s, ev = cuda.stream(), cuda.event()
    with streamlab.record_ops() as ops:
        made = emit("record", "event", s, event=ev)
    assert set(made.__dict__) == {f.name for f in dataclasses.fields(Op)}
    assert set(ops[0].__dict__) == set(made.__dict__) and ops[0].index == 0
    assert made.stream == streamlab.StreamRef.of(s) and made.where.startswith("line ")
    assert dataclasses.replace(made, index=3).index == 3  # still an ordinary dataclass


def test_a_stream_is_described_once_per_thread_and_kept_with_it():
    """ref_of keeps each stream's StreamRef with the stream object, per thread (issue 55:
    a stream's identity is not asked again per event); default streams are not kept."""
    from streamlab import streams

    s = streamlab.stream(nonblocking=True, priority=-1)
    first = streams.ref_of(s)
    assert streams.ref_of(s) is first and first.kind == "non-blocking"
    assert first.priority == -1
    seen = []
    t = threading.Thread(target=lambda: seen.append(streams.ref_of(s)), name="other")
    t.start()
    t.join()
    assert seen[0].thread == "other" and seen[0].key() == first.key()
    assert streams.ref_of(cuda.default_stream()).is_legacy_default
