"""The learner's own copy of the course, as nbgrader's fetch gives a student a copy.

``python -m streamlab lab`` opens JupyterLab on this copy, never on the course's tracked
files: what a learner writes, runs and saves (JupyterLab saves on its own every two
minutes) stays in the copy, and the course stays as it was committed. The copy is made on
first use, in ``my-work/`` inside the course folder (ignored by git), or where
``STREAMLAB_WORKSPACE`` says. It holds the contents table (``README.md``), the lessons (the
solved copies too, which the contents table links), the labs, ``docs/`` and the run records
that its pages link to (``data/``); not the labs' solutions.

Each start brings the copy up to date with the course, file by file:

* a file missing from the copy is copied (a new lesson, or one the learner deleted);
* a file the learner never changed follows the course when the course changes it;
* a file the learner changed is theirs: it is never overwritten. When the course has
  changed it too, the start says so, and ``python -m streamlab reset NAME`` takes the
  course's version (the learner's own is kept in ``old-versions/``).

**Predict before you see.** In the learner's copy of a lesson (not in its solved copy,
nor in the course's files), each **Question.** is followed by a guess cell, a code cell
where the learner writes ``my_guess = ...`` (:func:`learner_view`). The outputs of the code
cells between the question and its **Answer.** (the committed GPU run's numbers and
timelines) are not under those cells in the learner's copy: they are kept in the guess
cell's metadata, and running the guess cell with a guess shows the guess and that run
together (:func:`reveal`). The answer's text is folded with JupyterLab's own cell metadata
(``jupyter.source_hidden``): one click on its bar opens it.

``my-work/.streamlab-workspace.json`` records the hash of each file as it was copied; that
is how a learner's change is told from the course's. A notebook's hash leaves out what
JupyterLab rewrites the moment a kernel connects, before anything is typed (the kernel's
name and Python version in the notebook's metadata, :data:`KERNEL_METADATA`): a lesson
only opened, and saved by JupyterLab's autosave, is not the learner's change, and still
follows the course.

>>> import tempfile
>>> course = Path(tempfile.mkdtemp())
>>> for d in ("notebooks", "labs", "solutions"): (course / d).mkdir()
>>> _ = (course / "README.md").write_text("# Contents")
>>> _ = (course / "notebooks" / "00__start.ipynb").write_text("{}")
>>> ws = course / FOLDER
>>> prepare(course, ws).new
['README.md', 'notebooks/00__start.ipynb']
>>> _ = (ws / "notebooks" / "00__start.ipynb").write_text('{"mine": 1}')
>>> kept = reset(course, ws, "00")
>>> (ws / "notebooks" / "00__start.ipynb").read_text(), kept.parent.name
('{}', 'old-versions')
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FOLDER", "MARKER", "WORKSPACE_ENV_VAR", "KERNEL_METADATA", "GUESS", "Sync", "WorkspaceError",
           "location", "prepare", "reset", "course_files", "changed_by_learner", "content_hash",
           "learner_view", "reveal", "GUESS_CELL", "MODEL_OUTPUTS_KEY", "MODEL_RUN_KEY",
           "answering_cells"]

#: the learner's copy, inside the course folder (ignored by git)
FOLDER = "my-work"
#: the copy's record of what was copied: marks a folder as a copy, not a course
MARKER = ".streamlab-workspace.json"
#: where the copy goes instead of ``my-work/`` (a path)
WORKSPACE_ENV_VAR = "STREAMLAB_WORKSPACE"
#: where reset keeps the learner's own version of a file
OLD = "old-versions"
_SKIP = {".ipynb_checkpoints", "__pycache__"}
#: a notebook's metadata that JupyterLab writes from the kernel it connects (seen: the
#: kernelspec's display name and the Python version), not the learner's work
KERNEL_METADATA = ("kernelspec", "language_info")


class WorkspaceError(RuntimeError):
    """The learner's copy cannot be made or reset as asked; the message says why."""


