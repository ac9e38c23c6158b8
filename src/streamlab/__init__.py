"""streamlab: the helper package of a course on CUDA streams and events with Numba.

``import streamlab`` first, before numba.cuda: it chooses the real GPU when an NVIDIA
driver sees one, and Numba's CUDA simulator otherwise (``STREAMLAB_DEVICE=gpu`` or
``=sim`` forces the choice), and says which in one line.

The package draws, measures and checks; the stream and event calls being taught stay
plain numba.cuda calls in the learner's code.
"""

import os as _os

from . import _device, _mode

_chosen = _mode.choose()
_mode.activate(_chosen)
_device.set_mode(_chosen)

from numba import cuda as _cuda  # noqa: E402  (must follow the mode choice)

if _chosen.simulator:
    from .sim import fill as _simfill
    from .model import start_simulator_model as _start_model

    _simfill.apply(_cuda)
    from .sim import core as _simcore

    _simcore.install()  # `from cuda.core import Device` gives the simulator's stand-in
    from .sim import bindings as _simbindings

    _simbindings.install()  # cuda.bindings' cuLaunchHostFunc and priority range, stood in for
    _start_model()  # events, elapsed_time, query and timelines: a model GPU's

from . import _hooks  # noqa: E402
from ._hooks import uninstall  # noqa: E402  (puts numba's functions back)

_hooks.install()  # numba's stream-ordered calls, seen by record_ops and race_check
from . import hostfn as _hostfn  # noqa: E402

_hostfn.install()  # cuLaunchHostFunc recorded while listening; a host function's news ordered
if not _chosen.simulator:
    from . import _driverwatch

    _driverwatch.install()  # cuda.core's (and others') calls, through CUPTI, while recording

from . import check  # noqa: E402
from .check import CheckFailed  # noqa: E402
from .claimcheck import ClaimFailed, claims  # noqa: E402
from ._device import describe, device_name, on_simulator, pick  # noqa: E402
from .hardware import attribute, peak_bandwidth_gbs  # noqa: E402
from ._mode import DeviceModeError  # noqa: E402
from .trace import to_chrome_trace  # noqa: E402
from .graphs import (GraphError, GraphShape, core_stream, end_capture, graph_builder,  # noqa: E402
                     graph_shape, join)
from .hostfn import HostCall, HostFuncError, launch_host_func, stream_done  # noqa: E402
from .ops import host_access, Op, OpLog, record_ops  # noqa: E402
from .regions import is_pinned, Region
from .streams import StreamRef
from .order import Race, RaceError, find_races, race_check  # noqa: E402
from .trace import COLOURS, KINDS  # noqa: E402
from . import model  # noqa: E402
from .model import kernel_cost, now, predict, size  # noqa: E402
from .trace import compare, plot  # noqa: E402
from .profiler import Profile, ProfileError, profile  # noqa: E402
from .spin import globaltimer, ms_to_ns, spin  # noqa: E402
from .memory import as_array, memory_resource  # noqa: E402
from .streams import StreamInfo, event, priority_range, stream, stream_info  # noqa: E402
from .timeline import Timeline, TimelineError, TimelineNotReady  # noqa: E402
from .trace import Metrics, Row, Span, Trace  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "COLOURS", "DeviceModeError", "GraphError", "GraphShape", "HostCall", "HostFuncError",
    "KINDS", "Metrics", "Op",
    "OpLog", "Profile", "ProfileError", "Race", "RaceError", "Region", "Row", "Span", "StreamInfo", "StreamRef", "Timeline", "TimelineError",
    "TimelineNotReady", "Trace", "check", "find_races", "host_access", "is_pinned",
    "race_check", "record_ops", "uninstall", "CheckFailed", "ClaimFailed", "claims",
    "attribute", "describe", "device_name", "globaltimer", "launch_host_func", "ms_to_ns", "on_simulator",
    "peak_bandwidth_gbs", "pick", "plot", "priority_range", "profile", "spin", "stream", "stream_done", "stream_info",
    "to_chrome_trace", "compare", "kernel_cost", "model", "now", "predict", "size",
    "core_stream", "end_capture", "graph_builder", "graph_shape", "join",
    "event", "memory_resource", "as_array",
]

from .labs import install_ipython_display as _install_ipython_display  # noqa: E402

_install_ipython_display()  # a failed check shows its message, not a traceback

if _os.environ.get("STREAMLAB_RACE_CHECK", "") not in ("", "0"):
    from .order import start_session as _start_session

    _start_session()

if _os.environ.get("STREAMLAB_QUIET", "") in ("", "0"):
    # one line: what this runs on and what that means (what streamlab changes in numba to
    # see it: `python -m streamlab doctor`, or streamlab._hooks.banner())
    print(describe() + (" Every operation is race-checked (STREAMLAB_RACE_CHECK=1)."
                        if _os.environ.get("STREAMLAB_RACE_CHECK", "") not in ("", "0")
                        else ""))
