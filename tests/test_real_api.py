"""Which of streamlab's wrappers of a CUDA call the learner still writes, and why.

Issue 31 moves the learner onto the ecosystem's own calls (numba.cuda, else cuda.core, else
cuda.bindings). This test keeps the account honest: every call of such a wrapper left in a
notebook, lab or solution is listed below with its reason, and a listed one that is gone
must leave the list, so the list only shrinks and says what is still to do.
"""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: streamlab's wrappers of calls the course teaches
WRAPPERS = ("stream", "event", "launch_host_func", "stream_done", "graph_builder", "join",
            "core_stream", "memory_resource", "as_array", "priority_range", "end_capture",
            "stream_info")

_END_CAPTURE = ("a workaround that stays: cuda.core 1.2 cannot end a capture a refused call "
                "invalidated; lesson 07 shows the driver call underneath")
_AS_ARRAY = ("stays: numba-cuda 0.30 cannot import DLPack and a cuda.core Buffer has no CUDA "
             "array interface; lesson 09 says so and names numba's "
             "cuda.from_cuda_array_interface underneath")

#: (file, wrapper) -> why it is still there
REMAINING = {
    **{(f"notebooks/07__cuda_graphs__capture_and_replay{s}.ipynb", "end_capture"): _END_CAPTURE
       for s in ("", "__SOLUTION")},
    **{(f"notebooks/09__memory_and_two_gpus__allocation_peers{s}.ipynb", "as_array"): _AS_ARRAY
       for s in ("", "__SOLUTION")},
}


def calls_found() -> set:
    pattern = re.compile(r"\bstreamlab\.(" + "|".join(WRAPPERS) + r")\(")
    found = set()
    for path in sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("labs/*/*.ipynb"),
                        *ROOT.glob("solutions/*/*.ipynb")]):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                found |= {(str(path.relative_to(ROOT)), m) for m in pattern.findall(source)}
    return found


def test_every_wrapper_the_learner_still_calls_is_accounted_for():
    found = calls_found()
    unexplained = sorted(found - set(REMAINING))
    assert not unexplained, (f"a learner calls streamlab's wrapper where the real API should "
                             f"be in their hands (issue 31): {unexplained}. Use the "
                             f"ecosystem's call, or add it to REMAINING with the reason")
    gone = sorted(set(REMAINING) - found)
    assert not gone, f"no longer called: take them out of REMAINING: {gone}"


def test_host_functions_and_the_priority_range_are_the_drivers_calls():
    """cuda.core 1.2 has neither: lessons 05 and 08 and labs 05 and 08 call the driver
    through cuda.bindings, as real code does (a stand-in on the simulator)."""
    for name, call in (("05__host_work__callbacks_asyncio", "driver.cuLaunchHostFunc("),
                       ("08__streams_and_the_hardware__priorities_queues",
                        "driver.cuCtxGetStreamPriorityRange()")):
        for suffix in ("", "__SOLUTION"):
            text = (ROOT / "notebooks" / f"{name}{suffix}.ipynb").read_text()
            assert "from cuda.bindings import driver" in text and call in text, (name, suffix)
    for lab, call in (("lab05__host_functions", "driver.cuLaunchHostFunc("),
                      ("lab08__hardware", "driver.cuCtxGetStreamPriorityRange()")):
        assert call in (ROOT / "solutions" / lab / f"{lab}.ipynb").read_text(), lab
        assert "from cuda.bindings import driver" in \
            (ROOT / "labs" / lab / f"{lab}.ipynb").read_text(), lab


def test_graphs_are_cuda_cores_own_calls():
    """numba has no graph API: lessons 07 and 10 and lab 07 build graphs with cuda.core's
    GraphBuilder, made from a cuda.core view of a stream, and launch into one (a stand-in
    of the same names on the simulator, :mod:`streamlab.sim.graph`)."""
    for name in ("07__cuda_graphs__capture_and_replay", "10__capstone__streamed_pipeline"):
        for suffix in ("", "__SOLUTION"):
            text = (ROOT / "notebooks" / f"{name}{suffix}.ipynb").read_text()
            assert "from cuda.core import Device" in text, (name, suffix)
            assert ".create_graph_builder().begin_building()" in text, (name, suffix)
            assert "Device().create_stream(" in text, (name, suffix)
    lesson07 = (ROOT / "notebooks" / "07__cuda_graphs__capture_and_replay__SOLUTION.ipynb")
    assert "GraphBuilder.join(*" in lesson07.read_text()
    for folder in ("labs", "solutions"):
        text = (ROOT / folder / "lab07__graphs" / "lab07__graphs.ipynb").read_text()
        assert "from cuda.core.graph import GraphBuilder" in text, folder
    assert "GraphBuilder.join(*branches)" in \
        (ROOT / "solutions" / "lab07__graphs" / "lab07__graphs.ipynb").read_text()


def test_the_stream_and_event_lessons_use_cuda_core():
    """Lessons 01, 02, 08 and 09 and lab 08 make their streams and events with cuda.core."""
    for name in ("01__default_streams__eight_streams", "02__events__producer_consumer",
                 "08__streams_and_the_hardware__priorities_queues",
                 "09__memory_and_two_gpus__allocation_peers"):
        for suffix in ("", "__SOLUTION"):
            text = (ROOT / "notebooks" / f"{name}{suffix}.ipynb").read_text()
            assert "from cuda.core import Device" in text, (name, suffix)
            assert "create_stream(" in text, (name, suffix)
    lab = (ROOT / "solutions/lab08__hardware/lab08__hardware.ipynb").read_text()
    assert "create_stream(options=StreamOptions(priority=" in lab
