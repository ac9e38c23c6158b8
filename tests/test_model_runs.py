"""The model GPU's answers beside the GPU's (issue 34, item 1): each lesson's learner copy
keeps, for every cell that answers a question, what that cell gave on the simulator's
model GPU (scripts/course/model_runs.py), and the learner's guess reveals it beside the course's
GPU run. The kept runs are never older than the code they ran."""

import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from streamlab import provenance, workspace

ROOT = Path(__file__).resolve().parent.parent
import make_lessons  # noqa: E402
import model_runs  # noqa: E402

ASKING = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb"))
          if "__SOLUTION" not in p.name
          and workspace.answering_cells(json.loads(p.read_text())["cells"])]


def test_the_lessons_ask_questions():
    assert len(ASKING) >= 10, [p.name for p in ASKING]


@pytest.mark.parametrize("path", ASKING, ids=lambda p: p.stem[:24])
def test_every_answer_has_the_model_gpus_run_kept_and_not_older_than_its_code(path):
    nb = json.loads(path.read_text())
    why = provenance.stale(nb, key=provenance.MODEL_RUN_KEY)
    assert why is None, f"{path.name}: {why}"
    assert nb["metadata"][provenance.MODEL_RUN_KEY]["device"].startswith("model of an NVIDIA"), \
        "the model run names no model GPU"
    for i in workspace.answering_cells(nb["cells"]):
        cell = nb["cells"][i]
        kept = cell.get("metadata", {}).get(workspace.MODEL_OUTPUTS_KEY)
        assert kept is not None, f"{path.name}, cell {i}: no model GPU run kept"
        if cell.get("outputs"):  # what a GPU showed, the model shows too
            assert kept["outputs"], f"{path.name}, cell {i}: the model's run showed nothing"
    others = [i for i, c in enumerate(nb["cells"])
              if workspace.MODEL_OUTPUTS_KEY in c.get("metadata", {})
              and i not in workspace.answering_cells(nb["cells"])]
    assert not others, f"{path.name}: a model run kept on cells that answer nothing: {others}"


def _lesson(model=True):
    md = lambda text: {"cell_type": "markdown", "metadata": {}, "source": text}  # noqa: E731

    def code(gpu, sim):
        meta = {workspace.MODEL_OUTPUTS_KEY: {"outputs": [
            {"output_type": "stream", "name": "stdout", "text": sim}]}} if model else {}
        return {"cell_type": "code", "metadata": meta, "source": "run()", "execution_count": 1,
                "outputs": [{"output_type": "stream", "name": "stdout", "text": gpu}]}

    nb = {"metadata": {}, "cells": [
        md("**Question.** How fast?"), code("GPU: 1.00 ms\n", "model: 1.10 ms\n"),
        md("**Answer.** Fast.")]}
    if model:
        nb["metadata"][provenance.MODEL_RUN_KEY] = {"device": "model of an NVIDIA H200, not a "
                                                          "measurement"}
    return nb


def test_a_guess_reveals_the_gpu_run_and_then_the_models(tmp_path):
    view = workspace.learner_view(_lesson(), "00__x")
    guess, answer = view["cells"][1], view["cells"][2]
    assert workspace.MODEL_OUTPUTS_KEY not in answer["metadata"] and answer["outputs"] == []
    assert provenance.MODEL_RUN_KEY not in view["metadata"]
    (tmp_path / "00__x.ipynb").write_text(json.dumps(view))
    shown = io.StringIO()
    with redirect_stdout(shown):
        workspace.reveal(...,  "00__x", guess["id"], folder=tmp_path)
    assert "model" not in shown.getvalue()  # no guess: nothing, of either run
    shown = io.StringIO()
    with redirect_stdout(shown):
        workspace.reveal("about 1 ms", "00__x", guess["id"], folder=tmp_path)
    text = shown.getvalue()
    assert text.index("Your guess: about 1 ms") < text.index("GPU: 1.00 ms") < \
        text.index("model of an NVIDIA H200") < text.index("model: 1.10 ms"), text
    assert "the simulator's, which runs kernels in Python" in text


