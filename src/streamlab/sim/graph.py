"""A stand-in for ``cuda.core.graph`` on Numba's CUDA simulator: ``GraphBuilder`` and
``Graph`` are the simulator's (:mod:`streamlab.sim.capture`), so the learner's line
``from cuda.core.graph import GraphBuilder`` and its ``GraphBuilder.join(*branches)`` work
there as on a GPU. ``import streamlab`` puts it in ``sys.modules["cuda.core.graph"]``
beside :mod:`streamlab.sim.core` (undone by ``streamlab.uninstall()``). Any other name is
cuda.core's own, as in :mod:`streamlab.sim.core`.

>>> import streamlab
>>> from cuda.core import Device
>>> from cuda.core.graph import GraphBuilder
>>> b = Device().create_stream().create_graph_builder().begin_building()
>>> branches = b.split(2)
>>> joined = GraphBuilder.join(*branches)
>>> isinstance(b, GraphBuilder), isinstance(joined, GraphBuilder)
(True, True)
>>> _ = b.end_building()
"""

from __future__ import annotations

import sys

from .capture import SimGraph as Graph
from .capture import SimGraphBuilder as GraphBuilder

__all__ = ["Graph", "GraphBuilder"]

_real: list = []  # the real cuda.core.graph module, when cuda.core is installed


def __getattr__(name: str):
    if _real:
        return getattr(_real[0], name)
    raise AttributeError(f"module 'cuda.core.graph' (streamlab's simulator stand-in) has no "
                         f"attribute {name!r}, and cuda.core itself is not installed")


def install() -> None:
    """Make ``import cuda.core.graph`` give this module (the registry undoes it; the
    cuda.core stand-in's ``graph`` attribute reads it from ``sys.modules``)."""
    from .._patching import patch_item

    me = sys.modules[__name__]
    real = sys.modules.get("cuda.core.graph")  # imported with cuda.core, where it is installed
    if real is not None and real is not me:
        _real[:] = [real]
    patch_item(sys.modules, "cuda.core.graph", me)
