"""The wrong answers of the second half of the labs (see test_lab_answers.py, which has
the first half, and labtools.FIRST_HALF for why they are split)."""

import pytest
from labtools import SECOND_HALF, cases, cells_of
from test_lab_answers import run_in_process, wrong_answer_fails


@pytest.mark.parametrize("lab, target, code, check_id, phrase, also",
                         list(cases("WRONG", SECOND_HALF)))
def test_a_wrong_answer_fails_its_part_with_useful_feedback(lab, target, code, check_id,
                                                           phrase, also):
    wrong_answer_fails(lab, target, code, check_id, phrase, also)


@pytest.mark.gpu
@pytest.mark.parametrize("lab, target, code, check_id, phrase, also",
                         list(cases("WRONG_ON_GPU")))
def test_a_wrong_answer_only_a_gpu_can_time_fails_there(lab, target, code, check_id,
                                                       phrase, also):
    """The simulator's timeline is a model's: these pass there (lab 05 says so)."""
    wrong_answer_fails(lab, target, code, check_id, phrase, also)


class KnownHole(Exception):
    """The hole a KNOWN_HOLES case names, seen again (and nothing else going wrong)."""


_HOLE = pytest.mark.xfail(strict=True, raises=KnownHole, reason=(
    "open: found by an attack on lab 05 (see KNOWN_HOLES in "
    "tests/wrong_solutions/lab05__host_functions.py); remove a case when its hole is mended"))


def _holes():
    import streamlab

    holes = __import__("wrong_solutions.lab05__host_functions",
                       fromlist=["KNOWN_HOLES"]).KNOWN_HOLES
    for name, (kind, target, code, _why, *where) in holes.items():
        mended_here = where == ["gpu"] and streamlab.on_simulator()
        yield pytest.param(kind, target, code, id=name, marks=() if mended_here else _HOLE)


@pytest.mark.parametrize("kind, target, code", list(_holes()))
def test_lab05_holes_an_attack_found(kind, target, code):
    """Each case fails as its hole says (a right answer called a race, a wrong one passed)
    and in no other way: any other failure is this test's failure, not an expected one."""
    answers = cells_of("lab05__host_functions", "solution")
    answers[target] = code.strip("\n")
    results = run_in_process("lab05__host_functions", answers, target)
    verdict = results["check_part2"]
    if kind == "right":
        if verdict is not None and "reads h_out while" in verdict:
            raise KnownHole(verdict)
        assert all(v is None for v in results.values()), results
    else:
        if verdict is None:
            raise KnownHole("the check passed a wrong answer")
