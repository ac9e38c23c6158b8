"""Every wrong answer in tests/wrong_solutions/ fails its part with the feedback named, and
no other part (except parts declared to build on it); every right answer in other words
there passes. They run in-process (the same check functions as in the notebook), and one
of each per lab also through the grader's fresh process. The parts before the changed
answer are not run again, and a later part that never calls it is stood in for by a probe
of the state it would start from (see run_in_process).
"""

import importlib
import re

import pytest
from labtools import FIRST_HALF, LABS, cases, cells_of, grade_id, meta, notebook, \
    setup_code, submission

from streamlab.check import CheckFailed
from streamlab import transcript
from streamlab.grading import plan, run_part

# --- the checks: wrong answers fail, right ones pass -----------------------------------------
def after(lab, target):
    """The graded cells that come after answer cell ``target`` in the lab: the ones that
    run in the notebook once the learner's answer there exists. (The checks before it ran
    before that cell did, on the solution's answers, which pass.)"""
    ids = [grade_id(c) for c in notebook("solutions", lab).cells
           if meta(c).get("solution") or meta(c).get("grade")]
    graded = [g for g in ids if g in cells_of(lab, "grade")]
    return graded[[i for i, g in enumerate(graded) if ids.index(g) > ids.index(target)][0]:]


def uses(lab, gid, target):
    """Does graded cell ``gid`` call answer ``target``, itself or through another answer
    (the solution's, which calls it)?"""
    answers = cells_of(lab, "solution")
    named = lambda source, name: re.search(rf"\b{re.escape(name)}\b", source)  # noqa: E731
    reached, todo = set(), [cells_of(lab, "grade")[gid]]
    while todo:
        source = todo.pop()
        for name, body in answers.items():
            if name not in reached and named(source, name):
                reached.add(name)
                todo.append(body)
    return target in reached


#: what a later part that never calls the changed answer runs in its place: the state it
#: would start from, probed (a graph capture left open, or an error the device keeps,
#: makes this fail as it would make that part's check fail)
PROBE = "cuda.synchronize()"


def run_in_process(lab, answers, target=None):
    """Run the lab's setup, the given answers and every graded cell (hidden tests too) in
    this process; return {graded cell: None, or the error it raised}.

    With ``target`` (the answer changed): the graded cells from its part on, since the
    ones before ran in the notebook before that cell existed. A later one that never
    calls it (see :func:`uses`) would run the solution's answers as the solution does,
    which pass: the state it starts from is probed in its place (:data:`PROBE`)."""
    ns = {"__name__": "__lab__"}
    exec(setup_code(lab), ns)  # noqa: S102
    for source in answers.values():
        exec(source, ns)  # noqa: S102
    results = {}
    run = after(lab, target) if target else list(cells_of(lab, "grade"))
    sent: list = []
    transcript._sink = sent.append  # what each judged check's run sends the grader
    try:
        for gid, source in cells_of(lab, "grade").items():
            if gid not in run:
                continue
            if target and gid != run[0] and not uses(lab, gid, target):
                source = PROBE
            sent.clear()
            try:
                exec(source, ns)  # noqa: S102
            except CheckFailed as exc:
                results[gid] = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # noqa: BLE001  (a learner's error fails its part)
                results[gid] = f"{type(exc).__name__}: {exc}"
            else:
                results[gid] = None
            judged_as_here(lab, sent, results[gid])
    finally:
        transcript._sink = None
    return results


DIGEST_SAYS = ": the values the grader received are not the expected ones"


def judged_as_here(lab, sent, result):
    """The grader, judging the transcripts a graded cell's checks sent (each written and
    read back as the pipe carries it), comes to the check's own verdict: a pass where it
    passed, the same message where the grader's judge fails. (A check that failed before
    its run sent anything is not judged there: its failure stands.)"""
    judges = getattr(importlib.import_module(f"streamlab.labs.{lab.split('__')[0]}"),
                     "JUDGES", {})
    if not judges:
        assert not sent, f"{lab} has no JUDGES, yet its checks sent transcripts"
        return
    for entry in sent:
        entry = transcript.read(transcript.write(entry))
        judge, number = judges[entry["check"].rsplit(".", 1)[1]]
        try:
            judge(transcript.decode(entry), **entry["kwargs"])
        except CheckFailed as exc:
            text = str(exc)
            label, says, advice = text.partition(DIGEST_SAYS)
            if says:  # the grader has the values' digest, not them: the same result,
                # found wrong, and the same advice after it (lab 07's parts 1 and 2)
                assert (result or "").startswith(f"CheckFailed: Part {number}: {label}") \
                    and result.endswith(advice), (result, text)
            else:
                assert result == f"CheckFailed: Part {number}: {text}", (result, text)
            return


def test_enough_wrong_and_right_answers_for_every_lab():
    for lab in LABS:
        mod = importlib.import_module(f"wrong_solutions.{lab}")
        assert len(mod.WRONG) >= 8 and len(mod.RIGHT) >= 2, lab


