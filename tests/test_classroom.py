"""A class graded on Dask (streamlab.grading.classroom): every submission judged on a
worker in the fresh-process grader, the grades written by nbgrader's own autograde as one
writer. The class comes from scripts/course/make_class.py: the kept right, wrong, cheating,
hanging and crashing answers, each with its known grade."""

import csv
import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from labtools import ROOT, needs_nbgrader, nbgrader

import make_class  # noqa: E402

LAB = "lab05__host_functions"  # two light parts: a class grades in seconds a learner
# Seconds a part may run: the hang's cost. A right part takes about 1 s alone here, but a
# fresh process each (numba and streamlab imported anew): beside the rest of the tests on
# this 2-core machine, the slowest right part of a class took 9.1 s. With 10 s here a part
# that should pass came that close to scoring nothing for want of time.
TIMEOUT = 20


part_scores, kinds = make_class.scores, make_class.kind_of


def expected(course):
    return make_class.expected(course, LAB)


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """The solution, the untouched copy, every cheat, a hang and a crash, and the wrong
    answers and right answers in other words that make_class.kinds puts between them (a
    wrong answer, a cheat, a right answer and a failure in turn); and each of issue 56's
    attacks on the grader (make_class.attacks: one in each part of a submission)."""
    needs_nbgrader()
    pytest.importorskip("dask.distributed", reason="the class grader needs Dask")
    folder = tmp_path_factory.mktemp("class")
    answers = [kind for kind, *_ in make_class.kinds(LAB)]
    # the cycle up to the hang and the crash (with a wrong, a right answer and a cheat
    # of each round); the attacks hold the cheats that come later in it (CI's time:
    # each submission is judged twice, on Dask and serially)
    last = max(i for i, kind in enumerate(answers) if kind in ("hangs", "ends its process"))
    make_class.make_class(folder, last + 1, [LAB], with_attacks=True)
    made = set(kinds(folder).values())
    assert {"solution", "untouched", "hangs", "ends its process"} <= made
    attacked = "; ".join(k for k in made if k.startswith("attack: "))
    for cheat in (k for k in answers if k.startswith("cheat")):
        assert cheat in made or cheat[len("cheat: "):] in attacked, cheat
    assert all(kind[len("attack: "):] in attacked for kind, *_ in make_class.ATTACKS)
    assert all(kind in made for kind in make_class.STRUCTURE)
    assert any(k.startswith("wrong") for k in made) and any(k.startswith("right") for k in made)
    return folder


