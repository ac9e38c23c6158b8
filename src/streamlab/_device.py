"""Which device the course runs on, and problem sizes that suit it."""

from __future__ import annotations

_state = {"mode": None, "model": None}

#: True when numba.cuda runs on Numba's CUDA simulator: chosen once, when streamlab is
#: imported (before any other module of the package), and never changed after
SIMULATOR = False
#: what :func:`device_name` answers on the simulator
SIMULATOR_NAME = "CUDA simulator"


def set_mode(mode) -> None:
    """Choose the device mode (streamlab/__init__.py, once, before any other module)."""
    global SIMULATOR
    _state["mode"] = mode
    SIMULATOR = bool(mode.simulator)


def mode():
    """The mode chosen when streamlab was imported (:mod:`streamlab._mode`)."""
    return _state["mode"]


def set_model_label(label: str) -> None:
    """Name the model GPU that times the simulator's work, for :func:`describe`."""
    _state["model"] = label


def on_simulator() -> bool:
    """True when numba.cuda runs on Numba's CUDA simulator, not on a GPU."""
    return SIMULATOR


def device_name() -> str:
    """The GPU's name (e.g. 'NVIDIA H100 80GB HBM3'), or 'CUDA simulator'."""
    if SIMULATOR:
        return SIMULATOR_NAME
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def describe() -> str:
    """One plain line: what numba.cuda runs on, and what that means for the course."""
    mode = _state["mode"]
    if mode.simulator:
        label = _state.get("model")  # set by streamlab.model when it starts
        timing = (f"timelines and event times come from a {label}" if label
                  else "timings come from the host clock, not a GPU")
        why = mode.reason  # a variable the learner set, or why no GPU could be used
        lead = why if why.startswith(("STREAMLAB_DEVICE", "NUMBA_ENABLE_CUDASIM")) else \
            f"no NVIDIA GPU can be used here ({why})"
        return (
            f"streamlab: {lead}, so this runs on Numba's CUDA simulator. Results are "
            f"correct, but nothing runs concurrently in the simulator itself: {timing}."
        )
    from numba import cuda

    dev = cuda.get_current_device()
    cc = ".".join(map(str, dev.compute_capability))
    count = len(cuda.gpus)
    extra = f", 1 of {count} GPUs" if count > 1 else ""
    return f"streamlab: running on {device_name()} (compute capability {cc}{extra})."


def pick(*, gpu, sim):
    """``gpu`` on a real GPU, ``sim`` on the simulator: one notebook serves both.

    For any value that differs between the two (threads per block, how long a kernel
    spins, how many repeats); a notebook's main problem size is :func:`streamlab.size`,
    which also tells the model GPU to time the simulator's small arrays as the GPU's.

    >>> import streamlab
    >>> threads = streamlab.pick(gpu=256, sim=64)
    >>> threads == (64 if streamlab.on_simulator() else 256)
    True
    """
    return sim if on_simulator() else gpu
