"""``python -m streamlab doctor``: what the course runs on, and the known traps.

Each finding is a (level, message) pair; a message says what is wrong and the fix.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata

OK, WARN, ERROR = "ok", "warning", "error"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _parse(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def versions() -> dict[str, str | None]:
    """The installed versions of the packages the course depends on (None: missing)."""
    names = ["numba", "numba-cuda", "numpy", "cuda-bindings", "cuda-core", "matplotlib",
             "cupti-python"]
    return {name: _version(name) for name in names}


def driver_version() -> str | None:
    """The CUDA version the driver supports, e.g. '13.0'; None without a driver."""
    from ._device import on_simulator

    if on_simulator():
        return None
    from cuda.bindings import driver

    err, v = driver.cuDriverGetVersion()
    if err != driver.CUresult.CUDA_SUCCESS:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


def checks(environ=os.environ, vers=None, simulated=None,
           compile_probe=None) -> list[tuple[str, str]]:
    """The known traps, as (level, message). Arguments exist for testing."""
    from ._device import on_simulator

    vers = versions() if vers is None else vers
    simulated = on_simulator() if simulated is None else simulated
    found = []
    npv = vers.get("numpy")
    if npv and _parse(npv) >= (2, 5):
        found.append((ERROR,
            f"numpy {npv}: numba-cuda 0.30 cannot compile any kernel with numpy 2.5 "
            f"(module 'numpy' has no attribute 'row_stack'). Fix: pip install 'numpy>=2,<2.5'."))
    nc = vers.get("numba-cuda")
    if nc is None:
        found.append((ERROR, "numba-cuda is not installed. Fix: pip install 'numba-cuda==0.30.*'."))
    elif _parse(nc)[:2] != (0, 30):
        found.append((WARN,
            f"numba-cuda {nc}: the course was checked with 0.30.x; what it says about "
            f"broken or ignored APIs may not hold for this version."))
    if environ.get("NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM", "") not in ("", "0"):
        found.append((WARN,
            "NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM is set, but numba-cuda 0.30 ignores it: "
            "launches with no stream still go to the legacy default stream. Fix: set "
            "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1 before Python starts, or pass "
            "cuda.per_thread_default_stream() explicitly."))
    if environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "") not in ("", "0"):
        found.append((OK,
            "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1: work with no stream goes to "
            "each host thread's own per-thread default stream."))
    if not simulated:
        probe = compile_probe or _compile_probe
        err = probe()
        if err:
            found.append((ERROR,
                f"numba-cuda could not compile a kernel ({err}). If NVVM, NVRTC or "
                f"libdevice are missing, install them from pip: "
                f"pip install 'numba-cuda[cu13]' (driver for CUDA 13) or "
                f"'numba-cuda[cu12]' (CUDA 12)."))
    return found


def _compile_probe() -> str | None:
    try:
        from numba import cuda

        def f(x):
            x[0] = 1

        cuda.compile_ptx_for_current_device(f, "void(int32[:])")
    except Exception as exc:  # report any failure: this is a diagnosis
        return f"{type(exc).__name__}: {exc}"
    return None


def report() -> tuple[str, int]:
    """The doctor's text and its exit status (1 if any error was found)."""
    from ._device import device_name, mode as chosen_mode, on_simulator
    from ._mode import DEVICE_ENV_VAR

    mode = chosen_mode()
    where = f"Numba's CUDA simulator ({mode.reason})" if mode.simulator else device_name()
    lines = ["streamlab doctor", ""]
    lines.append(f"  device         {where}")
    lines.append(f"  python         {platform.python_version()} ({platform.platform()})")
    drv = driver_version()
    none = "none used (simulator)" if on_simulator() else "unknown"
    lines.append(f"  CUDA driver    {drv or none}")
    for name, v in versions().items():
        lines.append(f"  {name:<14} {v or 'not installed'}")
    lines.append(f"  {DEVICE_ENV_VAR:<14} {os.environ.get(DEVICE_ENV_VAR) or '(unset: chosen automatically)'}")
    from ._hooks import banner

    lines.append(f"  numba's calls  {banner().removeprefix('streamlab: ')}")
    from .profiler import cupti_probe

    cupti_ok, cupti_says = cupti_probe()
    lines.append(f"  CUPTI          {'yes' if cupti_ok else 'no'}: {cupti_says} "
                 f"(streamlab.profile() {'collects' if cupti_ok else 'gives an empty profile'})")
    from .grading import sandbox

    bwrap, why = sandbox.status()
    says = "in a sandbox (bubblewrap, each part nobody with no capability)" if bwrap else \
        f"no sandbox: {why} (grading stops unless the sandbox is turned off by name)"
    lines.append(f"  grading        {says}")
    found = checks()
    lines.append("")
    if not any(level != OK for level, _ in found):
        lines.append("No known trap found.")
    for level, msg in found:
        lines.append(f"[{level}] {msg}")
    status = 1 if any(level == ERROR for level, _ in found) else 0
    return "\n".join(lines), status
