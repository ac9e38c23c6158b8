"""Stream kinds, and streams numba cannot make (any device)."""

import pytest
from numba import cuda

import streamlab


def test_kinds_of_numba_streams():
    assert streamlab.stream_info(cuda.stream()).kind == "blocking"
    assert streamlab.stream_info(cuda.legacy_default_stream()).kind == "legacy default"
    assert streamlab.stream_info(cuda.per_thread_default_stream()).kind == "per-thread default"
    assert streamlab.stream_info(0).kind in ("legacy default", "per-thread default")


def test_nonblocking_stream_is_a_numba_stream():
    s = streamlab.stream(nonblocking=True)
    info = streamlab.stream_info(s)
    assert info.kind == "non-blocking" and info.describe() == "non-blocking stream"
    a = cuda.to_device([1.0, 2.0], stream=s)
    streamlab.spin[1, 1, s](10)
    assert list(a.copy_to_host(stream=s)) == [1.0, 2.0]
    s.synchronize()


def test_priority_is_kept():
    low, high = streamlab.priority_range()
    s = streamlab.stream(priority=high)
    assert streamlab.stream_info(s).priority == high
    assert low >= high


def test_bad_stream_arguments():
    with pytest.raises(TypeError, match="True or False"):
        streamlab.stream(nonblocking="yes")
    with pytest.raises(TypeError, match="int or None"):
        streamlab.stream(priority=1.5)
    with pytest.raises(TypeError, match="not a CUDA stream"):
        streamlab.stream_info("s")
