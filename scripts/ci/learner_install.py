"""Check the learner's install that the README's first command made in .venv: no test
tools in it, and its size what the README says. For .ci/run, right after that command
(standard library only).

    python3 scripts/ci/learner_install.py
"""

import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # start.py
from start import ROOT, VENV, venv_python  # noqa: E402  (the .venv the README's first command makes)

TEST_TOOLS = ("pytest", "nbval", "nbgrader", "playwright", "xdist")


def size_mb(folder: Path) -> float:
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total / 1e6


def stated_mb(readme: Path) -> float:
    m = re.search(r"learner's install: about ([\d,]+) MB", readme.read_text())
    if not m:
        raise SystemExit("learner_install: the README states no \"learner's install: about "
                         "N MB\"")
    return float(m.group(1).replace(",", ""))


def main() -> int:
    python = venv_python()
    code = ("import importlib.util as u; print(' '.join(m for m in %r if u.find_spec(m)))"
            % (TEST_TOOLS,))
    found = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                           check=True).stdout.split()
    if found:
        print(f"learner_install: the learner's install holds test tools: {found}",
              file=sys.stderr)
        return 1
    have, said = size_mb(VENV), stated_mb(ROOT / "README.md")
    print(f"learner_install: .venv holds {have:.0f} MB and no test tools; the README says "
          f"about {said:.0f} MB")
    if not 0.75 * said <= have <= 1.25 * said:
        print("learner_install: that is more than 25 % off: put the size measured here in "
              "the README", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
