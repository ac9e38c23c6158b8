"""A committed output is never older than the code it ran, or says so (issues 29 and 53):
each GPU run records what it ran of the package (each function and module body, in the
kernel and in the processes it started, with the data files it read) and stamps the
notebook with a fingerprint of each (streamlab.provenance); a notebook is stale once one of
them, or its own code cells, has moved on since, and must then be run again on a GPU or be
listed as owed a run (docs/owed.json)."""

import copy
import os
from pathlib import Path

import nbformat
import pytest

from streamlab import provenance

ROOT = Path(__file__).resolve().parent.parent
EXECUTED = sorted((ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb")) + \
    sorted((ROOT / "solutions").glob("lab*/lab*.ipynb"))


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.stem[:24])
def test_committed_outputs_are_not_older_than_the_code_they_ran_or_are_owed_a_run(path):
    """A notebook's outputs are the GPU run of the code it runs now, or the notebook is
    listed in the ledger of owed runs (docs/owed.json, scripts/gpu/owed.py), which its
    banner and the README say to its reader (tests/test_owed.py)."""
    from conftest import OWED

    name = path.relative_to(ROOT).as_posix()
    nb = nbformat.read(path, as_version=4)
    why = provenance.stale(nb)
    if why is not None:
        assert name in OWED, (f"{name}: {why}; or, to land the change without a GPU, list "
                              f"it as owed: python scripts/gpu/owed.py")
        return
    assert nb.metadata[provenance.KEY]["device"].startswith("NVIDIA"), \
        "the stamp names no GPU"


def _package(tmp_path):
    """A small package to stamp against: two modules and a data file."""
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "cli.py").write_text("y = 2\n")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "gpu.json").write_text("{}")
    return tmp_path


def test_a_changed_code_cell_or_imported_module_makes_the_outputs_stale(tmp_path):
    root = _package(tmp_path)
    nb = nbformat.read(EXECUTED[0], as_version=4)
    fresh = copy.deepcopy(nb)
    provenance.stamp(fresh, "NVIDIA test", ["a.py"], root)
    assert set(fresh.metadata[provenance.KEY]["modules_sha256"]) == {"a.py",
                                                                     "profiles/gpu.json"}
    assert provenance.stale(fresh, root) is None
    edited = copy.deepcopy(fresh)
    code = next(c for c in edited.cells if c.cell_type == "code")
    code.source += "\nx = 1"
    assert "code cells changed" in provenance.stale(edited, root)
    prose = copy.deepcopy(fresh)
    next(c for c in prose.cells if c.cell_type == "markdown").source += " More words."
    assert provenance.stale(prose, root) is None, "a change of prose leaves the outputs true"
    (root / "cli.py").write_text("y = 3\n")
    assert provenance.stale(fresh, root) is None, "a module the run never imported"
    (root / "a.py").write_text("x = 2\n")
    assert "a.py" in provenance.stale(fresh, root)
    (root / "a.py").write_text("x = 1\n")
    (root / "profiles" / "gpu.json").write_text('{"a": 1}')
    assert "profiles/gpu.json" in provenance.stale(fresh, root)
    (root / "profiles" / "gpu.json").write_text("{}")
    (root / "profiles" / "other.json").write_text("{}")
    assert "profiles/other.json" in provenance.stale(fresh, root), "a new data file"
    (root / "profiles" / "other.json").unlink()
    (root / "a.py").unlink()
    assert "a.py" in provenance.stale(fresh, root), "a module gone"
    unstamped = copy.deepcopy(nb)
    unstamped.metadata.pop(provenance.KEY, None)
    assert "no record" in provenance.stale(unstamped, root)
    old = copy.deepcopy(nb)
    old.metadata[provenance.KEY] = {"device": "NVIDIA test", "code_sha256": "x",
                                    "package_sha256": "y"}
    old.metadata[provenance.KEY]["code_sha256"] = provenance.code_hash(old)
    assert "older format" in provenance.stale(old, root)


