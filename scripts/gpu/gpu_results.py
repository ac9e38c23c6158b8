"""Write docs/gpu-results.md from what GPU runs measured: each GPU's run in its own column.

On the GPU machine, at the end of scripts/gpu/gpu-check.sh:

    python scripts/gpu/gpu_results.py --doctor D.txt --tests T.json --bench B.json \\
        --junit J.xml [--notebooks N.json] [--model M.json] --record R.json --out PAGE

writes that run's record (R.json: every figure the run measured, the test totals, and the
GPU, driver and versions that its doctor printed) and a page of that run alone. The
records kept in data/runs/results/ (one per GPU run) make the course's page:

    python scripts/gpu/gpu_results.py --from-records data/runs/results/*.json --out docs/gpu-results.md
    (with the class grader's runs on GPUs kept in data/runs/class/)
    python scripts/gpu/gpu_results.py --check        (fails if docs/gpu-results.md is not
                                                  what the kept records give)

Nothing in a page is typed in: every figure comes from a record, and every record from
its run's own files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "data" / "runs" / "results"
#: runs of the class grader on GPUs (benchmarks/class_grading.py --stage finish --record)
CLASS_RUNS = ROOT / "data" / "runs" / "class"
PAGE = ROOT / "docs" / "gpu-results.md"
#: what a record's "versions" holds, read from the doctor's lines of the same names
VERSIONS = ("python", "numba", "numba-cuda", "numpy", "cuda-bindings", "cuda-core",
            "matplotlib", "cupti-python")
#: the keys every record has (a file without them is not a record)
RECORD_KEYS = ("gpu", "visible", "driver", "date", "versions", "tests", "skipped",
               "failed", "figures", "bench", "model", "notebooks")


class RecordError(ValueError):
    """A run's files, or a kept record, that cannot make a page; says what to do."""


# --- a run's files -> its record -----------------------------------------------------
def parse_doctor(text: str) -> dict:
    """The GPU, how many are visible, the CUDA driver and the versions, from what
    scripts/gpu/gpu-check.sh saved as doctor.txt (nvidia-smi's CSV, then `streamlab doctor`)."""
    lines = text.splitlines()
    smi = re.compile(r"^(.+), ([0-9.]+), [0-9]+ MiB$")
    gpus = [m.group(1) for m in map(smi.match, lines) if m]
    found = {}
    for key in ("device", "CUDA driver", *VERSIONS):
        for line in lines:
            m = re.match(rf"^\s+{re.escape(key)}\s+(\S.*)$", line)
            if m:
                found[key] = m.group(1).strip()
                break
    device = found.get("device", "")
    if not device or "simulator" in device.lower() or not gpus:
        raise RecordError(
            "the doctor output names no GPU (it ran on the simulator, or is not "
            "scripts/gpu/gpu-check.sh's doctor.txt): a record is made on a GPU machine, by "
            "gpu-check.sh, from that run's own files")
    if "python" in found:  # "3.12.3 (Linux-...)": the version alone
        found["python"] = found["python"].split()[0]
    return {"gpu": device, "visible": len(gpus), "driver": found.get("CUDA driver", "?"),
            "versions": {k: found[k] for k in VERSIONS if k in found}}


def junit_summary(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    tot = {k: sum(int(s.get(k, 0)) for s in suites)
           for k in ("tests", "failures", "errors", "skipped")}
    tot["passed"] = tot["tests"] - tot["failures"] - tot["errors"] - tot["skipped"]
    skipped = []
    for case in root.iter("testcase"):
        sk = case.find("skipped")
        if sk is not None:
            skipped.append(f"{case.get('name')}: {sk.get('message', '')}")
    return tot, skipped


def junit_failed(path) -> list[str]:
    """The tests that failed or erred, by name."""
    return [f"{case.get('classname')}::{case.get('name')}"
            for case in ET.parse(path).getroot().iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None]


def junit_date(path) -> str:
    """When the tests ran (the junit file's timestamp), as 'YYYY-MM-DD HH:MM UTC'."""
    root = ET.parse(path).getroot()
    for suite in ([root] if root.tag == "testsuite" else list(root)):
        stamp = suite.get("timestamp", "")
        m = re.match(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})", stamp)
        if m:
            return f"{m.group(1)} {m.group(2)} UTC"
    raise RecordError(f"{path}: no timestamp in this junit file (pytest --junitxml writes "
                      "one): pass the junit XML that gpu-check.sh's tests part wrote")


