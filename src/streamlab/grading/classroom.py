"""A whole class graded on Dask: one task per submission, one writer for the gradebook.

    python -m streamlab.grading class LAB [--workers N | --scheduler ADDRESS | --gpus]
                                          [--timeout S] [--sandbox auto|bwrap|off]

Run from the course's folder (where ``nbgrader_config.py`` is), once the learners'
notebooks are in ``submitted/<learner>/LAB/``:

1. **Judged on the workers.** nbgrader's own autograde first restores each submitted
   notebook as it would before grading it (the lab's checks, hidden tests and locked
   cells over the learner's copy: :func:`prepare`). Each becomes one ``dask.distributed``
   task (:func:`judge`). The worker writes the notebook into a scratch folder of its own,
   which holds nothing else, and judges each graded part there in the fresh-process
   grader (:func:`streamlab.grading.run_part`: a process per part, a time limit per part,
   bubblewrap's sandbox, or the audit hook alone where it was turned off). It returns
   what each graded cell showed. A worker that dies mid-task has its tasks run again
   elsewhere by Dask; each submission's result is taken once.
2. **Written by one writer.** This process alone writes: it runs nbgrader's own
   ``autograde``, with each graded cell's output taken from the workers' results instead
   of run again (``GradeInFreshProcesses.judged``), so the gradebook (nbgrader's SQLite
   file, or the ``db_url`` the teacher set) never has two writers, and the grades are
   those a serial ``nbgrader autograde`` gives, by the same pipeline. Then ``nbgrader
   export`` writes ``grades.csv``.

Workers: ``--workers N`` (default 2) starts a ``LocalCluster`` of N processes here, on
the simulator or on this machine's GPU; ``--gpus`` starts ``dask_cuda``'s
``LocalCUDACluster``, one worker per GPU: it puts each worker's own GPU first in that
worker's ``CUDA_VISIBLE_DEVICES``, and :func:`judge` gives the parts that first GPU
alone, so that they use it and cannot reach another worker's (a timing check needs a GPU
to itself); ``--scheduler ADDRESS`` uses a running cluster, whose workers
must have the course's Python environment.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import RESULTS_VERSION


class ClassError(RuntimeError):
    """The class cannot be graded as asked; the message says what to do."""


def judge(name: str, notebook: str, *, submitted: str, timeout: float = 300,
          sandbox: str = "auto", hide=(), protect=()) -> dict:
    """Judge one notebook part by part; what each graded cell shows, as the grader writes
    it into the notebook. ``notebook``: its JSON text as the grader rebuilt it
    (:func:`~streamlab.grading.rebuild`: the lab's own cells, hidden tests included, with
    the learner's answers; what it found in the metadata's ``streamlab_grader_notes``,
    shown in each part's output); ``submitted``: the learner's own file, which alone is
    put in the part's folder (never the rebuilt one: its hidden tests would be in reach).
    A Dask task: plain arguments in, a plain dict out. ``hide``, ``protect``: as :func:`~streamlab.grading.run_part` takes them
    (the course's folders), besides the worker's other scratch folders."""
    import nbformat

    from . import cell_outputs, graded_cells, plan, run_part

    nb = nbformat.reads(notebook, as_version=4)
    # a dask_cuda worker lists its own GPU first and the others after it: its parts see
    # the first alone, so that no part can reach another worker's GPU (select_device)
    env, gpu = dict(os.environ), os.environ.get("CUDA_VISIBLE_DEVICES")
    if gpu is not None:
        gpu = env["CUDA_VISIBLE_DEVICES"] = gpu.split(",")[0].strip()
    root = _scratch_root()
    work = tempfile.mkdtemp(prefix="submission-", dir=root)
    try:
        (Path(work) / Path(name).name).write_text(submitted)
        cells = plan(nb)
        notes = nb.metadata.get("streamlab_grader_notes", [])  # (what rebuild found)
        parts, how = {}, ""
        for count, cell in enumerate(graded_cells(nb), 1):
            part = cell.metadata["nbgrader"]["grade_id"]
            began = time.monotonic()
            verdict = run_part(cells, part, cwd=work, protect=list(protect),
                               hide=[*hide, scratch_base()], timeout=timeout,
                               sandbox=sandbox, env=env)
            how = verdict.sandbox
            parts[part] = {"outputs": cell_outputs(verdict, notes),
                           "execution_count": count, "passed": verdict.passed,
                           # the part's whole run, its process's start included: how
                           # close it came to the time limit
                           "seconds": round(time.monotonic() - began, 2)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"name": name, "parts": parts, "sandbox": how, "worker_pid": os.getpid(),
            "gpu": gpu}


_root: list = []


def scratch_base() -> str:
    """The folder that holds every class worker's scratch folders on this machine: hidden
    from every part but its own folder, so that no submission reads another's, even one
    another worker is judging now, and even where no sandbox can be made."""
    base = os.path.join(tempfile.gettempdir(), "streamlab-class")
    os.makedirs(base, mode=0o700, exist_ok=True)
    return os.path.realpath(base)


def _scratch_root() -> str:
    """This worker's folder of scratch folders (one per submission, removed after it)."""
    if not _root:
        _root.append(os.path.realpath(tempfile.mkdtemp(prefix="worker-",
                                                       dir=scratch_base())))
    return _root[0]


def submissions(course: Path, lab: str) -> dict[str, Path]:
    """``learner/notebook`` -> path, for every notebook submitted for ``lab``."""
    found = {f"{p.parent.parent.name}/{p.name}": p
             for p in sorted((course / "submitted").glob(f"*/{lab}/*.ipynb"))}
    if not found:
        raise ClassError(f"no notebook in {course / 'submitted'}/*/{lab}/: collect each "
                         f"learner's notebook into submitted/<learner>/{lab}/ first")
    return found


def _client(workers: int, scheduler: str | None, gpus: bool):
    if not (scheduler or gpus) and workers < 1:
        raise ClassError(f"--workers {workers}: grade with at least one worker")
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ClassError("grading a class needs Dask's distributed scheduler: pip install "
                         "'dask[distributed]' (the course's test extras have it)") from None
    if scheduler:
        return Client(scheduler)
    if gpus:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise ClassError("--gpus needs dask_cuda (pip install dask-cuda), which gives "
                             "one worker per GPU") from None
        return Client(LocalCUDACluster(threads_per_worker=1))
    return Client(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None))


def judge_class(course: Path, lab: str, *, client, timeout: float = 300,
                sandbox: str = "auto", db: str | None = None, progress: bool = True,
                restored: dict[str, str] | None = None,
                within: float | None = None) -> dict:
    """Every submission of ``lab`` judged on ``client``'s workers; the results file's
    content (each ``learner/notebook`` once). The course's folders are hidden and its
    solutions and gradebook (``db``, nbgrader's db_url) protected, as the serial grader
    does. ``restored``: the notebooks as :func:`prepare` gave them (:func:`prepared`
    reads them back), where nbgrader restored them on another machine; else
    :func:`prepare` runs here. ``within``: seconds (a benchmark's budget) after which
    the submissions not judged yet are left out and their tasks cancelled; the content's
    ``unjudged`` then names them."""
    from dask.distributed import as_completed

    from . import course_paths
    from . import sandbox as _sandbox

    if sandbox != "off" and _sandbox.status()[0] is None:  # before any task: every part
        # would stop there for the same reason (a worker on another machine checks again)
        raise ClassError(f"no sandbox can be made for grading here: {_sandbox.status()[1]}."
                         f" Grade where one can be made, or pass --sandbox off to grade "
                         f"with the grader's audit hook alone (code below Python gets "
                         f"past it)")
    course = Path(course).resolve()  # the paths the parts are kept from, whole
    found = submissions(course, lab)
    given = restored is not None
    if not given:
        restored = prepare(course, lab, db=db)
    hide, protect = course_paths(str(course), "solutions",
                                 db or f"sqlite:///{course / 'gradebook.db'}")
    # keys of this run's own: a long-lived cluster never hands back an earlier judgement
    run = secrets.token_hex(4)
    futures = {client.submit(judge, name, restored[name], submitted=path.read_text(),
                             timeout=timeout, sandbox=sandbox, hide=hide, protect=protect,
                             key=f"judge-{lab}-{name}-{run}", pure=False): name
               for name, path in found.items() if name in restored}
    unread = sorted(set(found) - set(restored))
    if unread and given:  # submitted after prepare() ran, or prepared elsewhere
        print(f"streamlab.grading class: {', '.join(unread)} not among the prepared "
              f"notebooks (submitted since prepare() ran?): not judged; prepare again",
              file=sys.stderr)
    elif unread:  # nbgrader could not read them: the writer's autograde says why, as serially
        print(f"streamlab.grading class: nbgrader could not restore {', '.join(unread)}; "
              f"they are not judged (nbgrader's log says why)", file=sys.stderr)
    results = {}
    try:
        for done, future in enumerate(as_completed(futures, timeout=within), 1):
            name = futures[future]
            if name in results:  # never: each future is one submission
                raise ClassError(f"{name} came back twice")
            try:
                results[name] = future.result()
            except Exception as e:  # noqa: BLE001  (one submission must not stop the class)
                results[name] = _not_judged(name, restored[name], e)
            if progress:
                _bar(done, len(futures))
    except TimeoutError:  # only with ``within``: what is not judged by then is left out
        client.cancel([f for f, name in futures.items() if name not in results])
    if progress:
        print(file=sys.stderr)
    unjudged = sorted(n for n in futures.values() if n not in results)
    unboxed = sorted({r["sandbox"] for r in results.values()
                      if r["sandbox"] and r["sandbox"] != "bubblewrap"})
    if unboxed:  # as GradeInFreshProcesses warns a teacher grading serially
        print(f"streamlab.grading class: graded without a sandbox ({'; '.join(unboxed)}): "
              f"the learners' code was kept from the course's files by the grader's audit "
              f"hook alone, which code below Python (ctypes) can get past", file=sys.stderr)
    return {"version": RESULTS_VERSION, "lab": lab, "results": results,
            **({"unjudged": unjudged} if unjudged else {})}


def _not_judged(name: str, notebook: str, error: BaseException) -> dict:
    """A submission whose judging failed on every try (Dask gives up on a task whose
    workers died judging it, as a part that kills its grader makes them): each part
    scores nothing, and says why."""
    import nbformat

    from . import Verdict, cell_outputs, graded_cells

    verdict = Verdict(False, f"the grader's workers could not judge this notebook "
                      f"({type(error).__name__}: {error}): code that kills or stops the "
                      f"grader cannot pass", kind="NotJudged")
    print(f"streamlab.grading class: {name} could not be judged: {type(error).__name__}: "
          f"{error}", file=sys.stderr)
    return {"name": name, "sandbox": "", "worker_pid": None, "parts": {
        cell.metadata["nbgrader"]["grade_id"]: {"outputs": cell_outputs(verdict),
                                                 "execution_count": count, "passed": False}
        for count, cell in enumerate(graded_cells(nbformat.reads(notebook, as_version=4)),
                                     1)}}


def _bar(done: int, total: int, width: int = 40) -> None:
    full = width * done // total
    print(f"\rgraded {done}/{total} [{'#' * full}{'.' * (width - full)}]", end="",
          file=sys.stderr, flush=True)


def _nbgrader(course: Path, *args: str, db: str | None = None) -> None:
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args,
                           *([f"--db={db}"] if db else [])], cwd=course, text=True,
                          capture_output=True)
    if done.returncode != 0:
        raise ClassError(f"nbgrader {args[0]} failed (exit status {done.returncode}):\n"
                         + (done.stderr or done.stdout)[-3000:])


