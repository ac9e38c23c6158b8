"""The committed notebooks: in order, navigable, checked by nbval, executed on a GPU."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
ALL = sorted((ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb"))
NOTEBOOKS = [p for p in ALL if "__SOLUTION" not in p.name]   # the lessons, in order
SOLVED = [p for p in ALL if "__SOLUTION" in p.name]           # their solved copies


def lesson_of(path):
    """The lesson a notebook is, or is the solved copy of."""
    return path.with_name(path.name.replace("__SOLUTION", ""))


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


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem[:2] + "s" * ("SOLUTION" in p.name))
def test_navigation_at_top_and_bottom(path):
    nb = load(path)
    i = NOTEBOOKS.index(lesson_of(path))
    for cell in (nb.cells[0], nb.cells[-1]):
        assert cell.cell_type == "markdown" and "nav" in tags(cell)
        links = re.findall(r"\]\(([^)]+)\)", cell.source)
        assert "../README.md" in links
        if i > 0:
            assert NOTEBOOKS[i - 1].name in links
        if i + 1 < len(NOTEBOOKS):
            assert NOTEBOOKS[i + 1].name in links
        for link in links:
            assert (path.parent / link.split("#")[0]).exists(), link


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem[:2] + "s" * ("SOLUTION" in p.name))
def test_lesson_shape(path):
    nb = load(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[-1] is [c for c in code if "headline" in tags(c)][0], \
        "the last code cell must be the one tagged 'headline'"
    assert any("nbval-check-output" in tags(c) for c in code), "no cell is checked by nbval"
    assert any("## What you learned" in c.source for c in nb.cells if c.cell_type == "markdown")
    assert any("**Prediction.**" in c.source or "**Question.**" in c.source
               for c in nb.cells if c.cell_type == "markdown"), "no question before a result"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem[:2] + "s" * ("SOLUTION" in p.name))
def test_committed_outputs_come_from_a_gpu_run(path):
    nb = load(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "not every cell was executed"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), "cells were not run once, top to bottom"
    device = stdout(code[0])
    assert re.search(r"device: NVIDIA \S", device), \
        f"the first cell shows {device!r}: execute the notebook on a GPU (scripts/gpu/gpu-check.sh)"
    for c in code:
        errors = [o for o in c.outputs if o.get("output_type") == "error"]
        assert not errors, f"a cell failed: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert "CUDA simulator" not in stdout(code[-1])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_a_lesson_with_a_lab_links_it_at_its_end_and_the_lab_links_back(path):
    labs = sorted((ROOT / "labs").glob(f"lab{path.name[:2]}__*/lab*.ipynb"))
    nb = load(path)
    cells = [c for c in nb.cells if "your-lab" in tags(c)]
    if not labs:
        assert not cells, "a 'your lab' cell, but labs/ has no lab with this number"
        return
    assert len(cells) == 1 and nb.cells.index(cells[0]) == len(nb.cells) - 2, \
        "the 'your lab' cell (tagged your-lab) sits just above the bottom navigation"
    link = f"../labs/{labs[0].parent.name}/{labs[0].name}"
    assert f"]({link})" in cells[0].source and (path.parent / link).exists()
    lab = load(labs[0])
    assert f"../../notebooks/{path.name}" in lab.cells[0].source, "the lab must link back"


def test_readme_contents_link_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for p in NOTEBOOKS:
        assert f"(notebooks/{p.name})" in readme, f"README does not link {p.name}"


def _readable(nb):
    """The text of a notebook that a learner reads: sources, and outputs but images."""
    for cell in nb.cells:
        yield cell.source
        for out in cell.get("outputs", []):
            yield out.get("text", "")
            yield "\n".join(out.get("traceback", []))
            for kind, value in out.get("data", {}).items():
                if not kind.startswith("image/") or kind == "image/svg+xml":
                    yield value if isinstance(value, str) else str(value)


def test_the_seed_check_reads_outputs_and_skips_image_data():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", outputs=[
        nbformat.v4.new_output("stream", text="the seed says"),
        nbformat.v4.new_output("display_data", data={"image/png": "ab+SeeDcd",
                                                     "text/plain": "<Figure>"})])])
    text = "\n".join(_readable(nb))
    assert "the seed says" in text and "<Figure>" in text and "SeeD" not in text


@pytest.mark.parametrize("path", NOTEBOOKS + sorted((ROOT / "labs").glob("*/*.ipynb")),
                         ids=lambda p: p.stem[:5])
def test_learners_never_see_the_word_seed(path):
    """The source documents are named by title and author; 'seed' was the course's own
    word for them. (A random seed, ``seed=``, is another thing.) What a learner reads:
    every cell's source and every output but an image's base64 data, whose letters fell
    into "+SeeD" in one GPU run's plot."""
    text = re.sub(r"\bseed=", "", "\n".join(_readable(load(path))))
    assert not re.search(r"\bseed", text, re.I), \
        f"{path.name} says 'seed': name the source document instead"