def _json(path, what):
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RecordError(f"{path}: no such file ({what})") from None
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}: not JSON ({what}): {e}") from None


def make_record(doctor, tests, bench, junit, notebooks=None, model=None) -> dict:
    """One run's record from its files (paths); ``tests`` and ``junit`` are lists (a run
    in parts has one of each per part; a part that measured no figure has no tests file)."""
    if not junit:
        raise RecordError("no junit file: pass the tests part's junit.xml (--junit)")
    record = parse_doctor(Path(doctor).read_text())
    tot, skipped, failed = {}, [], []
    for path in junit:
        part, part_skipped = junit_summary(path)
        tot = {k: tot.get(k, 0) + v for k, v in part.items()}
        skipped += part_skipped
        failed += junit_failed(path)
    record.update(
        date=max(junit_date(p) for p in junit), tests=tot, skipped=skipped, failed=failed,
        figures=[row for p in tests if Path(p).exists() for row in _json(p, "--tests")],
        bench=_json(bench, "--bench"),
        model=_json(model, "--model") if model else None,
        notebooks=_json(notebooks, "--notebooks") if notebooks else None)
    return record


def load_record(path) -> dict:
    record = _json(path, "a record written by scripts/gpu/gpu_results.py --record")
    missing = [k for k in RECORD_KEYS if not isinstance(record, dict) or k not in record]
    if missing:
        raise RecordError(f"{path}: not a run's record (no {', '.join(missing)}): records "
                          "are written by scripts/gpu/gpu_results.py --record on the GPU machine")
    return record


# --- records -> the page -----------------------------------------------------------------
def label(record) -> str:
    many = f"{record['visible']} x " if (record.get("visible") or 1) > 1 else ""
    return f"{many}{record['gpu']}, {record['date']}"


def summary(tot, notebooks=None) -> list[str]:
    """A run's totals and the notebooks' verdict, in words."""
    text = [f"{tot['passed']} passed, {tot['failures']} failed, {tot['errors']} errors, "
            f"{tot['skipped']} skipped"]
    if notebooks:
        runs = {len(r.get("runs", [])) or 1 for r in notebooks.values()}
        failed = sorted(Path(k).name for k, r in notebooks.items() if r["error"] is not None)
        text.append(f"{len(notebooks)} executed, "
                    f"{' or '.join(str(n) for n in sorted(runs))} run(s) in a row each; "
                    + (f"**{len(failed)} failed**: {', '.join(failed)}" if failed
                       else "every one passed in every run"))
    else:
        text.append("not in this run")
    return text


def runs_table(records) -> list[str]:
    head = "| | " + " | ".join(label(r) for r in records) + " |"
    lines = [head, "|" + " --- |" * (len(records) + 1)]

    def row(name, cells):
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    row("GPU", [f"**{r['gpu']}**, {r['visible']} visible" for r in records])
    row("CUDA driver", [r["driver"] for r in records])
    row("date", [r["date"] for r in records])
    row("versions", [", ".join(f"{k} {v}" for k, v in r["versions"].items())
                     for r in records])
    sums = [summary(r["tests"], r["notebooks"]) for r in records]
    row("test suite on the GPU (`pytest -m \"gpu or not gpu\"`)", [s[0] for s in sums])
    row("notebooks and lab solutions", [s[1] for s in sums])
    failed = [", ".join(f"`{t}`" for t in r["failed"]) or "none" for r in records]
    if any(r["failed"] for r in records):
        row("tests that failed", failed)
    return lines


def _fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def figures_table(records, key) -> list[str]:
    """The rows of ``key`` ('figures' or 'bench') of every record, joined by what they
    measure: one column of values per run ('–' where a run did not measure it)."""
    names: dict = {}
    for i, r in enumerate(records):
        for row in r[key] or []:
            k = (row["name"], row["unit"], row["test"].split("::")[-1])
            names.setdefault(k, ["–"] * len(records))[i] = _fmt(row["value"])
    if not names:
        return ["Not in these runs."]
    lines = ["| measured | unit | by | " + " | ".join(label(r) for r in records) + " |",
             "| --- | --- | --- |" + " ---: |" * len(records)]
    for (name, unit, by), values in names.items():
        lines.append(f"| {name} | {unit} | `{by}` | " + " | ".join(values) + " |")
    return lines