@dataclass
class Sync:
    """What :func:`prepare` did: files copied, files that followed the course, and the
    learner's changed files that the course has changed too (left as they are)."""

    folder: Path
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    both_changed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What a start prints about the copy, in plain words."""
        out = [f"streamlab: your own copy of the course is {self.folder}: what you write "
               f"and save stays there (the course's files are never changed)."]
        if self.new:
            out.append(f"streamlab: copied {len(self.new)} file(s) of the course into it.")
        if self.updated:
            out.append(f"streamlab: {len(self.updated)} file(s) you had not changed now "
                       f"follow the course: {', '.join(self.updated[:5])}"
                       + (" ..." if len(self.updated) > 5 else ""))
        for rel in self.both_changed:
            out.append(f"streamlab: the course changed {rel}, which you changed too; yours "
                       f"is left as it is. `python -m streamlab reset {Path(rel).stem}` "
                       f"takes the course's version and keeps yours in {OLD}/.")
        return out


def location(course: Path, environ=os.environ) -> Path:
    """Where the learner's copy of ``course`` is: ``STREAMLAB_WORKSPACE``, else
    ``my-work/`` in the course folder."""
    chosen = (environ.get(WORKSPACE_ENV_VAR) or "").strip()
    return Path(chosen).expanduser().resolve() if chosen else course / FOLDER


def _number(text: str):
    """A JSON number as JupyterLab's JavaScript writes it back: ``1.0`` becomes ``1``."""
    value = float(text)
    return int(value) if value.is_integer() and abs(value) < 2 ** 53 else value


def content_hash(path: Path) -> str:
    """SHA-256 of what the learner can change in ``path``: its bytes, or for a notebook its
    JSON without :data:`KERNEL_METADATA`, whatever the spacing, and with a whole number
    written ``1.0`` or ``1`` alike (JupyterLab writes numbers as JavaScript does). A
    notebook that is not valid JSON is hashed as bytes.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "a.ipynb"
    >>> _ = p.write_text('{"cells": [], "metadata": {"kernelspec": {"display_name": "Python 3"}}}')
    >>> h = content_hash(p)
    >>> _ = p.write_text('{"metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)"}}, '
    ...                  ' "cells": []}')
    >>> content_hash(p) == h
    True
    >>> _ = p.write_text('{"cells": [{"x": 1.0}], "metadata": {}}')
    >>> h = content_hash(p)
    >>> _ = p.write_text('{"cells": [{"x": 1}], "metadata": {}}')
    >>> content_hash(p) == h
    True
    """
    return _hash(path.read_bytes(), path.suffix)