def test_a_lesson_without_a_kept_model_run_reveals_the_gpu_run_alone(tmp_path):
    view = workspace.learner_view(_lesson(model=False), "00__x")
    (tmp_path / "00__x.ipynb").write_text(json.dumps(view))
    shown = io.StringIO()
    with redirect_stdout(shown):
        workspace.reveal(3, "00__x", view["cells"][1]["id"], folder=tmp_path)
    assert "GPU: 1.00 ms" in shown.getvalue() and "simulator" not in shown.getvalue()
    assert "No GPU run" not in shown.getvalue()


def test_a_lesson_owed_its_gpu_run_says_so_in_the_reveal(tmp_path):
    """A learner copy whose code changed has no GPU outputs until its run is paid
    (scripts/gpu/owed.py lists it): the reveal says that no GPU run is kept, then the model's."""
    lesson = _lesson()
    lesson["cells"][1]["outputs"] = []
    view = workspace.learner_view(lesson, "00__x")
    (tmp_path / "00__x.ipynb").write_text(json.dumps(view))
    shown = io.StringIO()
    with redirect_stdout(shown):
        workspace.reveal(3, "00__x", view["cells"][1]["id"], folder=tmp_path)
    text = shown.getvalue()
    assert "No GPU run of these cells is kept" in text and "model: 1.10 ms" in text, text


def test_a_prose_change_keeps_the_model_run_and_a_code_change_drops_it(tmp_path, monkeypatch):
    """make_lessons rewrites a learner copy from its solved copy: where only markdown
    changed, the copy keeps the outputs of both its runs (the code they ran is the same);
    where code changed, it keeps neither, and the tests ask for both runs again."""
    solved = _lesson(model=False)
    solved["cells"][1]["outputs"] = []
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "00__x__SOLUTION.ipynb").write_text(json.dumps(solved))
    have = _lesson()
    have["metadata"][make_lessons.RUN_KEY] = {"device": "NVIDIA H100"}
    (folder / "00__x.ipynb").write_text(json.dumps(have))
    monkeypatch.setattr(make_lessons, "NOTEBOOKS", folder)
    solved["cells"][2]["source"] = "**Answer.** Fast, said again."
    (folder / "00__x__SOLUTION.ipynb").write_text(json.dumps(solved))
    assert make_lessons.main([]) == 0
    kept = json.loads((folder / "00__x.ipynb").read_text())
    assert kept["cells"][1]["metadata"][workspace.MODEL_OUTPUTS_KEY] == \
        have["cells"][1]["metadata"][workspace.MODEL_OUTPUTS_KEY]
    assert provenance.MODEL_RUN_KEY in kept["metadata"] and make_lessons.RUN_KEY in kept["metadata"]
    solved["cells"][1]["source"] = "run(faster=True)"
    (folder / "00__x__SOLUTION.ipynb").write_text(json.dumps(solved))
    assert make_lessons.main([]) == 0
    rewritten = json.loads((folder / "00__x.ipynb").read_text())
    assert workspace.MODEL_OUTPUTS_KEY not in rewritten["cells"][1]["metadata"]
    assert provenance.MODEL_RUN_KEY not in rewritten["metadata"]


def test_the_script_refuses_a_name_that_is_no_lesson():
    with pytest.raises(SystemExit, match="names no lesson"):
        model_runs.lessons(["99"])
    with pytest.raises(SystemExit, match="not a lesson's learner copy"):
        model_runs.lessons([str(ROOT / "notebooks" / "00__getting_started__first_timeline"
                                             "__SOLUTION.ipynb")])
    assert make_lessons.MODEL_OUTPUTS_KEY == workspace.MODEL_OUTPUTS_KEY
    assert make_lessons.MODEL_RUN_KEY == workspace.MODEL_RUN_KEY == provenance.MODEL_RUN_KEY