def prepare(course: Path, lab: str, *, db: str | None = None) -> dict[str, str]:
    """Every submission of ``lab`` as nbgrader's autograde restores it before it runs
    anything (the lab's own checks, hidden tests and locked cells over the learner's
    copy): ``learner/notebook`` -> its JSON text. nbgrader's own pipeline does it
    (``GradeInFreshProcesses.prepare``), so the workers judge what a serial autograde
    would; until the judgements are written, the gradebook shows each part not judged."""
    course = Path(course).resolve()  # nbgrader runs in it: a relative path would nest
    folder = course / ".grading" / f"{lab}-restored"
    shutil.rmtree(folder, ignore_errors=True)
    submitted = _fingerprints(course, lab)  # as they are before nbgrader reads them
    _nbgrader(course, "autograde", lab, "--create", "--force",
              f"--GradeInFreshProcesses.prepare={folder}", db=db)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SUBMITTED).write_text(json.dumps(submitted))
    return _restored(folder)


def _restored(folder: Path) -> dict[str, str]:
    return {f"{p.parent.name}/{p.name}": p.read_text()
            for p in sorted(folder.glob("*/*.ipynb"))}


#: beside the restored notebooks: each submitted file's SHA-256 when they were restored
SUBMITTED = "submitted.json"


def _fingerprints(course: Path, lab: str) -> dict[str, str]:
    import hashlib

    return {name: hashlib.sha256(path.read_bytes()).hexdigest()
            for name, path in submissions(course, lab).items()}