def test_a_simulator_run_that_prints_a_warning_or_a_zero_size_fails():
    """conftest.py fails a lesson's cell, run by nbval on the simulator, that prints a
    warning or a size or rate of zero: the simulator must still show what a GPU would."""
    from conftest import sim_output_problems

    def out(text, name="stdout"):
        return {"output_type": "stream", "name": name, "text": text}

    assert sim_output_problems([out("chunks: 16 x 16.8 MB, 54.3 GB/s, 10 MB, 0.5 MB\n")]) == []
    assert sim_output_problems([out("host work 0.00469 ms\n")]) == []
    for bad in ("chunks: 16 x 0.0 MB\n", "= 0 GB/s\n", "copied 0 bytes\n"):
        assert sim_output_problems([out(bad)]), bad
    warned = sim_output_problems([out("x.py:3: RuntimeWarning: overflow\n", "stderr")])
    assert warned and "a warning" in warned[0]


def test_no_link_names_a_heading_in_a_markdown_file():
    """JupyterLab's markdown viewer opens ``file.md#heading`` at the top (seen in Chromium,
    JupyterLab 4.6): a link into a markdown file names the file, and its words the section."""
    pages = sorted(ROOT.glob("*.md")) + sorted((ROOT / "docs").glob("*.md"))
    texts = {p: p.read_text() for p in pages}
    for nb_path in ALL + sorted(ROOT.glob("labs/*/*.ipynb")) + sorted(ROOT.glob("solutions/*/*.ipynb")):
        texts[nb_path] = "\n".join(c.source for c in load(nb_path).cells
                                   if c.cell_type == "markdown")
    bad = [f"{p.relative_to(ROOT)}: {link}" for p, text in texts.items()
           for link in re.findall(r"\]\(([^)\s]+\.md#[^)\s]*)\)", text)]
    assert bad == [], bad


@pytest.mark.parametrize("path", sorted([*(ROOT / "notebooks").glob("*.ipynb"),
                                         *(ROOT / "solutions").glob("*/*.ipynb"),
                                         *(ROOT / "labs").glob("*/*.ipynb")]),
                         ids=lambda p: p.stem[:28])
def test_a_committed_notebook_is_as_jupyter_saves_it(path):
    """Opening a notebook in JupyterLab and saving it changes nothing: each committed
    notebook is byte for byte what nbformat (JupyterLab's writer) makes of it. An owed-run
    banner once wrote its cell's source as one string, which JupyterLab saves as a list of
    lines: every lesson with a banner then changed on opening (tests/test_browser.py)."""
    raw = path.read_text()
    assert nbformat.writes(nbformat.reads(raw, as_version=4)) + "\n" == raw, \
        f"{path.relative_to(ROOT)} is not as JupyterLab saves it: write it with nbformat"