def _hash(data: bytes, suffix: str) -> str:
    if suffix == ".ipynb":
        try:
            nb = json.loads(data, parse_float=_number)
        except ValueError:
            nb = None
        if isinstance(nb, dict):
            meta = nb.get("metadata")
            if isinstance(meta, dict):
                nb["metadata"] = {k: v for k, v in meta.items() if k not in KERNEL_METADATA}
            data = json.dumps(nb, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()



#: the first line of the cell put after each question in the learner's copy of a lesson
GUESS = "# Your guess, before you run the cells below: a number, or which one it is, and why."
#: the cell itself (a code cell: the guess is recorded in the notebook, and running it shows
#: the course's GPU run beside it)
GUESS_CELL = (GUESS + "\nmy_guess = ...\n"
              "# Then run this cell: your guess and the course's GPU run appear together.\n"
              "from streamlab.workspace import reveal; reveal(my_guess, {notebook!r}, {cell!r})")
#: what marks the cells :func:`learner_view` made or folded (cell metadata)
VIEW_KEY = "streamlab"
#: in a lesson's learner copy, the model GPU's run of a cell that answers a question (cell
#: metadata: ``{"outputs": [...]}``), and the record of that run (notebook metadata: the
#: model, and what the run ran, as :mod:`streamlab.provenance` stamps it). Written by
#: ``scripts/course/model_runs.py``, which runs the copy on Numba's simulator
MODEL_OUTPUTS_KEY = "streamlab_model"
MODEL_RUN_KEY = "streamlab_model_run"


def answering_cells(cells: list) -> list[int]:
    """The indices of the code cells that answer a question: those after a
    **Question.** markdown cell and before its **Answer.**, whose outputs the learner's
    copy shows only after a guess (:func:`learner_view` moves them; a markdown cell that
    holds an answer and then the next question closes one and opens the other)."""
    found, asking = [], False
    for i, cell in enumerate(cells):
        text = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            if "**Answer.**" in text:
                asking = False
            if "**Question.**" in text:  # (as learner_view: a guess cell follows it)
                asking = True
        elif cell.get("cell_type") == "code" and asking:
            found.append(i)
    return found


def learner_view(nb: dict, name: str = "") -> dict:
    """The learner's copy of lesson notebook ``nb`` (a dict, as ``json.load`` reads it;
    ``name``: its file name, without ``.ipynb``): after each **Question.** markdown cell,
    a **Your guess.** code cell; the outputs of the code cells between the question and
    its **Answer.** (the committed GPU run's) taken out of those cells and kept in the
    guess cell's metadata, which :func:`reveal` shows once the learner has guessed; the
    answer folded (JupyterLab's ``jupyter.source_hidden``). Every cell's source is as the
    course has it.

    >>> md = lambda text: {"cell_type": "markdown", "metadata": {}, "source": text}
    >>> code = lambda out: {"cell_type": "code", "metadata": {}, "source": "run()",
    ...                     "outputs": [out], "execution_count": 1}
    >>> view = learner_view({"cells": [md("**Question.** How fast?"), code("1 ms"),
    ...                                md("**Answer.** Fast."), code("2 ms")]}, "00__x")
    >>> [c["cell_type"] for c in view["cells"]]
    ['markdown', 'code', 'code', 'markdown', 'code']
    >>> view["cells"][1]["source"][-1]
    "from streamlab.workspace import reveal; reveal(my_guess, '00__x', 'guess-1')"
    >>> view["cells"][1]["metadata"]["streamlab"]["reveal"][0]["outputs"], view["cells"][2]["outputs"]
    (['1 ms'], [])
    >>> view["cells"][3]["metadata"]["jupyter"], view["cells"][4]["outputs"]
    ({'source_hidden': True}, ['2 ms'])
    """
    out = json.loads(json.dumps(nb))  # a copy: the course's notebook stays as it is
    if not isinstance(out.get("cells"), list):
        return out
    model_label = (out.get("metadata", {}).pop(MODEL_RUN_KEY, None) or {}).get("device")
    cells, guess = [], None
    split = _split_answers_from_questions(out["cells"])
    answering = set(answering_cells(split))
    for i, cell in enumerate(split):
        text = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown" and "**Answer.**" in text and guess:
            meta = cell.setdefault("metadata", {})
            meta.setdefault("jupyter", {})["source_hidden"] = True
            # a folded cell shows its first line: the title alone, nothing of the answer
            # (markdown renders the line break as a space, so the answer reads the same)
            cell["source"] = _title_alone(text).splitlines(keepends=True)
            guess = None
        elif i in answering:
            model = cell.get("metadata", {}).pop(MODEL_OUTPUTS_KEY, None)
            if cell.get("outputs") or model:
                shown = {"source": text.splitlines()[0] if text else "",
                         "outputs": cell.get("outputs", [])}
                if model and model.get("outputs"):
                    shown["model"] = model["outputs"]
                guess["metadata"][VIEW_KEY]["reveal"].append(shown)
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
        if cell.get("cell_type") == "markdown" and "**Question.**" in text:
            # as JupyterLab writes a cell back (an id, the source as a list of lines), so
            # that a lesson only opened and saved is not the learner's change
            cell_id = f"guess-{len(cells)}"
            view = {"guess": True, "reveal": []}
            if model_label:
                view["model"] = model_label
            guess = {"cell_type": "code", "id": cell_id, "execution_count": None,
                     "metadata": {VIEW_KEY: view}, "outputs": [],
                     "source": GUESS_CELL.format(notebook=name, cell=cell_id)
                     .splitlines(keepends=True)}
            cells.append(guess)
    out["cells"] = cells
    return out


def reveal(guess, notebook: str, cell: str, folder: Path | None = None) -> None:
    """Show the learner's ``guess`` beside the course's GPU run of the cells that answer the
    question (kept in the guess cell ``cell`` of ``notebook``, the lesson's file name
    without ``.ipynb``, in ``folder``: the kernel's working folder, where JupyterLab runs a
    notebook). With no guess yet (``...``, None or blank), it says so and shows nothing."""
    if guess is ... or guess is None or (isinstance(guess, str) and not guess.strip()):
        print("Nothing shown yet: write your guess in place of `...` above (a number, or "
              "which one it is and why), then run this cell again.")
        return
    path = Path(folder or Path.cwd()) / f"{notebook}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is not here: reveal reads the course's run from the lesson's own file. "
            f"Run the lesson from its folder (JupyterLab does), or pass folder=")
    import time

    for _ in range(50):  # JupyterLab's save writes the file in place: it may be half written
        try:
            nb = json.loads(path.read_text())
            break
        except json.JSONDecodeError:
            time.sleep(0.1)
    else:
        raise RuntimeError(f"{path.name} could not be read (JupyterLab was still saving it): "
                           f"run this cell again")
    found = [c for c in nb.get("cells", []) if c.get("id") == cell]
    if not found:
        raise LookupError(f"{path.name} has no guess cell {cell!r}: it was deleted or "
                          f"renamed. `python -m streamlab reset {notebook[:2]}` gives back the "
                          f"lesson as the course has it (your copy is kept in old-versions/)")
    view = found[0].get("metadata", {}).get(VIEW_KEY, {})
    shown = view.get("reveal", [])
    print(f"Your guess: {guess}")
    for run in shown:
        if run["outputs"]:
            print(f"\nThe course's GPU run of the cell beginning `{run['source']}`:")
            _show(run["outputs"])
    if not any(run["outputs"] for run in shown):
        print("\nNo GPU run of these cells is kept: the code of this lesson changed after "
              "its last one, and a new run is owed (the note under the lesson's title says "
              "so).")
    predicted = [run for run in shown if run.get("model")]
    if predicted:
        print(f"\nThe same cells on Numba's simulator, where streamlab replays what they "
              f"issue on a model GPU ({view.get('model') or 'a model GPU'}): its event "
              f"times and timelines are the model's prediction. A time read from the host's "
              f"own clock is the simulator's, which runs kernels in Python, far slower than "
              f"a GPU.")
        for run in predicted:
            print(f"\nThe model's run of the cell beginning `{run['source']}`:")
            _show(run["model"])
    print("\nThe answer is the folded cell below: click its bar to open it. Run the cells "
          "above it to see your own machine's run.")