def test_the_probe_names_the_modules_a_kernel_imported(tmp_path):
    """PROBE runs in a fresh interpreter as in a notebook's kernel: what it prints names
    streamlab's modules imported there, relative to the package, and no others."""
    import subprocess
    import sys

    code = "import streamlab.provenance\n" + provenance.PROBE
    env = dict(os.environ, STREAMLAB_QUIET="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env).stdout
    names = provenance.imported(out)
    assert {"__init__.py", "provenance.py"} <= set(names), names
    assert all((provenance.PACKAGE / n).is_file() for n in names), names
    assert "course.py" not in names, "the course's command line is not a lesson's import"
    with pytest.raises(ValueError, match="expected one line"):
        provenance.imported("nothing printed")
    with pytest.raises(ValueError, match="not from"):
        provenance.imported(provenance.MARK + ' ["/elsewhere/streamlab/check.py"]')


def test_the_tests_excused_for_an_owed_notebook_are_tests():
    """conftest.READS_A_GPU_RUN names the tests that read a GPU run's outputs, whose failure
    is excused for a notebook owed a run: each must be a test that exists."""
    from conftest import READS_A_GPU_RUN

    here = Path(__file__).resolve().parent
    names = "".join(p.read_text() for p in here.glob("test_*.py"))
    for test in READS_A_GPU_RUN:
        assert f"def {test}(" in names, f"READS_A_GPU_RUN names {test}, which no test is"


def test_the_files_started_first_are_files_the_run_collects():
    """conftest._FIRST orders the slowest files first: a name there that the run does not
    collect (a learner copy, which nbval skips; a file renamed) would order nothing."""
    from conftest import _FIRST, pytest_ignore_collect

    for name in _FIRST:
        path = ROOT / name
        assert path.is_file(), f"conftest._FIRST names {name}, which does not exist"
        assert pytest_ignore_collect(path, None) is None, f"{name} is not collected"


# --- staleness by what ran (issue 53) ----------------------------------------------------

_MODULE = '''"""A module."""
import os

LIMIT = 3  # a limit


def used(x):
    """Used."""
    return helper(x) + LIMIT


def helper(x):
    return x * 2


def unused(x):
    return -x


class Box:
    size = 4

    def get(self):
        def inner():
            return self.size
        return inner()

    @property
    def twice(self):
        return self.size * 2


def one_liner(): return 1
'''


def _edited(old, new, source=_MODULE):
    assert old in source, old
    return source.replace(old, new)


def test_a_fingerprint_ignores_docstrings_comments_and_layout_and_names_what_changed():
    base = provenance.fingerprints(_MODULE)
    assert set(base) == {"<module>", "used", "helper", "unused", "Box.get", "Box.get.inner",
                         "Box.twice", "one_liner"}, sorted(base)
    same = _edited('"""Used."""', '"""Used, and said more."""')
    same = _edited("LIMIT = 3  # a limit", "LIMIT = (\n    3)", same)
    same = _edited("    return x * 2", "    # doubled\n    return (x *\n            2)", same)
    assert provenance.fingerprints(same) == base, "prose and layout are not code"

    def moved(source):
        now = provenance.fingerprints(source)
        return sorted(k for k in base.keys() | now.keys() if base.get(k) != now.get(k))

    assert moved(_edited("return x * 2", "return x * 3")) == ["helper"]
    assert moved(_edited("def used(x):", "def used(x, y=1):")) == ["used"], "a signature"
    assert moved(_edited("return self.size\n", "return self.size + 1\n")) == \
        ["Box.get.inner"], "a function inside another is its own"
    assert moved(_edited("LIMIT = 3", "LIMIT = 4")) == ["<module>"], "a module's statement"
    assert moved(_edited("    size = 4", "    size = 5")) == ["<module>"], "a class body's"
    assert moved(_edited("    @property\n", "    @staticmethod\n")) == ["<module>"], \
        "a decorator runs in the scope around the function"
    assert moved(_MODULE + "\n\ndef added():\n    return 0\n") == ["<module>", "added"], \
        "a new name in the module changes what its body defines"
    assert moved(_edited("def unused(x):\n    return -x\n\n\n", "")) == ["<module>", "unused"]


def test_a_line_that_ran_is_its_functions_and_its_defs_line_the_scope_around_it():
    lines = _MODULE.splitlines()

    def at(text):
        return next(i for i, ln in enumerate(lines, 1) if text in ln)

    assert provenance.scope_of_lines(_MODULE, [at("return x * 2")]) == {"helper"}
    assert provenance.scope_of_lines(_MODULE, [at("def helper")]) == {"<module>"}
    assert provenance.scope_of_lines(_MODULE, [at("return self.size")]) == {"Box.get.inner"}
    assert provenance.scope_of_lines(_MODULE, [at("return inner()")]) == {"Box.get"}
    assert provenance.scope_of_lines(_MODULE, [at("size = 4")]) == {"<module>"}
    # a one-line function: defined is taken as ran (stale too often, never too rarely)
    assert provenance.scope_of_lines(_MODULE, [at("one_liner")]) == {"one_liner"}


def test_fingerprints_are_the_same_on_every_python_the_course_supports(tmp_path):
    """The GPU machine stamps with its Python (3.12), CI checks with its own (3.11 here):
    the same code must have the same fingerprints on both. Checked on the package's own
    sources with each of Python 3.11 to 3.13 found on this machine."""
    import shutil
    import subprocess
    import sys

    found = {sys.executable}
    for name in ("python3.11", "python3.12", "python3.13"):
        path = shutil.which(name)
        for guess in [path] + [str(p) for p in Path("/root/.pyenv/versions").glob(
                f"{name[6:]}.*/bin/{name}")]:
            if guess and subprocess.run([guess, "-c", "pass"], capture_output=True).returncode == 0:
                found.add(guess)
                break
    code = ("import json, sys, importlib.util\n"
            f"spec = importlib.util.spec_from_file_location('p', {str(provenance.PACKAGE / 'provenance.py')!r})\n"
            "m = importlib.util.module_from_spec(spec); sys.modules['p'] = m; spec.loader.exec_module(m)\n"
            "from pathlib import Path\n"
            f"files = sorted(Path({str(provenance.PACKAGE)!r}).rglob('*.py'))\n"
            "print(json.dumps({f.name + str(i): m.fingerprints(f.read_text()) for i, f in enumerate(files)},"
            " sort_keys=True))\n")
    outs = {}
    for python in sorted(found):
        run = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        outs[python] = run.stdout
    if len(outs) < 2:
        pytest.skip(f"one Python found ({', '.join(outs)}): nothing to compare with")
    first = next(iter(outs.values()))
    assert all(o == first for o in outs.values()), \
        f"the fingerprints differ between {', '.join(outs)}"


def _ran_package(tmp_path):
    root = tmp_path / "pkg"
    (root / "profiles").mkdir(parents=True)
    (root / "mod.py").write_text(_MODULE)
    (root / "other.py").write_text("def f():\n    return 1\n")
    (root / "profiles" / "gpu.json").write_text("{}")
    return root


def _stamped(root, lines, opened=(), listed=()):
    nb = nbformat.read(EXECUTED[0], as_version=4)
    ran = provenance.ran_of([{"lines": {str(root / f): v for f, v in lines.items()},
                              "opened": [str(root / o) for o in opened],
                              "listed": [str(root / d) for d in listed]}], root)
    provenance.stamp_ran(nb, "NVIDIA test", ran)
    return nb


def test_a_run_is_stale_only_when_what_it_ran_changed(tmp_path):
    root = _ran_package(tmp_path)
    lines = _MODULE.splitlines()
    ran_lines = [i for i, ln in enumerate(lines, 1) if "return helper(x)" in ln or
                 "return x * 2" in ln or ln.startswith(("import", "LIMIT", "def "))]
    nb = _stamped(root, {"mod.py": ran_lines}, opened=["profiles/gpu.json"],
                  listed=["profiles"])
    saved = nb.metadata[provenance.KEY]
    # (one_liner: defined on the line of its body, taken as ran)
    assert set(saved["ran"]["mod.py"]) == {"<module>", "used", "helper", "one_liner"}
    assert saved["data"] == {"profiles/gpu.json": provenance._file_hash(root / "profiles"
                                                                        / "gpu.json")}
    assert saved["listed"] == {"profiles": ["gpu.json"]} and saved["at"]
    assert provenance.stale(nb, root) is None and provenance.changed(nb, root) == []
    mod = root / "mod.py"
    mod.write_text(_edited("return -x", "return -x - 1"))
    assert provenance.stale(nb, root) is None, "a function it never ran"
    (root / "other.py").write_text("def f():\n    return 2\n")
    assert provenance.stale(nb, root) is None, "a module it never imported"
    mod.write_text(_edited("return x * 2", "return x * 3"))
    assert provenance.changed(nb, root) == ["mod.py: helper"]
    assert "mod.py: helper" in provenance.stale(nb, root)
    mod.write_text(_MODULE + "\n\ndef added():\n    return 0\n")
    assert provenance.changed(nb, root) == ["mod.py: <module>"]
    mod.write_text(_MODULE)
    (root / "profiles" / "gpu.json").write_text('{"a": 1}')
    assert provenance.changed(nb, root) == ["profiles/gpu.json"]
    (root / "profiles" / "gpu.json").write_text("{}")
    (root / "profiles" / "new.json").write_text("{}")
    assert provenance.changed(nb, root) == ["profiles/new.json"], "a folder it listed"
    (root / "profiles" / "new.json").unlink()
    mod.unlink()
    assert set(provenance.changed(nb, root)) == {"mod.py: <module>", "mod.py: used",
                                                 "mod.py: helper", "mod.py: one_liner"}, \
        "a module gone"
    mod.write_text(_MODULE)
    edited = copy.deepcopy(nb)
    next(c for c in edited.cells if c.cell_type == "code").source += "\nx = 1"
    assert provenance.changed(edited, root) == ["code cells"]
    assert "code cells changed" in provenance.stale(edited, root)


_PARENT = '''
import subprocess, sys
import streamlab
streamlab.ms_to_ns(1.0)
subprocess.run([sys.executable, "-c", "import streamlab; streamlab.pick(gpu=1, sim=2)"],
               check=True)
rec = sys.modules["_streamlab_ran_recorder"]
print("FILE", rec.dump(final=True))
'''


def test_the_recorder_sees_what_a_process_and_its_children_ran(tmp_path):
    """scripts/gpu/ran_site starts the recorder in every Python process started with
    STREAMLAB_RAN_DIR set: the parent's record comes from its last call, a child's at its
    exit. What they ran is named, and what neither ran is not."""
    import json
    import subprocess
    import sys

    folder = tmp_path / "ran"
    folder.mkdir()
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim",
               NUMBA_ENABLE_CUDASIM="1", STREAMLAB_RAN_DIR=str(folder),
               PYTHONPATH=os.pathsep.join([str(ROOT / "scripts" / "gpu" / "ran_site"), str(ROOT / "src")]
                                          + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("STREAMLAB_RACE_CHECK", None)
    run = subprocess.run([sys.executable, "-c", _PARENT], capture_output=True, text=True,
                         env=env, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("ran-*.json"))]
    assert len(records) == 2, [p.name for p in folder.iterdir()]
    ran = provenance.ran_of(records)["ran"]
    assert "ms_to_ns" in ran["spin.py"], sorted(ran["spin.py"])
    assert "pick" in ran["_device.py"], "the child's call"
    assert "<module>" in ran["__init__.py"]
    assert "Timeline.plot" not in ran.get("timeline.py", {}), "never called"
    assert "provenance.py" not in ran, "the recorder is not what the run ran"


def test_a_notebook_run_is_stamped_with_what_it_ran(tmp_path):
    """scripts/gpu/run_notebooks.py, on the simulator: the stamp names the functions the
    notebook's cells ran, and goes stale when one of them changes, not when another does."""
    import shutil
    import subprocess
    import sys

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import streamlab\nprint('device:', streamlab.device_name())"),
        nbformat.v4.new_code_cell("print(streamlab.ms_to_ns(2.0))"),
        nbformat.v4.new_code_cell("print('two ms:', streamlab.ms_to_ns(2.0))",
                                  metadata={"tags": ["headline"]})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim",
               NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=os.pathsep.join(
                   [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("STREAMLAB_RACE_CHECK", None)
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu" / "run_notebooks.py"),
                          str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    done = nbformat.read(path, as_version=4)
    saved = done.metadata[provenance.KEY]
    assert "ms_to_ns" in saved["ran"]["spin.py"] and saved["at"], saved.get("ran", {}).keys()
    assert "2000000" in done.cells[1].outputs[0]["text"]
    assert provenance.stale(done) is None
    copy_root = tmp_path / "streamlab"
    shutil.copytree(provenance.PACKAGE, copy_root, ignore=shutil.ignore_patterns("__pycache__"))
    assert "Timeline.plot" not in saved["ran"].get("timeline.py", {})
    timeline = copy_root / "timeline.py"
    source = timeline.read_text()
    start = source.index("    def plot(self")
    body = source.index("\n", source.index('"""', source.index('"""', start) + 3)) + 1
    timeline.write_text(source[:body] + "        _never_run = 1\n" + source[body:])
    assert "timeline.py: Timeline.plot" not in (provenance.changed(done, copy_root) or [])
    assert provenance.stale(done, copy_root) is None, "a function the notebook never ran"
    spin = copy_root / "spin.py"
    source = spin.read_text()
    start = source.index("def ms_to_ns(")
    ret = source.index("    return ", start)
    spin.write_text(source[:ret] + "    _changed = 1\n" + source[ret:])
    assert "spin.py: ms_to_ns" in provenance.changed(done, copy_root)
