"""Choose the real GPU or Numba's CUDA simulator, before numba.cuda is imported.

numba.cuda decides once, when it is first imported, whether it drives a GPU or the
simulator (``NUMBA_ENABLE_CUDASIM``). streamlab makes that choice for the learner:

* ``STREAMLAB_DEVICE=gpu`` forces the GPU (and fails clearly if there is none);
* ``STREAMLAB_DEVICE=sim`` forces the simulator;
* unset (or ``auto``): the GPU if an NVIDIA driver initialises and sees a GPU,
  otherwise the simulator, announced in one line.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

DEVICE_ENV_VAR = "STREAMLAB_DEVICE"
_CHOICES = ("auto", "gpu", "sim")


class DeviceModeError(RuntimeError):
    """streamlab cannot run numba.cuda in the mode that was asked for."""


@dataclass(frozen=True)
class Mode:
    simulator: bool
    reason: str  # why this mode was chosen, in words


def probe_driver() -> tuple[bool, str]:
    """Is there a usable NVIDIA driver with at least one GPU?

    Asks the driver library directly (cuInit, cuDeviceGetCount) so that nothing in
    numba is imported yet. Returns (usable, why not).
    """
    names = {"win32": ["nvcuda.dll"]}.get(sys.platform, ["libcuda.so.1", "libcuda.so"])
    lib = None
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return False, "no NVIDIA driver library (libcuda) was found"
    rc = lib.cuInit(0)
    if rc != 0:
        return False, f"the NVIDIA driver did not initialise (cuInit returned error {rc})"
    count = ctypes.c_int(0)
    rc = lib.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        return False, "the NVIDIA driver sees no GPU"
    return True, ""


def _numba_cuda_loaded_mode() -> bool | None:
    """None if numba.cuda is not imported yet, else True when it runs the simulator."""
    mod = sys.modules.get("numba.cuda")
    if mod is None or not hasattr(mod, "is_available"):
        return None
    return mod.is_available.__module__.endswith("simulator_init")


def choose(environ=os.environ, probe=probe_driver) -> Mode:
    """Decide the mode from the environment (pure apart from ``probe``)."""
    want = (environ.get(DEVICE_ENV_VAR) or "auto").strip().lower()
    if want not in _CHOICES:
        raise DeviceModeError(
            f"{DEVICE_ENV_VAR}={environ.get(DEVICE_ENV_VAR)!r} is not understood: use 'gpu', 'sim', "
            f"or leave it unset to let streamlab pick."
        )
    numba_sim = (environ.get("NUMBA_ENABLE_CUDASIM") or "0").strip()
    numba_sim = numba_sim not in ("", "0")
    if want == "sim":
        return Mode(True, f"{DEVICE_ENV_VAR}=sim")
    if want == "gpu":
        if numba_sim:
            raise DeviceModeError(
                f"{DEVICE_ENV_VAR}=gpu but NUMBA_ENABLE_CUDASIM is set, which asks numba for the "
                f"simulator. Unset one of the two."
            )
        ok, why = probe()
        if not ok:
            raise DeviceModeError(
                f"{DEVICE_ENV_VAR}=gpu but {why}. Run on a machine with an NVIDIA GPU, or unset "
                f"{DEVICE_ENV_VAR} (or set it to 'sim') to use Numba's CUDA simulator."
            )
        return Mode(False, f"{DEVICE_ENV_VAR}=gpu")
    if numba_sim:
        return Mode(True, "NUMBA_ENABLE_CUDASIM is set")
    ok, why = probe()
    if ok:
        return Mode(False, "an NVIDIA GPU was found")
    return Mode(True, why)


#: NUMBA_ENABLE_CUDASIM as this process found it, before :func:`activate` set it (a program
#: that starts others, as ``python -m streamlab lab`` starts JupyterLab, hands them this
#: and not streamlab's own choice: each of them chooses for itself)
ORIGINAL_CUDASIM = os.environ.get("NUMBA_ENABLE_CUDASIM")


def as_found(env: dict) -> dict:
    """``env`` with NUMBA_ENABLE_CUDASIM as this process found it (see ORIGINAL_CUDASIM)."""
    env = dict(env)
    if ORIGINAL_CUDASIM is None:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    else:
        env["NUMBA_ENABLE_CUDASIM"] = ORIGINAL_CUDASIM
    return env


def activate(mode: Mode) -> None:
    """Make numba.cuda run in ``mode``; fail clearly if it already runs in the other."""
    loaded = _numba_cuda_loaded_mode()
    if loaded is not None:
        if loaded != mode.simulator:
            have = "the simulator" if loaded else "the GPU"
            want = "the simulator" if mode.simulator else "the GPU"
            raise DeviceModeError(
                f"numba.cuda was imported before streamlab and already runs on {have}, "
                f"but streamlab chose {want} ({mode.reason}). numba.cuda cannot switch "
                f"once imported: restart the Python kernel and put `import streamlab` "
                f"before any numba import, or set {DEVICE_ENV_VAR}="
                f"{'sim' if loaded else 'gpu'} to keep {have}."
            )
        return
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if mode.simulator else "0"
    # numba's config module may already be loaded (`import numba` came first) and
    # have read the environment then; numba.cuda reads its ENABLE_CUDASIM on import.
    for name in ("numba.core.config", "numba.cuda.core.config"):
        cfg = sys.modules.get(name)
        if cfg is not None:
            cfg.ENABLE_CUDASIM = 1 if mode.simulator else 0
