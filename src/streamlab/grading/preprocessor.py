"""nbgrader's ``Execute``, replaced: every graded part judged in a fresh process.

``nbgrader_config.py`` puts :class:`GradeInFreshProcesses` where nbgrader's autograde
pipeline has ``Execute``. For each graded cell it runs :func:`streamlab.grading.run_part`
and writes the verdict into the cell as nbgrader reads it: the part's output as text,
and, when it failed, one error whose text is the check's message. The learner's own
cells are not executed in a kernel at all, so nothing in them can change how the graded
cells run.

With ``judged`` set (by :mod:`streamlab.grading.classroom`, which grades a class on Dask),
nothing is run here: each graded cell gets what a worker's judgement of the same
notebook showed, read from that results file, so that nbgrader's own pipeline writes the
grades (one writer) exactly as it would have after running the parts itself.
"""

from __future__ import annotations

import json
import os

from nbformat import from_dict
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor, OverwriteCells
from nbgrader.utils import is_locked
from traitlets import Enum, Integer, List, Unicode

from . import RESULTS_VERSION, cell_outputs, course_paths, graded_cells, plan, rebuild, run_part


_warned: list = []  # the teacher is told once per run that the sandbox is off


class GradeInFreshProcesses(NbGraderPreprocessor):
    """Judge each graded cell in a fresh process (see :mod:`streamlab.grading`)."""

    timeout = Integer(300, help="Seconds one graded part may run before it scores "
                      "nothing.").tag(config=True)
    protect = List(Unicode(), help="Paths the learner's code may not read while graded "
                   "(besides the course's source folder and gradebook).").tag(config=True)
    sandbox = Enum(["auto", "bwrap", "off"], "auto", help="How the course's files are kept "
                   "from the learner's code: 'auto' or 'bwrap' (bubblewrap, each part an "
                   "unprivileged user with no capability; where this system cannot make "
                   "it, grading stops and says why), 'off' (the grader's audit hook "
                   "alone, which code below Python gets past).").tag(config=True)
    judged = Unicode("", help="A results file of streamlab.grading.classroom: take each "
                     "graded cell's output from it instead of running the part "
                     "here.").tag(config=True)
    prepare = Unicode("", help="A folder: write each notebook there as nbgrader restored "
                      "it (the lab's own graded and locked cells, hidden tests included), "
                      "for streamlab.grading.classroom to judge, and grade nothing "
                      "here.").tag(config=True)

    def preprocess(self, nb, resources):
        if self.judged:
            return self._from_judged(nb, resources), resources
        coursedir = self._coursedir()
        run, notes = self._rebuilt(nb, resources, coursedir)
        if self.prepare:
            return self._prepared(nb, run, notes, resources), resources
        cwd = resources.get("metadata", {}).get("path") or os.getcwd()
        cells = plan(run)
        hide, protect = course_paths(*(
            (coursedir.root, coursedir.source_directory, coursedir.db_url)
            if coursedir is not None else ()))
        protect = list(self.protect) + protect
        for count, cell in enumerate(graded_cells(nb), 1):
            part = cell.metadata["nbgrader"]["grade_id"]
            self.log.info("Grading %s in a fresh process", part)
            verdict = run_part(cells, part, cwd=cwd, protect=protect, hide=hide,
                               timeout=self.timeout, sandbox=self.sandbox)
            if verdict.sandbox == "off: asked for" and not _warned:
                _warned.append(verdict.sandbox)
                self.log.warning("Grading without a sandbox, as asked (sandbox='off'). The "
                                 "learner's code is kept from the course's files by the "
                                 "grader's audit hook alone, which code below Python "
                                 "(ctypes) can get past.")
            cell.outputs = cell_outputs(verdict, notes)
            cell.execution_count = count
        return nb, resources

    @staticmethod
    def _rebuilt(nb, resources, coursedir):
        """The notebook to run: the lab's source notebook with the learner's answers
        (:func:`streamlab.grading.rebuild`), and its notes. Without nbgrader's course
        (the preprocessor used on its own), ``nb`` as it is."""
        import nbformat

        info = resources.get("nbgrader", {})
        if coursedir is None or not info.get("assignment") or not info.get("notebook"):
            return nb, []
        path = os.path.join(coursedir.format_path(coursedir.source_directory, ".",
                                                  info["assignment"]),
                            f"{info['notebook']}.ipynb")
        try:
            released = nbformat.read(path, as_version=4)
        except OSError as e:
            raise ValueError(f"cannot read the lab's source notebook {path} ({e}): the "
                             f"grader runs each submission as the lab was released, with "
                             f"only its answers taken from the learner's copy") from None
        return rebuild(nb, released)

    def _prepared(self, nb, run, notes, resources):
        """Write ``run``, the notebook the parts run (see ``prepare``), with ``notes`` in
        its metadata; each graded cell of ``nb`` then shows that it was not judged, so
        that a class stopped before its judgements are written scores nothing rather than
        full marks."""
        import nbformat

        info = resources.get("nbgrader", {})
        folder = os.path.join(self.prepare, str(info.get("student")))
        os.makedirs(folder, exist_ok=True)
        run.metadata["streamlab_grader_notes"] = list(notes)
        nbformat.write(run, os.path.join(folder, f"{info.get('notebook')}.ipynb"))
        for cell in graded_cells(nb):
            cell.outputs = [from_dict({
                "output_type": "error", "ename": "NotJudged", "traceback": [],
                "evalue": "not judged yet: python -m streamlab.grading class judges it"})]
        return nb

    def _from_judged(self, nb, resources):
        """Each graded cell's output as a worker judged it (see ``judged``)."""
        try:
            if getattr(self, "_judged_data", (None,))[0] != self.judged:
                with open(self.judged) as f:  # once an autograde run, not once a notebook
                    self._judged_data = (self.judged, json.load(f))
            data = self._judged_data[1]
        except (OSError, ValueError) as e:
            raise ValueError(f"GradeInFreshProcesses.judged={self.judged!r}: cannot read "
                             f"it ({e}); it is written by python -m streamlab.grading "
                             f"class") from None
        if data.get("version") != RESULTS_VERSION:
            raise ValueError(f"{self.judged}: results of version {data.get('version')!r}, "
                             f"this grader reads version {RESULTS_VERSION}: judge the class "
                             f"again with this course's python -m streamlab.grading class")
        info = resources.get("nbgrader", {})
        name = f"{info.get('student')}/{info.get('notebook')}.ipynb"
        result = data["results"].get(name)
        if result is None:
            raise ValueError(f"{self.judged} holds no judgement of {name}: it was "
                             f"submitted after the class was judged; judge the class again")
        for cell in graded_cells(nb):
            part = result["parts"].get(cell.metadata["nbgrader"]["grade_id"])
            if part is None:
                raise ValueError(f"{self.judged}: {name} has no judgement of "
                                 f"{cell.metadata['nbgrader']['grade_id']}: judge the class "
                                 f"again")
            cell.outputs = [from_dict(o) for o in part["outputs"]]
            cell.execution_count = part["execution_count"]
        return nb

    def _coursedir(self):
        owner, coursedir = self, None
        while owner is not None and coursedir is None:  # exporter -> nbgrader's converter
            coursedir = getattr(owner, "coursedir", None)
            owner = getattr(owner, "parent", None)
        return coursedir


