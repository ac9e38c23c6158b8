"""Attacks on the grader kept as code, used by the course's tests one by one
(tests/test_grading_sandbox.py, tests/test_transcript.py) and all together in a class
(scripts/course/make_class.py --attacks, tests/test_classroom.py): one text of each."""

#: check.fail silenced while the check runs, and put back (by a tracer, on the check's
#: return) before the guard's second look: the guard sees it as the lab set it. The code
#: kept is the first one seen: the answer runs once per attempt of an overlap check, and a
#: second run that kept the silenced code put that back (the guard then caught it, where
#: the test asks what the grader's judge does: on an H200, lab 01 part 1 measured again)
SILENCED_WHILE_CHECKED = r"""
import sys
import streamlab.check as k
kept = globals().setdefault("_KEPT", k.fail.__code__)
k.fail.__code__ = (lambda *a, **kw: None).__code__
def put_back(frame, event, arg):
    if event == "return" and frame.f_code.co_name.startswith("check_part"):
        k.fail.__code__ = kept
    return put_back
f = sys._getframe(1)
while f is not None:
    f.f_trace = put_back
    f = f.f_back
sys.settrace(put_back)
"""

#: a learner's answer that finds the grader's reporting function in memory, with no frame
#: walked (``gc.get_objects()``: the closure that holds the verdict pipe and its nonce),
#: writes a pass through it and ends the process before any check runs (issue 56,
#: mechanism 7: "the pipe found in memory")
FINDS_THE_PIPE_IN_MEMORY = '''
import gc, os
for found in gc.get_objects():
    if getattr(found, "__name__", None) == "report" and getattr(found, "__closure__", None):
        names = found.__code__.co_freevars
        if "nonce" in names or "verdict" in names:
            found(True)
            os._exit(0)
'''

#: lab 05 part 2: the checksum made on the host from the check's seed (found in a frame
#: of the check's thread) and the lab's own chunk maker; h_out never read, nothing awaited
CHECKSUM_FROM_THE_SEED = '''
import sys
import streamlab.labs.lab05 as _lab

async def checksum_when_done(stream, h_out):
    for frame in sys._current_frames().values():
        while frame is not None:
            kwargs = frame.f_locals.get("kwargs")
            if isinstance(kwargs, dict) and "seed" in kwargs and "limit_s" in kwargs:
                seed = kwargs["seed"]
            frame = frame.f_back
    await asyncio.sleep(0.01)
    return float(_lab._host_chunks(1, seed)[0].sum(dtype=np.float64))
'''
