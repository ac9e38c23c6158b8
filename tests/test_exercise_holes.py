"""Holes a second attack found in the check of exercise 09.1 after it began to see
allocations and frees through any API (2026-11-26, on the simulator), kept as strict
expected failures until the check is mended, each mark
coming off when the check judges its case right. Each case runs in a fresh process, since
some patch the interpreter (``sys._getframe``, streamlab's listeners).

The classes, for the mend:
- frees are not matched to the buffer allocated, nor the launches to its memory (a free of
  another buffer, a scratch that is not the buffer, a free noted by hand; and a
  ``gc.collect()`` in the learner's code that frees earlier garbage is counted too: in a
  long process, ``del buf; gc.collect()`` was told "freed in another stream");
- a buffer dropped by a helper's return, or by a ``functools.partial`` or callable object
  with no ``__code__`` of its own, counts as the learner's free;
- the recording can be steered from inside the learner's process (issue 32, item 1): the
  listeners, ``sys._getframe``, a host wait inside ``streamlab.ops.internal()``;
- a free from another thread, in the stream and in order, is called a drop after return.

The check is a module every GPU run of lesson 09 imports: mending it means running the
lesson on a GPU again."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from answer_changes import change
from exercise_answers_later import RIGHT

ROOT = Path(__file__).resolve().parent.parent

RUNNER = r"""
import sys
sys.path.insert(0, "tests")
from test_exercises import run
from streamlab.check import CheckFailed
try:
    run("09", 1, "scratch_step", sys.stdin.read())
    print("VERDICT passed")
except CheckFailed as e:
    print("VERDICT refused:", e)
except BaseException as e:
    print("VERDICT", type(e).__name__ + ":", e)
"""


def verdict(source: str) -> str:
    """The check's verdict on ``source``, in a fresh process on the simulator."""
    r = subprocess.run([sys.executable, "-c", RUNNER], input=source, cwd=ROOT,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "STREAMLAB_DEVICE": "sim"})
    lines = [line for line in r.stdout.splitlines() if line.startswith("VERDICT ")]
    assert lines, r.stdout[-2000:] + r.stderr[-2000:]
    return lines[-1][len("VERDICT "):]


#: the lesson's answer, which most cases below change (each written as its change)
SOLUTION = RIGHT[("09", 1, "scratch_step")]["solution"]
_HEAD = "def scratch_step(mr, stream, d_x):\n"
_ALLOC = "    buf = mr.allocate(4 * d_x.size, stream=stream)\n"
_VIEW = "    scratch = streamlab.as_array(buf, d_x.size, np.float32)\n"
_CLOSE = "    buf.close(stream)\n"
_NOTES = "from streamlab.memory import note_allocation\nfrom streamlab.streams import handle_of\n"