class OverwriteCellsAsReleased(OverwriteCells):
    """nbgrader's ``OverwriteCells``, without its false alarm on every untouched copy.

    The gradebook keeps each locked cell's checksum from before its hidden tests were
    cleared (nbgrader issue 1961), so a learner's copy of a graded cell, exactly as
    released, read as changed: "Attribute 'checksum' for cell check_part1 has changed!",
    once for each such cell of every notebook. Here a locked cell that is exactly its
    released form (the gradebook's source, its hidden tests cleared as
    ``generate_assignment`` clears them) gets its hidden tests back first, and is not
    reported; a cell changed in any other way is reported and overwritten as before."""

    def preprocess_cell(self, cell, resources, cell_index):
        """Restore an untouched locked cell's hidden tests, then nbgrader's own checks."""
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None and is_locked(cell):
            try:
                source = self.gradebook.find_source_cell(grade_id, self.notebook_id,
                                                         self.assignment_id)
            except MissingEntry:
                source = None  # (nbgrader's own check below says so)
            if source is not None and source.locked and cell.source == _released(source):
                cell.source = source.source
        return super().preprocess_cell(cell, resources, cell_index)


def _released(source_cell) -> str:
    """A gradebook cell's source as ``generate_assignment`` released it."""
    cell = from_dict({"cell_type": source_cell.cell_type, "source": source_cell.source,
                      "metadata": {}})
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


class HideHiddenTests(NbGraderPreprocessor):
    """The feedback a learner gets (``nbgrader generate_feedback``) shows each graded cell
    without its hidden tests: their arguments (a seed, a count) stay the teacher's, for
    the next learner and the next term; what they found is in the cell's output. nbgrader
    shows them by default: the autograded copy holds them, restored from the gradebook."""

    def preprocess_cell(self, cell, resources, cell_index):
        """A code cell's hidden test region, removed (with a line saying so)."""
        if cell.cell_type == "code":
            hide = ClearHiddenTests(enforce_metadata=False)
            if hide._remove_hidden_test_region(cell):
                cell.source = cell.source.rstrip("\n") + "\n# (and the hidden tests, not shown)"
        return cell, resources

