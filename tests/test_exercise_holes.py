"""Holes that remain in the check of exercise 09.1, kept as strict expected failures
until it is mended: each mark comes off when the check judges its case right. Each case
runs in a fresh process, since such answers may patch the interpreter.

A second attack (2026-11-26, 33 cases on the simulator) found 14 holes after the check
began to see allocations and frees through any API. 12 are mended: frees now count only
for the address allocated, a free is the learner's only when they closed the buffer (not
when Python let go of it), the launches must use the buffer's memory, and a partial's or
a callable object's code is found. Those cases are kept answers now
(``exercise_answers_later.py``). What remains is issue 32's class, the recording steered
from inside the learner's process: allocations and frees noted by hand. (A host wait
hidden inside ``streamlab.ops.internal()`` is refused now: only streamlab's own code may
use it.)"""

import os
import subprocess
import sys
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


#: the lesson's answer, which the cases below change (each written as its change)
SOLUTION = RIGHT[("09", 1, "scratch_step")]["solution"]
_ALLOC = "    buf = mr.allocate(4 * d_x.size, stream=stream)\n"
_VIEW = "    scratch = streamlab.as_array(buf, d_x.size, np.float32)\n"
_CLOSE = "    buf.close(stream)\n"
_NOTES = "from streamlab.memory import note_allocation\nfrom streamlab.streams import handle_of\n"

#: cheats the check passes today (issue 32's class: the recording steered from inside)
WRONG_PASSING = {
    "cuda.device_array, with the alloc and free faked by note_allocation":
        _NOTES + change(SOLUTION,
                        (_ALLOC, '    note_allocation("alloc", handle_of(stream), 4 * d_x.size)\n'),
                        (_VIEW, "    scratch = cuda.device_array(d_x.size, np.float32)\n"),
                        (_CLOSE, '    note_allocation("free", handle_of(stream))\n')),
}

#: cheats once passed, refused now
HIDDEN_INSIDE_INTERNAL = "from streamlab.ops import internal\n" + change(
    SOLUTION, (_CLOSE, "    with internal():\n        stream.sync()\n" + _CLOSE))


def test_a_host_sync_hidden_inside_streamlabs_internal_is_refused():
    """streamlab.ops.internal() marks streamlab's own operations; the learner's code
    cannot use it to hide its own (it passed before, the sync left out as streamlab's)."""
    got = verdict(HIDDEN_INSIDE_INTERNAL)
    assert got.startswith("refused:") and "cannot use it" in got, got


@pytest.mark.parametrize("source", list(WRONG_PASSING.values()), ids=list(WRONG_PASSING))
@pytest.mark.xfail(strict=True, reason="open: the check passes it (see the module)")
def test_a_cheat_the_check_passes_today(source):
    assert verdict(source).startswith("refused:")


def test_the_runner_tells_a_pass_from_a_refusal():
    """The fresh-process runner itself: the lesson's answer passes, a never-freed one is
    refused (so the marks above fail for the reason they give)."""
    right = SOLUTION
    assert verdict(right) == "passed"
    assert verdict(change(right, (_CLOSE, ""))).startswith(
        "refused: Exercise 1: your code never freed the scratch")