def test_a_class_on_two_workers_one_killed_gets_the_expected_grades_and_a_serial_autogrades(
        klass, tmp_path):
    """Two workers judge the class; one is killed (SIGKILL) while it judges, and Dask runs
    its task again elsewhere. Every submission comes back once, with the grade it should
    have, and the gradebook and grades.csv are what a serial nbgrader autograde gives. The
    serial autograde judges a sample (serial_sample): every kind of answer but the right
    answers in other words past the first two, which the Dask run is held to one by one
    (each right answer's own grade)."""
    from dask.distributed import Client, LocalCluster

    from streamlab.grading.classroom import grade_class

    serial = tmp_path / "serial"
    shutil.copytree(klass, serial)
    sample = serial_sample(kinds(klass))
    for learner in set(kinds(klass)) - sample:
        shutil.rmtree(serial / "submitted" / learner)
    killed = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:

        def kill_one_busy_worker():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not killed:
                busy = [w for w, tasks in client.processing().items() if tasks]
                if busy:
                    pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                    time.sleep(0.5)  # mid-task: a part's process has started
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                time.sleep(0.05)

        killer = threading.Thread(target=kill_one_busy_worker)
        killer.start()
        csv_path = grade_class(klass, LAB, timeout=TIMEOUT, progress=False, client=client)
        killer.join()
    assert killed, "no worker was busy to kill"
    judged = json.loads((klass / ".grading" / f"{LAB}.json").read_text())["results"]
    got, want = part_scores(klass, LAB), expected(klass)
    # how close the parts that should pass came to the time limit (a right answer that
    # ran out of time would score nothing)
    passing = sorted(((p.get("seconds", 0), name, part) for name, r in judged.items()
                      for part, p in r["parts"].items()
                      if want.get((name.split("/")[0], part))), reverse=True)
    print(f"the slowest parts that should pass (s, of the {TIMEOUT} s limit): {passing[:3]}")
    assert sorted(judged) == sorted(f"{learner}/{LAB}.ipynb" for learner in kinds(klass))
    wrong = {k: (kinds(klass)[k[0]], got.get(k), v) for k, v in want.items()
             if got.get(k) != v}
    assert not wrong, f"(learner, part): (kind, got, expected): {wrong}\n" + \
        shown(judged, wrong)
    assert len(got) == len(want)  # no learner graded twice, none missing
    # each attack ran as written (an attack that broke on its own error would score
    # nothing too, and show nothing of the grader)
    broken = {k: v for k, v in shown_parts(judged, [
        (learner, part) for (learner, part), score in want.items()
        if kinds(klass)[learner].startswith("attack: ") and score == 0]).items()
        if any(e in v for e in ("NameError", "SyntaxError", "ImportError",
                                "AttributeError", "was not run"))}
    assert not broken, broken
    assert make_class.check(klass, LAB) == 0  # what a teacher's first try runs, agrees
    # the sample, graded serially by nbgrader autograde as a teacher runs it
    nbgrader("autograde", LAB, "--create", f"--GradeInFreshProcesses.timeout={TIMEOUT}",
             cwd=serial)
    serially = part_scores(serial, LAB)
    got_sample = {k: v for k, v in got.items() if k[0] in sample}
    differ = {k: (kinds(klass)[k[0]], serially.get(k), v) for k, v in got_sample.items()
              if serially.get(k) != v}
    assert not differ, f"(learner, part): (kind, serial autograde, Dask): {differ}\n" + \
        shown_in_notebooks(serial / "autograded", differ)
    assert set(serially) == set(got_sample), \
        "the serial autograde graded other parts than Dask"
    nbgrader("export", cwd=serial)

    def grades(path):
        with open(path) as f:
            return {r["student_id"]: r["raw_score"] for r in csv.DictReader(f)
                    if r["assignment"] == LAB}

    assert {learner: score for learner, score in grades(csv_path).items()
            if learner in sample} == grades(serial / "grades.csv")


def serial_sample(kinds_of: dict) -> set:
    """The learners a serial autograde judges beside the Dask run: each kind of answer
    that is not a right answer in other words, and the first two that are."""
    right = sorted((kind, learner) for learner, kind in kinds_of.items()
                   if kind.startswith("right"))
    sample = {learner for learner, kind in kinds_of.items() if not kind.startswith("right")}
    sample |= {learner for _, learner in right[:2]}
    kinds_left_out = {kinds_of[x] for x in kinds_of} - {kinds_of[x] for x in sample}
    assert all(k.startswith("right") for k in kinds_left_out), kinds_left_out
    return sample


def shown_parts(judged: dict, parts) -> dict:
    """{(learner, part): what the grader showed for it} for ``parts``: a failure's own
    account of why a part scored what it did."""
    out = {}
    for learner, part in parts:
        result = judged.get(f"{learner}/{LAB}.ipynb", {})
        out[learner, part] = "".join(
            o.get("text", "") or f"{o.get('ename')}: {o.get('evalue')}"
            for o in result.get("parts", {}).get(part, {}).get("outputs", []))
    return out


def shown(judged: dict, parts) -> str:
    """What the grader showed for each of ``parts`` ((learner, part) pairs), with the
    worker that judged it and how long the part took."""
    out = []
    for (learner, part), text in shown_parts(judged, parts).items():
        result = judged.get(f"{learner}/{LAB}.ipynb", {})
        seconds = result.get("parts", {}).get(part, {}).get("seconds")
        out.append(f"--- {learner} {part} (worker {result.get('worker_pid')}, {seconds} s):\n"
                   f"{text[-3000:]}")
    return "\n".join(out)


