"""A GPU's figures, as the model GPU (:mod:`streamlab.model`) reads them.

Each profile is one JSON file in ``streamlab/profiles/``, measured on a real GPU by
``scripts/gpu/measure_profile.py``: its copy bandwidths and latencies, what the host's calls
cost, its SMs and copy engines, and what the GPU reports of itself. None is typed in by
hand. :mod:`streamlab.model` gives the same names (``streamlab.model.load_profile``).

>>> from streamlab.gpu_profiles import load_profile
>>> load_profile("nvidia-h200").short_name
'NVIDIA H200'
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")
DEFAULT_PROFILE = "nvidia-h200"


class ModelError(RuntimeError):
    """The model cannot answer as asked; the message says what to do."""


# --- profiles ------------------------------------------------------------------------
@dataclass(frozen=True)
class GpuProfile:
    """A GPU's figures, measured by ``scripts/gpu/measure_profile.py``."""

    key: str
    name: str
    measured: str
    sm_count: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    async_engine_count: int
    copies: dict  # "h2d_pinned" ... "d2d" -> {"gbs", "latency_us"}
    dram_gbs: float
    thread_gbs: float
    kernel_floor_us: float
    spin_extra_us: float
    host_us: dict  # launch, record, wait, query, sync_event, sync_stream, ...
    latency: dict  # gpu_us, hostfn_us
    # what the GPU reports of itself (cuDeviceGetAttribute), by attribute name
    attributes: dict = field(default_factory=dict)

    @property
    def short_name(self) -> str:
        """'NVIDIA H200' from 'NVIDIA H200 NVL' or 'NVIDIA H100 80GB HBM3'."""
        words = self.name.split()
        return " ".join(words[:2]) if words and words[0] == "NVIDIA" else self.name

    @property
    def label(self) -> str:
        """What a modelled timeline is, in the words every plot of one carries."""
        return f"model of an {self.short_name}, not a measurement"


def profiles() -> list[str]:
    """The profiles that come with streamlab (e.g. ['nvidia-h100', 'nvidia-h200'])."""
    if not os.path.isdir(_HERE):
        return []
    return sorted(f[:-5] for f in os.listdir(_HERE) if f.endswith(".json"))


def load_profile(key: str | None = None) -> GpuProfile:
    """The profile called ``key`` (default: the H200's, the course's reference GPU)."""
    key = key or DEFAULT_PROFILE
    if not isinstance(key, str):
        raise TypeError(f"a profile is named by a string such as 'nvidia-h200', got {key!r}")
    path = os.path.join(_HERE, key + ".json")
    if not os.path.exists(path):
        raise ModelError(f"no GPU profile called {key!r}; the profiles are: "
                         f"{', '.join(profiles()) or 'none'}. Measure one on a GPU with "
                         f"python scripts/gpu/measure_profile.py")
    with open(path) as f:
        data = json.load(f)
    fields = GpuProfile.__dataclass_fields__
    return GpuProfile(key=key, **{k: v for k, v in data.items() if k in fields})


def profile_for(device_name: str) -> GpuProfile:
    """The profile of the GPU called ``device_name``, or the default one."""
    name = device_name.lower()
    for key in profiles():
        if key.replace("nvidia-", "") in name:
            return load_profile(key)
    return load_profile()
