"""Submissions graded per minute: a synthetic class on Dask with 1 and 2 workers, and a
serial nbgrader autograde of the same class.

    python benchmarks/class_grading.py [--n 40] [--labs lab05__host_functions ...]
                                       [--workers 1 2] [--timeout 10] [--out PATH]

The class is scripts/course/make_class.py's (the kept right, wrong, cheating, hanging and
crashing answers, each with its expected grade); every grading is checked against those
grades, and a grading that misses one stops the benchmark. Prints a table (Markdown);
--out writes it, with the machine it ran on, to a page (docs/class-grading.md). Needs
the test tools (nbgrader, Dask). On a GPU machine the workers grade on its GPU (one
worker per GPU: --gpus).

In three stages, for a GPU machine that has Dask but no nbgrader (the course's): nbgrader
restores the submissions here, the workers judge them there, nbgrader writes and checks
the grades here again:

    python benchmarks/class_grading.py --stage prepare --dir D [--n 40] [--labs ...]
    python benchmarks/class_grading.py --stage judge --dir D [--workers 1 2] [--gpus 1 2]
    python benchmarks/class_grading.py --stage finish --dir D [--out PATH]

The judge stage times the judging alone (D/judged.json: each way's seconds and results);
the finish stage writes each way's grades with nbgrader (one writer, timed here) and
checks every one against the expected grades before it prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "course"))
sys.path.insert(0, str(ROOT / "tests"))


def check(course: Path, labs, how: str, only: dict | None = None) -> None:
    """Every grade in ``course`` as expected; ``only``: {lab: the learners judged}."""
    from make_class import expected, scores

    for lab in labs:
        got, want = scores(course, lab), expected(course, lab)
        if only is not None:
            got = {k: v for k, v in got.items() if k[0] in only[lab]}
            want = {k: v for k, v in want.items() if k[0] in only[lab]}
        if got != want:
            wrong = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
            raise SystemExit(f"{how} graded {lab} wrongly (got, expected): {wrong}")


def _gpu_client(n: int):
    """A Dask client with one worker for each of the first ``n`` GPUs (dask_cuda)."""
    from dask.distributed import Client
    from dask_cuda import LocalCUDACluster

    return Client(LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(n)), threads_per_worker=1,
                                   dashboard_address=None))


def stage_prepare(d: Path, n: int, labs: list[str]) -> None:
    import make_class

    from streamlab.grading.classroom import prepare

    if d.exists():
        raise SystemExit(f"{d} exists: give --dir a new folder")
    make_class.make_class(d / "class", n, labs)
    for lab in labs:
        prepare(d / "class", lab)
    (d / "stage.json").write_text(json.dumps({"n": n, "labs": labs}))
    print(f"prepared {n} submissions of each of {', '.join(labs)} in {d / 'class'}")


def _read(path: Path, missing: str, keys) -> dict:
    try:
        found = json.loads(path.read_text())
    except OSError:
        raise SystemExit(missing) from None
    except ValueError as e:
        raise SystemExit(f"{path} is not JSON ({e}): the stage that wrote it did not end; "
                         f"run it again") from None
    lacking = [k for k in keys if not isinstance(found, dict) or k not in found]
    if lacking:
        raise SystemExit(f"{path} lacks {', '.join(lacking)}: it was not written by this "
                         f"script's stages (or by an older one); run the stage again")
    return found


def _stage(d: Path) -> dict:
    return _read(d / "stage.json", f"{d} holds no prepared class: run --stage prepare "
                 f"--dir {d} first", ("n", "labs"))


def stage_judge(d: Path, workers: list[int], gpus: list[int], timeout: float,
                within: float | None = None, sandbox: str = "auto") -> None:
    stage = _stage(d)  # (a folder without a prepared class is refused before any import)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise SystemExit("--stage judge needs Dask (pip install 'dask[distributed]', "
                         "or the course's test extra)") from None

    import streamlab
    from streamlab.grading.classroom import judge_class, prepared

    course = d / "class"
    visible = 0 if streamlab.on_simulator() else _visible()
    if gpus:
        try:
            import dask_cuda  # noqa: F401  (before any run: not after minutes of them)
        except ImportError:
            raise SystemExit("--gpus needs dask_cuda (pip install dask-cuda)") from None
        if max(gpus) > visible:
            raise SystemExit(f"--gpus {max(gpus)}: this machine shows {visible} GPU(s) "
                             f"(a worker without one would judge on the simulator)")
        os.environ["STREAMLAB_DEVICE"] = "gpu"  # the workers and their parts: a GPU or fail
    # how many GPUs each way judges on: a LocalCluster's workers share the first one
    ways = [(f"Dask, {w} worker{'s' if w > 1 else ''}", w, min(visible, 1),
             lambda w=w: Client(LocalCluster(n_workers=w, threads_per_worker=1,
                                             processes=True, dashboard_address=None)))
            for w in workers]
    ways += [(f"Dask, one worker per GPU, {g} GPU{'s' if g > 1 else ''}", g, g,
              lambda g=g: _gpu_client(g)) for g in gpus]
    runs = []
    for how, count, used, make in ways:
        client = make()
        try:
            client.wait_for_workers(count)  # the clock starts with every worker up
            t0 = time.perf_counter()
            results = {lab: judge_class(course, lab, client=client, timeout=timeout,
                                        sandbox=sandbox,
                                        progress=False, restored=prepared(course, lab),
                                        within=within)
                       for lab in stage["labs"]}
            seconds = time.perf_counter() - t0
            judged = sum(len(r["results"]) for r in results.values())
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
        sandboxes = sorted({r["sandbox"] for lab in results.values()
                            for r in lab["results"].values() if r["sandbox"]})
        gpus_seen = sorted({r.get("gpu") or "" for lab in results.values()
                            for r in lab["results"].values()})
        runs.append({"how": how, "gpus": used, "seconds": seconds, "judged": judged,
                     "sandbox": sandboxes, "seen": gpus_seen, "results": results})
        print(f"{how}: {judged} submissions judged in {seconds:.1f} s", flush=True)
        _write_judged(d, within, timeout, visible, runs)  # after each way: none is lost


def _write_judged(d, within, timeout, visible, runs) -> None:
    import streamlab

    (d / "judged.json").write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "within": within,
        "cores": os.cpu_count(), "machine": platform.machine(),
        "python": platform.python_version(), "timeout": timeout,
        "device": ("Numba's CUDA simulator" if streamlab.on_simulator()
                   else streamlab.device_name()),
        "visible": visible, "runs": runs}))


def _visible() -> int:
    from numba import cuda

    return len(cuda.gpus)


def stage_finish(d: Path, out: Path | None, record: Path | None, argv) -> None:
    from streamlab.grading.classroom import write_grades

    stage = _stage(d)
    judged = _read(d / "judged.json", f"{d} holds no judged.json: run --stage judge --dir {d}",
                   ("runs", "device", "timeout", "cores", "machine", "python"))
    if not judged["runs"]:
        raise SystemExit(f"{d / 'judged.json'} holds no runs: run --stage judge again")
    rows = []
    for run in judged["runs"]:
        # a way that meant several GPUs judged on that many (the workers' first GPUs)
        if run.get("gpus", 0) > 1 and "seen" in run and len(run["seen"]) != run["gpus"]:
            raise SystemExit(f"{run['how']} judged on {len(run['seen'])} GPU(s) "
                             f"({', '.join(run['seen']) or 'none named'}), not "
                             f"{run['gpus']}: its figures are not that many GPUs'")
        course = d / ("graded-" + run["how"].replace(" ", "_").replace(",", ""))
        shutil.rmtree(course, ignore_errors=True)
        shutil.copytree(d / "class", course)
        only = {}
        for lab in stage["labs"]:
            # a run with a time budget (--within) judged part of the class: the others
            # leave, and the grades written and checked are the judged ones'
            only[lab] = {name.split("/")[0] for name in run["results"][lab]["results"]}
            for name in run["results"][lab].get("unjudged", []):
                shutil.rmtree(course / "submitted" / name.split("/")[0] / lab)
        t0 = time.perf_counter()
        for lab in stage["labs"]:
            write_grades(course, lab, run["results"][lab])
        wrote = time.perf_counter() - t0
        count = sum(len(v) for v in only.values())
        if not count:
            raise SystemExit(f"{run['how']} judged nothing within {judged.get('within')} s: "
                             f"give --within more time")
        check(course, stage["labs"], run["how"], only)
        rows.append((run["how"], run["seconds"], wrote, count))
    one = rows[0][1] / rows[0][3]
    # a judged.json of before "gpus" and "sandbox" were kept: the GPUs from its ways'
    # names, the sandbox from its results
    for r in judged["runs"]:
        if "gpus" not in r:
            r["gpus"] = max([int(m.group(1)) for m in [re.search(r"(\d+) GPUs?$", r["how"])]
                             if m] or [0])
        if "sandbox" not in r:
            r["sandbox"] = sorted({x["sandbox"] for lab in r["results"].values()
                                   for x in lab["results"].values() if x["sandbox"]})
    used = max(r["gpus"] for r in judged["runs"])  # the most GPUs one way judged on
    device = f"{used} x {judged['device']}" if used > 1 else judged["device"]
    budget = (f"as many as each way judged within {judged['within']:g} s a lab, of "
              if judged.get("within") else "")
    lines = [f"{budget}{stage['n'] * len(stage['labs'])} submissions ({stage['n']} of each of "
             f"{', '.join(stage['labs'])}), judged on {device} ({judged['cores']} CPU cores, "
             f"{judged['machine']}, Python {judged['python']}; a part may run "
             f"{judged['timeout']:g} s, and the class's hangs each cost that), then written "
             f"by nbgrader and checked here: every grade as expected.", "",
             "| judging | submissions judged | seconds | submissions per minute | seconds per "
             f"submission | speed against {rows[0][0]} | nbgrader writing the grades here, "
             "seconds |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for how, seconds, wrote, count in rows:
        lines.append(f"| {how} | {count} | {seconds:.1f} | {60 * count / seconds:.1f} | "
                     f"{seconds / count:.2f} | {one / (seconds / count):.2f}x | {wrote:.1f} |")
    table = "\n".join(lines)
    print(table)
    if record:
        record.write_text(json.dumps({
            "date": judged.get("date") or time.strftime("%Y-%m-%d"), "device": device,
            "submissions": stage["n"] * len(stage["labs"]), "labs": stage["labs"],
            "timeout": judged["timeout"], "cores": judged["cores"],
            "within": judged.get("within"),
            "rows": [{"how": how, "judged": count, "seconds": round(seconds, 1),
                      "written_here_s": round(wrote, 1), "gpus": run.get("gpus"),
                      "sandbox": run.get("sandbox")}
                     for (how, seconds, wrote, count), run in zip(rows, judged["runs"])]},
            indent=1) + "\n")
    if out:
        out.write_text("# Grading a class on Dask, on GPUs\n\nWritten by "
                       "`benchmarks/class_grading.py " + " ".join(argv) + f"` on "
                       f"{time.strftime('%Y-%m-%d')}, from the judge stage's "
                       "judged.json (kept beside the class run's record, in data/runs/class/raw/)."
                       "\n\n" + table + "\n")


def main(argv=None) -> int:
    import make_class

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="submissions per lab")
    ap.add_argument("--labs", nargs="+", default=["lab05__host_functions"])
    ap.add_argument("--workers", nargs="*", type=int, default=[1, 2],
                    help="Dask workers of a LocalCluster, one run each (with --stage judge, "
                    "none: --gpus only)")
    ap.add_argument("--gpus", nargs="*", type=int, default=None, metavar="N",
                    help="also one worker per GPU (with the judge stage: on the first N "
                    "GPUs, for each N given)")
    ap.add_argument("--stage", choices=("prepare", "judge", "finish"),
                    help="one stage of a run in three (see the top of this file)")
    ap.add_argument("--dir", type=Path, help="the stages' folder")
    ap.add_argument("--within", type=float, metavar="S", help="with --stage judge: judge "
                    "what each way can in S seconds a lab, and leave the rest out (the "
                    "largest class one command of a GPU machine grades)")
    ap.add_argument("--record", type=Path, help="with --stage finish: also write the run as "
                    "JSON (kept in data/runs/class/, shown in docs/gpu-results.md)")
    ap.add_argument("--timeout", type=float, default=10, help="seconds a part may run")
    ap.add_argument("--no-serial", action="store_true", help="skip the serial autograde")
    ap.add_argument("--sandbox", choices=("auto", "bwrap", "off"), default="auto",
                    help="as the class grader's --sandbox: off only where no sandbox can be "
                    "made (scripts/gpu/gpu-class.sh passes it on a GPU machine without "
                    "bubblewrap; the page says which sandbox each run had)")
    ap.add_argument("--out", type=Path, help="write the table to this page")
    a = ap.parse_args(argv)
    if a.n < 1 or any(w < 1 for w in a.workers) or any(g < 1 for g in a.gpus or []):
        ap.error("--n, --workers and --gpus take 1 or more")
    if a.within is not None and a.within <= 0:
        ap.error(f"--within {a.within:g}: give the seconds a lab may take, more than 0")
    for flag, value, stage in (("--within", a.within, "judge"), ("--record", a.record, "finish")):
        if value is not None and a.stage != stage:
            ap.error(f"{flag} is for --stage {stage}")
    if a.dir and not a.stage:
        ap.error("--dir is the stages' folder: give --stage prepare, judge or finish too")
    if a.out and a.stage in ("prepare", "judge"):
        ap.error("--out is for --stage finish (or a run without --stage)")
    if a.gpus and not a.stage:
        ap.error("--gpus N (a number) is for --stage judge; without --stage, --gpus alone "
                 "grades on every GPU")
    if a.stage:
        if not a.dir:
            ap.error(f"--stage {a.stage} needs --dir (the stages' folder)")
        if not (a.workers or a.gpus) and a.stage == "judge":
            ap.error("--stage judge: give --workers N or --gpus N (how to judge)")
        if a.stage == "prepare":
            stage_prepare(a.dir, a.n, a.labs)
        elif a.stage == "judge":
            stage_judge(a.dir, a.workers, a.gpus or [], a.timeout, a.within, a.sandbox)
        else:
            stage_finish(a.dir, a.out, a.record, argv if argv is not None else sys.argv[1:])
        return 0
    if not a.workers:
        ap.error("--workers: give at least one number of workers")
    from streamlab.grading.classroom import grade_class

    base = Path(tempfile.mkdtemp(prefix="streamlab-class-bench-"))
    try:
        make_class.make_class(base / "class", a.n, a.labs)
        total = a.n * len(a.labs)
        runs = [(f"Dask, {w} worker{'s' if w > 1 else ''}", dict(workers=w))
                for w in a.workers]
        if a.gpus is not None:
            runs.append(("Dask, one worker per GPU", dict(gpus=True)))
        rows = []
        for how, kw in runs:
            course = base / how.replace(" ", "_").replace(",", "")
            shutil.copytree(base / "class", course)
            t0 = time.perf_counter()
            for lab in a.labs:
                grade_class(course, lab, timeout=a.timeout, progress=False,
                            sandbox=a.sandbox, **kw)
            rows.append((how, time.perf_counter() - t0))
            check(course, a.labs, how)
        if not a.no_serial:
            course = base / "serial"
            shutil.copytree(base / "class", course)
            env = dict(os.environ, STREAMLAB_QUIET="1")
            t0 = time.perf_counter()
            for lab in a.labs:
                subprocess.run([sys.executable, "-m", "nbgrader", "autograde", lab, "--create",
                                f"--GradeInFreshProcesses.timeout={a.timeout}"], cwd=course,
                               env=env, check=True, capture_output=True)
            rows.append(("nbgrader autograde, serial", time.perf_counter() - t0))
            check(course, a.labs, "the serial autograde")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    import streamlab

    one = rows[0][1]
    serial = dict(rows).get("nbgrader autograde, serial")
    lines = [f"{total} submissions ({a.n} of each of {', '.join(a.labs)}), every one graded "
             f"as expected; {os.cpu_count()} CPU cores ({platform.machine()}), Python "
             f"{platform.python_version()}, "
             + ("on Numba's CUDA simulator" if streamlab.on_simulator()
                else f"on {streamlab.device_name()}")
             + f"; a part may run "
             f"{a.timeout:g} s (the class's hangs each cost that).", "",
             "| grading | seconds | submissions per minute | seconds per submission "
             "| speed against 1 worker | against the serial autograde |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for how, seconds in rows:
        lines.append(f"| {how} | {seconds:.1f} | {60 * total / seconds:.1f} | "
                     f"{seconds / total:.2f} | {one / seconds:.2f}x | "
                     + (f"{serial / seconds:.2f}x |" if serial else "- |"))
    table = "\n".join(lines)
    print(table)
    if a.out:
        a.out.write_text("# Grading a class on Dask\n\nWritten by `benchmarks/class_grading.py "
                         + " ".join(argv if argv is not None else sys.argv[1:])
                         + f"` on {time.strftime('%Y-%m-%d')}.\n\n" + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
