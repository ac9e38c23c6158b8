"""Owed GPU runs (issue 53): a change to the code lands without a GPU, and says so. Each
notebook whose outputs are older than the code they ran is listed in docs/owed.json,
says so in a banner under its title, and is marked beside its link in the README;
scripts/gpu/owed.py writes all three and these tests hold them to the code."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

import make_lessons  # noqa: E402
import owed  # noqa: E402

provenance = owed.provenance


def test_the_ledger_the_banners_and_the_readme_are_in_step_with_the_code():
    found = owed.problems()
    assert found == [], "\n".join(found)


_MOD = "def ran():\n    return 1\n\n\ndef other():\n    return 2\n"


def _notebook(title, code, ran_lines, root, seconds=None):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "id": "nav", "metadata": {"tags": ["nav"]}, "source": "nav"},
        {"cell_type": "markdown", "id": "title", "metadata": {}, "source": f"# {title}"},
        {"cell_type": "code", "id": "c1", "metadata": {}, "source": code, "outputs": [],
         "execution_count": None}]}
    ran = provenance.ran_of([{"lines": {str(root / "mod.py"): ran_lines}}], root)
    provenance.stamp_ran(nb, "NVIDIA test", ran, at="2026-11-20T10:00:00Z")
    if seconds is not None:
        nb["metadata"][provenance.KEY]["seconds"] = seconds
    return nb


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course of one lesson (both copies) and one lab, whose GPU runs ran mod.py's
    ran() (the solved copy and the lab) or nothing of it (the learner copy)."""
    package = tmp_path / "src" / "streamlab"
    package.mkdir(parents=True)
    (package / "mod.py").write_text(_MOD)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "solutions" / "lab01__x").mkdir(parents=True)
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    files = {"notebooks/00__a__SOLUTION.ipynb": ("00 · A", "ran()", [2], 30),
             "notebooks/00__a.ipynb": ("00 · A", "pass", [1], 40),
             "solutions/lab01__x/lab01__x.ipynb": ("Lab 01 · X", "ran()", [1, 2], 500)}
    for name, (title, code, lines, seconds) in files.items():
        (tmp_path / name).write_text(json.dumps(_notebook(title, code, lines, package,
                                                          seconds)))
    (tmp_path / "README.md").write_text(
        "| 00 | [A](notebooks/00__a.ipynb) | [solved](notebooks/00__a__SOLUTION.ipynb) |\n"
        "| 01 | [X](labs/lab01__x/lab01__x.ipynb) | ready |\n")
    for name, value in (("ROOT", tmp_path), ("PACKAGE", package),
                        ("LEDGER", tmp_path / "docs" / "owed.json"),
                        ("README", tmp_path / "README.md"), ("RUNS", tmp_path / "data" / "runs")):
        monkeypatch.setattr(owed, name, value)
    monkeypatch.setattr(owed, "head", lambda: "0123456789ab")
    return tmp_path


def test_an_unlisted_stale_notebook_fails_a_listed_stale_one_passes_a_listed_current_one_fails(
        course):
    assert owed.problems() == []
    mod = course / "src" / "streamlab" / "mod.py"
    mod.write_text(_MOD.replace("return 2", "return 3"))
    assert owed.problems() == [], "a function no run ran"
    mod.write_text(_MOD.replace("return 1", "return 10"))
    found = owed.problems()
    assert any("00__a__SOLUTION.ipynb is older than its code (mod.py: ran) and not in the "
               "ledger" in p for p in found), found
    assert any("lab01__x.ipynb is older" in p for p in found), found
    assert not any("notebooks/00__a.ipynb" in p for p in found), "the learner copy ran no ran()"

    entries = owed.update()  # listed: the stale ones pass
    assert [e["notebook"] for e in entries] == ["notebooks/00__a__SOLUTION.ipynb",
                                                "solutions/lab01__x/lab01__x.ipynb"]
    assert entries[0] == {"notebook": "notebooks/00__a__SOLUTION.ipynb",
                          "outputs_from": "2026-11-20", "after_commit": "0123456789ab",
                          "changed": ["mod.py: ran"]}
    assert owed.problems() == []
    solved = json.loads((course / "notebooks/00__a__SOLUTION.ipynb").read_text())
    assert solved["cells"][2]["metadata"]["tags"] == [owed.TAG], "the banner under the title"
    assert "GPU run of 2026-11-20" in "".join(solved["cells"][2]["source"])
    assert "`mod.py: ran`" in "".join(solved["cells"][2]["source"])
    learner = json.loads((course / "notebooks/00__a.ipynb").read_text())
    assert owed.banner_of(learner) is None
    readme = (course / "README.md").read_text()
    assert "[solved](notebooks/00__a__SOLUTION.ipynb) *(outputs from a GPU run of " \
           "2026-11-20, older than its code: a new run is owed)*" in readme
    assert "[X](labs/lab01__x/lab01__x.ipynb) *(outputs from a GPU run" in readme
    assert "[A](notebooks/00__a.ipynb) |" in readme

    mod.write_text(_MOD)  # the change undone: listed, but current
    found = owed.problems()
    assert any("00__a__SOLUTION.ipynb is in the ledger but its outputs are not older" in p
               for p in found), found
    owed.update()
    assert owed.load() == [] and owed.problems() == []
    assert owed.MARK_RE.search((course / "README.md").read_text()) is None
    assert owed.banner_of(json.loads((course / "notebooks/00__a__SOLUTION.ipynb")
                                     .read_text())) is None