def shown_in_notebooks(autograded: Path, parts) -> str:
    """What nbgrader's autograde wrote under each of ``parts``' graded cells."""
    out = []
    for learner, part in parts:
        path = autograded / learner / LAB / f"{LAB}.ipynb"
        if not path.exists():
            out.append(f"--- {learner}: no autograded notebook")
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == part:
                text = "".join(o.get("text", "") or f"{o.get('ename')}: {o.get('evalue')}"
                               for o in cell.get("outputs", []))
                out.append(f"--- {learner} {part}:\n{text[-3000:]}")
    return "\n".join(out)


def test_bad_input_to_the_class_grader_gets_a_clear_error(tmp_path):
    from streamlab.grading.classroom import ClassError, grade_class, submissions

    with pytest.raises(ClassError, match="no nbgrader_config.py"):
        grade_class(tmp_path, LAB, progress=False)
    with pytest.raises(ClassError, match=r"no notebook in .*submitted/\*/lab05"):
        submissions(tmp_path, LAB)
    (tmp_path / "nbgrader_config.py").write_text("")
    with pytest.raises(ClassError, match="--workers 0"):
        grade_class(tmp_path, LAB, workers=0, progress=False)


def test_a_class_without_dask_gets_a_clear_error(tmp_path, monkeypatch):
    from streamlab.grading.classroom import ClassError, grade_class

    (tmp_path / "nbgrader_config.py").write_text("")
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    with pytest.raises(ClassError, match=r"pip install 'dask\[distributed\]'"):
        grade_class(tmp_path, LAB, workers=1, progress=False)


def test_a_class_where_no_sandbox_can_be_made_stops_unless_it_is_turned_off(monkeypatch):
    """Issue 56 item 3: the class grader grades in a sandbox, or with it turned off by
    name: where none can be made it stops before any task, saying why and what to do."""
    pytest.importorskip("dask.distributed", reason="the class grader needs Dask")
    from streamlab.grading import sandbox
    from streamlab.grading.classroom import ClassError, judge_class

    monkeypatch.setattr(sandbox, "status", lambda bwrap=None: (None, "bwrap is not here"))
    for mode in ("auto", "bwrap"):
        with pytest.raises(ClassError, match="bwrap is not here.*--sandbox off"):
            judge_class(ROOT, LAB, client=None, sandbox=mode, progress=False)


def test_judged_outputs_that_do_not_match_the_notebook_are_refused(tmp_path):
    """The writer takes each graded cell's output from the workers' results: a results
    file of another version, or without this learner, stops it with what to do."""
    pytest.importorskip("nbgrader")
    from streamlab.grading.preprocessor import GradeInFreshProcesses

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"version": 0, "results": {}}))
    pre = GradeInFreshProcesses(judged=str(path))
    resources = {"nbgrader": {"student": "ada", "notebook": "lab"}}
    from nbformat.v4 import new_notebook

    with pytest.raises(ValueError, match="version 0"):
        pre.preprocess(new_notebook(), resources)
    path.write_text(json.dumps({"version": 1, "results": {}}))
    pre = GradeInFreshProcesses(judged=str(path))  # the next autograde run
    with pytest.raises(ValueError, match="no judgement of ada/lab.ipynb"):
        pre.preprocess(new_notebook(), resources)


GRADER = '''
import sys
from streamlab.grading import run_part
cells = [{"source": "import time", "role": "solution", "id": "hang"},
         {"source": "print('started', flush=True)\\nwhile True:\\n"
                    "    try:\\n        time.sleep(0.1)\\n    except BaseException:\\n"
                    "        pass\\n", "role": "graded", "id": "check_part1"}]
run_part(cells, "check_part1", cwd=sys.argv[1], hide=[sys.argv[2]], sandbox=sys.argv[3],
         timeout=600)
'''


def _children(pid):
    """The pids of ``pid``'s children and their children (from /proc)."""
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = open(f"/proc/{entry}/stat").read()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                    found.add(int(entry))
                    todo.append(int(entry))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mode", ["off", "auto"])
