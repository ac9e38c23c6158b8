"""Checks judged in the grader (issue 32, item 1): a judged check's run sends the grader a
transcript of what it saw (streamlab.transcript), and the grade is the grader's
own judge's verdict on it. What the part's process writes as a verdict is not a grade;
a transcript that is missing, for another check or other arguments, or not in the format
scores nothing; one whose record was rewritten in the learner's process is the hole that
stays (kept below as an expected failure)."""

import importlib

import pytest
from attacks import CHECKSUM_FROM_THE_SEED, FINDS_THE_PIPE_IN_MEMORY
from labtools import LABS, at_call, cells_of, setup_code, submission

from streamlab import transcript
from streamlab.grading import (GRADED, LOCKED, Verdict, judge_in_grader, judged_calls, plan,
                               run_part)
from streamlab.labs import lab02

LAB = "lab02__events"


def lab_namespace(answers=None):
    """Lab 02's setup and the solution's answers (``answers`` replacing some), run in a
    namespace of this process, as the notebook's cells would."""
    ns = {"__name__": "__lab__"}
    exec(setup_code(LAB), ns)  # noqa: S102
    for source in {**cells_of(LAB, "solution"), **(answers or {})}.values():
        exec(source, ns)  # noqa: S102
    return ns


def sent_by(graded_source, answers=None, *, fails=False):
    """The transcripts lab 02's graded cell ``graded_source`` sends, run in this process
    with the solution's answers (``answers`` replacing some), as the pipe carries them.
    ``fails``: the cell's check must fail (what it sent before failing is returned)."""
    ns = lab_namespace(answers)
    sent = []
    transcript._sink = sent.append
    try:
        if fails:
            with pytest.raises(lab02.check.CheckFailed):
                exec(graded_source, ns)  # noqa: S102
        else:
            exec(graded_source, ns)  # noqa: S102
    finally:
        transcript._sink = None
    return [transcript.write(e) for e in sent]


def cells():
    return plan(submission(LAB, {}))


def graded(part):
    (cell,) = [c for c in cells() if c["role"] == GRADED and c["id"] == part]
    return cell["source"]


PASSED = Verdict(True, "", "Part 3: passed\n")


def test_the_grader_passes_what_a_right_answer_sent():
    texts = sent_by(graded("check_part3"))
    assert len(texts) == 2  # the visible call and the hidden one
    got = judge_in_grader(cells(), "check_part3", texts, PASSED)
    assert got is PASSED