def test_a_ledger_banner_or_mark_out_of_step_fails(course):
    mod = course / "src" / "streamlab" / "mod.py"
    mod.write_text(_MOD.replace("return 1", "return 10"))
    owed.update()
    ledger = json.loads(owed.LEDGER.read_text())
    ledger["owed"][0]["changed"] = ["mod.py: other"]
    owed.LEDGER.write_text(json.dumps(ledger))
    assert any("the ledger says" in p for p in owed.problems())
    owed.update()
    path = course / "notebooks/00__a__SOLUTION.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"] = [c for c in nb["cells"] if owed.TAG not in c["metadata"].get("tags", [])]
    path.write_text(json.dumps(nb))
    assert any("its banner does not say" in p for p in owed.problems())
    owed.update()
    readme = owed.README.read_text()
    owed.README.write_text(owed.MARK_RE.sub("", readme, count=1))
    assert any("README.md" in p for p in owed.problems())
    owed.update()
    assert owed.problems() == []
    owed.LEDGER.write_text('{"owed": [{"notebook": "x"}]}')
    with pytest.raises(SystemExit, match="not a ledger"):
        owed.load()


def test_a_notebook_with_no_record_of_its_run_is_owed_and_says_it_shows_none(course):
    path = course / "notebooks/00__a.ipynb"
    nb = json.loads(path.read_text())
    del nb["metadata"][provenance.KEY]
    path.write_text(json.dumps(nb))
    entries = owed.update()
    assert [e["changed"] for e in entries] == [[owed.NO_RECORD]]
    assert "No GPU run of this code is kept" in owed.banner_of(json.loads(path.read_text()))
    assert "[A](notebooks/00__a.ipynb) *(no GPU run of its code is kept: a new run is owed)*" \
        in owed.README.read_text()


def test_the_next_gpu_call_runs_the_solved_copies_then_the_learner_copies_then_the_labs(course):
    (course / "src" / "streamlab" / "mod.py").write_text("def ran():\n    return 5\n")
    owed.update()  # every notebook: each ran mod.py's module body
    assert [e["notebook"] for e in owed.load()] == [
        "notebooks/00__a.ipynb", "notebooks/00__a__SOLUTION.ipynb",
        "solutions/lab01__x/lab01__x.ipynb"]
    assert owed.next_part(540) == ["notebooks/00__a__SOLUTION.ipynb", "notebooks/00__a.ipynb"]
    assert owed.next_part(50) == ["notebooks/00__a__SOLUTION.ipynb"]
    assert owed.next_part(10) == ["notebooks/00__a__SOLUTION.ipynb"], \
        "one longer than the whole budget runs alone"
    assert owed.main(["next", "--budget", "540"]) == 0


def test_each_lesson_copy_keeps_its_own_banner():
    """make_lessons leaves a solved copy's banner out of the learner copy, compares the two
    without banners, and keeps the learner copy's own when it writes it again."""
    banner = {"cell_type": "markdown", "id": owed.TAG, "metadata": {"tags": [owed.TAG]},
              "source": "> owed"}
    title = {"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# 00 · A"}
    code = {"cell_type": "code", "id": "c", "metadata": {}, "source": "x = 1", "outputs": [],
            "execution_count": None}
    solved = {"metadata": {}, "cells": [title, banner, code]}
    copy = make_lessons.learner_copy(solved, "00__a__SOLUTION.ipynb")
    assert [c["id"] for c in copy["cells"]] == ["t", "c"]
    learner = {"metadata": {}, "cells": [title, dict(banner, source="> its own"), code]}
    assert make_lessons.sources(learner) == make_lessons.sources(copy)
    make_lessons.keep_banner(copy, learner)
    assert [c["id"] for c in copy["cells"]] == ["t", owed.TAG, "c"]
    assert copy["cells"][1]["source"] == "> its own"


def test_a_labs_learner_copy_never_carries_its_solutions_banner():
    """nbgrader_config's DropRunStamp takes the banner (and the stamp) out of the copy that
    generate_assignment makes for learners: a lab's learner copy has no outputs."""
    import nbformat

    pytest.importorskip("nbgrader", reason="nbgrader_config.py needs nbgrader (a GPU machine "
                        "may lack it)")

    class Anything:
        def __getattr__(self, name):
            return self

        def __setattr__(self, name, value):
            pass

    namespace = {"get_config": Anything}
    exec(compile((ROOT / "nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"),
         namespace)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Lab"),
        nbformat.v4.new_markdown_cell("> owed", metadata={"tags": [owed.TAG]}),
        nbformat.v4.new_code_cell("x = 1")])
    nb.metadata[provenance.KEY] = {"device": "NVIDIA test"}
    out, _ = namespace["DropRunStamp"]().preprocess(nb, {})
    assert [c.source for c in out.cells] == ["# Lab", "x = 1"]
    assert provenance.KEY not in out.metadata


def test_a_banner_is_written_as_jupyterlab_saves_a_cell():
    """The banner's source is a list of lines, as JupyterLab saves a cell: a string there
    made every notebook with a banner change when a learner merely opened it."""
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# 00 · A\n"]}]}
    entry = {"changed": ["mod.py: ran"], "outputs_from": "2026-11-27"}
    cell = owed.with_banner(nb, entry)["cells"][1]
    assert owed._is_banner(cell) and isinstance(cell["source"], list) and cell["source"]
    assert "".join(cell["source"]) == owed.banner_text(entry)