#: wrong answers and cheats the check passes today
WRONG_PASSING = {
    "pool buffer allocated and freed, scratch from cuda.device_array": change(
        SOLUTION, (_VIEW, "    scratch = cuda.device_array(d_x.size, np.float32, stream=stream)\n")),
    "closes an earlier cell's buffer (name slip), scratch leaks to return":
        "from cuda.core import Device\n"
        "buf = Device().memory_resource.allocate(64, stream=Device().default_stream)  # earlier\n"
        + change(SOLUTION, ("    buf = mr.allocate", "    scratch_buf = mr.allocate"),
                 ("as_array(buf,", "as_array(scratch_buf,")),
    "helper does all the work and never closes":
        change(SOLUTION, (_HEAD, "def _step(mr, stream, d_x):\n"), (_CLOSE, ""))
        + _HEAD + "    _step(mr, stream, d_x)\n",
    "never freed, scratch_step = functools.partial(...)":
        "import functools\n"
        + change(SOLUTION, (_HEAD, "def _step(mr, stream, d_x, kernel):\n"),
                 ("double_into[", "kernel["), (_CLOSE, ""))
        + "scratch_step = functools.partial(_step, kernel=double_into)\n",
    "a decorated scratch_step that never frees (decorator without wraps)":
        "def logged(fn):\n    def inner(*a):\n        return fn(*a)\n    return inner\n@logged"
        + change(SOLUTION, (_CLOSE, "")),
    "note_allocation by hand, real buffer leaked in a global":
        _NOTES + "kept = []\n"
        + change(SOLUTION, (_VIEW, "    kept.append(buf)\n" + _VIEW),
                 (_CLOSE, '    note_allocation("free", handle_of(stream))\n')),
    "cuda.device_array, with the alloc and free faked by note_allocation":
        _NOTES + change(SOLUTION,
                        (_ALLOC, '    note_allocation("alloc", handle_of(stream), 4 * d_x.size)\n'),
                        (_VIEW, "    scratch = cuda.device_array(d_x.size, np.float32)\n"),
                        (_CLOSE, '    note_allocation("free", handle_of(stream))\n')),
    "_listeners wrapped (and restored): allocation and free in another stream rewritten":
        "import streamlab.memory as M\nfrom streamlab.streams import handle_of\n"
        + change(SOLUTION,
                 (_ALLOC, "    mine = handle_of(stream)\n"
                          "    orig = list(M._listeners)\n"
                          "    M._listeners[:] = [lambda e, f=f: f((e[0], mine, e[2])) for f in orig]\n"
                          "    other = streamlab.core_stream(cuda.stream())\n"
                          "    buf = mr.allocate(4 * d_x.size, stream=other)\n"),
                 (_CLOSE, "    buf.close(other)\n    M._listeners[:] = orig\n")),
    "sys._getframe patched for the check's frame walk: never freed passes":
        "import sys\n"
        + change(SOLUTION, (_HEAD, _HEAD + """    real = sys._getframe
    code = scratch_step.__code__
    class F:
        f_code = code
        f_back = None
    def fake(n=0):
        caller = real(1)
        if caller.f_code.co_name == "at":
            return F
        return real(n + 1)
    sys._getframe = fake
"""), (_CLOSE, "")),
    "a callable object with no __code__, never frees":
        "class _Step:"
        + textwrap.indent(change(SOLUTION, (_HEAD, "def __call__(self, mr, stream, d_x):\n"),
                                 (_CLOSE, "")), "    ")
        + "scratch_step = _Step()\n",
    "fake free of a throwaway SimBuffer (no alloc noted), real buffer leaked":
        "from streamlab.memory import SimBuffer\nfrom streamlab.streams import handle_of\n"
        "kept = []\n"
        + change(SOLUTION, (_VIEW, "    kept.append(buf)\n" + _VIEW),
                 (_CLOSE, "    SimBuffer(0, handle_of(stream)).close()\n")),
    "host sync hidden inside streamlab.ops.internal()":
        "from streamlab.ops import internal\n"
        + change(SOLUTION, (_CLOSE, "    with internal():\n        stream.sync()\n" + _CLOSE)),
}

#: a cheat that crashes the check, which then blames the course
CRASHES = {
    "_listeners replaced and not restored (check crashes)":
        "import streamlab.memory as M\nfrom streamlab.streams import handle_of\n"
        + change(SOLUTION,
                 (_ALLOC, "    mine = handle_of(stream)\n"
                          "    M._listeners[:] = [lambda e, f=f: f((e[0], mine, e[2])) "
                          "for f in M._listeners]\n"
                          "    buf = mr.allocate(4 * d_x.size, "
                          "stream=streamlab.core_stream(cuda.stream()))\n"),
                 (_CLOSE, "    buf.close(streamlab.core_stream(cuda.stream()))\n")),
}

#: right answers refused today, with a message that is not true of them
RIGHT_REFUSED = {
    "free by a helper thread (joined)": change(SOLUTION, (_CLOSE, """    import threading
    t = threading.Thread(target=buf.close, args=(stream,))
    t.start(); t.join()
""")),
}


@pytest.mark.parametrize("source", list(WRONG_PASSING.values()), ids=list(WRONG_PASSING))
@pytest.mark.xfail(strict=True, reason="open: the check passes it (see the module)")
def test_a_wrong_answer_or_cheat_the_check_passes_today(source):
    assert verdict(source).startswith("refused:")


@pytest.mark.parametrize("source", list(CRASHES.values()), ids=list(CRASHES))
@pytest.mark.xfail(strict=True, reason="open: the check crashes and blames the course")
def test_a_cheat_that_crashes_the_check_today(source):
    assert verdict(source).startswith("refused:")


@pytest.mark.parametrize("source", list(RIGHT_REFUSED.values()), ids=list(RIGHT_REFUSED))
@pytest.mark.xfail(strict=True, reason="open: the check refuses it (see the module)")
def test_a_right_answer_the_check_refuses_today(source):
    assert verdict(source) == "passed"


def test_the_runner_tells_a_pass_from_a_refusal():
    """The fresh-process runner itself: the lesson's answer passes, a never-freed one is
    refused (so the marks above fail for the reason they give)."""
    right = SOLUTION
    assert verdict(right) == "passed"
    assert verdict(change(right, (_CLOSE, ""))).startswith(
        "refused: Exercise 1: your code never freed the scratch")