def prepared(course: Path, lab: str) -> dict[str, str]:
    """What :func:`prepare` wrote for ``lab``, read back (``learner/notebook`` -> JSON
    text): the workers can then judge on a machine without nbgrader (a GPU machine), and
    :func:`write_grades` write the grades where nbgrader is."""
    folder = Path(course) / ".grading" / f"{lab}-restored"
    found = _restored(folder)
    if not found:
        raise ClassError(f"nothing prepared in {folder}: run prepare() (nbgrader's "
                         f"autograde restores each submission) for {lab} first")
    try:
        then = json.loads((folder / SUBMITTED).read_text())
    except (OSError, ValueError):
        raise ClassError(f"{folder} holds no {SUBMITTED} (what was submitted when it was "
                         f"prepared): run prepare() for {lab} again") from None
    now = _fingerprints(Path(course), lab)
    moved = sorted(n for n in set(then) | set(now) if then.get(n) != now.get(n))
    if moved:
        raise ClassError(f"submitted since {lab} was prepared, or changed: "
                         f"{', '.join(moved[:5])}{' ...' if len(moved) > 5 else ''}; run "
                         f"prepare() again, so that what is judged is what was submitted")
    return found


def write_grades(course: Path, lab: str, results: dict, *, db: str | None = None) -> Path:
    """nbgrader's autograde with the judged outputs (one writer), then nbgrader export:
    the path of grades.csv."""
    course = Path(course).resolve()
    path = course / ".grading" / f"{lab}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(results))
    _nbgrader(course, "autograde", lab, "--create", "--force",
              f"--GradeInFreshProcesses.judged={path}", db=db)
    _nbgrader(course, "export", db=db)
    return course / "grades.csv"


