"""The check runner (streamlab.runner, issue 55): one way to run an exercise or a lab
part, its run in the learner's process and its judge from the Run alone."""

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
