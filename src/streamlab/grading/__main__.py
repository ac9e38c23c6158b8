"""``python -m streamlab.grading``: the child process that judges one graded part."""

import sys

from ._child import main

sys.exit(main())
