"""``python -m streamlab lab``: JupyterLab at the course root, nbgrader hidden from learners.

The server is started for real (no browser): the course's README, notebooks/ and labs/
are served, the contents open rendered, and nbgrader's pieces are off unless --teacher.
"""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

import streamlab
from jupyter_server_for_tests import Server, get

from streamlab import course as lab
from conftest import OWED

ROOT = Path(__file__).resolve().parent.parent

if importlib.util.find_spec("jupyterlab") is None:
    if streamlab.on_simulator():
        pytest.fail("JupyterLab is not installed: pip install -e '.[test]'", pytrace=False)
    pytest.skip("JupyterLab is not installed on this GPU machine (no package index); CI "
                "runs these tests", allow_module_level=True)


def test_the_course_root_is_found_from_inside_it():
    assert lab.course_root(ROOT / "notebooks") == ROOT
    assert lab.course_root(ROOT / "labs" / "lab01__eight_streams") == ROOT


def test_outside_a_course_the_error_says_where_to_run(tmp_path, monkeypatch):
    monkeypatch.setattr(lab, "__file__", str(tmp_path / "a" / "b" / "lab.py"))
    with pytest.raises(lab.CourseNotFound, match="Run this from the folder you cloned"):
        lab.course_root(tmp_path)


def test_the_learner_config_switches_nbgrader_off(tmp_path):
    lab.learner_config(tmp_path)
    server = json.loads((tmp_path / "jupyter_server_config.json").read_text())
    exts = server["ServerApp"]["jpserver_extensions"]
    assert set(exts) == set(lab.NBGRADER_SERVER_EXTENSIONS) and not any(exts.values())
    page = json.loads((tmp_path / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"][lab.NBGRADER_LAB_EXTENSION] is True


def test_the_workspace_opens_the_readme_rendered_and_is_written_once(tmp_path):
    path = lab.course_workspace(tmp_path)
    ws = json.loads(path.read_text())
    assert ws["data"]["markdownviewer-widget:README.md"]["data"] == {
        "path": "README.md", "factory": "Markdown Preview"}
    path.write_text('{"data": {}, "metadata": {"id": "streamlab"}}')  # the learner's layout
    lab.course_workspace(tmp_path)
    assert json.loads(path.read_text())["data"] == {}


def test_a_learner_gets_the_whole_course_in_their_own_copy_and_no_teacher_tools():
    import urllib.request

    lesson = "notebooks/00__getting_started__first_timeline.ipynb"
    before = (ROOT / lesson).read_bytes()
    with Server() as srv:
        assert get(srv.base + "/")[0] == 200
        for path in ("README.md", "notebooks", "labs/lab01__eight_streams", lesson):
            assert get(f"{srv.base}/api/contents/{path}?content=0")[0] == 200, path
        assert get(f"{srv.base}/api/contents/solutions?content=0")[0] == 404
        config = srv.page_config(f"/lab/workspaces/{lab.WORKSPACE}")
        assert lab.NBGRADER_LAB_EXTENSION in config["disabledExtensions"]
        assert get(srv.base + "/formgrader")[0] == 404
        # a save, as JupyterLab's autosave makes it: it lands in the copy
        status, text = get(f"{srv.base}/api/contents/{lesson}")
        model = json.loads(text)
        model["content"]["cells"][0]["source"] = "# my notes"
        body = json.dumps({"type": "notebook", "format": "json",
                           "content": model["content"]}).encode()
        import http.cookiejar

        jar = http.cookiejar.CookieJar()  # the server's XSRF cookie, as a browser keeps it
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        opener.open(f"{srv.base}/lab", timeout=30).read()
        xsrf = next(c.value for c in jar if c.name == "_xsrf")
        req = urllib.request.Request(f"{srv.base}/api/contents/{lesson}", data=body,
                                     method="PUT",
                                     headers={"Content-Type": "application/json",
                                              "X-XSRFToken": xsrf})
        with opener.open(req, timeout=30) as r:
            assert r.status == 200
        assert "# my notes" in (srv.workspace / lesson).read_text()
        assert "your own copy of the course is" in srv.output()
    assert (ROOT / lesson).read_bytes() == before, "the course's own lesson was written"


def test_a_teacher_gets_nbgrader():
    with Server("--teacher") as srv:
        config = srv.page_config()
        assert lab.NBGRADER_LAB_EXTENSION not in config["disabledExtensions"]
        assert get(srv.base + "/formgrader")[0] != 404


# --- the learner's own copy (streamlab.workspace) -----------------------------------------
from streamlab import workspace  # noqa: E402


def _course(tmp_path):
    """A small course: a lesson in two copies, a lab and its solution, docs."""
    course = tmp_path / "course"
    for d in ("notebooks", "labs/lab01__x", "solutions/lab01__x", "docs"):
        (course / d).mkdir(parents=True)
    (course / "README.md").write_text("# Contents\n")
    (course / "notebooks" / "00__start.ipynb").write_text('{"stub": 1}')
    (course / "notebooks" / "00__start__SOLUTION.ipynb").write_text('{"solved": 1}')
    (course / "labs" / "lab01__x" / "lab01__x.ipynb").write_text('{"lab": 1}')
    (course / "solutions" / "lab01__x" / "lab01__x.ipynb").write_text('{"answer": 1}')
    (course / "docs" / "gpu-results.md").write_text("figures\n")
    return course


def test_the_copy_holds_the_lessons_labs_and_docs_and_no_lab_solutions(tmp_path):
    course = _course(tmp_path)
    ws = tmp_path / "work"
    sync = workspace.prepare(course, ws)
    assert sorted(sync.new) == ["README.md", "docs/gpu-results.md",
                                "labs/lab01__x/lab01__x.ipynb", "notebooks/00__start.ipynb",
                                "notebooks/00__start__SOLUTION.ipynb"]
    assert not (ws / "solutions").exists()
    assert (ws / workspace.MARKER).exists()
    assert workspace.prepare(course, ws).new == [], "a second start copies nothing"
    assert not lab._is_course(ws), "a copy is not a course of its own"


def test_the_copy_follows_the_course_but_never_overwrites_the_learners_work(tmp_path):
    course = _course(tmp_path)
    ws = tmp_path / "work"
    workspace.prepare(course, ws)
    (ws / "notebooks" / "00__start.ipynb").write_text('{"mine": 1}')  # the learner's save
    (course / "docs" / "gpu-results.md").write_text("new figures\n")  # the course moves on
    (course / "notebooks" / "00__start.ipynb").write_text('{"stub": 2}')
    (course / "notebooks" / "01__next.ipynb").write_text('{"next": 1}')
    sync = workspace.prepare(course, ws)
    assert sync.updated == ["docs/gpu-results.md"]
    assert sync.new == ["notebooks/01__next.ipynb"]
    assert sync.both_changed == ["notebooks/00__start.ipynb"]
    assert (ws / "notebooks" / "00__start.ipynb").read_text() == '{"mine": 1}'
    assert "python -m streamlab reset 00__start" in "\n".join(sync.lines())
    (ws / "README.md").unlink()  # deleted by the learner: it comes back
    assert workspace.prepare(course, ws).new == ["README.md"]


def test_a_notebook_only_opened_is_not_the_learners_work(tmp_path):
    """JupyterLab rewrites a notebook's kernel metadata as a kernel connects, and autosaves
    it, before anything is typed (seen in Chromium: the kernelspec's display name and the
    Python version, at JupyterLab's own spacing). Such a copy still follows the course;
    a changed cell does not."""
    course = _course(tmp_path)
    committed = {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {},
                            "outputs": [], "execution_count": None}],
                 "metadata": {"kernelspec": {"display_name": "Python 3", "name": "python3"},
                              "language_info": {"name": "python", "version": "3.12.3"}},
                 "nbformat": 4, "nbformat_minor": 5}
    lesson = course / "notebooks" / "00__start.ipynb"
    lesson.write_text(json.dumps(committed, indent=1))
    ws = tmp_path / "work"
    workspace.prepare(course, ws)
    opened = json.loads(json.dumps(committed))
    opened["metadata"]["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    opened["metadata"]["language_info"]["version"] = "3.11.7"
    mine = ws / "notebooks" / "00__start.ipynb"
    mine.write_text(json.dumps(opened, indent=2, sort_keys=True) + "\n")
    assert workspace.changed_by_learner(course, ws) == []
    committed["cells"][0]["source"] = "x = 2"  # the course moves on
    lesson.write_text(json.dumps(committed, indent=1))
    assert workspace.prepare(course, ws).updated == ["notebooks/00__start.ipynb"]
    assert json.loads(mine.read_text())["cells"][0]["source"] == "x = 2"
    opened["cells"][0]["source"] = "x = 3"  # the learner's answer
    mine.write_text(json.dumps(opened, indent=1))
    assert workspace.changed_by_learner(course, ws) == ["notebooks/00__start.ipynb"]
    assert workspace.prepare(course, ws).updated == []
    (ws / "labs" / "lab01__x" / "lab01__x.ipynb").write_text("{not json")  # still theirs
    assert workspace.changed_by_learner(course, ws) == ["labs/lab01__x/lab01__x.ipynb",
                                                         "notebooks/00__start.ipynb"]


def test_reset_brings_the_course_version_back_and_keeps_the_learners(tmp_path):
    course = _course(tmp_path)
    ws = tmp_path / "work"
    with pytest.raises(workspace.WorkspaceError, match="streamlab lab` makes it"):
        workspace.reset(course, ws, "00")
    workspace.prepare(course, ws)
    assert workspace.reset(course, ws, "00") is None, "unchanged: nothing to keep"
    (ws / "notebooks" / "00__start.ipynb").write_text('{"mine": 1}')
    kept = workspace.reset(course, ws, "00")
    assert (ws / "notebooks" / "00__start.ipynb").read_text() == '{"stub": 1}'
    assert kept.parent == ws / workspace.OLD and kept.read_text() == '{"mine": 1}'
    (ws / "labs" / "lab01__x" / "lab01__x.ipynb").write_text('{"mine": 2}')
    workspace.reset(course, ws, "lab01")
    assert (ws / "labs" / "lab01__x" / "lab01__x.ipynb").read_text() == '{"lab": 1}'
    workspace.reset(course, ws, "00__start__SOLUTION")
    with pytest.raises(workspace.WorkspaceError, match="names no lesson or lab.*00, lab01"):
        workspace.reset(course, ws, "99")
    (course / "notebooks" / "00__other.ipynb").write_text("{}")
    with pytest.raises(workspace.WorkspaceError, match="could mean any of"):
        workspace.reset(course, ws, "00")


def test_a_copy_is_never_the_course_nor_a_folder_of_other_files(tmp_path):
    course = _course(tmp_path)
    with pytest.raises(workspace.WorkspaceError, match="the course folder itself"):
        workspace.prepare(course, course)
    other = tmp_path / "thesis"
    other.mkdir()
    (other / "chapter1.tex").write_text("")
    with pytest.raises(workspace.WorkspaceError, match="not a copy of the course"):
        workspace.prepare(course, other)
    assert workspace.location(course, {}) == course / workspace.FOLDER
    assert workspace.location(course, {workspace.WORKSPACE_ENV_VAR: str(other)}) == other


def test_the_course_is_found_from_inside_a_copy_within_it(tmp_path):
    course = _course(tmp_path)
    ws = workspace.prepare(course).folder  # my-work/ inside the course
    assert ws == course.resolve() / workspace.FOLDER
    assert lab.course_root(ws / "notebooks") == course.resolve()


def test_the_command_line_resets_a_lesson(tmp_path):
    import os
    import subprocess
    import sys

    course = _course(tmp_path)
    ws = tmp_path / "work"
    workspace.prepare(course, ws)
    (ws / "notebooks" / "00__start.ipynb").write_text('{"mine": 1}')
    env = dict(os.environ, STREAMLAB_WORKSPACE=str(ws), STREAMLAB_QUIET="1")
    run = subprocess.run([sys.executable, "-m", "streamlab", "reset", "00"], cwd=course,
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "the course's version is back; yours is kept in" in run.stdout
    # an open tab keeps the old version, and its save would undo the reset (issue 58)
    assert "File > Reload Notebook from Disk" in run.stdout, run.stdout
    assert (ws / "notebooks" / "00__start.ipynb").read_text() == '{"stub": 1}'
    bad = subprocess.run([sys.executable, "-m", "streamlab", "reset", "nope"], cwd=course,
                         env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "names no lesson or lab" in bad.stderr


def test_jupyterlab_renders_every_cell_and_runs_as_root(tmp_path):
    cmd = lab.command(tmp_path, ["--port=1"], as_root=True)
    settings = tmp_path / ".jupyter" / "settings"
    assert f"--LabApp.user_settings_dir={settings}" in cmd
    assert "--ServerApp.allow_root=True" in cmd
    tracker = settings / "@jupyterlab/notebook-extension/tracker.jupyterlab-settings"
    assert json.loads(tracker.read_text()) == {"windowingMode": "none"}
    tracker.write_text('{"windowingMode": "defer"}')  # the learner's own choice stays
    lab.command(tmp_path, [])
    assert "defer" in tracker.read_text()
    assert "--ServerApp.allow_root=True" not in lab.command(tmp_path, [], as_root=False)


def lessons_with_a_workspace(tmp_path):
    """A course folder holding the README and the lessons, and the learner's copy of it."""
    course = tmp_path / "course"
    course.mkdir()
    for name in ("README.md", "notebooks"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, course / name)
    return course, workspace.prepare(course).folder


def test_the_learners_copy_of_a_lesson_asks_for_a_guess_and_reveals_after_it(tmp_path):
    """Predict before you see: in the learner's copy of every lesson, each question is
    followed by a guess cell (code: ``my_guess = ...`` and a call of reveal); the outputs
    of the code between the question and its answer (the committed GPU run's) are kept in
    that cell's metadata, not under their cells; the answer is folded. Every cell's source
    and every output is still the course's, in one place or the other; the solved copies
    are the course's byte for byte. A folded answer shows its first line (JupyterLab),
    which is its title alone: nothing of the answer shows before the guess (issue 58)."""
    course, ws = lessons_with_a_workspace(tmp_path)
    questions = 0
    for src in sorted((course / "notebooks").glob("*.ipynb")):
        mine = ws / "notebooks" / src.name
        if "__SOLUTION" in src.name:
            assert mine.read_bytes() == src.read_bytes(), src.name
            continue
        theirs, view = json.loads(src.read_text()), json.loads(mine.read_text())
        guesses = [c for c in view["cells"] if "guess" in c["metadata"].get("streamlab", {})]
        kept = [c for c in view["cells"] if c not in guesses]
        # every cell's text is the course's (a cell that answers one question and asks
        # the next is two cells here: the answer folded, the question in view; a folded
        # answer's title on a line of its own, which markdown renders as a space)
        def words(cells):
            return " ".join(" ".join("".join(c["source"]) for c in cells).split())
        assert words(kept) == words(theirs["cells"]), src.name
        # and every output is the course's: under its cell, or kept for the reveal
        # (a cell with no outputs yet, as in a learner's copy owed a GPU run, reveals none)
        moved = [run["outputs"] for g in guesses for run in g["metadata"]["streamlab"]["reveal"]
                 if run["outputs"]]
        course_outputs = [c.get("outputs") for c in theirs["cells"] if c["cell_type"] == "code"]
        here = [c.get("outputs") for c in kept if c["cell_type"] == "code"]
        assert sorted(map(json.dumps, [o for o in here if o] + moved)) == \
            sorted(map(json.dumps, [o for o in course_outputs if o])), src.name
        asked, hidden = None, 0
        for i, cell in enumerate(view["cells"]):
            text = "".join(cell["source"])
            jupyter = cell["metadata"].get("jupyter", {})
            if "**Question.**" in text:
                assert not jupyter.get("source_hidden"), f"{src.name}: question {i} folded"
                assert asked is None, f"{src.name}: question {asked} has no answer"
                questions += 1
                asked, hidden = i, 0
                guess = view["cells"][i + 1]
                assert guess["cell_type"] == "code" and "guess" in guess["metadata"]["streamlab"]
                assert "my_guess = ..." in "".join(guess["source"])
                assert f"reveal(my_guess, {src.stem!r}, {guess['id']!r})" in "".join(guess["source"])
                hidden = len(guess["metadata"]["streamlab"]["reveal"])
            elif "**Answer.**" in text:
                assert jupyter.get("source_hidden") is True, (src.name, i)
                assert text.split("\n")[0] == "**Answer.**", (src.name, i, text[:80])
                # (a copy owed a GPU run, its outputs cleared when its code changed, has
                # none to keep back: reveal says so)
                assert hidden >= 1 or not any(course_outputs) and \
                    f"notebooks/{src.name}" in OWED, \
                    f"{src.name}: question {asked} keeps no output back"
                asked = None
            elif cell["cell_type"] == "code" and asked is not None and \
                    "guess" not in cell["metadata"].get("streamlab", {}):
                assert cell["outputs"] == [], (src.name, i)
        assert asked is None, f"{src.name}: question {asked} has no answer"
    assert questions >= 60, questions  # (69 when this was written)
    assert workspace.changed_by_learner(course, ws) == []
    # the learner's guess is their work: a start keeps it
    lesson = ws / "notebooks" / "00__getting_started__first_timeline.ipynb"
    nb = json.loads(lesson.read_text())
    guess = next(c for c in nb["cells"] if "guess" in c["metadata"].get("streamlab", {}))
    guess["source"] = "".join(guess["source"]).replace("my_guess = ...", "my_guess = 'About 1 ms'")
    lesson.write_text(json.dumps(nb))
    assert workspace.changed_by_learner(course, ws) == ["notebooks/" + lesson.name]
    workspace.prepare(course, ws)
    assert "About 1 ms" in lesson.read_text()


def test_reveal_shows_the_guess_beside_the_courses_run_and_nothing_before_a_guess(
        tmp_path, capsys):
    _, ws = lessons_with_a_workspace(tmp_path)
    folder = ws / "notebooks"

    def texts(cell):
        return ["".join(o.get("text", "")) for run in cell["metadata"]["streamlab"]["reveal"]
                for o in run["outputs"] if o.get("output_type") == "stream" and o.get("text")]

    # the first lesson whose learner copy has its GPU run (one owed a run has none yet)
    stem, guess = next((p.stem, c) for p in sorted(folder.glob("[0-9][0-9]__*.ipynb"))
                       if "SOLUTION" not in p.name
                       for c in json.loads(p.read_text())["cells"]
                       if "guess" in c["metadata"].get("streamlab", {}) and texts(c))
    texts = texts(guess)
    workspace.reveal(..., stem, guess["id"], folder)
    before = capsys.readouterr().out
    assert "Nothing shown yet" in before and not any(t and t in before for t in texts)
    workspace.reveal(2.5, stem, guess["id"], folder)
    after = capsys.readouterr().out
    assert "Your guess: 2.5" in after and "The course's GPU run" in after
    assert texts and all(t in after for t in texts), (texts, after)
    with pytest.raises(FileNotFoundError, match="reveal reads the course's run"):
        workspace.reveal(1, "99__no_such_lesson", guess["id"], folder)
    with pytest.raises(LookupError, match="no guess cell 'guess-0'"):
        workspace.reveal(1, stem, "guess-0", folder)


def test_reveal_reads_a_lesson_that_jupyterlab_is_saving_this_moment(tmp_path, capsys):
    """JupyterLab saves a notebook by writing the file in place: run right after typing
    the guess, reveal once read a half-written file (a browser test waited 120 s for a
    guess that never showed). It reads again until the file is whole; a file that stays
    broken is said in one line."""
    import threading

    guess = {"id": "guess-1", "cell_type": "code", "source": [], "outputs": [],
             "metadata": {"streamlab": {"guess": True, "reveal": []}}}
    whole = json.dumps({"cells": [guess], "metadata": {}, "nbformat": 4,
                        "nbformat_minor": 5})
    path = tmp_path / "00__lesson.ipynb"
    path.write_text(whole[: len(whole) // 2])  # caught half way through a save
    done = threading.Timer(0.5, path.write_text, args=(whole,))
    done.start()
    try:
        workspace.reveal(3, "00__lesson", "guess-1", tmp_path)
    finally:
        done.join()
    assert "Your guess: 3" in capsys.readouterr().out
    path.write_text(whole[:10])
    with pytest.raises(RuntimeError, match="could not be read .JupyterLab was still saving "
                                           "it.: run this cell again"):
        workspace.reveal(3, "00__lesson", "guess-1", tmp_path)
