"""A learner in a real browser: Playwright drives Debian's Chromium.

JupyterLab starts as the README's first command starts it, on the learner's own copy of
a course folder that git tracks.

* The first minutes: the contents table opens rendered; a link in it opens notebook 00,
  which runs to the end and shows a timeline; the learner writes exercise 1's answer, and
  JupyterLab's autosave keeps it in their copy (git sees no change in the course), through
  a restart, until `python -m streamlab reset 00` brings the stub back; a lab, run all the
  way, shows each check's message.
* Every link of the contents table and of each lesson and lab, clicked: it lands. Each
  lesson and lab opened on the way (its kernel started, and JupyterLab rewriting the
  kernel's name and Python version in it) and saved: still the course's (git status
  clean, and no file counts as the learner's).

The tests are in one file so that they run one after the other: each starts many kernels,
and two at once on CI's two cores starved each other's websockets.

Chromium comes from Debian (`apt-get install chromium`; .ci/run installs it), not from
Playwright's own download, which this machine cannot reach. Where it is missing the tests
are skipped, unless STREAMLAB_BROWSER_TEST=required (as in CI) or full, where they fail.
With STREAMLAB_BROWSER_TEST=full a link to another file is clicked too (once per file it
names), and each solved copy it opens is saved: a minute more on two cores, more than CI's
time allows, so CI checks that such a link names a file of the copy, and the link test is
run in full before a stop (the closing note says so). On a failure the page is saved as a
screenshot in test-artifacts/browser/ (CI keeps that folder).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from exercise_answers import RIGHT

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("STREAMLAB_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("STREAMLAB_ARTIFACTS", ROOT / "test-artifacts")) / "browser"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def needs_browser():
    problem = None
    try:
        import playwright  # noqa: F401
    except ImportError:
        problem = "Playwright is not installed: pip install -e '.[test]'"
    if problem is None and not Path(CHROMIUM).exists():
        problem = (f"no Chromium at {CHROMIUM}: apt-get install chromium (or set "
                   f"STREAMLAB_CHROMIUM to one)")
    if problem is not None:
        if os.environ.get("STREAMLAB_BROWSER_TEST") in ("required", "full"):
            pytest.fail(problem, pytrace=False)
        pytest.skip(problem)


#: JupyterLab saves an open notebook that changed every this many seconds (120 by default);
#: short here, so that a test can wait past an autosave
AUTOSAVE_S = 3


@pytest.fixture
def git_course(tmp_path):
    """A course folder that git tracks (a learner's clone), with the learner's copy made in
    ``my-work/`` and JupyterLab's autosave every :data:`AUTOSAVE_S` seconds there."""
    from streamlab import workspace

    course = tmp_path / "course"
    course.mkdir()
    for name in ("README.md", "notebooks", "labs", "docs", "solutions", ".gitignore"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, course / name)
    git = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    subprocess.run("git init -q && git add -A && git commit -qm course", shell=True,
                   cwd=course, env=git, check=True)
    ws = workspace.prepare(course).folder
    autosave = (ws / ".jupyter" / "settings" / "@jupyterlab" / "docmanager-extension"
                / "plugin.jupyterlab-settings")
    autosave.parent.mkdir(parents=True)
    autosave.write_text(json.dumps({"autosaveInterval": AUTOSAVE_S}))
    return course


def git_status(course) -> str:
    """What git sees changed in the course (empty: nothing)."""
    return subprocess.run(["git", "status", "--porcelain"], cwd=course, capture_output=True,
                          text=True, check=True).stdout


def cell_source(path, marker) -> str:
    """The source of the first code cell in the notebook at ``path`` that holds ``marker``."""
    nb = json.loads(Path(path).read_text())
    return next("".join(c["source"]) for c in nb["cells"]
                if c["cell_type"] == "code" and marker in "".join(c["source"]))


@pytest.fixture
def page(request):
    needs_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        yield page
        if getattr(request.node, "failed", False):  # set by conftest.py
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        browser.close()


def wait_for_idle_kernel(page):
    """Wait until the shown notebook's kernel has connected and is idle (the status bar says
    so; on a loaded machine a kernel takes seconds, and a run asked for before it connected
    was lost)."""
    page.locator(".jp-StatusBar-Widget").get_by_text(re.compile(r"\| Idle$")).first.wait_for(
        timeout=120_000)


def run_all(page):
    """Run All Cells, once the shown notebook's kernel is idle."""
    wait_for_idle_kernel(page)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()


LESSON_00 = "notebooks/00__getting_started__first_timeline.ipynb"
#: exercise 1 of lesson 00 answered (the solution kept in exercise_answers.py), the whole
#: cell as the learner leaves it
ANSWER_00 = ("from streamlab.exercises.lesson00 import SPIN_NS, check_exercise1\n\n"
             + RIGHT[("00", 1, "time_on")]["solution"].strip() + "\n\ncheck_exercise1(time_on)")


ACTIVE_SOURCE = """() => window.jupyterapp.shell.currentWidget.content.activeCell
  .model.sharedModel.getSource()"""


def type_over(page, cell, text, tries=3):
    """Click into ``cell``'s editor, select all and type ``text``, as a learner does; then
    read the cell back from JupyterLab. On a loaded machine the editor can take its focus
    after the keys were pressed (Control+A then selected nothing, and the text went in
    beside the stub): then it types again."""
    editor = cell.locator(".cm-content")
    for _ in range(tries):
        editor.click()
        page.wait_for_function("() => document.activeElement && "
                               "document.activeElement.classList.contains('cm-content')",
                               timeout=30_000)
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(text)
        if page.evaluate(ACTIVE_SOURCE) == text:
            return
    raise AssertionError(f"the cell holds {page.evaluate(ACTIVE_SOURCE)!r} after typing "
                         f"{tries} times")


def run_cell(page, cell, tries=3, started_within_s=30):
    """Shift+Enter in ``cell``, as a learner runs it; then its prompt must change (to
    ``[*]`` or a new count). On a loaded machine a key pressed before the editor had its
    focus was lost, and the cell never ran (a CI run here waited 120 s for its output):
    then the cell's editor is clicked and the key pressed again."""
    prompt = cell.locator(".jp-InputPrompt").first
    before = prompt.inner_text()
    for _ in range(tries):
        cell.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + started_within_s
        while time.monotonic() < deadline:
            if prompt.inner_text() != before:
                return
            page.wait_for_timeout(250)
    raise AssertionError(f"the cell did not start after Shift+Enter, {tries} times: its "
                         f"prompt still reads {before!r}")


def guess_before(path, marker):
    """The id and source of the guess cell that keeps back the run of the code cell holding
    ``marker`` (the nearest guess cell before it), in the learner's copy at ``path``."""
    nb = json.loads(Path(path).read_text())
    last = None
    for cell in nb["cells"]:
        if "guess" in cell["metadata"].get("streamlab", {}):
            last = cell
        elif cell["cell_type"] == "code" and marker in "".join(cell["source"]):
            assert last is not None and last["metadata"]["streamlab"]["reveal"], \
                f"no guess cell keeps the run of the cell {marker!r} in {path}"
            return last["id"], "".join(last["source"])
    raise AssertionError(f"no cell holds {marker!r} in {path}")


def wait_for_file(path, holds, what, timeout=60, shown=None):
    """Wait until ``holds(path)``; on a timeout, the message shows ``shown(path)``. A file
    caught half written (jupyter_server's atomic writing keeps a copy and writes the file
    itself in place) is read again."""
    deadline = time.monotonic() + timeout

    def holds_now(p):
        try:
            return holds(p)
        except json.JSONDecodeError:  # a save under way: Jupyter writes the file in place
            return False

    while not holds_now(Path(path)):
        if time.monotonic() >= deadline:
            now = shown(Path(path)) if shown else ""
            raise AssertionError(f"{path}: {what} within {timeout} s"
                                 + (f"; the file holds:\n{now}" if shown else ""))
        time.sleep(0.5)


def test_the_first_minutes_of_a_learner(git_course, page):
    from jupyter_server_for_tests import Server

    ws = git_course / "my-work"
    mine = ws / LESSON_00
    # (window.jupyterapp exposed: type_over reads the typed cell back through it)
    with Server("--LabApp.expose_app_in_browser=True", cwd=git_course, workspace=ws) as srv:
        page.goto(srv.base + "/")
        page.get_by_role("heading", name="Contents").first.wait_for(timeout=60_000)
        assert page.get_by_role("link", name="Eight kernels at once").count() >= 1  # labs
        page.get_by_role("link", name="Getting started: a first kernel, timing with "
                         "events, a first timeline").first.click()
        # predict before you see: a guess cell after each question; the committed timeline
        # under a question is not there until the learner has guessed, then it shows in the
        # guess cell beside the guess
        gid, guess_source = guess_before(mine, 'tl.name_stream(s, "work")')
        timeline = page.locator(".jp-CodeCell").filter(has_text='tl.name_stream(s, "work")').first
        timeline.wait_for(timeout=60_000)
        assert timeline.locator(".jp-OutputArea-output img").count() == 0, \
            "the committed timeline shows before the learner has guessed"
        guess = page.locator(".jp-CodeCell").filter(has_text=f"'{gid}'").first
        type_over(page, guess, guess_source.replace("my_guess = ...", "my_guess = 2"))
        wait_for_idle_kernel(page)  # a run asked for before the kernel connected is lost
        run_cell(page, guess)
        try:
            guess.locator(".jp-OutputArea-output").filter(has_text="Your guess: 2") \
                .wait_for(timeout=120_000)
        except Exception as e:  # say what the cell showed instead
            raise AssertionError(f"the guess cell shows {guess.inner_text()[-1500:]!r}") from e
        guess.locator(".jp-OutputArea-output img").first.wait_for(timeout=30_000)
        # and after the GPU's run, the model GPU's of the same cells, its timeline too
        guess.locator(".jp-OutputArea-output").filter(
            has_text="on a model GPU (model of an NVIDIA").first.wait_for(timeout=30_000)
        assert guess.locator(".jp-OutputArea-output img").count() >= 2, \
            "the model GPU's timeline is not shown beside the GPU's"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)  # what the learner sees, kept by CI
        guess.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "a-guess-and-the-gpu-run-together.png"))
        run_all(page)
        exercise = page.locator(".jp-CodeCell").filter(has_text="def time_on(stream)").first
        exercise.locator(".jp-OutputArea-output").filter(
            has_text="Exercise 1: not done yet").wait_for(timeout=180_000)
        # the learner writes the answer in place of the stub, and runs the cell
        type_over(page, exercise, ANSWER_00)
        run_cell(page, exercise)
        exercise.locator(".jp-OutputArea-output").filter(
            has_text="Exercise 1: passed").wait_for(timeout=60_000)

        # no save asked for: JupyterLab's autosave keeps it, in the learner's copy
        wait_for_file(mine, lambda p: cell_source(p, "def time_on") == ANSWER_00,
                      "the answer autosaved", timeout=10 * AUTOSAVE_S,
                      shown=lambda p: cell_source(p, "def time_on"))
        assert git_status(git_course) == "", "the learner's work changed the course"
        page.goto(srv.base + "/lab/tree/labs/lab02__events/lab02__events.ipynb")
        run_all(page)
        for part in (1, 2, 3):
            page.get_by_text(f"Part {part}: not done yet: write your code in the cell "
                             f"above").first.wait_for(timeout=180_000)
    # JupyterLab again, as the next day's start: the answer is where the learner left it
    with Server(cwd=git_course, workspace=ws) as srv:
        page.goto(srv.base + "/lab/tree/" + LESSON_00)
        page.locator(".jp-CodeCell").filter(has_text="return start.elapsed_time(end)"
                                            ).first.wait_for(timeout=60_000)
    assert cell_source(mine, "def time_on") == ANSWER_00
    reset = subprocess.run([sys.executable, "-m", "streamlab", "reset", "00"], cwd=git_course,
                           env=dict(os.environ, STREAMLAB_WORKSPACE=str(ws)),
                           capture_output=True, text=True)
    assert reset.returncode == 0, reset.stderr
    assert cell_source(mine, "def time_on") == cell_source(git_course / LESSON_00,
                                                           "def time_on"), "the stub is back"
    (kept,) = (ws / "old-versions").glob("00__getting_started__first_timeline.*.ipynb")
    assert cell_source(kept, "def time_on") == ANSWER_00
    assert git_status(git_course) == ""


