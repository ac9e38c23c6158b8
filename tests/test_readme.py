"""The README: two quick-start commands, and an example that runs."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import pytest  # noqa: E402
import quickstart  # noqa: E402
import start  # noqa: E402


def test_quick_start_is_open_then_test():
    open_, test = quickstart.commands(ROOT / "README.md")
    assert open_ == "python3 scripts/start.py"  # sets up .venv, opens JupyterLab
    assert test == "python3 scripts/start.py test"


def test_ci_runs_the_readme_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/ci/quickstart.py README.md" in ci
    assert '"${cmds[0]} --no-browser"' in ci and "scripts/ci/lab_is_up.py" in ci
    assert 'eval "${cmds[1]}"' in ci


def test_the_start_installs_again_only_when_pyproject_or_the_extras_change(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(start, "RECORD", tmp_path / "record.json")
    monkeypatch.delenv("STREAMLAB_EXTRAS", raising=False)
    calls = []
    monkeypatch.setattr(start, "run", lambda cmd, **kw: calls.append(cmd[-1]))
    start.install(Path("python"), [])
    start.install(Path("python"), [])
    assert calls == ["."], "the same install twice"
    start.install(Path("python"), ["test"])
    start.install(Path("python"), [])  # the lessons after the tests: nothing to add
    assert calls == [".", ".[test]"]
    monkeypatch.setenv("STREAMLAB_EXTRAS", "cu13")
    start.install(Path("python"), [])
    assert calls[-1] == ".[cu13,test]"
    (tmp_path / "record.json").write_text('{"pyproject": "older", "extras": ["test"]}')
    monkeypatch.delenv("STREAMLAB_EXTRAS")
    start.install(Path("python"), [])
    assert calls[-1] == ".", "a changed pyproject.toml: installed again"


def test_without_ensurepip_the_start_fetches_pip(tmp_path, monkeypatch):
    """As on Debian without python3-venv: `python3 -m venv` fails for want of ensurepip,
    and the start makes the environment without pip and fetches pip."""
    import urllib.request

    monkeypatch.setattr(start, "VENV", tmp_path / "venv")
    real = subprocess.run

    def no_ensurepip(cmd, *args, **kwargs):
        if cmd[1:3] == ["-m", "venv"] and "--without-pip" not in cmd:
            return subprocess.CompletedProcess(cmd, 1, "", "ensurepip is not available")
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(start.subprocess, "run", no_ensurepip)
    try:
        urllib.request.urlopen(start.PIP_JSON, timeout=10).close()
    except OSError as err:  # CI reaches PyPI: it installs the course from there
        pytest.skip(f"PyPI ({start.PIP_JSON}) cannot be reached from here ({err})")
    python = start.make_venv()
    assert python == tmp_path / "venv" / "bin" / "python"
    assert real([str(python), "-m", "pip", "--version"], capture_output=True).returncode == 0


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