def _show(outputs: list) -> None:
    """Show a cell's saved outputs (its printed text, its pictures) under this cell."""
    from IPython.display import display

    for output in outputs:
        kind = output.get("output_type") if isinstance(output, dict) else None
        if kind == "stream":
            print("".join(output.get("text", "")), end="")
        elif kind in ("display_data", "execute_result"):
            display(output.get("data", {}), raw=True, metadata=output.get("metadata", {}))


def _title_alone(text: str) -> str:
    """An answer's markdown with ``**Answer.**`` alone on its first line: JupyterLab shows
    a folded cell's first line, and it must show nothing of the answer before the guess.

    >>> _title_alone("**Answer.** Fast: 2 ms.")
    '**Answer.**\\nFast: 2 ms.'
    >>> _title_alone("Read this first. **Answer.** Fast.")
    '**Answer.**\\nRead this first. Fast.'
    """
    before, _, after = text.partition("**Answer.**")
    return "**Answer.**\n" + " ".join(part for part in (before.strip(), after.strip()) if part)


def _split_answers_from_questions(cells: list) -> list:
    """A markdown cell that answers one question and then asks the next, as two cells
    (the answer, to be folded; the question, to stay in view), each as JupyterLab writes a
    cell back (an id, the source as a list of lines)."""
    out = []
    for cell in cells:
        text = "".join(cell.get("source", ""))
        if cell.get("cell_type") != "markdown" or "**Answer.**" not in text or \
                "**Question.**" not in text or \
                text.index("**Answer.**") > text.index("**Question.**"):
            out.append(cell)
            continue
        cut = text.index("**Question.**")
        answer, question = text[:cut].rstrip("\n"), text[cut:]
        first = dict(cell, source=answer.splitlines(keepends=True))
        second = dict(cell, metadata={}, source=question.splitlines(keepends=True))
        if "id" in cell:
            second["id"] = f"{cell['id']}-question"[:64]
        out += [first, second]
    return out


def _copied_bytes(rel: str, src: Path) -> bytes:
    """What the learner's copy of course file ``rel`` holds: a lesson's learner view, every
    other file as it is."""
    data = src.read_bytes()
    if rel.startswith("notebooks/") and rel.endswith(".ipynb") and "__SOLUTION" not in rel:
        try:
            nb = json.loads(data)
        except ValueError:
            return data
        view = learner_view(nb, Path(rel).stem) if isinstance(nb, dict) else nb
        if view != nb:  # (a lesson without questions is copied byte for byte)
            return (json.dumps(view, indent=1, ensure_ascii=False) + "\n").encode()
    return data


def course_files(course: Path) -> dict[str, Path]:
    """The files of ``course`` that a learner works in or reads, by path relative to the
    course: the contents table, the lessons (both copies), the labs, docs/ and the run
    records its pages link to (data/)."""
    files = {"README.md": course / "README.md"}
    for top in ("notebooks", "labs", "docs", "data"):
        base = course / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(course)
            if path.is_file() and not _SKIP.intersection(rel.parts):
                files[rel.as_posix()] = path
    return files


def _record(ws: Path) -> dict:
    path = ws / MARKER
    if not path.exists():
        return {"files": {}}
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise WorkspaceError(f"{path} cannot be read ({err}): move it away and start again; "
                             f"your files stay, and the course's changes will not "
                             f"overwrite the ones that differ from the course") from None
    if not isinstance(record.get("files"), dict):
        raise WorkspaceError(f"{path} is not a record of a course copy: move it away and "
                             f"start again")
    return record