AUTOSAVE_OFF = """async () => {
  const app = window.jupyterapp;
  if (app.commands.isToggled('docmanager:toggle-autosave'))
    await app.commands.execute('docmanager:toggle-autosave');
  return app.commands.isToggled('docmanager:toggle-autosave');
}"""
OPEN = """async ([path, factory]) => {
  const w = await window.jupyterapp.commands.execute(
    'docmanager:open', factory ? {path, factory} : {path});
  window.jupyterapp.shell.activateById(w.id);
  return w.id;
}"""
CLOSE_ALL = """() => {
  for (const w of [...window.jupyterapp.shell.widgets('main')]) {
    if (w.context) w.context.model.dirty = false;
    w.dispose();
  }
}"""
CURRENT = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  return w && w.context ? w.context.path : null;
}"""
#: the shown notebook saved, as JupyterLab's autosave saves it (the document's own save)
SAVE_CURRENT = """async () => {
  const w = window.jupyterapp.shell.currentWidget;
  if (w && w.context && w.context.path.endsWith('.ipynb')) await w.context.save();
}"""
CLOSE_CURRENT = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  if (w.context) w.context.model.dirty = false;
  w.dispose();
}"""
WHERE = """(id) => {
  const h = [...document.querySelectorAll('h1, h2, h3, h4')].find(
    e => (e.id === id || e.dataset.jupyterId === id) && e.offsetParent !== null);
  if (!h) return null;
  const panel = h.closest('.jp-WindowedPanel-outer, .jp-NotebookPanel, .jp-MarkdownViewer');
  return h.getBoundingClientRect().top - panel.getBoundingClientRect().top;
}"""
SCROLL_TOP = """() => {
  for (const e of document.querySelectorAll(
      '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer, '
      + '.jp-MarkdownViewer:not(.lm-mod-hidden)')) e.scrollTop = 0;
}"""