def test_the_grader_judges_a_wrong_answer_by_itself():
    """A host wait the part's process did not report: the grader's judge finds it."""
    wrong = '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    producer_stream.synchronize()
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
'''
    texts = sent_by("check_part1(produce_then_consume)\n"
                    "check_part1(produce_then_consume, nonblocking=True, seed=7)")
    # the wrong answer's transcript, in place of the right one's first
    got = sent_by("check_part1(produce_then_consume)", {"produce_then_consume": wrong},
                  fails=True)
    assert len(got) == 1
    verdict = judge_in_grader(cells(), "check_part1", [got[0], texts[1]], PASSED)
    assert not verdict.passed and verdict.kind == "CheckFailed", verdict
    assert verdict.message.startswith("Part 1: you synchronized the host"), verdict


def _forged(texts, change):
    entry = transcript.read(texts[0])
    change(entry)
    return [transcript.write(entry)] + texts[1:]


def _drop(kind):
    def change(entry):
        entry["ops"] = [op for op in entry["ops"] if op["kind"] != kind]
    return change


@pytest.mark.parametrize("change, says", [
    (lambda e: e.update(check="streamlab.labs.lab02.check_part1"), "not check_part3"),
    (lambda e: e["kwargs"].update(start=5), "arguments"),
    (lambda e: e["kwargs"].update(extra=1), "arguments"),
    (lambda e: e.update(format=transcript.FORMAT + 1), "format"),
    (lambda e: e.pop("data"), "no 'data'"),
    (lambda e: e["ops"][0].update(kind="magic"), "unknown kind"),
    (lambda e: e["ops"][0].update(index="0"), "'index' is str"),
    (lambda e: e["values"].update(value=1.5), "value 'value' is float"),
    (lambda e: e["values"].update(value=31), "Part 3: the value returned"),
    (_drop("launch"), "Part 3: kernel 'update_counter' was never launched"),
    (_drop("copy"), "Part 3: the counter was never copied back"),
], ids=["another check's", "other arguments", "an argument it does not take",
        "another format", "no data", "an unknown operation", "a field of a wrong type",
        "a value of a wrong type", "a wrong value", "its launches taken out",
        "its copy taken out"])
def test_a_forged_transcript_scores_nothing(change, says):
    texts = sent_by(graded("check_part3"))
    got = judge_in_grader(cells(), "check_part3", _forged(texts, change), PASSED)
    assert not got.passed and says in got.message, got


@pytest.mark.parametrize("texts, says", [
    (lambda t: t[:1], "received 1"),
    (lambda t: t + t[:1], "received 3"),
    (lambda t: ["{'format': 1"] + t[1:], "not a transcript"),
    (lambda t: ["__import__('os').system('true')"] + t[1:], "not a transcript"),
], ids=["one missing", "one more", "not a literal", "code, not a literal"])
def test_transcripts_missing_extra_or_unreadable_score_nothing(texts, says):
    got = judge_in_grader(cells(), "check_part3", texts(sent_by(graded("check_part3"))),
                          PASSED)
    assert not got.passed and says in got.message, got


def test_the_record_survives_the_pipe():
    """Every field the judge reads comes back: streams, regions, events (one number, one
    object), details; the order of operations gives the same verdicts."""
    ns = lab_namespace()
    got = []
    transcript._sink = got.append
    original = []
    from streamlab import runner  # (every check's run sends through it)

    real_send = runner.send

    def keep(check, kwargs, run):
        original.append(run)
        return real_send(check, kwargs, run)

    runner.send = keep
    try:
        lab02.check_part2(ns["fan_out"], count=4, seed=3)
    finally:
        runner.send, transcript._sink = real_send, None
    back = transcript.decode(transcript.read(transcript.write(got[0])))
    ops, again = original[0].ops, back.ops
    assert [(o.kind, o.name, o.stream, o.reads, o.writes, o.blocking, o.internal, o.uid)
            for o in ops] == \
        [(o.kind, o.name, o.stream, o.reads, o.writes, o.blocking, o.internal, o.uid)
         for o in again]
    waits = [o for o in again if o.kind == "wait"]
    assert len(waits) == 4 and len({id(w.event) for w in waits}) == 1
    assert again.recorded_before(waits[0]) is not None
    from streamlab.order import analyze

    a, b = analyze(ops), analyze(again)
    assert [a.ordered(x, y) for x in ops for y in ops] == \
        [b.ordered(x, y) for x in again for y in again]


def test_which_checks_the_grader_judges():
    calls = judged_calls(cells(), "check_part1")
    assert [(m.__name__, n, k) for m, n, k in calls] == [
        ("streamlab.labs.lab02", "check_part1", {}),
        ("streamlab.labs.lab02", "check_part1", {"nonblocking": True, "seed": 7})]
    lab01 = plan(submission("lab01__eight_streams", {}))
    assert {(m.__name__, n) for m, n, _ in judged_calls(lab01, "check_part3")} == {
        ("streamlab.labs.lab01", "check_part3")}
    unlabbed = [{"source": "x = 1", "role": LOCKED, "id": "setup"},
                {"source": "check_part1(f)", "role": GRADED, "id": "check_part1"}]
    assert judged_calls(unlabbed, "check_part1") is None  # no lab module: the part's own
    odd = [dict(c, source="n = 3\ncheck_part2(fan_out, count=n)")
           if c["role"] == GRADED and c["id"] == "check_part2" else c for c in cells()]
    with pytest.raises(ValueError, match="write them as literals"):
        judged_calls(odd, "check_part2")
    assert any(c["role"] == LOCKED for c in cells())


#: lab 02 part 1 answered right, plus a host wait whose record the answer deletes from the
#: check's own log (found through the check's frame) before the check reads it
_REWRITES_ITS_RECORD = '''
import sys
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    producer_stream.synchronize()              # a host wait: wrong
    ready.wait(consumer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
    f = sys._getframe(1)
    while f is not None and "ops" not in f.f_locals:
        f = f.f_back
    log = f.f_locals["ops"]
    log[:] = [op for op in log if op.kind != "sync"]
'''


def test_a_host_wait_alone_is_refused_in_the_grader(tmp_path):
    """The control for the hole below: the same answer without the rewrite fails."""
    code = _REWRITES_ITS_RECORD.split("    f = sys._getframe")[0]
    got = run_part(plan(submission(LAB, {"produce_then_consume": code})), "check_part1",
                   cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and "you synchronized the host" in got.message, got


@pytest.mark.xfail(strict=True, reason=(
    "open (issue 32 item 1, what stays): the record is made in the learner's process, so "
    "code that rewrites it there (here, deleting its host wait from the check's log) is "
    "judged on the rewritten record, by the part's check and by the grader alike. See "
    "streamlab.transcript and labs/README.md"))
def test_a_record_rewritten_in_the_learners_process_scores_nothing(tmp_path):
    got = run_part(plan(submission(LAB, {"produce_then_consume": _REWRITES_ITS_RECORD})),
                   "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got


#: a learner's answer that writes a pass through the grader's own report function, then
#: ends the process before any check runs
_WRITES_A_PASS_AND_EXITS = '''
import sys, os
f = sys._getframe(0)
while f is not None:
    if "report" in f.f_locals:
        f.f_locals["report"](True)
        os._exit(0)
    f = f.f_back
'''
JUDGED = [lab for lab in LABS if getattr(importlib.import_module(
    f"streamlab.labs.{lab.split('__')[0]}"), "JUDGES", None)]


@pytest.mark.parametrize("lab", JUDGED)
def test_in_every_judged_lab_a_pass_written_by_the_part_scores_nothing(tmp_path, lab):
    """Written at the top of the answer cell, the forgery is refused before it runs
    (issue 56); written inside the answer, it runs when a check calls it, and the grader,
    which judges what the checks sent, received nothing to judge."""
    answers = cells_of(lab, "solution")
    first = next(iter(answers))
    for code, kind in ((_WRITES_A_PASS_AND_EXITS, None),
                       (at_call(_WRITES_A_PASS_AND_EXITS, first), "Unjudged")):
        cells = plan(submission(lab, {**answers, first: code}))
        judges = importlib.import_module(f"streamlab.labs.{lab.split('__')[0]}").JUDGES
        calls = [c["id"] for c in cells if c["role"] == GRADED and first in c["source"]
                 and c["id"] in judges]  # (a part whose check is not judged there: below)
        assert calls, lab
        for part in calls:
            got = run_part(cells, part, cwd=str(tmp_path), timeout=120, sandbox="off")
            assert not got.passed, (part, got)
            if kind:
                assert got.kind == kind, (part, got)
            else:
                assert any("was not run" in e for e in got.learner_errors), (part, got)


def _lab07_part3(tmp_path, code):
    """Lab 07's part 3, answered with ``code`` (the solution's other answers), graded."""
    lab = "lab07__graphs"
    answers = dict(cells_of(lab, "solution"), run_batches=code.strip("\n"))
    return run_part(plan(submission(lab, answers)), "check_part3", cwd=str(tmp_path),
                    timeout=120, sandbox="off")


def test_a_secret_read_from_a_checks_frame_scores_nothing(tmp_path):
    """Lab 07 part 3's graph adds a key to every result on the GPU, made from the check's
    random seed, which code can read from the check's frames: there the results can be
    computed on the host, right to the last bit. The grader judges what such code cannot
    do: each batch's results read from the slots' h_out after that batch's replay."""
    from wrong_solutions.lab07__graphs import FRAME_SECRET

    got = _lab07_part3(tmp_path, FRAME_SECRET)
    assert not got.passed and got.kind == "CheckFailed", got
    assert "not read after the batch's replay" in got.message, got  # (its values were right)
    assert "slot.h_out.copy()" in got.message, got  # what to write instead


@pytest.mark.parametrize("name", ["replay, waiting on an event",
                                  "replay, each h_out read through a view of it",
                                  "replay, each h_out copied into a buffer of the loop's own",
                                  "replay, each h_out converted"])
def test_lab07s_part3_in_other_words_scores_in_the_grader(tmp_path, name):
    from wrong_solutions.lab07__graphs import RIGHT

    _, code, _ = RIGHT[name]
    got = _lab07_part3(tmp_path, code)
    assert got.passed, got


def test_the_judged_labs_are_the_ones_this_file_says():
    assert JUDGED == ["lab01__eight_streams", "lab02__events", "lab03__rendezvous",
                      "lab04__pipeline", "lab05__host_functions", "lab07__graphs",
                      "lab08__hardware"]

def test_a_check_the_learner_runs_in_a_cell_of_their_own_is_not_a_graded_call(tmp_path):
    """Trying an answer with its check in a cell of one's own (as the lab invites) sends
    nothing to the grader: the graded cell's calls alone are judged, and a right answer
    still scores. (Before, the extra transcript failed every later part.)"""
    cells = plan(submission(LAB, cells_of(LAB, "solution")))
    last = max(i for i, c in enumerate(cells) if c["role"] == "solution")
    cells.insert(last + 1, {"source": "check_part1(produce_then_consume)\n"
                                      "check_part2(fan_out)\n", "role": "other", "id": ""})
    for part in ("check_part1", "check_part2", "check_part3"):
        got = run_part(cells, part, cwd=str(tmp_path), timeout=120, sandbox="off")
        assert got.passed, (part, got)


def _marked_locked(source):
    """A cell the learner added and marked locked by hand: after nbgrader's autograde,
    which takes the grade_id off a cell the gradebook does not know, it has no id."""
    return {"cell_type": "code", "source": source, "outputs": [], "execution_count": None,
            "metadata": {"nbgrader": {"locked": True, "solution": False, "grade": False}}}


def test_a_cell_the_learner_marks_locked_is_the_learners(tmp_path):
    """Marked locked, another lab's checks imported after the setup would have shadowed
    lab 02's with an easier one's (lab 01's part 3 asks only for a stream's
    synchronize), and would have run before the grader's audit hook: it is the
    learner's cell, so replacing the lab's names is tampering."""
    nb = submission(LAB, {"add_in_two_streams": "def add_in_two_streams(counter, s0, s1):\n"
                                                "    s0.synchronize()\n"})
    setup = next(i for i, c in enumerate(nb.cells)
                 if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "setup")
    nb.cells.insert(setup + 1, _marked_locked("from streamlab.labs.lab01 import *\n"))
    cells = plan(nb)
    assert [c["role"] for c in cells if "lab01" in c["source"]] == ["other"]
    got = run_part(cells, "check_part3", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind == "Tampered" and "check_part3" in got.message, got


def test_a_streamref_is_its_own_streamref():
    """The judges name streams by StreamRef.of, in the learner's process (numba streams)
    and in the grader (a transcript's StreamRefs) alike."""
    from numba import cuda

    from streamlab.streams import StreamRef

    ref = StreamRef.of(cuda.stream())
    assert StreamRef.of(ref) is ref




@pytest.mark.parametrize("lab", JUDGED)
def test_in_every_judged_lab_a_pipe_found_in_memory_writes_no_grade(tmp_path, lab):
    """The verdict pipe and its nonce, found through the garbage collector's list of
    objects, carry the part's pass to the grader; where the check is judged in the
    grader, a pass is not a grade: it received no transcript to judge, and the part
    scores nothing. (The control: the cheat did reach the pipe, or the part would have
    failed otherwise, with no verdict at all, not as Unjudged.)"""
    answers = cells_of(lab, "solution")
    first = next(iter(answers))
    cells = plan(submission(lab, {**answers, first: at_call(FINDS_THE_PIPE_IN_MEMORY,
                                                            first)}))
    judges = importlib.import_module(f"streamlab.labs.{lab.split('__')[0]}").JUDGES
    calls = [c["id"] for c in cells if c["role"] == GRADED and first in c["source"]
             and c["id"] in judges]
    assert calls, lab
    for part in calls[:1]:  # one part a lab: the forgery does not depend on the part
        got = run_part(cells, part, cwd=str(tmp_path), timeout=120, sandbox="off")
        assert not got.passed and got.kind == "Unjudged", (part, got)


# --- labs 05 and 08: what the learner's process measures, sent as data -----------------
def _sent_in_process(lab, graded_source, answers=None):
    """The transcripts lab ``lab``'s graded cell ``graded_source`` sends, run in this
    process with the solution's answers (``answers`` replacing some)."""
    ns = {"__name__": "__lab__"}
    exec(setup_code(lab), ns)  # noqa: S102
    for source in {**cells_of(lab, "solution"), **(answers or {})}.values():
        exec(source, ns)  # noqa: S102
    sent = []
    transcript._sink = sent.append
    try:
        exec(graded_source, ns)  # noqa: S102
    finally:
        transcript._sink = None
    return [transcript.write(e) for e in sent]


def _untimed(text):
    """A transcript whose data says its GPU timing was not read (as on the simulator)."""
    entry = transcript.read(text)
    data = entry["data"]
    data.update({k: None for k in ("ahead_ms", "spans") if k in data},
                **({"timed": False} if "timed" in data else {}))
    return transcript.write(entry)


@pytest.mark.parametrize("lab, part, says", [
    ("lab05__host_functions", "check_part2", "no timing of the event loop"),
    ("lab08__hardware", "check_part1", "no timing of the urgent kernel's start"),
    ("lab08__hardware", "check_part2", "no timing of the kernels"),
])
def test_a_run_that_sends_no_gpu_timing_scores_nothing_where_the_grader_has_a_gpu(
        monkeypatch, lab, part, says):
    """A timing read on a GPU only (lab 05's event loop, lab 08's head start and
    makespan) is sent as data; a run on the simulator sends none, and the judge skips
    that rule there. Data that says "not timed" (as code in the part could make it say,
    to escape the thresholds) is judged by where the grader's own process runs: on a
    GPU it scores nothing. Here the solution's transcripts, judged once as they are
    (passed), and once made to say "not timed" and judged by a judge that runs on a GPU
    (where the tests run on the simulator, they said so already)."""
    import streamlab.check

    cells = plan(submission(lab, {}))
    (cell,) = [c for c in cells if c["role"] == GRADED and c["id"] == part]
    texts = _sent_in_process(lab, cell["source"])
    passed = Verdict(True, "", f"{part}: passed\n")
    assert judge_in_grader(cells, part, texts, passed) is passed
    monkeypatch.setattr(streamlab.check, "on_simulator", lambda: False)  # (the judge's)
    got = judge_in_grader(cells, part, [_untimed(t) for t in texts], passed)
    assert not got.passed and got.kind == "CheckFailed" and says in got.message, got




def test_a_checksum_made_from_the_checks_seed_scores_nothing(tmp_path):
    """The grader makes lab 05's expected checksum from the seed, which code in the part
    can read from the check's frames and use to make the same number on the host. The
    grade does not rest on the number alone: the record must show h_out read, after the
    stream's work (an attack on the judge of lab 05 part 2)."""
    lab = "lab05__host_functions"
    cells = plan(submission(lab, dict(cells_of(lab, "solution"),
                                      checksum_when_done=CHECKSUM_FROM_THE_SEED.strip())))
    got = run_part(cells, "check_part2", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind == "CheckFailed", got
    assert "never read h_out" in got.message, got


@pytest.mark.parametrize("name", ["results as lists of numpy numbers",
                                  "the checksum as numpy's float64",
                                  "breadth-first from a list of pairs made first"])
def test_labs_05_and_08_in_other_words_score_in_the_grader(tmp_path, name):
    """Right answers whose values are of other types (sent as plain data) score."""
    import wrong_solutions.lab05__host_functions as l05
    import wrong_solutions.lab08__hardware as l08

    lab = "lab08__hardware" if name in l08.RIGHT else "lab05__host_functions"
    target, code, part = (l08.RIGHT if name in l08.RIGHT else l05.RIGHT)[name]
    answers = dict(cells_of(lab, "solution"), **{target: code.strip("\n")})
    got = run_part(plan(submission(lab, answers)), part, cwd=str(tmp_path), timeout=120,
                   sandbox="off")
    assert got.passed, got


#: the thread's "streamlab's own work" flag set by hand (not through ops.internal(), which
#: refuses code outside streamlab), around the learner's own waits
_HIDES_ITS_WAITS = '''
import streamlab.ops as _o
class internal:
    def __enter__(self): _o._tls.internal = getattr(_o._tls, 'internal', 0) + 1
    def __exit__(self, *a): _o._tls.internal -= 1
'''


@pytest.mark.parametrize("lab, part, name, code", [
    ("lab04__pipeline", "check_part1", "copy_compute_copy", '''
def copy_compute_copy(h_in, h_out, d_in, d_out, stream):
    d_in.copy_to_device(h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](d_out, d_in)
    d_out.copy_to_host(h_out, stream=stream)
    with internal():
        stream.synchronize()
'''),
    ("lab08__hardware", "check_part2", "issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    for s, x in zip(streams, xs):
        step_a[1, 1, s](x, step_ns)
        with internal():
            s.synchronize()
    for s, x in zip(streams, xs):
        step_b[1, 1, s](x, step_ns)
''')])
def test_the_learners_own_work_cannot_be_marked_as_streamlabs(tmp_path, lab, part, name, code):
    """Issue 56: a record marks what streamlab issued itself (``op.internal``), and the
    checks leave that out. A learner's code that sets the thread's flag by hand once hid
    its own waits from every judge (lab 04's part 1 and lab 08's part 2 passed, on the
    simulator, with a synchronize inside). An operation is streamlab's only when issued
    by streamlab's code inside its own internal() block, with no learner's frame between."""
    got = run_part(plan(submission(lab, {**cells_of(lab, "solution"),
                                         name: _HIDES_ITS_WAITS + code})),
                   part, cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and "you synchronized the host" in got.message, got
