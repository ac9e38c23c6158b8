"""Write docs/gpu-results.md from what a GPU run measured.

    python scripts/gpu_results.py --tests T.json --bench B.json --junit J.xml --out PATH

Called by scripts/gpu-check.sh on the GPU machine, right after the run: every figure
in the page comes from that run's JSON files; nothing is typed in.
"""

import argparse
import datetime
import json
import os
import platform
import re
import xml.etree.ElementTree as ET
from pathlib import Path

os.environ.setdefault("STREAMLAB_QUIET", "1")

import streamlab  # noqa: E402
from streamlab import doctor  # noqa: E402


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


def summary(tot, notebooks=None) -> list[str]:
    """The page's opening lines: the tests' totals and the notebooks' verdict, in words."""
    lines = ["## Summary", ""]
    lines.append(f"- test suite on the GPU (`pytest -m \"gpu or not gpu\"`): {tot['passed']} "
                 f"passed, {tot['failures']} failed, {tot['errors']} errors, "
                 f"{tot['skipped']} skipped" + (" (listed, with why, at the end of the page)"
                                                if tot["skipped"] else ""))
    if notebooks:
        runs = {len(r.get("runs", [])) or 1 for r in notebooks.values()}
        failed = sorted(Path(k).name for k, r in notebooks.items() if r["error"] is not None)
        lines.append(f"- notebooks and lab solutions executed: {len(notebooks)}, "
                     f"{' or '.join(str(n) for n in sorted(runs))} run(s) in a row each; "
                     + (f"**{len(failed)} failed**: {', '.join(failed)}" if failed
                        else "every one passed in every run"))
    return lines


def skipped_section(skipped) -> list[str]:
    """The skipped tests, grouped by their reason, folded at the end of the page."""
    if not skipped:
        return []
    by_reason: dict = {}
    for entry in skipped:
        name, _, reason = entry.partition(": ")
        by_reason.setdefault(reason or "no reason given", []).append(name)
    lines = ["", "## Skipped tests", "", "<details>",
             f"<summary>{len(skipped)} tests skipped on the GPU, by reason</summary>", ""]
    for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {reason} ({len(names)}): " + ", ".join(f"`{n}`" for n in names))
    lines += ["", "</details>"]
    return lines


def figures_table(rows):
    out = ["| measured | value | unit | by |", "| --- | ---: | --- | --- |"]
    for r in rows:
        by = r["test"].split("::")[-1]
        out.append(f"| {r['name']} | {r['value']} | {r['unit']} | `{by}` |")
    return out


def notebook_sections(results):
    """The lessons' headline figures and each lab solution's check results."""
    lessons = {k: r for k, r in results.items() if not k.startswith("solutions/")}
    labs = {k: r for k, r in results.items() if k.startswith("solutions/")}
    lines = []
    for title, intro, group in (
            ("The notebooks", "Executed top to bottom by `scripts/run_notebooks.py` in this "
             "run; the committed notebooks hold these outputs. Each notebook's last cell "
             "prints its headline figures:", lessons),
            ("The labs", "Each lab's solution, executed top to bottom in this run with its "
             "hidden tests; the committed solutions hold these outputs. What each graded "
             "check printed (timing checks give the figure and the threshold it met):",
             labs)):
        if not group:
            continue
        lines += ["", f"## {title}", "", intro]
        for path, r in sorted(group.items()):
            error = re.sub(r"\x1b\[[0-9;]*m", "", r["error"] or "")  # no terminal colours
            state = "ran" if r["error"] is None else f"FAILED ({error})"
            lines += ["", f"### [{Path(path).name}](../{path})", ""]
            runs = r.get("runs", [])
            if runs:
                lines += [f"{state}: {len(runs)} runs in a row, each in a fresh kernel, in "
                          + ", ".join(f"{x['seconds']} s" for x in runs)
                          + ". Each figure from run 1 to run " + str(len(runs))
                          + "; the notebook holds the last:", ""]
                values = {}
                for i, x in enumerate(runs):  # by run: a run without the figure shows "–"
                    for k, v in x["headline"]:
                        values.setdefault(k, ["–"] * len(runs))[i] = v
                lines += [f"- {k}: {' · '.join(vs)}" for k, vs in values.items()]
            else:
                lines += [f"{state} in {r['seconds']} s", ""]
                lines += [f"- {k}: {v}" for k, v in r["headline"]]
    return lines