def in_view(page, anchor):
    """Where the heading with this id (JupyterLab's sanitizer names it data-jupyter-id) sits
    in its scrolled document, in px below the top, or None if no visible heading has it."""
    return page.evaluate(WHERE, anchor)


#: links to other files clicked too (STREAMLAB_BROWSER_TEST=full; see the top of this file)
FULL = os.environ.get("STREAMLAB_BROWSER_TEST") == "full"


def click_every_link(page, srv, ws, rel, links, dead, opened) -> int:
    """Click each of ``links`` (a locator) in the document ``rel`` of the learner's copy
    ``ws``, now shown: a link to a heading scrolls it to the top; a link to a file opens
    that file of the copy (then closed, and ``rel`` shown again). A link to a file that an
    earlier click already opened (``opened``: the same rendered target, which is all a
    click goes by) is checked to name a file of the copy, and not opened again: 148 links
    name 42 files. Links out of the course (https) are not followed: this machine reaches
    no network. Return how many links were checked; add each that failed to ``dead``."""
    files = srv.base + "/files/"  # where JupyterLab points a link to a file
    doc = [rel, "Markdown Preview" if rel.endswith(".md") else None]
    hrefs = [links.nth(i).get_attribute("href") or "" for i in range(links.count())]
    checked = 0
    for i, href in enumerate(hrefs):
        if href.startswith("https://"):
            continue
        checked += 1
        if href.startswith("#"):
            anchor = href[1:]
            page.evaluate(SCROLL_TOP)
            links.nth(i).click()
            try:
                page.wait_for_function(f"""() => {{
                  const top = ({WHERE})({anchor!r});
                  return top !== null && top >= -5 && top < 120;
                }}""", timeout=10_000)
            except Exception:  # noqa: BLE001
                dead.append(f"{rel} -> #{anchor}: heading at {in_view(page, anchor)} px")
            continue
        if not href.startswith(files):
            dead.append(f"{rel} -> {href}: not a file of the course")
            continue
        target = urllib.parse.unquote(href[len(files):].split("?")[0])
        if not (ws / target).is_file():
            dead.append(f"{rel} -> {target}: no such file")
            continue
        if target in opened or not FULL:
            continue
        links.nth(i).click()
        try:
            page.wait_for_function(f"() => ({CURRENT})() === {target!r}", timeout=20_000)
            opened.add(target)
            page.evaluate(SAVE_CURRENT)  # a notebook opened by a link, saved as it is now
        except Exception:  # noqa: BLE001
            dead.append(f"{rel} -> {target}: opened {page.evaluate(CURRENT)!r}")
        if page.evaluate(CURRENT) != rel:
            page.evaluate(CLOSE_CURRENT)
            page.evaluate(OPEN, doc)
    return checked


