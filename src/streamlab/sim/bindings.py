"""The simulator's stand-in for the two driver calls the course makes through cuda.bindings.

numba and cuda.core have no call for a host function in a stream, nor for the range of
stream priorities, so the lessons call the driver itself, as real code does::

    from cuda.bindings import driver
    (err,) = driver.cuLaunchHostFunc(stream.handle, fn_address, user_data)
    err, least, greatest = driver.cuCtxGetStreamPriorityRange()

cuda.bindings imports without a GPU, but its calls need the NVIDIA driver. On the
simulator, ``import streamlab`` puts these two functions into ``cuda.bindings.driver``
(the patch registry undoes it). They take their arguments as the real ones take them (a
``CUstream``, an int or ``None`` for the stream; a ``CUhostFn`` or an address for the
function) and answer as they answer, a ``CUresult`` first. Every other name in the module
is cuda.bindings' own: ``CUresult``, ``CUstream``, ``CUhostFn`` need no driver.

A host function runs as on a GPU: later than the call, on a thread that is not yours, in
stream order (see :mod:`streamlab.sim.driver`).
"""

from __future__ import annotations



def _driver():
    from cuda.bindings import driver

    return driver


def cuLaunchHostFunc(hStream, fn, userData):  # noqa: N802, N803  (the driver's names)
    """Enqueue a host function in a stream (the driver's ``cuLaunchHostFunc``)."""
    from ..hostfn import as_address, find_c_function, launch_c_function, user_data_address

    driver = _driver()
    handle = as_address(hStream, driver.CUstream, "hStream")
    address = as_address(fn, driver.CUhostFn, "fn")
    data = user_data_address(userData)
    if address == 0:
        return (driver.CUresult.CUDA_ERROR_INVALID_VALUE,)
    launch_c_function(handle, address, data, find_c_function(address))
    return (driver.CUresult.CUDA_SUCCESS,)


def cuCtxGetStreamPriorityRange():  # noqa: N802  (the driver's name)
    """(CUresult, least, greatest) stream priority: a lower number runs first."""
    from ..streams import SIMULATED_PRIORITY_RANGE

    least, greatest = SIMULATED_PRIORITY_RANGE
    return (_driver().CUresult.CUDA_SUCCESS, least, greatest)


def install() -> None:
    """Put the two calls into ``cuda.bindings.driver`` (the registry undoes it)."""
    from .._patching import patch

    try:
        driver = _driver()
    except ImportError:  # no cuda-bindings installed: nothing for a learner to call
        return
    patch(driver, "cuLaunchHostFunc", cuLaunchHostFunc)
    patch(driver, "cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange)
