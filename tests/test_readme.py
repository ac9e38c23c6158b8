"""The README: three quick-start commands, and an example that runs."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import quickstart  # noqa: E402


def test_quick_start_is_install_open_test():
    install, open_, test = quickstart.commands(ROOT / "README.md")
    assert install.startswith("python -m pip install") and ".[test]" in install
    assert open_ == "python -m streamlab lab"  # JupyterLab at the course root (test_course.py)
    assert test == "python -m pytest"


def test_ci_runs_the_readme_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/quickstart.py README.md" in ci
    assert 'eval "${cmds[0]}"' in ci and 'eval "${cmds[2]}"' in ci


def test_the_example_runs(tmp_path):
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- example:.*?-->\n```python\n(.*?)```", text, re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text("import matplotlib\nmatplotlib.use('Agg')\n" + block)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "spin 3" in r.stdout and "concurrency" in r.stdout


def test_links_to_files_in_the_repo_resolve():
    text = (ROOT / "README.md").read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code is not links
    text = re.sub(r"`[^`]*`", "", text)
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to a missing file: {target}"
