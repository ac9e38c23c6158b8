"""Set the course up in its own virtual environment, then open it or test it.

    python3 scripts/start.py [lab] [ARGS]   # the course in JupyterLab (ARGS go to it)
    python3 scripts/start.py test [ARGS]    # the tests (ARGS go to pytest)
    python3 scripts/start.py reset NAME     # the course's version of a lesson, back

The README's two commands. Only the Python standard library is used here, so this runs on
a stock machine's own Python 3.11 to 3.13, such as Debian's or Ubuntu's, where `pip install`
outside a virtual environment is refused (PEP 668: externally-managed-environment):

* ``.venv/`` in the course folder is made on first use, with pip. Where the system's
  Python has no ``ensurepip`` (Debian without its python3-venv package), it is made
  without pip, and pip's wheel is fetched from PyPI (its SHA-256 checked) to install
  itself.
* The course is installed into it (``pip install -e .``): what a learner needs and no
  test tools. ``test`` adds the test tools (``-e ".[test]"``). An install is done again
  only when pyproject.toml changed or the extras asked for did.
  ``STREAMLAB_EXTRAS=cu13`` (or ``cu12``, ``cupti``; comma-separated) adds extras: on a
  machine with an NVIDIA driver but no CUDA toolkit, the one that matches the driver.
* Then ``python -m streamlab lab`` or ``python -m pytest`` runs from the environment,
  as this process (Ctrl-C reaches it). As root (a container), JupyterLab is allowed to
  run as root.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PIP_JSON = "https://pypi.org/pypi/pip/json"  # where pip comes from without ensurepip
RECORD = VENV / "streamlab-install.json"  # what was installed, for the next start


def say(text: str) -> None:
    print(f"start: {text}", flush=True)


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def run(cmd: list, **kw) -> None:
    say("$ " + " ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def has_pip(python: Path) -> bool:
    return subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True
                          ).returncode == 0


def make_venv() -> Path:
    """``.venv`` with pip in it (made once)."""
    python = venv_python()
    if python.exists() and has_pip(python):
        return python
    if sys.version_info < (3, 11) or sys.version_info >= (3, 14):
        sys.exit(f"start: the course needs Python 3.11, 3.12 or 3.13; this is "
                 f"{sys.version.split()[0]} ({sys.executable}). Run this script with one "
                 f"of those (python3.12 scripts/start.py).")
    say(f"making a virtual environment for the course in {VENV}")
    made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True,
                          text=True)
    if made.returncode != 0 or not has_pip(python):
        # Debian and Ubuntu ship Python without ensurepip (it is in python3-venv)
        say("this Python cannot put pip into a virtual environment (no ensurepip: on "
            "Debian or Ubuntu, the python3-venv package); making one without pip, then "
            f"fetching pip's wheel from PyPI ({PIP_JSON})")
        run([sys.executable, "-m", "venv", "--clear", "--without-pip", VENV])
        try:
            with urllib.request.urlopen(PIP_JSON, timeout=60) as r:
                files = json.load(r)["urls"]
            wheel = next(f for f in files if f["packagetype"] == "bdist_wheel")
            url = urllib.parse.urljoin(PIP_JSON, wheel["url"])  # a mirror's may be relative
            with urllib.request.urlopen(url, timeout=120) as r:
                data = r.read()
        except (OSError, ValueError, KeyError, StopIteration) as err:
            sys.exit(f"start: could not fetch pip from PyPI ({err}). Install your system's "
                     f"venv package (Debian, Ubuntu: apt install python3-venv) and run "
                     f"this again.")
        if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
            sys.exit(f"start: the pip wheel from {url} does not match its "
                     f"SHA-256 on PyPI; run this again")
        path = VENV / wheel["filename"]
        path.write_bytes(data)
        # pip runs from its own wheel to install itself (as get-pip.py does)
        run([python, f"{path}/pip", "install", "--quiet", "--no-index", path])
        path.unlink()
    return python


def install(python: Path, extras: list[str]) -> None:
    """``pip install -e .[extras]`` into the course's environment, unless the same
    install was done already with this pyproject.toml."""
    want = sorted(set(extras) | {e.strip() for e in os.environ.get(
        "STREAMLAB_EXTRAS", "").split(",") if e.strip()})
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    try:
        done = json.loads(RECORD.read_text())
    except (OSError, ValueError):
        done = {}
    same = done.get("pyproject") == digest
    have = set(done.get("extras", [])) if same else set()
    if same and set(want) <= have:
        return
    want = sorted(set(want) | have)
    target = "." + (f"[{','.join(want)}]" if want else "")
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e",
         target], cwd=ROOT)
    RECORD.write_text(json.dumps({"pyproject": digest, "extras": want}))


def main(argv: list[str]) -> int:
    verbs = ("lab", "test", "reset")
    what, args = (argv[0], argv[1:]) if argv and argv[0] in verbs else ("lab", argv)
    python = make_venv()
    install(python, ["test"] if what == "test" else [])
    if what == "test":
        cmd = [str(python), "-m", "pytest", *args]
    elif what == "reset":
        cmd = [str(python), "-m", "streamlab", "reset", *args]
    else:
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        cmd = [str(python), "-m", "streamlab", "lab", *args] + (
            ["--allow-root"] if root and "--allow-root" not in args else [])
    say("$ " + " ".join(cmd))
    os.chdir(ROOT)
    if os.name == "nt":  # no exec on Windows: wait for it
        return subprocess.run(cmd).returncode
    os.execv(cmd[0], cmd)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
