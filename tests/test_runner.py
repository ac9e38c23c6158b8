"""The check runner (streamlab.runner, issue 55): one way to run an exercise or a lab
part, its run in the learner's process and its judge from the Run alone."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

from streamlab import check, transcript
from streamlab.runner import Check, Inputs, run


@cuda.jit
def _twice(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2


def _inputs(*, seed):
    s = cuda.stream()
    x = cuda.to_device(np.random.default_rng(seed).integers(0, 9, 40).astype(np.float32))
    return Inputs(lambda fn: fn(x, s), {"s": s}, {"x": x}, busy=((s, 1000),),
                  returned=lambda value: ({"value": value}, {}))


def _expected(*, seed):
    return {"x": (2 * np.random.default_rng(seed).integers(0, 9, 40).astype(np.float32),
                  "x after the function")}


def _rules(seen):
    def rules(run, order, *, seed):
        seen.append("rules")
        check.one_launch_per_stream(run.ops, "_twice", [run.stream("s")])
    return rules


def test_a_check_runs_records_sends_and_judges_in_that_order(capsys):
    seen, sent = [], []

    def values(run, order, *, seed):
        seen.append("values")
        if run.values["value"] != "done":
            check.fail("return 'done'")

    task = Check(1, "tests.test_runner.task", _inputs, _rules(seen), _expected,
                 values=values, seeded=True)

    def double(x, s):
        _twice[1, 64, s](x)
        return "done"

    transcript.send_to(sent.append)
    try:
        run(task, double, seed=None)
    finally:
        transcript.send_to(None)
    assert capsys.readouterr().out.strip().endswith("Part 1: passed")
    assert seen == ["rules", "values"]
    (entry,) = sent
    assert entry["check"] == "tests.test_runner.task"
    assert isinstance(entry["kwargs"]["seed"], int)  # the seed drawn, sent for the judge


@pytest.mark.parametrize("answer, says", [
    ("def double(x, s):\n    _twice[1, 64](x)\n    return 'done'", "_twice"),
    ("def double(x, s):\n    _twice[1, 64, s](x)\n    return 'nope'", "return 'done'"),
    ("def double(x, s):\n    _twice[1, 8, s](x)\n    return 'done'", "x after the function"),
    ("def double(x, s):\n    raise NotImplementedError", None),
], ids=["wrong stream", "wrong value", "half the array", "not done"])
def test_a_check_fails_on_its_own_rules_its_values_and_its_outputs(answer, says, capsys):
    ns = {"_twice": _twice}
    exec(answer, ns)
    task = Check(2, "tests.test_runner.task", _inputs, _rules([]), _expected,
                 values=lambda run, order, *, seed: run.values["value"] == "done"
                 or check.fail("return 'done'"), seeded=True)
    if says is None:
        run(task, ns["double"], seed=1)
        assert "Part 2: not done yet" in capsys.readouterr().out
        return
    with pytest.raises(check.CheckFailed, match=says):
        run(task, ns["double"], seed=1)


# --- what the runner changed in the labs' verdicts, found by an attack ------------------
# Answers kept in tests/runner_answers/ (each with its lab, check call and a line on what
# it is): a differential attack ran 185 answers against the labs' checks before and after
# they moved onto the runner, and these are the ones whose verdict the move changed (or
# that the move got wrong first). Each runs in a fresh process, as some leave a capture
# open or patch a lab's module, and some once hung.
_ANSWERS = Path(__file__).resolve().parent / "runner_answers"
_CHILD = r'''
import json, re, sys
from labtools import setup_code
src = open(sys.argv[1]).read()
meta = dict(re.findall(r"^# (lab|call|desc): (.*)$", src, re.M))
lab = next(name for name in __import__("labtools").LABS if name.startswith(meta["lab"]))
ns = {"__name__": "__lab__"}
exec(setup_code(lab), ns)
exec(compile(src, "answer", "exec"), ns)
try:
    exec(meta["call"], ns)
    print("VERDICT", json.dumps(["passed", ""]))
except BaseException as exc:
    print("VERDICT", json.dumps([type(exc).__name__, str(exc)]))
sys.stdout.flush()
import os; os._exit(0)
'''

#: answer file -> (the verdict's kind, a phrase of its message)
_VERDICTS = {
    # asked after the learner's code ran, a patched priority range passed (found in review)
    "l08p1_prpatch": ("CheckFailed", "give it the highest priority"),
    # results a host function fills after the function returned: read as returned
    "l04p2_hostfn": ("CheckFailed", "was None when pipeline returned"),
    "l07p3_hostfn": ("CheckFailed", "batch 0"),
    # results that are objects equal to anything (issue 56): only numbers are compared
    "l04p2_anyeq": ("CheckFailed", "expected numbers, got"),
    # a host function that never returns, in another stream: the check does not wait on it
    "l05p1_block": ("CheckFailed", "6 host functions in the stream for 6 chunks"),
    # a capture left open: said as the learner's, not as the course's own bug
    "l04p1_capwrong": ("CheckFailed", "left a graph capture open"),
    "l08p1_capopen": ("CheckFailed", "left a graph capture open"),
    # the lab module's own names patched: the runner judges with its own
    "l01p1_racepatch": ("CheckFailed", "reads argument 'inp'"),
    # an output's copy_to_host replaced: the runner copies with the class's own
    "l01p1_cthpatch": ("CheckFailed", "values are wrong"),
    # right answers that consume the lists they are given
    "l02p2_pop": ("passed", ""),
    "l08p2_pop": ("passed", ""),
}


@pytest.mark.parametrize("answer", sorted(_VERDICTS))
def test_the_runner_judges_the_answers_its_first_version_got_wrong(answer):
    env = dict(os.environ, STREAMLAB_DEVICE="sim", STREAMLAB_QUIET="1",
               PYTHONPATH=os.pathsep.join([str(_ANSWERS.parent),
                                            os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(_ANSWERS / f"{answer}.py")],
                           capture_output=True, text=True, timeout=240, env=env)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("VERDICT ")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    kind, message = json.loads(lines[-1][len("VERDICT "):])
    want_kind, phrase = _VERDICTS[answer]
    assert kind == want_kind and phrase in message, (kind, message)