def test_every_link_lands_and_opening_changes_nothing(git_course, page):
    """In the learner's copy, as JupyterLab serves it, every link of the contents table
    (README.md) and of each lesson and lab, clicked: a link to a heading scrolls it to the
    top (69 of 88 did nothing while the headings held a '·'); a link to a file opens it.
    (A solved copy's markdown is its lesson's: test_lessons.py.)

    (Links to other files are clicked with STREAMLAB_BROWSER_TEST=full only; otherwise
    each is checked to name a file of the copy.)

    Every notebook opened on the way (each lesson and lab, and, in full, each solved copy
    a lesson links to) is saved as JupyterLab's autosave saves it, after its links were clicked,
    by which time its kernel has mostly connected and JupyterLab has rewritten the
    kernel's name and Python version in it. Then git sees no change in the course, and the
    copy counts none of them as the learner's work, so each still follows the course's
    next version. Autosave itself is off here: every 3 s on CI's two cores, two saves of one
    notebook raced, and JupyterLab asked whether to overwrite it ("File Changed"). The
    learner's first minutes above go through a real autosave.
    """
    from jupyter_server_for_tests import Server
    from streamlab import workspace

    ws = git_course / "my-work"
    paths = sorted(p.relative_to(ws).as_posix() for p in
                   [*(ws / "notebooks").glob("*.ipynb"), *(ws / "labs").glob("*/*.ipynb")])
    learners = [rel for rel in paths if "__SOLUTION" not in rel]
    dead, checked, opened = [], 0, set()
    with Server("--LabApp.expose_app_in_browser=True", cwd=git_course, workspace=ws) as srv:
        page.goto(srv.base + "/")
        page.get_by_role("heading", name="Contents").first.wait_for(timeout=60_000)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
        assert not page.evaluate(AUTOSAVE_OFF), "autosave could not be turned off"
        for rel in ["README.md", *learners]:
            page.evaluate(CLOSE_ALL)
            shown = page.evaluate(OPEN, [rel, "Markdown Preview" if rel.endswith(".md") else None])
            view = page.locator(f"[id='{shown}']")  # this document
            links = view.locator(".jp-RenderedMarkdown a[href]:not(.jp-InternalAnchorLink)")
            try:  # rendered a moment after the document opens
                links.first.wait_for(timeout=30_000)
            except Exception:  # noqa: BLE001
                dead.append(f"{rel}: no link rendered within 30 s")
                continue
            checked += click_every_link(page, srv, ws, rel, links, dead, opened)
            page.evaluate(SAVE_CURRENT)
        page.evaluate(CLOSE_ALL)
        log = srv.output()
    assert checked >= 200, f"only {checked} links checked: the page did not render them?"
    assert len(opened) >= 30 or not FULL, f"only {len(opened)} files opened by a click"
    assert dead == [], "\n".join(dead)
    unsaved = [rel for rel in (paths if FULL else learners)
               if f"Saving file at /{rel}" not in log]
    assert not unsaved, f"JupyterLab never saved these, so they were not tested: {unsaved}"
    assert git_status(git_course) == ""
    assert workspace.changed_by_learner(git_course, ws) == []
