"""The wrong answers of the second half of the labs (see test_lab_answers.py, which has
the first half, and labtools.FIRST_HALF for why they are split)."""

import pytest
from labtools import SECOND_HALF, cases
from test_lab_answers import wrong_answer_fails


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
