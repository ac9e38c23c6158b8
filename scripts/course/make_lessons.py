"""Write each lesson's learner copy from its solved copy (the one source of truth).

    python scripts/course/make_lessons.py            # writes notebooks/NN__x__y.ipynb
    python scripts/course/make_lessons.py --check    # fails if a learner copy is out of date

``notebooks/NN__x__y__SOLUTION.ipynb`` holds the lesson with its exercises answered. In
each code cell tagged ``exercise`` the answer sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION``; the learner's copy has, in its place, a stub that says roughly how
many lines it takes and raises NotImplementedError (whose check then prints "not done
yet"). Cells tagged ``solution-note`` (the solved copy's own note) are left out. Where
the code changed, the copy is written without outputs: each copy is executed on its own,
on a GPU (scripts/gpu/gpu-check.sh), and on the simulator for the model GPU's answers
(scripts/course/model_runs.py), before it is committed. Where only markdown changed, the copy
keeps the outputs of its last runs, which ran the same code.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
RUN_KEY = "streamlab_run"  # streamlab.provenance.KEY: what a copy's outputs ran
# the model GPU's run of the learner's copy (scripts/course/model_runs.py): each answering cell's
# outputs, and the record of that run (streamlab.workspace.MODEL_OUTPUTS_KEY, MODEL_RUN_KEY)
MODEL_OUTPUTS_KEY, MODEL_RUN_KEY = "streamlab_model", "streamlab_model_run"
# a banner that scripts/gpu/owed.py writes in a copy whose outputs are older than its code:
# each copy's own (each copy has its own GPU run), never carried from one to the other
OWED_TAG = "owed-gpu-run"


class LessonError(ValueError):
    """A solved lesson that cannot be turned into a learner's copy; says what to fix."""


def solved_copies() -> list[Path]:
    """The lessons' solved copies, in order."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]__*__SOLUTION.ipynb"))


def learner_path(solved: Path) -> Path:
    """Where the learner's copy of ``solved`` lives."""
    return solved.with_name(solved.name.replace("__SOLUTION", ""))


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


#: a diagnose exercise's solved cell names the program its learner's copy holds instead
GIVEN = re.compile(r"#\s*\(the learner's copy holds the program as given: "
                   r"streamlab\.exercises\.(\w+)\.(\w+)\)")
GIVEN_NOTE = "# the program as given: run this cell, find what goes wrong, and fix it"


def given_program(module: str, name: str, where: str) -> str:
    """The program as given of a diagnose exercise: the string ``name`` that
    ``src/streamlab/exercises/<module>.py`` assigns (read, not imported)."""
    import ast

    path = ROOT / "src" / "streamlab" / "exercises" / f"{module}.py"
    if not path.exists():
        raise LessonError(f"{where}: no exercise module {path.relative_to(ROOT)}")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] \
                == [name]:
            value = ast.literal_eval(node.value)
            if isinstance(value, str):
                return value
    raise LessonError(f"{where}: {path.relative_to(ROOT)} assigns no string {name}")


def stub(source: str, where: str) -> str:
    """The exercise cell's source with its answer replaced by a stub; in a diagnose
    exercise's (a line names its program as given), the function replaced by that
    program, with its mistake in it."""
    number = re.search(r"check_exercise(\d+)\(", source)
    if not number:
        raise LessonError(f"{where}: an exercise cell must end with its check, "
                          f"check_exerciseN(function)")
    given = GIVEN.search(source)
    if given:
        return _with_given(source, given_program(*given.groups(), where), where)
    lines, out, i = source.split("\n"), [], 0
    found = False
    while i < len(lines):
        line = lines[i]
        if line.strip() != BEGIN:
            out.append(line)
            i += 1
            continue
        found = True
        indent = line[:len(line) - len(line.lstrip())]
        try:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == END)
        except StopIteration:
            raise LessonError(f"{where}: {BEGIN} without {END}") from None
        answer = [ln for ln in lines[i + 1:end] if ln.strip() and not ln.strip().startswith("#")]
        defs = [ln for ln in out if ln.lstrip().startswith("def ")]
        name = re.match(r"\s*def (\w+)", defs[-1]).group(1) if defs else "the function"
        size = len(answer)
        words = f"about {size} line{'s' if size != 1 else ''}"
        out.append(f"{indent}# your code here ({words}), in place of the next line")
        out.append(f'{indent}raise NotImplementedError("Exercise {number.group(1)}: write '
                   f'{name} ({words})")')
        i = end + 1
    if not found:
        raise LessonError(f"{where}: an exercise cell with no {BEGIN} ... {END} around its "
                          f"answer")
    return "\n".join(out)