def model_table(records) -> list[str]:
    """The model GPU's predictions against each run's measurements."""
    with_model = [r for r in records if r["model"]]
    if not with_model:
        return ["Not in these runs."]
    lines = ["Each experiment is a notebook's code, measured (the median of its repeats) and "
             "predicted by `streamlab.predict()` with the profile of that GPU (measured by "
             "`scripts/gpu/measure_profile.py`). Makespans of the stream rows, predicted / "
             "measured (error):", "",
             "| experiment | " + " | ".join(
                 f"{label(r)} (profile `{r['model']['profile']}`)" for r in with_model) + " |",
             "| --- |" + " ---: |" * len(with_model)]
    rows: dict = {}
    for i, r in enumerate(with_model):
        for x in r["model"]["rows"]:
            rows.setdefault(x["experiment"], ["–"] * len(with_model))[i] = (
                f"{x['predicted_ms']:.3f} / {x['measured_ms']:.3f} ms "
                f"({x['error_pct']:+.1f} %)")
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows.items()]
    lines.append("| **median of the absolute errors** | " + " | ".join(
        f"**{r['model']['median_abs_error_pct']:.1f} %**" for r in with_model) + " |")
    lines += model_limits(with_model)
    return lines


#: how far off a row may be before the page names it as what the model does not know
MODEL_LIMIT_PCT = 15.0
#: what the model leaves out, for the experiments that have been found off by more
MODEL_UNKNOWNS = {
    "04: 256 MB pageable h2d beside a 30 ms kernel":
        "how the driver stages a pageable copy through its pinned buffers while a kernel "
        "runs: the model charges the one rate for pageable copies measured into the GPU's "
        "profile, while the GPU's own time for the "
        "same copy moves from run to run",
    "04: Harris, version 1 (4 streams)":
        "most likely the host's pace in each run (a hypothesis, not measured): the model "
        "takes each call's host cost from the GPU's profile (scripts/gpu/measure_profile.py), "
        "not from the run it predicts",
}


def model_limits(with_model) -> list[str]:
    """The rows off by more than MODEL_LIMIT_PCT in some kept run: how far off, the
    spread of the GPU's own measurements, and what the model does not know."""
    by: dict = {}
    for r in with_model:
        for x in r["model"]["rows"]:
            by.setdefault(x["experiment"], []).append(x)
    off = {name: xs for name, xs in by.items()
           if any(abs(x["error_pct"]) > MODEL_LIMIT_PCT for x in xs)}
    lines = ["", f"**What the model does not know.** Rows off by more than "
             f"{MODEL_LIMIT_PCT:g} % in some run above:" if off else
             f"Every row is within {MODEL_LIMIT_PCT:g} % in every run above.", ""]
    for name, xs in off.items():
        errs = [x["error_pct"] for x in xs]
        measured = [x["measured_ms"] for x in xs]
        predicted = [x["predicted_ms"] for x in xs]
        why = MODEL_UNKNOWNS.get(name, "not yet found (the model's rows say no more)")
        lines.append(
            f"- {name}: off by {min(errs):+.1f} % to {max(errs):+.1f} % "
            f"({sum(abs(e) > MODEL_LIMIT_PCT for e in errs)} of {len(errs)} runs beyond "
            f"{MODEL_LIMIT_PCT:g} %). The GPU measured {min(measured):.3f} to "
            f"{max(measured):.3f} ms across these runs, a spread of "
            f"{(max(measured) / min(measured) - 1) * 100:.0f} %; the model predicted "
            f"{min(predicted):.3f} to {max(predicted):.3f} ms. What it does not know: {why}.")
    return lines


def notebook_sections(records) -> list[str]:
    """Each lesson's headline figures and each lab solution's check results, one column
    per run that executed it (scripts/gpu/gpu_compare.py's table)."""
    from gpu_compare import notebook_table

    paths = sorted({p for r in records for p in (r["notebooks"] or {})})
    lines = []
    for title, intro, group in (
            ("The notebooks", "Executed top to bottom by `scripts/gpu/run_notebooks.py`; the "
             "committed notebooks hold the outputs of one of these runs. Each notebook's "
             "last cell prints its headline figures (figures of runs in a row are given "
             "in their order, a · b · c):",
             [p for p in paths if not p.startswith("solutions/")]),
            ("The labs", "Each lab's solution, executed top to bottom with its hidden "
             "tests. What each graded check printed (timing checks give the figure and the "
             "threshold it met):", [p for p in paths if p.startswith("solutions/")])):
        if not group:
            continue
        lines += ["", f"## {title}", "", intro]
        for path in group:
            ran = [r for r in records if path in (r["notebooks"] or {})]
            lines += ["", f"### [{Path(path).name}](../{path})", ""]
            lines += notebook_table([label(r) for r in ran],
                                    [r["notebooks"][path] for r in ran])
    return lines


