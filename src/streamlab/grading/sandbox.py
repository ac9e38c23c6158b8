"""Where a graded part runs: a sandbox that holds the submission and the Python it needs.

The grader (:func:`streamlab.grading.run_part`) runs each part in a fresh process. With
bubblewrap (``bwrap``, Debian's package ``bubblewrap``) that process sees:

* the machine's files read-only, the GPU's device files, a fresh empty ``/tmp``, and
  only its own processes (a ``/proc`` of its own);
* in place of each *hidden* folder (the course: its solutions, tests, gradebook, other
  learners' submissions), an empty folder, with only what the part needs put back
  read-only: the Python installation, the folders on its ``sys.path``, and streamlab;
* its working folder, which holds the submission alone, writable;
* an unprivileged user (``nobody``) in a user namespace of its own, with every
  capability dropped, whether or not the grader runs as root; no network, and a session
  of its own.

So learner code cannot read the course's files by any means (Python, ``ctypes``, a
program it starts), not only by the calls the grader's audit hook sees, and cannot undo
the sandbox: as root with its capabilities, a part unmounted the folder that hid the
course, remounted ``/`` writable and set its own score in the gradebook (issue 56); here
an unmount, a remount or a write outside its folder is refused (``tests/
test_grading_sandbox.py``). Where bubblewrap is missing, or the system does not let it
make these namespaces (some containers), :func:`status` says why, and the grader grades
only if the teacher turned the sandbox off by name (``sandbox="off"``), with the audit
hook alone.

>>> cmd = wrap(["python3", "-m", "x"], hide=["/course"], keep=["/course/.venv", "/usr"],
...            cwd="/course/autograded/ada/lab01", bwrap="/usr/bin/bwrap")
>>> cmd[cmd.index("--tmpfs", cmd.index("/tmp") + 1) + 1]
'/course'
>>> cmd[cmd.index("/course/.venv") - 1]
'--ro-bind'
>>> cmd[-4:]
['--', 'python3', '-m', 'x']
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys

SANDBOX_MODES = ("auto", "bwrap", "off")


class SandboxError(RuntimeError):
    """The sandbox was required (mode "bwrap") and this system cannot make one."""


def inside(path: str, roots) -> bool:
    """Is ``path`` one of ``roots`` or in one of them (all real paths)?"""
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


@functools.lru_cache(maxsize=None)
def status(bwrap: str | None = None) -> tuple[str | None, str]:
    """``(path of bwrap, "")`` where a sandbox can be made here, else ``(None, why not)``."""
    found = bwrap or shutil.which("bwrap")
    if not found:
        return None, ("bubblewrap (bwrap) is not installed: on Debian or Ubuntu, "
                      "`apt install bubblewrap`")
    import tempfile

    import streamlab

    # the probe is made as a part's sandbox is: a hidden folder, a working folder in it;
    # where this process has a GPU, the part must have it too (else streamlab would fall
    # back to the simulator in the sandbox, and grade no timing)
    gpu = not streamlab.on_simulator()
    code = ("import sys, streamlab\n"
            "if streamlab.on_simulator():\n"
            "    sys.exit('no GPU in the sandbox: ' + streamlab.describe())\n") if gpu else \
        "import streamlab.grading"
    with tempfile.TemporaryDirectory(prefix="streamlab-probe-") as hidden:
        work = os.path.join(hidden, "work")
        os.mkdir(work)
        command = wrap([sys.executable, "-c", code], hide=[hidden],
                       keep=needed(sys.executable, os.environ, [hidden]), cwd=work,
                       bwrap=found)
        try:
            probe = subprocess.run(command, capture_output=True, text=True, timeout=60,
                                   env=dict(os.environ, STREAMLAB_QUIET="1"))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{found} could not run: {exc}"
    if probe.returncode != 0:
        lines = (probe.stderr or probe.stdout).strip().splitlines()
        why = lines[-1] if lines else f"exit status {probe.returncode}"
        return None, (f"{found} cannot make a sandbox for grading on this system ({why}); "
                      f"run the grader where user namespaces are allowed, or as root")
    return found, ""


@functools.lru_cache(maxsize=None)
def _child_sys_path(executable: str, pythonpath: str) -> tuple[str, ...]:
    """The ``sys.path`` a fresh ``executable`` starts with (its site-packages, the
    editable installs' folders, ``PYTHONPATH``), without importing anything of ours."""
    env = dict(os.environ, PYTHONPATH=pythonpath) if pythonpath else \
        {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import json, sys; print(json.dumps([p for p in sys.path if p]))"
    out = subprocess.run([executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, cwd="/").stdout
    return tuple(json.loads(out))


def needed(executable: str = sys.executable, env: dict | None = None,
           hide=()) -> list[str]:
    """The folders a grading process reads to run: Python's own, its ``sys.path``, and
    streamlab's package (an editable install's is in the course's ``src/``); never one
    that holds a folder of ``hide`` (that would give the whole course back)."""
    import importlib.util

    env = os.environ if env is None else env
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix,
             os.path.dirname(os.path.realpath(executable))}
    paths.update(_child_sys_path(executable, env.get("PYTHONPATH", "")))
    spec = importlib.util.find_spec("streamlab")
    if spec is not None and spec.submodule_search_locations:
        paths.update(spec.submodule_search_locations)
    hide = [os.path.realpath(h) for h in hide]
    out = []
    for p in paths:
        real = os.path.realpath(p)
        if os.path.exists(real) and not any(inside(h, [real]) for h in hide):
            out.append(real)  # a folder, or a zip on sys.path
    return sorted(set(out))


def wrap(command: list[str], *, hide, keep, cwd: str, bwrap: str) -> list[str]:
    """``command`` run by bubblewrap: ``hide`` emptied, ``keep`` (what inside them the
    process needs) put back read-only, ``cwd`` writable, a fresh ``/tmp``."""
    hide = sorted({os.path.realpath(h) for h in hide})
    cwd = os.path.realpath(cwd)
    # a process namespace of its own and a /proc of it: the machine's /proc would show
    # every other process's view of the files (/proc/PID/root, /proc/PID/cwd), which
    # leads past the hidden folders (a cheat read the course's tests that way); every
    # other namespace too (no network), a user namespace in which the part is nobody
    # with no capability (as root with them, a part undid the mounts: issue 56), and a
    # session of its own (no keystrokes pushed into the grader's terminal)
    args = [bwrap, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
            "--cap-drop", "ALL", "--new-session", "--die-with-parent",
            "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev",
            "--proc", "/proc", "--tmpfs", "/tmp"]
    hidden = ["/tmp"] + hide
    for h in hide:
        args += ["--tmpfs", h]
    for k in sorted({os.path.realpath(k) for k in keep}):
        # put back only what a hidden folder covered; never a folder that holds one
        # (that would put the whole course back)
        if inside(k, hidden) and not any(inside(h, [k]) for h in hide):
            args += ["--ro-bind", k, k]
    args += ["--bind", cwd, cwd, "--chdir", cwd, "--setenv", "HOME", "/tmp",
             "--setenv", "MPLCONFIGDIR", "/tmp/matplotlib", "--"]
    return args + list(command)
