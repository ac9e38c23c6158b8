"""What the GPU reports of itself (streamlab.attribute, streamlab.peak_bandwidth_gbs): the
base of claims that must hold on any GPU. On the simulator the model GPU answers."""

import pytest

import streamlab
from streamlab.model import load_profile


def test_the_peak_bandwidth_is_worked_out_from_the_memory_clock_and_bus_width():
    clock_khz = streamlab.attribute("MEMORY_CLOCK_RATE")
    bus_bits = streamlab.attribute("GLOBAL_MEMORY_BUS_WIDTH")
    assert clock_khz > 0 and bus_bits > 0
    assert streamlab.peak_bandwidth_gbs() == pytest.approx(2 * clock_khz * 1e3 * bus_bits / 8 / 1e9)


def test_the_model_gpu_answers_from_its_profile_on_the_simulator():
    if not streamlab.on_simulator():
        pytest.skip("the simulator's answer; a GPU answers for itself")
    profile = load_profile()
    assert streamlab.attribute("ASYNC_ENGINE_COUNT") == profile.attributes["ASYNC_ENGINE_COUNT"]
    assert streamlab.attribute("ASYNC_ENGINE_COUNT") == profile.async_engine_count


@pytest.mark.gpu
def test_a_gpu_reports_its_copy_engines_as_numba_does():
    from numba import cuda

    assert streamlab.attribute("ASYNC_ENGINE_COUNT") == cuda.get_current_device().ASYNC_ENGINE_COUNT


def test_an_unknown_attribute_gets_a_clear_error():
    with pytest.raises(KeyError, match="attribute"):
        streamlab.attribute("NO_SUCH_THING")


def test_numbas_own_device_call_answers_on_both_paths():
    """Issue 55 item 8: the lessons read what the GPU says of itself with numba's own call,
    cuda.get_current_device().ASYNC_ENGINE_COUNT; on the simulator streamlab gives the
    simulated device the model GPU's attributes (streamlab.sim.device), and refuses any
    other, naming those it has."""
    from numba import cuda

    dev = cuda.get_current_device()
    for name in ("ASYNC_ENGINE_COUNT", "MEMORY_CLOCK_RATE", "GLOBAL_MEMORY_BUS_WIDTH"):
        assert getattr(dev, name) == streamlab.attribute(name) > 0
    assert 2 * dev.MEMORY_CLOCK_RATE * 1e3 * dev.GLOBAL_MEMORY_BUS_WIDTH / 8 / 1e9 == \
        pytest.approx(streamlab.peak_bandwidth_gbs())
    if streamlab.on_simulator():
        with pytest.raises(AttributeError, match="ASYNC_ENGINE_COUNT.*WARP_SIZE needs a GPU"):
            dev.WARP_SIZE
        assert not hasattr(dev, "no_such_lowercase_thing")


def test_the_simulators_device_reports_the_model_gpus_own_profile():
    """The simulated device answers with the profile the model GPU times with
    (STREAMLAB_MODEL), not always the default one (found in review)."""
    import os
    import subprocess
    import sys

    program = ("import streamlab, json\nfrom numba import cuda\n"
               "d = cuda.get_current_device()\n"
               "print(json.dumps([d.L2_CACHE_SIZE, streamlab.model.simulator_model()"
               ".profile.attributes['L2_CACHE_SIZE']]))")
    seen = {}
    for key in ("nvidia-h100", "nvidia-h200"):
        env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim",
                   NUMBA_ENABLE_CUDASIM="1", STREAMLAB_MODEL=key)
        r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                           env=env, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        reported, profile = __import__("json").loads(r.stdout.strip().splitlines()[-1])
        assert reported == profile == load_profile(key).attributes["L2_CACHE_SIZE"]
        seen[key] = reported
    assert seen["nvidia-h100"] != seen["nvidia-h200"], seen
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim",
               NUMBA_ENABLE_CUDASIM="1", STREAMLAB_MODEL="off")  # the model off: default
    r = subprocess.run([sys.executable, "-c", "import streamlab\nfrom numba import cuda\n"
                        "print(cuda.get_current_device().L2_CACHE_SIZE)"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stdout.strip().splitlines()[-1]) == load_profile().attributes["L2_CACHE_SIZE"]