def skipped_section(records) -> list[str]:
    """Each run's skipped tests, grouped by their reason, folded at the end of the page."""
    lines = []
    for r in records:
        if not r["skipped"]:
            continue
        by_reason: dict = {}
        for entry in r["skipped"]:
            name, _, reason = entry.partition(": ")
            by_reason.setdefault(reason or "no reason given", []).append(name)
        lines += ["", "<details>",
                  f"<summary>{label(r)}: {len(r['skipped'])} tests skipped, by reason"
                  "</summary>", ""]
        for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- {reason} ({len(names)}): " + ", ".join(f"`{n}`" for n in names))
        lines += ["", "</details>"]
    return ["", "## Skipped tests"] + lines if lines else []


CLASS_KEYS = ("date", "device", "submissions", "labs", "timeout", "cores", "rows")


def load_class_run(path) -> dict:
    run = _json(path, "a class run written by benchmarks/class_grading.py --stage finish "
                "--record")
    where = (f"{Path(path).name}: class runs are written by benchmarks/class_grading.py "
             f"--stage finish --record, from the judge stage's judged.json")
    missing = [k for k in CLASS_KEYS if not isinstance(run, dict) or k not in run]
    if missing or not run["rows"]:
        raise RecordError(f"{Path(path).name} lacks {', '.join(missing) or 'rows'}; " + where)

    def number(x):  # a positive count or duration
        return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0

    ok = (isinstance(run["rows"], list) and isinstance(run["labs"], list)
          and all(isinstance(lab, str) for lab in run["labs"])
          and all(isinstance(k, str) for k in (run["date"], run["device"]))
          and number(run["submissions"]) and number(run["timeout"]) and number(run["cores"])
          and all(isinstance(r, dict) and isinstance(r.get("how"), str)
                  and number(r.get("seconds")) and number(r.get("judged", 1))
                  for r in run["rows"]))
    if not ok:
        raise RecordError(f"{Path(path).name} holds a value of the wrong kind (each row a "
                          f"how, positive seconds and judged; labs a list of names); " + where)
    return run


def kept_class_runs() -> list[dict]:
    return [load_class_run(p) for p in sorted(CLASS_RUNS.glob("*.json"))]


def class_section(runs) -> list[str]:
    """The class grader on GPUs: each kept run's table (judged there, each grade written
    by nbgrader and checked against the class's expected grades)."""
    if not runs:
        return []
    lines = ["", "## Grading a class on GPUs (benchmarks/class_grading.py)", "",
             "Rows \"one worker per GPU\": a Dask worker for each GPU (dask_cuda's "
             "`LocalCUDACluster`); rows \"N workers\": a `LocalCluster` whose workers share "
             "one GPU. The grades were then written by nbgrader, one writer, and every one "
             "checked against the grade it should get before a row was kept."]
    for run in sorted(runs, key=lambda r: r["date"]):
        # a run with a time budget judged part of the class: each row says how much
        judged = [r.get("judged", run["submissions"]) for r in run["rows"]]
        one = run["rows"][0]["seconds"] / judged[0]
        budget = (f", each way judging what it could within {run['within']:g} s a lab"
                  if run.get("within") else "")
        boxes = sorted({b for r in run["rows"] for b in (r.get("sandbox") or [])})
        budget += f"; sandbox: {'; '.join(boxes)}" if boxes else ""
        lines += ["", f"{run['submissions']} submissions of {', '.join(run['labs'])} on "
                  f"{run['device']}, {run['date']} ({run['cores']} CPU cores; a part may run "
                  f"{run['timeout']:g} s{budget}):", "",
                  f"| judging | submissions judged | seconds | submissions per minute | "
                  f"speed against {run['rows'][0]['how']} |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {r['how']} | {n} | {r['seconds']:.1f} | {60 * n / r['seconds']:.1f} | "
                  f"{one / (r['seconds'] / n):.2f}x |" for r, n in zip(run["rows"], judged)]
    return lines


