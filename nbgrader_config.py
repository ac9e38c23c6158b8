"""nbgrader for the course: solutions/ is the source, labs/ the learners' copy.

    nbgrader generate_assignment lab01__eight_streams --force   # labs/ from solutions/
    nbgrader autograde lab01__eight_streams                     # grade submitted/
    nbgrader generate_feedback lab01__eight_streams             # feedback/ for learners

Run from the repository root. See the README's "Labs" section.

Grading does not execute the learner's notebook in a kernel: each graded cell is judged
in a fresh process of its own (streamlab.grading), guarded against learner code that
replaces the checks, refused the solutions and the gradebook, and stopped at a time
limit. nbgrader's own Execute is replaced by it below; the rest of nbgrader's autograde
pipeline is its default.
"""

import os

from nbconvert.preprocessors import ClearMetadataPreprocessor, Preprocessor
from nbgrader.converters import Autograde, GenerateAssignment, GenerateFeedback
from traitlets import Bool
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    IgnorePattern,
    LimitOutput,
    OverwriteCells,
    SaveAutoGrades,
)

from streamlab.grading.preprocessor import (GradeInFreshProcesses, HideHiddenTests,
                                            OverwriteCellsAsReleased)

c = get_config()  # noqa: F821  (nbgrader provides get_config)

c.CourseDirectory.root = os.path.abspath(".")  # (absolute: nbgrader warns of a relative one)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"

# nbgrader's default autograde pipeline, with Execute replaced (tests/test_labs.py keeps
# this list in step with nbgrader's own).
c.Autograde.autograde_preprocessors = [
    GradeInFreshProcesses,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]
# nbgrader's restoring of the teacher's cells, as it is, but silent on a graded cell that
# is exactly as released: nbgrader warned "checksum ... has changed!" for each one of
# every untouched notebook (its gradebook keeps the checksum from before the hidden tests
# were cleared: nbgrader issue 1961)
c.Autograde.sanitize_preprocessors = [
    OverwriteCellsAsReleased if p is OverwriteCells else p
    for p in Autograde.class_traits()["sanitize_preprocessors"].default()
]
# The learner's feedback without the hidden tests' source (their seeds and counts): what
# they found is in each graded cell's output
c.GenerateFeedback.preprocessors = [
    *GenerateFeedback.class_traits()["preprocessors"].default(), HideHiddenTests]
# A graded part that hangs must not hang the grader: each gets at most 5 minutes.
c.GradeInFreshProcesses.timeout = 300


class DropRunStamp(Preprocessor):
    """The learner's copy has no outputs: it must not carry the solution's record of the
    GPU run its outputs came from (streamlab.provenance), nor the banner that says that run
    is older than the solution's code (scripts/gpu/owed.py)."""

    enabled = Bool(True)  # nbconvert registers a preprocessor disabled unless it says so

    def preprocess(self, nb, resources):
        nb.metadata.pop("streamlab_run", None)
        nb.cells = [c for c in nb.cells
                    if "owed-gpu-run" not in c.get("metadata", {}).get("tags", [])]
        return nb, resources


# nbgrader's own pipeline for the learner's copy, then the stamp dropped
c.GenerateAssignment.preprocessors = [
    *GenerateAssignment.class_traits()["preprocessors"].default(), DropRunStamp]
# The learner's copy: a stub that says what to do, in every solution cell.
c.ClearSolutions.code_stub = {
    "python": "# YOUR CODE HERE\nraise NotImplementedError(\"write this part, then run the check below\")",
}