def model_section(result):
    """The model GPU's predictions against this run's measurements."""
    lines = ["", "### The model GPU against the GPU (scripts/model_vs_gpu.py)", "",
             f"Each experiment is a notebook's code, measured (median of {result['repeats']} "
             f"runs) and predicted by `streamlab.predict()` with the "
             f"`{result['profile']}` profile (measured {result['profile_measured']} by "
             f"`scripts/measure_profile.py`). Makespans of the stream rows:", "",
             "| experiment | predicted (ms) | measured (ms) | error |",
             "| --- | ---: | ---: | ---: |"]
    for r in result["rows"]:
        lines.append(f"| {r['experiment']} | {r['predicted_ms']:.3f} | "
                     f"{r['measured_ms']:.3f} | {r['error_pct']:+.1f} % |")
    lines += ["", f"Median of the absolute errors: **{result['median_abs_error_pct']:.1f} %** "
              f"over {len(result['rows'])} experiments; the largest "
              f"{result['max_abs_error_pct']:.1f} %."]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", required=True, nargs="+",
                    help="figures JSON of the tests (one per part of a run in parts)")
    ap.add_argument("--bench", required=True)
    ap.add_argument("--junit", required=True, nargs="+",
                    help="junit XML of the tests (one per part of a run in parts)")
    ap.add_argument("--notebooks", help="JSON written by scripts/run_notebooks.py")
    ap.add_argument("--model", help="JSON written by scripts/model_vs_gpu.py")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if streamlab.on_simulator():
        raise SystemExit("gpu_results.py must run on a GPU: this is the simulator")
    # no figures file: no test that measures a figure was in this run (a partial run)
    tests = [row for path in a.tests if Path(path).exists()
             for row in json.loads(Path(path).read_text())]
    bench = json.loads(Path(a.bench).read_text())
    tot, skipped = {}, []
    for path in a.junit:
        part, part_skipped = junit_summary(path)
        tot = {k: tot.get(k, 0) + v for k, v in part.items()}
        skipped += part_skipped
    v = doctor.versions()
    lines = [
        "# Measured on a GPU",
        "",
        "Written by `scripts/gpu_results.py` at the end of `scripts/gpu-check.sh`, from that",
        "run's own measurements. Expect figures of the same order on an H100 or H200; exact",
        "values vary from run to run.",
        "",
        f"- GPU: **{streamlab.device_name()}** (CUDA driver {doctor.driver_version()}), "
        f"{len(streamlab._cuda.gpus)} visible",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- python {platform.python_version()}, "
        + ", ".join(f"{k} {v[k]}" for k in ("numba", "numba-cuda", "numpy", "cuda-bindings",
                                             "cuda-core", "matplotlib")),
    ]
    notebooks = json.loads(Path(a.notebooks).read_text()) if a.notebooks else None
    lines += [""] + summary(tot, notebooks)
    lines += ["", "## The streamlab package", "",
              "### Timeline accuracy, concurrency, host functions (tests/test_gpu.py)", ""]
    lines += figures_table(tests) if tests else ["Not in this run."]
    lines += ["", "### Cost of measuring (benchmarks/span_overhead.py)", ""]
    lines += figures_table(bench)
    if a.model:
        lines += model_section(json.loads(Path(a.model).read_text()))
    if notebooks:
        lines += notebook_sections(notebooks)
    lines += skipped_section(skipped)
    lines.append("")
    Path(a.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
