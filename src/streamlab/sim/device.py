"""The simulator's device, reporting what a GPU reports of itself.

On a GPU, numba's device answers any driver attribute by name
(``cuda.get_current_device().ASYNC_ENGINE_COUNT``, read with cuDeviceGetAttribute); the
simulator's device has none. :func:`report_attributes` gives it the model GPU's.
"""

from __future__ import annotations

from .._patching import patch


def report_attributes() -> None:
    """Give the simulator's device the model GPU's attributes, those its profile keeps
    (measured on a GPU by scripts/gpu/measure_profile.py), so that a lesson reads what a GPU
    says of itself with numba's own call on both paths; any other name is refused,
    naming those it has."""
    from numba.cuda.simulator.cudadrv import devices

    from ..gpu_profiles import load_profile
    from ..model import simulator_model

    def attribute(self, name):
        if name.startswith("_") or not name.isupper():
            raise AttributeError(name)
        # the profile the model GPU times with; with the model off (STREAMLAB_MODEL=off),
        # the default one, as streamlab.attribute answers
        model = simulator_model()
        figures = (model.profile if model is not None else load_profile()).attributes
        if name not in figures:
            raise AttributeError(
                f"the simulator's device reports only the model GPU's attributes, "
                f"{', '.join(sorted(figures))}: {name} needs a GPU")
        return int(figures[name])

    patch(devices.FakeCUDADevice, "__getattr__", attribute)