def test_a_hanging_part_dies_with_its_grader(tmp_path, mode):
    """A Dask worker killed mid-task must not leave its part's process hanging for ever:
    the part's process dies with the grader, with or without the sandbox."""
    import subprocess

    from streamlab.grading import sandbox

    if mode == "auto" and sandbox.status()[0] is None:
        pytest.skip(f"no sandbox here: {sandbox.status()[1]}")
    work, hidden = tmp_path / "work", tmp_path / "hidden"
    work.mkdir()
    hidden.mkdir()
    env = dict(os.environ, STREAMLAB_QUIET="1")
    env.pop("STREAMLAB_RACE_CHECK", None)
    grader = subprocess.Popen([sys.executable, "-c", GRADER, str(work), str(hidden), mode],
                              env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _children(grader.pid):
        time.sleep(0.1)
    time.sleep(3)  # the part's process is in its hang (it imports streamlab first)
    below = _children(grader.pid)
    assert below, "the grader started no part"
    grader.kill()
    grader.wait()

    def alive():
        out = []
        for p in below:
            try:
                state = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue  # gone
            if state != "Z":
                out.append(p)
        return out

    deadline = time.monotonic() + 20
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive()
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"the part's processes {left} outlived their grader"


@pytest.mark.parametrize("args, said", [
    (["--n", "0"], "--n, --workers and --gpus take 1 or more"),
    (["--workers", "0"], "--n, --workers and --gpus take 1 or more"),
    (["--gpus", "0"], "--n, --workers and --gpus take 1 or more"),
    (["--workers"], "--workers: give at least one number of workers"),
    (["--stage", "judge"], "--stage judge needs --dir"),
    (["--stage", "judge", "--dir", "D", "--workers"], "give --workers N or --gpus N"),
    (["--stage", "judge", "--dir", "D"], "holds no prepared class: run --stage prepare"),
    (["--stage", "finish", "--dir", "D"], "holds no prepared class: run --stage prepare"),
    (["--stage", "finish", "--dir", "D", "--within", "5"], "--within is for --stage judge"),
    (["--stage", "judge", "--dir", "D", "--record", "r.json"], "--record is for --stage finish"),
    (["--dir", "D"], "give --stage prepare, judge or finish too"),
    (["--gpus", "2"], "--gpus N (a number) is for --stage judge"),
    (["--stage", "judge", "--dir", "D", "--within", "0"], "--within 0: give the seconds"),
])
def test_the_class_benchmark_refuses_what_it_cannot_do(args, said, capsys, tmp_path):
    import class_grading

    args = [str(tmp_path / "D") if a == "D" else a for a in args]
    with pytest.raises(SystemExit) as stopped:
        class_grading.main(args)
    assert said in capsys.readouterr().err + str(stopped.value)


def test_the_class_benchmarks_finish_stage_needs_the_judge_stage(tmp_path):
    import class_grading

    (tmp_path / "stage.json").write_text(json.dumps({"n": 1, "labs": [LAB]}))
    with pytest.raises(SystemExit, match="holds no judged.json: run --stage judge"):
        class_grading.main(["--stage", "finish", "--dir", str(tmp_path)])
    for text, said in (("{", "is not JSON"), ("{}", "lacks runs"),
                       (json.dumps({"runs": [], "device": "x", "timeout": 1, "cores": 1,
                                    "machine": "x", "python": "3"}), "holds no runs")):
        (tmp_path / "judged.json").write_text(text)
        with pytest.raises(SystemExit, match=said):
            class_grading.main(["--stage", "finish", "--dir", str(tmp_path)])
    judged = {"runs": [{"how": "Dask, one worker per GPU, 2 GPUs", "gpus": 2, "seen": ["0"],
                        "seconds": 1.0, "results": {LAB: {"results": {}}}}],
              "device": "x", "timeout": 1, "cores": 1, "machine": "x", "python": "3"}
    (tmp_path / "judged.json").write_text(json.dumps(judged))
    with pytest.raises(SystemExit, match=r"judged on 1 GPU\(s\) \(0\), not 2"):
        class_grading.main(["--stage", "finish", "--dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="exists: give --dir a new folder"):
        class_grading.main(["--stage", "prepare", "--dir", str(tmp_path)])


def test_make_class_refuses_what_it_cannot_make(tmp_path, capsys):
    with pytest.raises(SystemExit):
        make_class.main(["3", "lab99__none", "--out", str(tmp_path)])
    assert "no such lab: lab99__none" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="N=0"):
        make_class.make_class(tmp_path, 0, [LAB])


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_a_submission_reads_nothing_of_another_being_judged(tmp_path, mode):
    """A right answer in another worker's scratch folder, as while it is judged, is out of
    reach of a cheat that looks for answers around it, with the sandbox and with the audit
    hook alone; the same cheat reads it where it is within reach (so the test can fail).
    The answer announces itself when run: without the sandbox the cheat may find other
    copies of the course's answers on this machine (a clone in /tmp: the documented gap),
    but never this one."""
    import tempfile

    import nbformat
    from labtools import filled, notebook

    from streamlab.grading import classroom, sandbox

    needs_nbgrader()
    if mode == "auto" and sandbox.status()[0] is None:
        pytest.skip(f"no sandbox here: {sandbox.status()[1]}")
    answers = {kind: (cells, scores) for kind, cells, scores in make_class.kinds(LAB)}
    release = notebook("labs", LAB)
    cells, scores = answers["cheat: looks for the other learners' answers"]
    cheat = nbformat.writes(filled(release, cells))
    marker = "an answer read from another submission"
    right = {k: f"print({marker!r})\n" + v for k, v in answers["solution"][0].items()}
    right = nbformat.writes(filled(release, right))

    def shown_with_the_answer_in(folder):
        sub = os.path.join(folder, "submission-x")
        os.makedirs(sub)
        with open(os.path.join(sub, f"{LAB}.ipynb"), "w") as f:
            f.write(right)
        try:
            result = classroom.judge(f"{LAB}.ipynb", cheat, submitted=cheat,
                                     timeout=TIMEOUT, sandbox=mode, hide=[str(ROOT)])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return "".join(o.get("text", "") for r in result["parts"].values()
                       for o in r["outputs"])

    other = tempfile.mkdtemp(prefix="worker-", dir=classroom.scratch_base())
    assert marker not in shown_with_the_answer_in(other)
    if mode == "off":  # within reach: a folder of /tmp that is not a class's
        reachable = tempfile.mkdtemp(prefix="not-a-class-")
        assert marker in shown_with_the_answer_in(reachable), \
            "the cheat did not find the answer even within its reach: this test proves nothing"


def test_a_submission_that_kills_its_grader_scores_nothing_and_stops_no_class(tmp_path):
    """Without a sandbox a part can kill the process that judges it (a Dask worker): Dask
    gives up on that task once its workers die judging it, and the class goes on; that
    submission scores nothing, and says why. (In bubblewrap the part cannot see it.)"""
    from labtools import cells_of, course, filled, notebook

    needs_nbgrader()
    dask = pytest.importorskip("dask", reason="Dask is not installed on this machine: "
                               "pip install -e '.[test]'")
    from dask.distributed import Client, LocalCluster

    from streamlab.grading.classroom import judge_class

    course(tmp_path, LAB)
    solution = cells_of(LAB, "solution")
    first = next(iter(solution))
    killer = make_class.gutted(solution[first], "import os, signal\n"
                               "os.kill(os.getppid(), signal.SIGKILL)")
    for learner, cells in (("ada", solution), ("eve", dict(solution, **{first: killer}))):
        path = tmp_path / "submitted" / learner / LAB / f"{LAB}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(__import__("nbformat").writes(filled(notebook("labs", LAB), cells)))
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        results = judge_class(tmp_path, LAB, client=client, timeout=TIMEOUT, sandbox="off",
                              progress=False)["results"]
    ada, eve = results[f"ada/{LAB}.ipynb"], results[f"eve/{LAB}.ipynb"]
    assert all(p["passed"] for p in ada["parts"].values()), ada
    assert not any(p["passed"] for p in eve["parts"].values()), eve
    shown = [o for p in eve["parts"].values() for o in p["outputs"]]
    assert any("could not judge this notebook" in o.get("evalue", "") for o in shown), shown


def test_the_parts_folder_holds_the_learners_own_file_not_the_restored_one(tmp_path):
    """The worker judges the notebook as nbgrader restored it (hidden tests in its check
    cells), but the file beside the learner's code is their own: nothing to read there."""
    import nbformat
    from labtools import cells_of, filled, notebook, prepended

    from streamlab.grading.classroom import judge

    needs_nbgrader()
    solution = cells_of(LAB, "solution")
    first = next(iter(solution))
    look = (f"print('the folder holds', sorted(__import__('os').listdir('.')), "
            f"'secret' if 'a hidden' + ' test' in open('{LAB}.ipynb').read() "
            f"else 'no secret')\n")
    mine = filled(notebook("labs", LAB), dict(solution, **{first: prepended(solution[first],
                                                                          look)}))
    restored = nbformat.reads(nbformat.writes(mine), as_version=4)  # a copy
    for cell in restored.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            cell.source += "\n# a hidden test"
    result = judge(f"{LAB}.ipynb", nbformat.writes(restored), submitted=nbformat.writes(mine),
                   timeout=TIMEOUT, hide=[str(ROOT)])
    shown = "".join(o.get("text", "") for p in result["parts"].values() for o in p["outputs"])
    assert f"the folder holds ['{LAB}.ipynb'] no secret" in shown, shown
    assert all(p["passed"] for p in result["parts"].values()), result


def test_a_workers_judgement_shows_what_the_rebuild_found(tmp_path):
    """The notes that rebuild() left in a prepared notebook's metadata (a lab cell that
    was not in the copy) come first in every part's output, as under a serial
    autograde."""
    from labtools import cells_of, filled, notebook

    from streamlab.grading import sandbox
    from streamlab.grading.classroom import judge

    nb = filled(notebook("labs", LAB), cells_of(LAB, "solution"))
    nb.metadata["streamlab_grader_notes"] = ["the lab's cell 'setup' was not in your notebook"]
    # the course's GPU machines have no bubblewrap: there the sandbox is turned off by name
    # (judge() refuses to grade without one otherwise, as it should)
    result = judge(f"{LAB}.ipynb", nbformat.writes(nb), submitted=nbformat.writes(nb),
                   timeout=TIMEOUT, sandbox="auto" if sandbox.status()[0] else "off")
    for part in result["parts"].values():
        assert part["outputs"][0]["text"].startswith(
            "(the grader: the lab's cell 'setup' was not in your notebook)\n"), part


def test_a_class_prepared_from_a_relative_path_is_read_back_for_workers_elsewhere(
        tmp_path, monkeypatch):
    """prepare() runs nbgrader inside the course folder: given a relative path it once
    wrote the restored notebooks one folder too deep (course/course/.grading), where
    prepared() (the workers' side, on a machine without nbgrader) found nothing."""
    from labtools import course, notebook

    from streamlab.grading.classroom import ClassError, prepare, prepared

    needs_nbgrader()
    (tmp_path / "c").mkdir()
    course(tmp_path / "c", LAB)
    (tmp_path / "c" / "submitted" / "ada" / LAB).mkdir(parents=True)
    nbformat.write(notebook("labs", LAB),
                   tmp_path / "c" / "submitted" / "ada" / LAB / f"{LAB}.ipynb")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ClassError, match="nothing prepared"):
        prepared(Path("c"), LAB)
    restored = prepare(Path("c"), LAB)
    assert list(restored) == [f"ada/{LAB}.ipynb"]
    # what the workers judge is the lab rebuilt with ada's answers (issue 56 item 1): her
    # untouched copy's stubs, never the solutions, and nothing out of place to note
    rebuilt = nbformat.reads(restored[f"ada/{LAB}.ipynb"], as_version=4)
    assert rebuilt.metadata["streamlab_grader_notes"] == []
    answers = [c.source for c in rebuilt.cells
               if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    assert answers and all("YOUR CODE HERE" in a for a in answers), answers
    assert prepared(Path("c"), LAB) == restored
    assert not (tmp_path / "c" / "c").exists()
    # a submission changed, or a new one, after prepare: judged as it was, it would not be
    # what was submitted
    mine = tmp_path / "c" / "submitted" / "ada" / LAB / f"{LAB}.ipynb"
    mine.write_text(mine.read_text().replace('"cells"', '"cells" ', 1))
    with pytest.raises(ClassError, match=f"changed: ada/{LAB}.ipynb; run prepare"):
        prepared(Path("c"), LAB)
    prepare(Path("c"), LAB)
    (tmp_path / "c" / "submitted" / "bob" / LAB).mkdir(parents=True)
    shutil.copy(mine, tmp_path / "c" / "submitted" / "bob" / LAB)
    with pytest.raises(ClassError, match=f"bob/{LAB}.ipynb"):
        prepared(Path("c"), LAB)


def test_a_part_sees_its_workers_gpu_alone(monkeypatch):
    """dask_cuda lists a worker's own GPU first in its CUDA_VISIBLE_DEVICES and the others
    after it; judge() gives the parts the first alone, so a part cannot select another
    worker's GPU (and disturb the timing check judged there). On a GPU the worker's
    list is "0,1" (GPU 1 may not exist: CUDA then shows GPU 0 alone) and the parts run
    there: a part on the simulator would send no GPU timing, which the grader's judge,
    itself on a GPU, refuses (lab 05 part 2's event loop: a 2xH200 run failed so)."""
    import streamlab
    from labtools import cells_of, filled, notebook, prepended

    from streamlab.grading import classroom

    solution = cells_of(LAB, "solution")
    part = sorted(solution)[0]
    shown = {part: prepended(solution[part], "import os\n"
                             "print('visible:', os.environ.get('CUDA_VISIBLE_DEVICES'))\n")}
    nb = nbformat.writes(filled(notebook("labs", LAB), {**solution, **shown}))
    own, listed = ("1", "1,0") if streamlab.on_simulator() else ("0", "0,1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", listed)
    if streamlab.on_simulator():  # (GPU 1 named, and nothing to run it on but this)
        monkeypatch.setenv("STREAMLAB_DEVICE", "sim")
        monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    result = classroom.judge(f"{LAB}.ipynb", nb, submitted=nb, timeout=TIMEOUT,
                             sandbox="off")
    text = "".join(o.get("text", "") for r in result["parts"].values()
                   for o in r["outputs"])
    assert all(r["passed"] for r in result["parts"].values()), text
    assert f"visible: {own}\n" in text and f"visible: {listed}" not in text, text
    assert result["gpu"] == own


def test_a_part_cannot_open_the_restored_notebooks_even_by_their_path(tmp_path):
    """prepare() writes each submission as nbgrader restored it, hidden tests included,
    into the course's .grading folder. A cheat that learns the hidden folders from the
    grader's own frames (its spec) and opens the restored notebooks, the gradebook and the
    solutions by their exact paths gets nothing, even with no sandbox but the audit hook;
    nor does a hard link, a move, a copy or an SQLite connection (issue 56's side doors,
    through the class grader's own paths); the part still passes on its right answer."""
    from labtools import cells_of, course, filled, notebook, prepended

    from streamlab.grading import course_paths
    from streamlab.grading.classroom import judge, prepare

    needs_nbgrader()
    cheat = f'''
import sys
hidden = set()
f = sys._getframe()
while f is not None:                       # the grader's spec, up the stack
    for v in list(f.f_locals.values()):
        if isinstance(v, dict) and isinstance(v.get("hide"), list):
            hidden.update(v["hide"])
    f = f.f_back
print("hidden folders found:", len(hidden))
for h in sorted(hidden):
    for name in ("/.grading/{LAB}-restored/eve/{LAB}.ipynb",
                 "/.grading/{LAB}-restored/submitted.json", "/gradebook.db",
                 "/solutions/{LAB}/{LAB}.ipynb"):
        try:
            with open(h + name, "rb") as fh:
                print("OPENED", h + name, len(fh.read()))
        except Exception as e:
            print("refused:", type(e).__name__)
import os, shutil, sqlite3                 # the side doors (issue 56, mechanism 6)
for h in sorted(hidden):
    for name, door in (
            ("a hard link", lambda: os.link(h + "/solutions/{LAB}/{LAB}.ipynb", "leak")),
            ("a move", lambda: os.rename(h + "/solutions/{LAB}/{LAB}.ipynb", "moved")),
            ("a copy", lambda: shutil.copyfile(h + "/solutions/{LAB}/{LAB}.ipynb", "copy")),
            ("SQLite", lambda: sqlite3.connect(h + "/gradebook.db").execute(
                "update grade set manual_score = 100").connection.commit()),
            ("SQLite by URI", lambda: sqlite3.connect(
                "file:" + h + "/gradebook.db?mode=rw", uri=True).execute(
                "create table mine (x)"))):
        try:
            door()
            print("THROUGH", name, h)
        except Exception as e:
            print("door refused:", type(e).__name__)
'''
    solution = cells_of(LAB, "solution")
    first = next(iter(solution))
    nb = filled(notebook("labs", LAB), dict(solution, **{first: prepended(solution[first],
                                                                        cheat)}))
    (tmp_path / "c").mkdir()
    course(tmp_path / "c", LAB)
    mine = tmp_path / "c" / "submitted" / "eve" / LAB / f"{LAB}.ipynb"
    mine.parent.mkdir(parents=True)
    nbformat.write(nb, mine)
    restored = prepare(tmp_path / "c", LAB)
    hide, protect = course_paths(str(tmp_path / "c"), "solutions",
                                 f"sqlite:///{tmp_path / 'c' / 'gradebook.db'}")
    result = judge(f"{LAB}.ipynb", restored[f"eve/{LAB}.ipynb"], submitted=mine.read_text(),
                   timeout=TIMEOUT, sandbox="off", hide=hide, protect=protect)
    text = "".join(o.get("text", "") for r in result["parts"].values() for o in r["outputs"])
    assert "hidden folders found: 0" not in text, "the cheat found nothing to try: " + text
    there = [tmp_path / "c" / ".grading" / f"{LAB}-restored" / "eve" / f"{LAB}.ipynb",
             tmp_path / "c" / ".grading" / f"{LAB}-restored" / "submitted.json",
             tmp_path / "c" / "gradebook.db",
             tmp_path / "c" / "solutions" / LAB / f"{LAB}.ipynb"]
    assert all(p.is_file() for p in there)  # what it tried is there to be read
    assert "OPENED" not in text and text.count("refused: PermissionError") >= len(there), text
    # (issue 56, mechanism 6, through the class grader: with no sandbox but the audit
    # hook, no link, move, copy or SQLite connection reaches the solutions or gradebook)
    assert "THROUGH" not in text and text.count("door refused: PermissionError") >= 5, text
    assert all(p.is_file() for p in there)
    import sqlite3

    with sqlite3.connect(tmp_path / "c" / "gradebook.db") as db:
        assert db.execute("select count(*) from grade where manual_score is not null"
                          ).fetchone() == (0,)
        assert "mine" not in {name for (name,) in db.execute(
            "select name from sqlite_master")}
    assert all(r["passed"] for r in result["parts"].values()), text


def test_the_class_check_says_where_a_grade_differs(tmp_path, monkeypatch, capsys):
    """scripts/course/make_class.py --check (a teacher's first try ends with it): each learner's
    grades against expected.csv, and 1 where one differs."""
    (tmp_path / "expected.csv").write_text(
        "learner,lab,kind,part,score\n"
        f"ada,{LAB},solution,check_part1,3.0\nada,{LAB},solution,check_part2,2.0\n"
        f"bo,{LAB},wrong: waits,check_part1,0.0\nbo,{LAB},wrong: waits,check_part2,2.0\n")
    graded = {("ada", "check_part1"): 3.0, ("ada", "check_part2"): 2.0,
              ("bo", "check_part1"): 3.0, ("bo", "check_part2"): 2.0}
    monkeypatch.setattr(make_class, "scores", lambda folder, lab: graded)
    assert make_class.check(tmp_path, LAB) == 1
    out = capsys.readouterr().out
    assert "bo  wrong: waits" in out and "check_part1 3.0 (expected 0.0)" in out
    assert "1 of 2 learners graded otherwise than expected" in out
    graded[("bo", "check_part1")] = 0.0
    assert make_class.check(tmp_path, LAB) == 0
