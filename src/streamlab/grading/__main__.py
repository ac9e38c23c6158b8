"""``python -m streamlab.grading``: the child process that judges one graded part;
``python -m streamlab.grading class LAB ...``: a whole class graded on Dask
(:mod:`streamlab.grading.classroom`)."""

import sys

if sys.argv[1:2] == ["class"]:
    from .classroom import main as _class

    sys.exit(_class(sys.argv[2:]))

from ._child import main  # noqa: E402

sys.exit(main())