@pytest.mark.parametrize("lab, target, code, check_id, phrase, also",
                         list(cases("WRONG", FIRST_HALF)))
def test_a_wrong_answer_fails_its_part_with_useful_feedback(lab, target, code, check_id,
                                                           phrase, also):
    """(The other labs' wrong answers: test_lab_answers_later.py.)"""
    wrong_answer_fails(lab, target, code, check_id, phrase, also)


def wrong_answer_fails(lab, target, code, check_id, phrase, also):
    answers = cells_of(lab, "solution")
    answers[target] = code.strip("\n")
    results = run_in_process(lab, answers, target)
    assert results[check_id] is not None, f"the check passed a wrong answer: {code}"
    assert phrase in results[check_id], results[check_id]
    # what the learner sees is the check's one line, never another error's traceback
    assert results[check_id].startswith(("CheckFailed:", "RaceError:")), results[check_id]
    others = {k: v for k, v in results.items() if k != check_id and k not in also}
    assert all(v is None for v in others.values()), others


@pytest.mark.parametrize("lab, target, code, check_id", list(cases("RIGHT")))
def test_a_right_answer_in_other_words_passes(lab, target, code, check_id):
    answers = cells_of(lab, "solution")
    answers[target] = code.strip("\n")
    results = run_in_process(lab, answers, target)
    assert check_id in results and all(v is None for v in results.values()), results


@pytest.mark.parametrize("lab", LABS)
def test_the_grader_in_a_fresh_process_agrees(lab, tmp_path):
    mod = importlib.import_module(f"wrong_solutions.{lab}")
    (target, code, check_id, phrase, *_), = list(mod.WRONG.values())[:1]
    wrong = dict(cells_of(lab, "solution"), **{target: code.strip("\n")})
    right_target, right_code, right_check = list(mod.RIGHT.values())[0]
    right = dict(cells_of(lab, "solution"), **{right_target: right_code.strip("\n")})
    for answers, part, passes in ((wrong, check_id, False), (right, right_check, True)):
        verdict = run_part(plan(submission(lab, answers)), part, cwd=str(tmp_path),
                           timeout=120)
        assert verdict.passed is passes, verdict
        if not passes:
            assert phrase in verdict.message, verdict


def test_a_changed_answer_is_judged_by_the_checks_from_its_own_part_on():
    assert after("lab01__eight_streams", "launch_on_streams") == ["check_part1", "check_part2",
                                                                  "check_part3"]
    assert after("lab01__eight_streams", "launch_with_dummies") == ["check_part2",
                                                                    "check_part3"]
    assert after("lab04__pipeline", "pipeline") == ["check_part2"]
    # part 2 of lab 04 is given copy_compute_copy; lab 07's part 3 builds its own graph
    assert uses("lab04__pipeline", "check_part2", "copy_compute_copy")
    assert not uses("lab07__graphs", "check_part3", "capture_pipeline")
    assert uses("lab07__graphs", "check_part3", "run_batches")


def test_a_later_part_that_never_calls_the_answer_probes_the_state_it_starts_from(
        monkeypatch):
    """A wrong answer that leaves a graph capture open fails the probe that stands in for
    the later parts, as it would fail their checks in the learner's kernel."""
    from numba import cuda

    from streamlab.graphs import end_capture_of

    made, stream = [], cuda.stream
    monkeypatch.setattr(cuda, "stream", lambda *a, **k: made.append(stream(*a, **k)) or made[-1])
    answers = cells_of("lab07__graphs", "solution")
    answers["capture_pipeline"] = '''
def capture_pipeline(builder, slots):
    streamlab.graph_builder(cuda.stream()).begin_building()  # a capture of its own, left open
    raise RuntimeError("a mistake")
'''
    try:
        results = run_in_process("lab07__graphs", answers, "capture_pipeline")
    finally:
        for s in made:  # the capture left open would fail every later test in this process
            end_capture_of(s)
    cuda.synchronize()
    assert results["check_part1"] is not None
    assert results["check_part3"] is not None and "CAPTURE" in results["check_part3"], results


@pytest.mark.parametrize("name", sorted(__import__(
    "wrong_solutions.lab02__events", fromlist=["WRONG_ON_SIMULATOR"]).WRONG_ON_SIMULATOR))
def test_a_wrong_answer_of_the_simulators_own_ways_fails(name):
    """Lab 02's wrong answers that only the simulator lets run (a launch from a host
    function, its array read behind its back) fail with the feedback named."""
    import streamlab

    from wrong_solutions.lab02__events import WRONG_ON_SIMULATOR

    if not streamlab.on_simulator():
        pytest.skip("the simulator's own ways: a GPU fails these otherwise")
    target, code, check_id, phrase = WRONG_ON_SIMULATOR[name]
    wrong_answer_fails("lab02__events", target, code, check_id, phrase, ())
