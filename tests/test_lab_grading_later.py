"""nbgrader autograde of the second half of the labs (see test_lab_grading.py, which has
the first half: pytest-xdist's --dist loadfile gives a file to one worker, and the whole
grading took one worker five minutes while the other sat idle)."""

import pytest
from labtools import SECOND_HALF
from test_lab_grading import solution_full_marks_untouched_zero


@pytest.mark.parametrize("lab", SECOND_HALF)
def test_autograde_gives_the_solution_full_marks_and_the_untouched_lab_zero(tmp_path, lab):
    solution_full_marks_untouched_zero(tmp_path, lab)
