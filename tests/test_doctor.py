"""python -m streamlab doctor: the traps it knows and the fixes it gives."""

import os
import subprocess
import sys

from streamlab import doctor

GOOD = {"numba": "0.68.1", "numba-cuda": "0.30.4", "numpy": "2.4.6",
        "cuda-bindings": "13.5.0", "cuda-core": "1.2.2", "matplotlib": "3.10"}


def levels(found):
    return [level for level, _ in found]


def test_a_good_setup_has_no_trap():
    assert doctor.checks({}, GOOD, simulated=True) == []


def test_numpy_2_5_is_an_error_with_the_pin():
    found = doctor.checks({}, dict(GOOD, numpy="2.5.2"), simulated=True)
    assert levels(found) == ["error"]
    assert "numpy>=2,<2.5" in found[0][1] and "row_stack" in found[0][1]


def test_the_ignored_per_thread_variable_is_named_with_the_one_that_works():
    found = doctor.checks({"NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM": "1"}, GOOD, simulated=True)
    assert levels(found) == ["warning"]
    assert "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1" in found[0][1]


def test_a_kernel_that_cannot_compile_points_to_the_toolkit_extras():
    found = doctor.checks({}, GOOD, simulated=False,
                          compile_probe=lambda: "NvvmSupportError: libNVVM cannot be found")
    assert levels(found) == ["error"] and "numba-cuda[cu13]" in found[0][1]


def test_other_numba_cuda_versions_are_flagged():
    found = doctor.checks({}, dict(GOOD, **{"numba-cuda": "0.31.0"}), simulated=True)
    assert levels(found) == ["warning"]


def test_command_line():
    env = dict(os.environ, STREAMLAB_QUIET="1")
    r = subprocess.run([sys.executable, "-m", "streamlab", "doctor"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for word in ("device", "numba-cuda", "numpy", "cuda-bindings", "CUDA driver"):
        assert word in r.stdout
    r = subprocess.run([sys.executable, "-m", "streamlab", "cure"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 2 and "usage" in r.stderr
