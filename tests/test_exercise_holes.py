"""Holes a review found in the check of exercise 09.1 once it took cuda.core calls
(2026-11-26), kept as strict expected failures until the check is mended: each mark comes
off when the check judges the case right. (Exercise 08.2's holes are mended; their cases
are kept answers now. The checks are modules every GPU run of those lessons imports;
mending them means running the lessons on a GPU again.)"""

import pytest
from test_exercises import run

from streamlab.check import CheckFailed

SCRATCH = ("09", 1, "scratch_step")

#: wrong answers that pass today
WRONG_PASSING = {
    "a second allocation, in another stream, never used or freed": (SCRATCH, """
from cuda.core import Device
def scratch_step(mr, stream, d_x):
    Device().allocate(4 * d_x.size, stream=Device().create_stream())
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
"""),
}

#: right answers refused today
RIGHT_REFUSED = {
    "the device's own allocate, which takes the same pool": (SCRATCH, """
from cuda.core import Device
def scratch_step(mr, stream, d_x):
    buf = Device().allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
"""),
}


@pytest.mark.parametrize("key, source", list(WRONG_PASSING.values()), ids=list(WRONG_PASSING))
@pytest.mark.xfail(strict=True, raises=pytest.fail.Exception,
                   reason="open: the check passes it (see the module)")
def test_a_wrong_answer_the_check_passes_today(key, source):
    with pytest.raises(CheckFailed):
        run(*key, source)


@pytest.mark.parametrize("key, source", list(RIGHT_REFUSED.values()), ids=list(RIGHT_REFUSED))
@pytest.mark.xfail(strict=True, raises=CheckFailed,
                   reason="open: the check refuses it (see the module)")
def test_a_right_answer_the_check_refuses_today(key, source):
    run(*key, source)
