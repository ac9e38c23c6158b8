"""The committed notebooks: in order, navigable, checked by nbval, executed on a GPU."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb"))


def load(path):
    return nbformat.read(path, as_version=4)


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def stdout(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def test_notebooks_are_numbered_in_order_and_named_for_their_topic():
    assert NOTEBOOKS, "no notebooks found"
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(len(NOTEBOOKS)))
    for p in NOTEBOOKS:
        assert re.fullmatch(r"\d\d__[a-z0-9_]+__[a-z0-9_]+\.ipynb", p.name), p.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_navigation_at_top_and_bottom(path):
    nb = load(path)
    i = NOTEBOOKS.index(path)
    for cell in (nb.cells[0], nb.cells[-1]):
        assert cell.cell_type == "markdown" and "nav" in tags(cell)
        links = re.findall(r"\]\(([^)]+)\)", cell.source)
        assert "../README.md#contents" in links
        if i > 0:
            assert NOTEBOOKS[i - 1].name in links
        if i + 1 < len(NOTEBOOKS):
            assert NOTEBOOKS[i + 1].name in links
        for link in links:
            assert (path.parent / link.split("#")[0]).exists(), link


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_lesson_shape(path):
    nb = load(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[-1] is [c for c in code if "headline" in tags(c)][0], \
        "the last code cell must be the one tagged 'headline'"
    assert any("nbval-check-output" in tags(c) for c in code), "no cell is checked by nbval"
    assert any("## What you learned" in c.source for c in nb.cells if c.cell_type == "markdown")
    assert any("**Prediction.**" in c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_committed_outputs_come_from_a_gpu_run(path):
    nb = load(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "not every cell was executed"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), "cells were not run once, top to bottom"
    device = stdout(code[0])
    assert re.search(r"device: NVIDIA \S", device), \
        f"the first cell shows {device!r}: execute the notebook on a GPU (scripts/gpu-check.sh)"
    for c in code:
        errors = [o for o in c.outputs if o.get("output_type") == "error"]
        assert not errors, f"a cell failed: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert "CUDA simulator" not in stdout(code[-1])


def test_readme_contents_link_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for p in NOTEBOOKS:
        assert f"(notebooks/{p.name})" in readme, f"README does not link {p.name}"


@pytest.mark.parametrize("path", NOTEBOOKS + sorted((ROOT / "labs").glob("*/*.ipynb")),
                         ids=lambda p: p.stem[:5])
def test_learners_never_see_the_word_seed(path):
    """The source documents are named by title and author; 'seed' was the course's own
    word for them. (A random seed, ``seed=``, is another thing.)"""
    text = re.sub(r"\bseed=", "", path.read_text())
    assert not re.search(r"\bseed", text, re.I), \
        f"{path.name} says 'seed': name the source document instead"