def targets_missed(records) -> list[str]:
    """Each stated target a benchmark of a run did not meet (a bench row named
    ``target: ...`` whose value is 0), with the run's label."""
    return [f"{row['name'][len('target: '):]} (benchmarks/span_overhead.py, {label(r)})"
            for r in records for row in r.get("bench") or ()
            if str(row.get("name", "")).startswith("target:") and not row.get("value")]


def page(records, class_runs=()) -> str:
    if not records:
        raise RecordError("no records: pass at least one (--from-records), written on a GPU "
                          "by scripts/gpu/gpu-check.sh")
    records = sorted(records, key=lambda r: (r["date"], r["gpu"]))
    lines = [
        "# Measured on a GPU",
        "",
        "Written by `scripts/gpu/gpu_results.py` from the records that `scripts/gpu/gpu-check.sh`",
        "wrote on each GPU (kept in `data/runs/results/`): every figure comes from that",
        "run's own measurements, one column a run. Exact values vary from run to run and",
        "from GPU to GPU; the lessons' claims hold them to what the device reports or what",
        "the same run measured. [gpu-compare.md](gpu-compare.md) has every kept notebook",
        "run side by side.",
        "",
    ]
    missed = targets_missed(records)
    if missed:
        lines += [f"**Not met:** {m}" for m in missed] + [""]
    lines += ["## The runs", ""]
    lines += runs_table(records)
    lines += ["", "## The streamlab package", "",
              "### Timeline accuracy, concurrency, host functions (tests/test_gpu.py)", ""]
    lines += figures_table(records, "figures")
    lines += ["", "### Cost of measuring (benchmarks/span_overhead.py)", ""]
    lines += figures_table(records, "bench")
    lines += ["", "### The model GPU against the GPU (scripts/gpu/model_vs_gpu.py)", ""]
    lines += model_table(records)
    lines += notebook_sections(records)
    lines += class_section(list(class_runs))
    lines += skipped_section(records)
    return "\n".join(lines) + "\n"


def kept_records() -> list[dict]:
    return [load_record(p) for p in sorted(RECORDS.glob("*.json"))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doctor", help="doctor.txt of the run (gpu-check.sh writes it)")
    ap.add_argument("--tests", nargs="+", default=[],
                    help="figures JSON of the tests (one per part of a run in parts)")
    ap.add_argument("--bench", help="JSON written by benchmarks/span_overhead.py")
    ap.add_argument("--junit", nargs="+", default=[],
                    help="junit XML of the tests (one per part of a run in parts)")
    ap.add_argument("--notebooks", help="JSON written by scripts/gpu/run_notebooks.py")
    ap.add_argument("--model", help="JSON written by scripts/gpu/model_vs_gpu.py")
    ap.add_argument("--record", help="write the run's record here")
    ap.add_argument("--from-records", nargs="+", metavar="RECORD",
                    help="make the page from these records instead of a run's files")
    ap.add_argument("--out", help="write the page here")
    ap.add_argument("--check", action="store_true",
                    help="fail if docs/gpu-results.md is not what the kept records give")
    a = ap.parse_args(argv)
    try:
        if a.check:
            want = page(kept_records(), kept_class_runs())
            if not PAGE.exists() or PAGE.read_text() != want:
                shown = PAGE.relative_to(ROOT) if PAGE.is_relative_to(ROOT) else PAGE
                print(f"{shown} is not what data/runs/results/ and data/runs/class/ "
                      f"give: run python scripts/gpu/gpu_results.py --from-records "
                      f"data/runs/results/*.json --out {shown}", file=sys.stderr)
                return 1
            return 0
        class_runs = []
        if a.from_records:
            records = [load_record(p) for p in a.from_records]
            class_runs = kept_class_runs()
        else:
            if not (a.doctor and a.bench):
                ap.error("a run's page needs --doctor, --bench and --junit (or pass "
                         "--from-records, or --check)")
            record = make_record(a.doctor, a.tests, a.bench, a.junit, a.notebooks, a.model)
            if a.record:
                Path(a.record).write_text(json.dumps(record, indent=1) + "\n")
            records = [record]
        text = page(records, class_runs)
    except RecordError as e:
        print(f"gpu_results.py: {e}", file=sys.stderr)
        return 2
    if a.out:
        Path(a.out).write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
