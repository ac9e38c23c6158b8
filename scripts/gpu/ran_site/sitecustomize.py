"""Start recording what this Python process runs of streamlab (scripts/gpu/run_notebooks.py).

``run_notebooks.py`` puts this folder first on ``PYTHONPATH`` and names a folder in
``STREAMLAB_RAN_DIR`` while it executes a notebook on a GPU: the notebook's kernel, and every
Python process the notebook starts, import this at start-up (Python's ``site`` does, before
any of their code) and record with :class:`streamlab.provenance.Recorder` what they run of
the package. The kernel writes its record when the runner's last cell asks; any other
process writes its own at exit. Without ``STREAMLAB_RAN_DIR`` this does nothing but hand
over to the ``sitecustomize`` that this one hides, if there is one.
"""

import os
import sys


def _start():
    folder = os.environ.get("STREAMLAB_RAN_DIR")
    if not folder:
        return
    import atexit
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "..", "src", "streamlab", "provenance.py")
    spec = importlib.util.spec_from_file_location("_streamlab_ran_provenance", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        recorder = module.Recorder(folder).start()
    except ImportError as exc:  # no coverage.py here: the runner says so, and stamps nothing
        with open(os.path.join(folder, f"error-{os.getpid()}.txt"), "w") as f:
            f.write(f"{sys.executable} cannot record what it runs ({exc}): install "
                    f"coverage.py there (pip install coverage)")
        return
    sys.modules["_streamlab_ran_recorder"] = recorder  # the kernel's last cell finds it
    atexit.register(recorder.dump, final=True)


def _hand_over():
    """Import the sitecustomize that this one hides on sys.path, if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    me = sys.modules.pop(__name__, None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        import importlib

        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if me is not None and "sitecustomize" not in sys.modules:
            sys.modules[__name__] = me


_start()
_hand_over()
