"""What the GPU reports of itself: device attributes, and the figures worked out from them.

A claim that must hold on every GPU reads its threshold from here, not from one GPU's run:
``streamlab.attribute("ASYNC_ENGINE_COUNT")``, ``streamlab.peak_bandwidth_gbs()``. On the
simulator the model GPU answers, from the attributes its profile keeps
(``scripts/gpu/measure_profile.py`` reads them on a GPU).
"""

from __future__ import annotations

from ._device import on_simulator
from .gpu_profiles import load_profile

__all__ = ["attribute", "peak_bandwidth_gbs"]


def attribute(name: str) -> int:
    """A device attribute of the current GPU, by its driver name without the prefix
    (``"ASYNC_ENGINE_COUNT"``, ``"MEMORY_CLOCK_RATE"``): what the GPU says of itself, the
    base of any claim that must hold on every GPU. On the simulator, the model GPU's."""
    if on_simulator():
        figures = load_profile().attributes
        if name not in figures:
            raise KeyError(f"the model GPU's profile has no attribute {name!r}: it keeps "
                           f"{', '.join(sorted(figures))}")
        return int(figures[name])
    from cuda.bindings import driver
    from numba import cuda

    attr = getattr(driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}", None)
    if attr is None:
        raise KeyError(f"no device attribute CU_DEVICE_ATTRIBUTE_{name}: see the "
                       f"CUdevice_attribute list in the CUDA driver API")
    err, value = driver.cuDeviceGetAttribute(attr, cuda.get_current_device().id)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuDeviceGetAttribute({name}) failed: {err}")
    return int(value)


def peak_bandwidth_gbs() -> float:
    """The GPU's peak memory bandwidth in GB/s, from what it reports: two transfers per
    memory clock (kHz) over the bus width (bits), as the CUDA samples' deviceQuery works
    it out. On the simulator, the model GPU's."""
    return 2 * attribute("MEMORY_CLOCK_RATE") * 1e3 * attribute("GLOBAL_MEMORY_BUS_WIDTH") / 8 / 1e9