def _with_given(source: str, program: str, where: str) -> str:
    """A diagnose exercise's cell: its lines before the function (the line that names the
    program left out), the program as given in place of the function, and its lines after
    the answer's end."""
    lines = [ln for ln in source.split("\n") if not GIVEN.search(ln)]
    try:
        first = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
        end = next(i for i, ln in enumerate(lines) if ln.strip() == END)
    except StopIteration:
        raise LessonError(f"{where}: a diagnose exercise needs its function (def ...) and "
                          f"{END} after its answer") from None
    return "\n".join(lines[:first] + [GIVEN_NOTE] + program.rstrip("\n").split("\n")
                     + lines[end + 1:])


def learner_copy(solved: dict, name: str) -> dict:
    """The learner's copy of a solved notebook (a notebook's JSON as a dict)."""
    nb = json.loads(json.dumps(solved))
    cells = []
    for k, cell in enumerate(nb["cells"]):
        if "solution-note" in tags(cell) or OWED_TAG in tags(cell):
            continue
        src = "".join(cell["source"])
        if "exercise" in tags(cell):
            if cell["cell_type"] != "code":
                raise LessonError(f"{name}, cell {k}: only code cells are tagged 'exercise'")
            src = stub(src, f"{name}, cell {k}")
            cell["source"] = src.splitlines(keepends=True)
        elif BEGIN in src:
            raise LessonError(f"{name}, cell {k}: {BEGIN} in a cell not tagged 'exercise'")
        if cell["cell_type"] == "code":  # outputs come from executing this copy
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    nb["cells"] = cells
    # the solved copy's record of its own run (streamlab.provenance) is not this copy's
    nb.get("metadata", {}).pop(RUN_KEY, None)
    return nb


def sources(nb: dict) -> list[tuple[str, str, list[str]]]:
    """What must agree between a generated copy and the file: each cell's kind, source
    and tags (outputs come from each copy's own run; an owed run's banner is the copy's
    own)."""
    return [(c["cell_type"], "".join(c["source"]), tags(c)) for c in nb["cells"]
            if OWED_TAG not in tags(c)]


def keep_banner(want: dict, have: dict) -> None:
    """Put ``have``'s owed-run banner (if any) in ``want``, under the same cell as before."""
    for i, cell in enumerate(have["cells"]):
        if OWED_TAG in tags(cell):
            before = have["cells"][i - 1] if i else None
            at = next((k + 1 for k, c in enumerate(want["cells"]) if before is not None
                       and c.get("id") == before.get("id")), 0)
            want["cells"].insert(at, cell)


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def code_of(nb: dict) -> list[tuple[str, list[str]]]:
    """The code a copy runs: each code cell's source and tags, in order."""
    return [("".join(c["source"]), tags(c)) for c in code_cells(nb)]


def main(argv) -> int:
    check = "--check" in argv
    stale = []
    for solved in solved_copies():
        target = learner_path(solved)
        want = learner_copy(json.loads(solved.read_text()), solved.name)
        if target.exists():
            have = json.loads(target.read_text())
            if sources(have) == sources(want):
                continue
            if code_of(have) == code_of(want):  # only markdown changed: the run still holds
                for mine, old in zip(code_cells(want), code_cells(have)):
                    mine["outputs"], mine["execution_count"] = old["outputs"], old["execution_count"]
                    if MODEL_OUTPUTS_KEY in old.get("metadata", {}):  # and the model GPU's
                        mine.setdefault("metadata", {})[MODEL_OUTPUTS_KEY] = old["metadata"][MODEL_OUTPUTS_KEY]
                for key in (RUN_KEY, MODEL_RUN_KEY):  # and so do the records of both runs
                    if key in have.get("metadata", {}):
                        want["metadata"][key] = have["metadata"][key]
            keep_banner(want, have)
        stale.append(target.name)
        if not check:
            target.write_text(json.dumps(want, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    if check and stale:
        print("out of date (run python scripts/course/make_lessons.py, then execute them): "
              + ", ".join(stale))
        return 1
    print(("wrote " + ", ".join(stale)) if stale else "every learner copy is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
