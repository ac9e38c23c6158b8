"""A committed output is never older than the code it ran (issue 29): each GPU run stamps
the notebook with hashes of its code cells and of the package (streamlab.provenance), and
these tests fail once either has moved on since."""

import copy
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


def test_a_changed_code_cell_or_package_makes_the_outputs_stale(monkeypatch):
    nb = nbformat.read(EXECUTED[0], as_version=4)
    fresh = copy.deepcopy(nb)
    provenance.stamp(fresh, "NVIDIA test")
    assert provenance.stale(fresh) is None
    edited = copy.deepcopy(fresh)
    code = next(c for c in edited.cells if c.cell_type == "code")
    code.source += "\nx = 1"
    assert "code cells changed" in provenance.stale(edited)
    prose = copy.deepcopy(fresh)
    next(c for c in prose.cells if c.cell_type == "markdown").source += " More words."
    assert provenance.stale(prose) is None, "a change of prose alone leaves the outputs true"
    monkeypatch.setattr(provenance, "package_hash", lambda root=None: "0" * 64)
    assert "package changed" in provenance.stale(fresh)
    unstamped = copy.deepcopy(nb)
    unstamped.metadata.pop(provenance.KEY, None)
    assert "no record" in provenance.stale(unstamped)


def test_the_package_hash_reads_every_source_file(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text("{}")
    before = provenance.package_hash(tmp_path)
    (tmp_path / "sub" / "b.json").write_text('{"a": 1}')
    assert provenance.package_hash(tmp_path) != before
    (tmp_path / "notes.txt").write_text("not a source")
    after = provenance.package_hash(tmp_path)
    assert provenance.package_hash(tmp_path) == after


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