def grade_class(course, lab: str, *, workers: int = 2, scheduler: str | None = None,
                gpus: bool = False, timeout: float = 300, sandbox: str = "auto",
                db: str | None = None, progress: bool = True, client=None) -> Path:
    """Judge every submission of ``lab`` on Dask, write the grades with one writer; the
    path of grades.csv (see the module's docstring). ``client``: a Dask client to use
    (else one is made from ``workers``, ``scheduler`` or ``gpus``, and closed after)."""
    course = Path(course).resolve()
    if not (course / "nbgrader_config.py").is_file():
        raise ClassError(f"{course} has no nbgrader_config.py: run this from the course's "
                         f"folder (the one nbgrader autograde runs from)")
    own = client is None
    if own:
        client = _client(workers, scheduler, gpus)
    try:
        results = judge_class(course, lab, client=client, timeout=timeout, sandbox=sandbox,
                              db=db, progress=progress)
    finally:
        if own:
            client.close()
            if client.cluster is not None and not scheduler:
                client.cluster.close()
    return write_grades(course, lab, results, db=db)


def main(argv: list[str]) -> int:
    """``python -m streamlab.grading class LAB ...`` (see the module's docstring)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m streamlab.grading class",
                                 description="Grade a class's submissions of a lab on Dask.")
    ap.add_argument("lab", help="the lab's folder name under labs/, e.g. lab01__eight_streams; "
                    "each learner's copy in submitted/<learner>/<lab>/<lab>.ipynb")
    ap.add_argument("--workers", type=int, default=2,
                    help="Dask worker processes on this machine (default 2)")
    ap.add_argument("--scheduler", help="address of a running Dask scheduler, in place of "
                    "workers here (tcp://host:8786)")
    ap.add_argument("--gpus", action="store_true",
                    help="one worker per GPU (pip install dask-cuda): timing checks need a "
                    "GPU to themselves")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds a part may run before it scores nothing (default 300)")
    ap.add_argument("--sandbox", choices=("auto", "bwrap", "off"), default="auto",
                    help="how the course's files are kept from learner code: auto or "
                    "bwrap (bubblewrap, each part an unprivileged user; where this system "
                    "cannot make it, stop and say why), off (the audit hook alone)")
    ap.add_argument("--db", help="nbgrader's db_url (default: the course's gradebook.db)")
    a = ap.parse_args(argv)
    try:
        csv = grade_class(Path.cwd(), a.lab, workers=a.workers, scheduler=a.scheduler,
                          gpus=a.gpus, timeout=a.timeout, sandbox=a.sandbox, db=a.db)
    except ClassError as e:
        print(f"streamlab.grading class: {e}", file=sys.stderr)
        return 2
    print(f"grades written to the gradebook and to {csv}")
    return 0
