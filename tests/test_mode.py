"""GPU or simulator: how streamlab chooses, and the errors when it cannot."""

import os
import subprocess
import sys

import pytest

import streamlab
from streamlab import _mode


def no_gpu():
    return False, "no NVIDIA driver library (libcuda) was found"


def a_gpu():
    return True, ""


@pytest.mark.parametrize("env, probe, simulator, reason", [
    ({}, no_gpu, True, "no NVIDIA driver"),
    ({}, a_gpu, False, "an NVIDIA GPU was found"),
    ({"STREAMLAB_DEVICE": "auto"}, a_gpu, False, "GPU was found"),
    ({"STREAMLAB_DEVICE": "sim"}, a_gpu, True, "STREAMLAB_DEVICE=sim"),
    ({"STREAMLAB_DEVICE": " GPU "}, a_gpu, False, "STREAMLAB_DEVICE=gpu"),
    ({"NUMBA_ENABLE_CUDASIM": "1"}, a_gpu, True, "NUMBA_ENABLE_CUDASIM is set"),
    ({"NUMBA_ENABLE_CUDASIM": "0"}, a_gpu, False, "GPU was found"),
])
def test_choice(env, probe, simulator, reason):
    mode = _mode.choose(env, probe)
    assert mode.simulator is simulator
    assert reason in mode.reason


def test_forcing_gpu_without_one_says_what_to_do():
    with pytest.raises(_mode.DeviceModeError, match="no NVIDIA driver.*unset STREAMLAB_DEVICE"):
        _mode.choose({"STREAMLAB_DEVICE": "gpu"}, no_gpu)


def test_forcing_gpu_against_numba_simulator_variable():
    with pytest.raises(_mode.DeviceModeError, match="NUMBA_ENABLE_CUDASIM"):
        _mode.choose({"STREAMLAB_DEVICE": "gpu", "NUMBA_ENABLE_CUDASIM": "1"}, a_gpu)


def test_unknown_choice_is_refused():
    with pytest.raises(_mode.DeviceModeError, match="'gpu', 'sim'"):
        _mode.choose({"STREAMLAB_DEVICE": "cpu"}, a_gpu)


def test_numba_cuda_already_in_the_other_mode_is_an_error():
    # This process has numba.cuda loaded in one mode: ask for the other one.
    other = _mode.Mode(simulator=not streamlab.on_simulator(), reason="test")
    with pytest.raises(_mode.DeviceModeError, match="restart the Python kernel"):
        _mode.activate(other)
    # ...and the same mode is fine.
    _mode.activate(_mode.Mode(simulator=streamlab.on_simulator(), reason="test"))


def run_python(code, **env):
    full = {k: v for k, v in os.environ.items()
            if k not in ("STREAMLAB_DEVICE", "NUMBA_ENABLE_CUDASIM", "STREAMLAB_QUIET")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, timeout=120)


def test_the_simulator_is_announced_in_one_plain_line_that_says_why():
    r = run_python("import streamlab", STREAMLAB_DEVICE="sim")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("streamlab: STREAMLAB_DEVICE=sim, so this runs on Numba's "
                               "CUDA simulator.")
    assert "nothing runs concurrently" in lines[0]
    assert "model of an NVIDIA H200, not a measurement" in lines[0]
    assert "_simfill" not in lines[0] and "sim.fill" not in lines[0] and "uninstall" not in lines[0]
    off = run_python("import streamlab", STREAMLAB_DEVICE="sim", STREAMLAB_MODEL="off")
    assert "host clock" in off.stdout.strip().splitlines()[0]
    numba = run_python("import streamlab", NUMBA_ENABLE_CUDASIM="1")
    assert numba.stdout.startswith("streamlab: NUMBA_ENABLE_CUDASIM is set, so this runs")
    if not streamlab.on_simulator():
        return
    auto = run_python("import streamlab")  # no GPU here: the banner says why
    assert auto.stdout.startswith("streamlab: no NVIDIA GPU can be used here ("), auto.stdout


def test_what_streamlab_changes_in_numba_is_in_the_doctors_report():
    r = run_python("import sys; from streamlab.__main__ import main; sys.exit(main(['doctor']))",
                   STREAMLAB_DEVICE="sim")
    assert "watches numba's launches" in r.stdout and "uninstall() undoes it" in r.stdout


def test_the_course_hands_jupyterlab_the_simulator_setting_as_it_found_it(monkeypatch):
    from streamlab import _mode, course

    monkeypatch.setattr(_mode, "ORIGINAL_CUDASIM", None)
    env = course.environment(None, {"NUMBA_ENABLE_CUDASIM": "1", "PATH": "/bin"})
    assert "NUMBA_ENABLE_CUDASIM" not in env and env["PATH"] == "/bin"
    monkeypatch.setattr(_mode, "ORIGINAL_CUDASIM", "1")
    assert course.environment(None, {})["NUMBA_ENABLE_CUDASIM"] == "1"


def test_import_numba_first_then_streamlab_still_chooses():
    # `import numba` loads numba's config before streamlab sets NUMBA_ENABLE_CUDASIM.
    code = ("import numba, streamlab\n"
            "from numba import cuda\n"
            "print(cuda.is_available.__module__)")
    r = run_python(code, STREAMLAB_DEVICE="sim", STREAMLAB_QUIET="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("simulator_init")


def test_numba_cuda_first_in_other_mode_fails_with_advice():
    code = "from numba import cuda\nimport streamlab"
    # numba.cuda comes up on the GPU path (no simulator variable), streamlab wants sim.
    # (Importing numba.cuda for a GPU works even on a machine without a driver.)
    r = run_python(code, STREAMLAB_DEVICE="sim")
    assert r.returncode != 0
    assert "restart the Python kernel" in r.stderr


def test_sizes_follow_the_device():
    assert streamlab.pick(gpu="big", sim="small") == (
        "small" if streamlab.on_simulator() else "big")
