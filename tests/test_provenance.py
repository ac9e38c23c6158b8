"""A committed output is never older than the code it ran (issue 29): each GPU run stamps
the notebook with hashes of its code cells and of the package's modules that the run
imported, with its data files (streamlab.provenance), and these tests fail once one of
them has moved on since."""

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
def test_committed_outputs_are_not_older_than_the_code_they_ran(path):
    nb = nbformat.read(path, as_version=4)
    why = provenance.stale(nb)
    assert why is None, f"{path.relative_to(ROOT)}: {why}"
    assert provenance.KEY in nb.metadata and nb.metadata[provenance.KEY]["device"].startswith(
        "NVIDIA"), "the stamp names no GPU"


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


def test_a_notebook_awaiting_a_gpu_run_shows_no_outputs_of_other_code():
    """conftest.AWAITING_GPU_RUN excuses a notebook from the tests that read a GPU run's
    outputs (strictly: they must still fail for it). It may only list a notebook that
    exists and carries no outputs and no stamp, so a reader never sees a run of other code
    or a failed one."""
    from conftest import AWAITING_GPU_RUN, READS_A_GPU_RUN

    for name, why in AWAITING_GPU_RUN.items():
        path = ROOT / name
        assert path in EXECUTED, f"{name}: no such notebook; take it off AWAITING_GPU_RUN"
        assert why.strip(), f"{name}: say why it awaits a GPU run"
        nb = nbformat.read(path, as_version=4)
        shown = [c for c in nb.cells if c.cell_type == "code"
                 and (c.get("outputs") or c.get("execution_count"))]
        assert not shown, f"{name}: it awaits a GPU run, so its outputs must be cleared"
        assert provenance.KEY not in nb.metadata, f"{name}: a stamp of an older run"
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