def _save(ws: Path, record: dict) -> None:
    (ws / MARKER).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def _check_place(course: Path, ws: Path) -> None:
    if ws.resolve() == course.resolve():
        raise WorkspaceError(f"{WORKSPACE_ENV_VAR} names the course folder itself ({course}): the "
                             f"copy must be a folder of its own, or your saves would "
                             f"change the course")
    if ws.exists() and not ws.is_dir():
        raise WorkspaceError(f"{ws} is a file, not a folder: set {WORKSPACE_ENV_VAR} to a folder")
    if ws.is_dir() and any(ws.iterdir()) and not (ws / MARKER).exists():
        raise WorkspaceError(f"{ws} already holds files that are not a copy of the course "
                             f"(no {MARKER} in it): choose an empty or new folder with "
                             f"{WORKSPACE_ENV_VAR}")


def prepare(course: Path, ws: Path | None = None) -> Sync:
    """Make ``ws`` (default: :func:`location`) the learner's up-to-date copy of
    ``course`` (see the module); return what was done."""
    course = Path(course).resolve()
    ws = location(course) if ws is None else Path(ws)
    _check_place(course, ws)
    ws.mkdir(parents=True, exist_ok=True)
    record = _record(ws)
    copied = record["files"]
    record["course"] = str(course)
    sync = Sync(ws)
    for rel, src in course_files(course).items():
        dst = ws / rel
        data = _copied_bytes(rel, src)
        theirs = _hash(data, src.suffix)
        if not dst.exists():
            sync.new.append(rel)
        else:
            mine = content_hash(dst)
            if mine == theirs:
                copied[rel] = theirs
                continue
            if mine != copied.get(rel):  # the learner changed it: theirs to keep
                if copied.get(rel) != theirs:
                    sync.both_changed.append(rel)
                continue
            sync.updated.append(rel)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
        copied[rel] = theirs
    _save(ws, record)
    return sync


def changed_by_learner(course: Path, ws: Path | None = None) -> list[str]:
    """The files of the learner's copy that differ from what was copied into it (their
    own work, which a start leaves as it is), by path relative to the copy."""
    course = Path(course).resolve()
    ws = location(course) if ws is None else Path(ws)
    copied = _record(ws)["files"]
    return [rel for rel in sorted(copied) if (ws / rel).is_file()
            and content_hash(ws / rel) != copied[rel]]


def _match(files: dict[str, Path], name: str) -> list[str]:
    """The course files ``name`` means: a path, a file name, or the start of one
    (``00``, ``lab02``); the learner's copy of a lesson before its solved copy."""
    name = name.strip().rstrip("/")
    if name in files:
        return [name]
    hits = [rel for rel in files if Path(rel).name == name or Path(rel).stem == name]
    if not hits:
        hits = [rel for rel in files if Path(rel).name.startswith(name)
                and rel.endswith(".ipynb")]
    if "SOLUTION" not in name:  # "00" means the learner's copy, not the solved one
        hits = [rel for rel in hits if "__SOLUTION" not in rel] or hits
    return hits


def reset(course: Path, ws: Path | None, name: str) -> Path | None:
    """Put the course's version of the file ``name`` names back in the learner's copy;
    return where the learner's own version was kept (``old-versions/``), or None when it
    was the course's already."""
    course = Path(course).resolve()
    ws = location(course) if ws is None else Path(ws)
    if not (ws / MARKER).exists():
        raise WorkspaceError(f"there is no copy of the course at {ws} yet: "
                             f"`python -m streamlab lab` makes it")
    files = course_files(course)
    hits = _match(files, name)
    if not hits:
        lessons = sorted(Path(r).name for r in files if r.endswith(".ipynb")
                         and "__SOLUTION" not in r)
        raise WorkspaceError(f"{name!r} names no lesson or lab of the course; name one by "
                             f"the start of its file name, as in: "
                             f"{', '.join(n.split('__')[0] for n in lessons)}")
    if len(hits) > 1:
        raise WorkspaceError(f"{name!r} could mean any of {', '.join(hits)}: give more of "
                             f"the name")
    (rel,) = hits
    record = _record(ws)
    dst, src = ws / rel, files[rel]
    data = _copied_bytes(rel, src)
    kept = None
    if dst.exists() and content_hash(dst) != _hash(data, src.suffix):
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M%S")
        kept = ws / OLD / f"{dst.stem}.{stamp}{dst.suffix}"
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dst, kept)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(data)
    record["files"][rel] = _hash(data, src.suffix)
    _save(ws, record)
    return kept
