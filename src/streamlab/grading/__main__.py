"""``python -m streamlab.grading``: grading streamlab's labs, for a teacher (its help);
``python -m streamlab.grading class LAB ...``: a whole class graded on Dask
(:mod:`streamlab.grading.classroom`); ``python -m streamlab.grading part``: the child
process that judges one graded part (the grader starts it, with its task on stdin)."""

import sys

HELP = """\
python -m streamlab.grading: grade the course's labs (from the course's folder)

One learner at a time, with nbgrader's own commands (nbgrader_config.py puts streamlab's
grader in place of nbgrader's Execute: each graded part runs in a fresh process, hidden
from the course's files, with a time limit):

    nbgrader generate_assignment LAB --force     # labs/LAB from solutions/LAB, once
    nbgrader autograde LAB                        # every submitted/<learner>/LAB/LAB.ipynb
    nbgrader generate_feedback LAB                # feedback/<learner>/LAB for the learners

A whole class on Dask, with the same grades a serial autograde gives:

    python -m streamlab.grading class LAB                 # 2 worker processes here
    python -m streamlab.grading class LAB --workers 8
    python -m streamlab.grading class LAB --gpus          # one worker per GPU (dask-cuda)
    python -m streamlab.grading class --help              # every option

LAB is a lab's folder name under labs/, e.g. lab01__eight_streams. labs/README.md says
what a grade withstands, and what it does not. To try it first, on twelve example
learners whose grades are known (needs the test tools, for nbgrader):

    python scripts/course/make_class.py 12 lab02__events --out /tmp/class --grade
"""

if sys.argv[1:2] == ["class"]:
    from .classroom import main as _class

    sys.exit(_class(sys.argv[2:]))

if sys.argv[1:] == ["part"]:
    from ._child import main

    sys.exit(main())

if sys.argv[1:] in ([], ["-h"], ["--help"]):
    print(HELP, end="")
    sys.exit(0)

print(f"python -m streamlab.grading: unknown command {' '.join(sys.argv[1:])!r}\n\n{HELP}",
      end="", file=sys.stderr)
sys.exit(2)
