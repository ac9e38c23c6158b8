"""nbgrader for the course: solutions/ is the source, labs/ the learners' copy.

    nbgrader generate_assignment lab01__eight_streams --force   # labs/ from solutions/
    nbgrader autograde lab01__eight_streams                     # grade submitted/
    nbgrader generate_feedback lab01__eight_streams             # feedback/ for learners

Run from the repository root. See the README's "Labs" section.
"""

c = get_config()  # noqa: F821  (nbgrader provides get_config)

c.CourseDirectory.root = "."
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# Learner code that hangs must not hang the grader: each cell gets at most 5 minutes.
c.ExecutePreprocessor.timeout = 300
c.Execute.timeout = 300
