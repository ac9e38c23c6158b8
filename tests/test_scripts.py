"""The scripts that publish GPU results: the parts that need no GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent

import gpu_results  # noqa: E402
import run_notebooks  # noqa: E402


def notebook_with_headline(text, tags=("headline",)):
    cell = new_code_cell("print(...)", metadata={"tags": list(tags)})
    cell.outputs = [new_output("stream", name="stdout", text=text),
                    new_output("stream", name="stderr", text="warning: noise\n")]
    return new_notebook(cells=[new_code_cell("x = 1"), cell])


def test_headline_lines_are_name_value_pairs_from_stdout_only():
    nb = notebook_with_headline("device: NVIDIA H200\nbound: 219.3 ms\nno colon here\n")
    assert run_notebooks.headline(nb) == [["device", "NVIDIA H200"], ["bound", "219.3 ms"]]


def test_a_notebook_needs_exactly_one_headline_cell():
    with pytest.raises(ValueError, match="found 0"):
        run_notebooks.headline(notebook_with_headline("a: 1\n", tags=()))


def test_junit_summary_counts_and_names_skips(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text(
        '<testsuites><testsuite tests="4" failures="1" errors="0" skipped="1">'
        '<testcase name="a"/><testcase name="b"><failure/></testcase>'
        '<testcase name="c"><skipped message="needs two GPUs"/></testcase>'
        '<testcase name="d"/></testsuite></testsuites>')
    totals, skipped = gpu_results.junit_summary(xml)
    assert totals == {"tests": 4, "failures": 1, "errors": 0, "skipped": 1, "passed": 2}
    assert skipped == ["c: needs two GPUs"]


def record(gpu="GPU A", date="2026-01-01 10:00 UTC", **kw):
    """A run's record as scripts/gpu/gpu_results.py --record writes it."""
    base = {"gpu": gpu, "visible": 1, "driver": "13.0", "date": date,
            "versions": {"python": "3.12.3", "numba-cuda": "0.30.4"},
            "tests": {"tests": 3, "passed": 3, "failures": 0, "errors": 0, "skipped": 0},
            "skipped": [], "failed": [], "figures": [], "bench": [], "model": None,
            "notebooks": None}
    return {**base, **kw}


def test_figures_table_puts_each_runs_value_in_its_own_column():
    span = {"test": "tests/test_gpu.py::test_x", "name": "span", "unit": "ms"}
    a = record(figures=[dict(span, value=1.0)])
    b = record("GPU B", "2026-01-02 10:00 UTC",
               figures=[dict(span, value=1.25), dict(span, name="other", value=3)])
    rows = gpu_results.figures_table([a, b], "figures")
    assert rows[0] == ("| measured | unit | by | GPU A, 2026-01-01 10:00 UTC | "
                       "GPU B, 2026-01-02 10:00 UTC |")
    assert "| span | ms | `test_x` | 1 | 1.25 |" in rows
    assert "| other | ms | `test_x` | – | 3 |" in rows      # a figure one run lacks
    assert gpu_results.figures_table([record()], "bench") == ["Not in these runs."]


DOCTOR = """name, driver_version, memory.total [MiB]
NVIDIA H200, 580.159.04, 143771 MiB
NVIDIA H200, 580.159.04, 143771 MiB
streamlab: running on NVIDIA H200 (compute capability 9.0).
streamlab doctor

  device         NVIDIA H200
  python         3.12.3 (Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39)
  CUDA driver    13.0
  numba          0.68.0
  numba-cuda     0.30.4
  numpy          2.4.6
  cuda-core      1.2.0
  numba's calls  watches numba's launches
"""


def test_a_record_is_made_from_the_runs_own_files(tmp_path):
    (tmp_path / "doctor.txt").write_text(DOCTOR)
    (tmp_path / "j1.xml").write_text(
        '<testsuites><testsuite tests="2" failures="1" errors="0" skipped="0" '
        'timestamp="2026-11-25T23:32:24.9+00:00"><testcase classname="tests.t" name="a"/>'
        '<testcase classname="tests.t" name="b"><failure/></testcase></testsuite></testsuites>')
    (tmp_path / "j2.xml").write_text(
        '<testsuites><testsuite tests="1" failures="0" errors="0" skipped="1" '
        'timestamp="2026-11-25T23:40:00+00:00"><testcase classname="tests.u" name="c">'
        '<skipped message="needs two GPUs"/></testcase></testsuite></testsuites>')
    (tmp_path / "bench.json").write_text('[{"test": "b.py", "name": "launch", '
                                         '"value": 16.5, "unit": "us"}]')
    out = tmp_path / "record.json"
    assert gpu_results.main([
        "--doctor", str(tmp_path / "doctor.txt"), "--bench", str(tmp_path / "bench.json"),
        "--junit", str(tmp_path / "j1.xml"), str(tmp_path / "j2.xml"),
        "--tests", str(tmp_path / "absent.json"),  # a part that measured no figure
        "--record", str(out), "--out", str(tmp_path / "page.md")]) == 0
    r = gpu_results.load_record(out)
    assert (r["gpu"], r["visible"], r["driver"], r["date"]) == (
        "NVIDIA H200", 2, "13.0", "2026-11-25 23:40 UTC")
    assert r["versions"] == {"python": "3.12.3", "numba": "0.68.0", "numba-cuda": "0.30.4",
                             "numpy": "2.4.6", "cuda-core": "1.2.0"}
    assert r["tests"] == {"tests": 3, "failures": 1, "errors": 0, "skipped": 1, "passed": 1}
    assert r["failed"] == ["tests.t::b"] and r["skipped"] == ["c: needs two GPUs"]
    text = (tmp_path / "page.md").read_text()
    assert "| tests that failed | `tests.t::b` |" in text
    assert "| launch | us | `b.py` | 16.5 |" in text


@pytest.mark.parametrize("files, says", [
    ({"doctor.txt": "streamlab doctor\n\n  device         simulator (no GPU)\n"},
     "names no GPU"),
    ({"doctor.txt": DOCTOR, "bench.json": "not json"}, "not JSON"),
    ({"doctor.txt": DOCTOR, "bench.json": "[]", "j.xml": "<testsuites><testsuite tests='0'/>"
      "</testsuites>"}, "no timestamp"),
])
def test_a_run_that_cannot_make_a_record_gets_a_clear_error(tmp_path, capsys, files, says):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = ["--doctor", str(tmp_path / "doctor.txt"), "--bench", str(tmp_path / "bench.json"),
            "--junit", str(tmp_path / "j.xml")]
    if "j.xml" not in files:
        (tmp_path / "j.xml").write_text("<testsuites><testsuite tests='0' timestamp="
                                        "'2026-01-01T00:00:00'/></testsuites>")
    assert gpu_results.main(args) == 2
    assert says in capsys.readouterr().err


def test_a_file_that_is_not_a_record_is_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"gpu": "A"}')
    with pytest.raises(gpu_results.RecordError, match="not a run's record"):
        gpu_results.load_record(path)
    with pytest.raises(gpu_results.RecordError, match="no records"):
        gpu_results.page([])


def test_executed_notebooks_are_valid(tmp_path):
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook_with_headline("a: 1\n"), path)
    nbformat.validate(nbformat.read(path, as_version=4))


def test_a_failed_run_is_saved_with_nothing_of_an_earlier_run_and_names_its_cell(tmp_path):
    """A notebook that fails in its second code cell: the cells after it keep nothing of
    the earlier run they held (no output, no count), the notebook is not stamped, the
    result names the cell, and a claims cell's figures and conditions are kept in the
    result (a failed claim's too: it says by how much)."""
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    earlier = [new_output("stream", name="stdout", text="figure: 9.99 (an earlier run)\n")]
    after = new_code_cell("print('figure:', 1.0)", execution_count=7, outputs=earlier)
    failing = new_notebook(cells=[
        new_code_cell("import streamlab"),
        nbformat.v4.new_markdown_cell("text"),
        new_code_cell("# the planted failure\nraise RuntimeError('planted')"),
        after], metadata={"kernelspec": kernel})
    claim = new_code_cell(
        "streamlab.claims(figures={'x': 2.5}, claims={'x is over 3': 'x > 3'})",
        metadata={"tags": ["claims"]})
    failing_claim = new_notebook(cells=[new_code_cell("import streamlab"), claim,
                                        new_code_cell("print('after the claims')",
                                                      outputs=list(earlier))],
                                 metadata={"kernelspec": kernel})
    paths = [tmp_path / "fails.ipynb", tmp_path / "claim_fails.ipynb"]
    for nb, path in zip((failing, failing_claim), paths):
        nbformat.write(nb, path)
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim",
               NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=os.pathsep.join(
                   [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("STREAMLAB_RACE_CHECK", None)
    out = tmp_path / "runs.json"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu" / "run_notebooks.py"),
                          *map(str, paths), "--json", str(out), "--timeout", "120"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    results = json.loads(out.read_text())
    first, second = (results[str(p)] for p in paths)
    assert "planted" in first["error"]
    assert first["failed_cell"] == {"cell": 2, "code_cell": 1,
                                    "first_line": "# the planted failure"}
    assert "in code cell 1: # the planted failure" in run.stdout
    saved = nbformat.read(paths[0], as_version=4)
    assert saved.cells[3].outputs == [] and saved.cells[3].execution_count is None
    assert "streamlab_run" not in saved.metadata, "a failed run is stamped"
    assert "claims" not in first
    assert second["failed_cell"]["code_cell"] == 1 and "x is over 3" in second["error"]
    assert second["claims"] == {"figures": {"x": 2.5}, "on_gpu": False,
                                "claims": {"x is over 3": "x > 3"}, "gpu_claims": {}}
    assert nbformat.read(paths[1], as_version=4).cells[2].outputs == []


def lab_notebook(check_output):
    grade = {"grade": True, "grade_id": "check_part1", "points": 3, "solution": False}
    cell = new_code_cell("check_part1()", metadata={"nbgrader": grade})
    cell.outputs = [new_output("stream", name="stdout", text=check_output)]
    answer = new_code_cell("def f(): pass", metadata={"nbgrader": {"solution": True}})
    return new_notebook(cells=[answer, cell])


def test_a_lab_reports_what_each_graded_check_printed():
    nb = lab_notebook("8 kernels on 8 streams: concurrency 7.9 (needs 5.2)\nPart 1: passed\n")
    assert run_notebooks.report(nb) == [[
        "check_part1 (3 points)",
        "8 kernels on 8 streams: concurrency 7.9 (needs 5.2); Part 1: passed"]]


def test_a_lesson_reports_its_headline():
    assert run_notebooks.report(notebook_with_headline("a: 1\n")) == [["a", "1"]]


def test_results_page_links_lessons_and_labs_in_their_own_sections():
    ok = {"seconds": 1.0, "error": None, "headline": [["a", "1"]]}
    lines = gpu_results.notebook_sections([record(notebooks={
        "notebooks/00__x__y.ipynb": ok,
        "solutions/lab01__z/lab01__z.ipynb": dict(ok, error="CheckFailed: too slow")})])
    text = "\n".join(lines)
    assert text.index("## The notebooks") < text.index("(../notebooks/00__x__y.ipynb)")
    assert text.index("## The labs") < text.index("(../solutions/lab01__z/lab01__z.ipynb)")
    assert "FAILED: CheckFailed: too slow" in text


def test_results_of_several_calls_combine_into_each_notebooks_runs_in_order(tmp_path):
    one = {"seconds": 1.0, "error": None, "headline": [["x", "1 ms"]]}
    two = {"seconds": 2.0, "error": None, "headline": [["x", "2 ms"]]}
    bad = {"seconds": 3.0, "error": "claims that do not hold: y", "headline": []}
    first = {"a.ipynb": one, "b.ipynb": one}
    # a later call merged from the first (--merge), that ran a.ipynb again, twice
    later = {"b.ipynb": one, "a.ipynb": run_notebooks.repeated([two, bad])}
    both = run_notebooks.combine([first, later])
    assert [r["headline"] for r in both["a.ipynb"]["runs"]] == [
        [["x", "1 ms"]], [["x", "2 ms"]], []]
    assert both["a.ipynb"]["error"] == "run 3 of 3: claims that do not hold: y"
    assert both["b.ipynb"] == one                         # carried over once, not twice
    # two runs alike in one part are two runs; runs that say when they ran are told apart
    # by that alone
    assert len(run_notebooks.combine([{"a": run_notebooks.repeated([one, dict(one)])}])[
        "a"]["runs"]) == 2
    early, late = dict(one, at="2026-11-26T01:00:00Z"), dict(one, at="2026-11-26T02:00:00Z")
    assert len(run_notebooks.combine([{"a": early}, {"a": early}, {"a": late}])["a"]["runs"]) == 2
    with pytest.raises(ValueError, match="part 1 is not what"):
        run_notebooks.combine([{"gpu": "H100", "notebooks": {}}])
    h100 = dict(one, headline=[["device", "NVIDIA H100 80GB HBM3"]])
    h200 = dict(one, headline=[["device", "NVIDIA H200, 2 GPU(s)"]])
    with pytest.raises(ValueError, match="ran on 2 GPUs"):
        run_notebooks.combine([{"a": h100}, {"a": h200}])
    paths = []
    for i, part in enumerate((first, later)):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(part))
    out = tmp_path / "out.json"
    argv = ["run_notebooks.py", "--combine", *map(str, paths), "--json", str(out)]
    with mock.patch.object(sys, "argv", argv):
        assert run_notebooks.main() == 1                  # one run failed
    assert json.loads(out.read_text()) == both
    (tmp_path / "0.json").write_text("{")
    with mock.patch.object(sys, "argv", argv):
        assert run_notebooks.main() == 2


def test_a_repeated_run_keeps_every_run_and_fails_if_any_run_failed():
    good = {"seconds": 1.0, "error": None, "headline": [["pipelined", "241.4 ms"]]}
    bad = {"seconds": 2.0, "error": "claims that do not hold: x", "headline": []}

    def section(r):
        return "\n".join(gpu_results.notebook_sections(
            [record(notebooks={"notebooks/06__x.ipynb": r})]))

    assert run_notebooks.repeated([good]) is good
    r = run_notebooks.repeated([good, dict(good, headline=[["pipelined", "242.0 ms"]])])
    assert r["error"] is None and len(r["runs"]) == 2
    text = section(r)
    assert "| run | 2 runs in a row, each passed, in 1.0, 1.0 s |" in text
    assert "| pipelined | 241.4 ms · 242.0 ms |" in text
    r = run_notebooks.repeated([good, bad, dict(good, headline=[["pipelined", "250.0 ms"]])])
    assert r["error"] == "run 2 of 3: claims that do not hold: x"
    text = section(r)
    assert "| pipelined | 241.4 ms · – · 250.0 ms |" in text   # each figure under its run
    assert "FAILED: run 2 of 3" in text


def test_each_gpus_notebook_figures_stand_side_by_side():
    a = record(notebooks={"notebooks/00__x.ipynb": {
        "seconds": 1.0, "error": None, "headline": [["kernel", "1.0 ms"]]}})
    b = record("GPU B", "2026-01-02 10:00 UTC", notebooks={"notebooks/00__x.ipynb": {
        "seconds": 2.0, "error": None, "headline": [["kernel", "2.0 ms"], ["new", "x"]]}})
    text = gpu_results.page([b, a])  # in the order of their dates, whatever is passed
    assert "| kernel | 1.0 ms | 2.0 ms |" in text and "| new | – | x |" in text
    assert text.index("GPU A, 2026-01-01") < text.index("GPU B, 2026-01-02")


def test_the_model_table_gives_each_gpus_predictions_and_errors():
    model = {"profile": "nvidia-h100", "median_abs_error_pct": 4.2, "rows": [
        {"experiment": "01: 8 streams", "predicted_ms": 7.9, "measured_ms": 7.7,
         "error_pct": 2.6}]}
    rows = gpu_results.model_table([record(model=model), record("GPU B")])
    assert "| 01: 8 streams | 7.900 / 7.700 ms (+2.6 %) |" in rows
    table_end = rows.index("| **median of the absolute errors** | **4.2 %** |")
    assert rows[table_end + 2] == "Every row is within 15 % in every run above."
    assert gpu_results.model_table([record()]) == ["Not in these runs."]


# --- each GPU's run, side by side (scripts/gpu/gpu_compare.py) ----------------------------
import gpu_compare  # noqa: E402


def test_the_comparison_page_is_what_the_kept_runs_give():
    """docs/gpu-compare.md is written from data/runs/ alone: a hand edit, or a run added
    without rewriting the page, fails here."""
    assert gpu_compare.main(["--check"]) == 0, "run python scripts/gpu/gpu_compare.py"
    runs = [gpu_compare.load(p) for p in sorted(gpu_compare.RUNS.glob("*.json"))]
    gpus = {r["gpu"] for r in runs}
    assert {"NVIDIA H200"} <= gpus and any("H100" in g for g in gpus), \
        f"issue 29: the page shows an H100's and an H200's runs; it has {sorted(gpus)}"


def test_the_comparison_page_puts_each_runs_figures_in_its_own_column(tmp_path):
    for name, gpu, ms in (("2026-01-01-a.json", "GPU A", "1.0 ms"),
                          ("2026-01-02-b.json", "GPU B (2 GPU(s) visible)", "2.0 ms")):
        (tmp_path / name).write_text(json.dumps({"notebooks/00__x__y.ipynb": {
            "seconds": 1.0, "error": None,
            "headline": [["device", gpu], ["kernel", ms]]}}))
    runs = [gpu_compare.load(p) for p in sorted(tmp_path.glob("*.json"))]
    assert [r["gpu"] for r in runs] == ["GPU A", "GPU B"]
    text = gpu_compare.page(runs)
    assert "| kernel | 1.0 ms | 2.0 ms |" in text
    assert "| run | ran in 1.0 s | ran in 1.0 s |" in text


def test_the_comparison_page_says_how_many_times_in_a_row_a_notebook_ran(tmp_path):
    """A run of run_notebooks.py --repeat 3 keeps each run: the page says three runs in a
    row passed, and how long each took; the summary says how many times each ran."""
    runs = [{"seconds": s, "error": None, "headline": [["device", "GPU A"]]}
            for s in (1.0, 2.0, 3.0)]
    (tmp_path / "2026-01-01-a.json").write_text(json.dumps({
        "notebooks/00__x__y.ipynb": {"seconds": 3.0, "error": None, "runs": runs,
                                     "headline": [["device", "GPU A"]]},
        "notebooks/01__x__y.ipynb": {"seconds": 1.0, "error": None,
                                     "headline": [["device", "GPU A"]]}}))
    text = gpu_compare.page([gpu_compare.load(tmp_path / "2026-01-01-a.json")])
    assert "| run | 3 runs in a row, each passed, in 1.0, 2.0, 3.0 s |" in text
    assert "| GPU A, 2026-01-01-a | GPU A | 2 | 1 to 3 | 0 |" in text


@pytest.mark.parametrize("name, content, says", [
    ("run.json", "{}", "YYYY-MM-DD"),
    ("2026-01-01-x.json", "not json", "not JSON"),
    ("2026-01-01-x.json", "{}", "holds no results"),
    ("2026-01-01-x.json", json.dumps({"a": {"headline": [["device", "A"]]},
                                      "b": {"headline": [["device", "B"]]}}), "2 devices"),
])
def test_a_bad_run_file_gets_a_clear_error(tmp_path, name, content, says):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(gpu_compare.RunError, match=says):
        gpu_compare.load(path)


def test_the_page_opens_with_each_runs_summary_and_folds_the_skipped_tests_at_its_end():
    tot = {"passed": 5, "failures": 1, "errors": 0, "skipped": 3}
    runs = [{"seconds": 1, "error": None, "headline": []}] * 3
    notebooks = {"notebooks/00__a.ipynb": {"error": None, "runs": runs},
                 "notebooks/01__b.ipynb": {"error": "ClaimFailed: x", "runs": runs}}
    tests, nbs = gpu_results.summary(tot, notebooks)
    assert tests == "5 passed, 1 failed, 0 errors, 3 skipped"
    assert nbs == "2 executed, 3 run(s) in a row each; **1 failed**: 01__b.ipynb"
    assert gpu_results.summary(tot, {"notebooks/00__a.ipynb": {"error": None}})[1] == (
        "1 executed, 1 run(s) in a row each; every one passed in every run")
    assert gpu_results.summary(tot)[1] == "not in this run"
    r = record(skipped=["t1: needs two GPUs", "t2: needs two GPUs", "t3: sim only"])
    folded = gpu_results.skipped_section([r, record("GPU B")])
    assert folded[:2] == ["", "## Skipped tests"]
    assert folded[folded.index("<details>") + 1].startswith(
        "<summary>GPU A, 2026-01-01 10:00 UTC: 3 tests skipped")
    assert "- needs two GPUs (2): `t1`, `t2`" in folded and folded[-1] == "</details>"
    assert gpu_results.skipped_section([record()]) == []
    text = gpu_results.page([r])
    assert text.index("## The runs") < text.index("## Skipped tests")
    assert "| test suite on the GPU (`pytest -m \"gpu or not gpu\"`) | 3 passed," in text


@pytest.mark.parametrize("args, says", [
    (["--reps", "0"], "--reps 0: grade each lab at least once"),
    (["lab99__none"], "lab99__none: no such lab in solutions/")])
def test_the_grading_benchmark_refuses_bad_input_plainly(args, says):
    import subprocess

    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "grading_times.py"), *args],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and says in out.stderr, out.stderr


def test_the_results_page_is_what_the_kept_records_give(monkeypatch, tmp_path):
    """docs/gpu-results.md is written from data/runs/results/ alone, and the kept records
    show what issue 29 asks: an H100 and an H200, every notebook and lab solution on each,
    passing in every run, three runs in a row on the H100 (lesson 07 ten), and the GPU
    tests passing on both."""
    assert gpu_results.main(["--check"]) == 0, "run scripts/gpu/gpu_results.py --from-records"
    executed = {p.relative_to(ROOT).as_posix() for p in
                [*(ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb"),
                 *(ROOT / "solutions").glob("lab*/lab*.ipynb")]}
    records = gpu_results.kept_records()
    kinds = {}
    for r in records:
        if r["visible"] > 1:   # issue 36: a two-GPU run of lesson 09 (and the GPU tests)
            runs = {n: len(v.get("runs") or [v]) for n, v in r["notebooks"].items()}
            assert {n for n in runs if "/09__" in n} == {n for n in executed if "/09__" in n}
            assert min(runs.values()) >= 3, runs
            assert all(v["error"] is None for v in r["notebooks"].values())
            assert r["tests"]["failures"] == r["tests"]["errors"] == 0
            assert not [s for s in r["skipped"] if "two GPUs" in s], r["skipped"]
            continue
        assert set(r["notebooks"]) >= executed, f"{r['gpu']}: not every notebook ran"
        assert all(n["error"] is None for n in r["notebooks"].values()), r["gpu"]
        assert r["tests"]["failures"] == r["tests"]["errors"] == 0, r["gpu"]
        runs = {name: len(n.get("runs") or [n]) for name, n in r["notebooks"].items()}
        kind = "H100" if "H100" in r["gpu"] else "H200" if "H200" in r["gpu"] else r["gpu"]
        kinds[kind] = max(kinds.get(kind, 0), min(runs.values()))
        if kind == "H100" and min(runs.values()) >= 3:
            assert min(v for k, v in runs.items() if "/07__" in k) >= 10, "lesson 07: 10 runs"
    assert kinds.get("H100", 0) >= 3 and kinds.get("H200", 0) >= 1, kinds
    # a hand edit of the page fails the check
    page = tmp_path / "gpu-results.md"
    page.write_text(gpu_results.PAGE.read_text().replace("922 passed", "923 passed", 1))
    monkeypatch.setattr(gpu_results, "PAGE", page)
    assert gpu_results.main(["--check"]) == 1


def test_class_runs_on_gpus_make_a_section_and_bad_ones_say_what_to_do(tmp_path):
    run = {"date": "2026-11-26", "device": "2 x NVIDIA H200", "submissions": 40,
           "labs": ["lab05"], "timeout": 10.0, "cores": 32,
           "rows": [{"how": "1 GPU", "seconds": 200.0}, {"how": "2 GPUs", "seconds": 100.0}]}
    text = "\n".join(gpu_results.class_section([run]))
    assert "| 2 GPUs | 40 | 100.0 | 24.0 | 2.00x |" in text
    budgeted = dict(run, within=60.0, rows=[{"how": "1 GPU", "judged": 9, "seconds": 60.0},
                                            {"how": "2 GPUs", "judged": 18, "seconds": 60.0}])
    text = "\n".join(gpu_results.class_section([budgeted]))
    assert "within 60 s a lab" in text and "| 2 GPUs | 18 | 60.0 | 18.0 | 2.00x |" in text
    assert gpu_results.class_section([]) == []
    path = tmp_path / "r.json"
    path.write_text(json.dumps(dict(run, rows=[])))
    with pytest.raises(gpu_results.RecordError, match="lacks rows"):
        gpu_results.load_class_run(path)
    bad = dict(run)
    bad.pop("device")
    path.write_text(json.dumps(bad))
    with pytest.raises(gpu_results.RecordError, match="lacks device"):
        gpu_results.load_class_run(path)
    for broken in (dict(run, rows="1 GPU"), dict(run, labs="lab05"), dict(run, timeout="10"),
                   dict(run, rows=[{"how": "1 GPU", "seconds": 0}]),
                   dict(run, rows=[{"how": "1 GPU"}]), [run]):
        path.write_text(json.dumps(broken))
        with pytest.raises(gpu_results.RecordError, match="wrong kind|lacks"):
            gpu_results.load_class_run(path)
    assert gpu_results.label(record(visible=None)).startswith(record()["gpu"])
    kept = gpu_results.kept_class_runs()
    assert any(r["how"].endswith("2 GPUs") for k in kept for r in k["rows"]), \
        "issue 36: the class grader's two-GPU run is kept in data/runs/class/"


def test_the_gpu_class_script_says_what_it_lacks(tmp_path):
    """scripts/gpu/gpu-class.sh runs on a GPU machine; where its wheels or the prepared class
    are missing it says so, in one line, before it installs or runs anything."""
    import shutil
    import subprocess

    (tmp_path / "scripts" / "gpu").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "gpu" / "gpu-class.sh", tmp_path / "scripts" / "gpu")
    script = str(tmp_path / "scripts" / "gpu" / "gpu-class.sh")

    def run(*args):
        done = subprocess.run(["bash", script, *args], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")})
        return done.returncode, done.stderr

    code, said = run()
    assert code != 0 and "usage: gpu-class.sh DIR" in said
    code, said = run("bench")
    assert code == 2 and "no .whl folder: carry it" in said
    (tmp_path / ".whl").mkdir()
    (tmp_path / ".whl-class").mkdir()
    code, said = run("bench")
    assert code == 2 and "holds no prepared class" in said


def test_the_numba_cuda_mlir_page_is_what_its_kept_run_gives():
    """docs/numba-cuda-mlir.md (issue 31's forward path) is written from the kept run."""
    import try_numba_cuda_mlir

    source = "data/runs/numba-cuda-mlir/2026-11-26-h100.json"
    report = json.loads((ROOT / source).read_text())
    assert (ROOT / "docs" / "numba-cuda-mlir.md").read_text() == \
        try_numba_cuda_mlir.page(report, source), \
        f"run python scripts/probes/try_numba_cuda_mlir.py --page {source} --out docs/numba-cuda-mlir.md"
    lessons = [k for k in report if k.startswith("notebooks/")]
    assert len(lessons) == 3 and all("/0" in k for k in lessons), lessons
    with pytest.raises(SystemExit, match="give notebooks and --json"):
        try_numba_cuda_mlir.main([])


def test_the_trace_counts_the_package_functions_and_calls_a_path_makes():
    """scripts/ci/trace_files.py (issue 55: the work a path does, not the files it passes
    through) counts the package functions one span becoming a bar entered, and its calls."""
    import trace_files

    import streamlab

    trace_files.span_to_bar()
    got = trace_files.count(trace_files.span_to_bar)
    assert {"timeline.py", "trace.py"} <= set(got["files"]), got["files"]
    assert got["calls"] >= got["functions"] >= len(got["files"]) > 0
    assert got["moves"] >= got["back"] >= 0 and got["moves"] >= len(got["files"]) - 1
    nothing = trace_files.count(lambda: sum(range(10)))   # no package code: nothing counted
    assert nothing == {"functions": 0, "calls": 0, "files": [], "moves": 0, "back": 0}
    inner = trace_files.count(lambda: [streamlab.ms_to_ns(x) for x in range(3)])
    assert inner["functions"] == 1 and inner["calls"] == 3, inner  # one function, called 3 times


def test_a_span_and_every_verdict_enter_no_more_package_functions_than_today():
    """Issue 55: one span becoming a bar, one exercise's verdict, and the verdicts on every
    kept right answer, summed, enter no more of the package's functions than the limits
    scripts/ci/trace_files.py holds (today's counts; it exits 1 past them). A module split in
    two does not change a count of functions."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "ci" / "trace_files.py"), "--all"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={**os.environ, "STREAMLAB_DEVICE": "sim", "STREAMLAB_QUIET": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith(("| one span",
                                                                       "| an exercise",
                                                                       "| every kept"))]
    assert len(rows) == 3, r.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert 0 < int(cells[1]) <= int(cells[2]), row


# --- which collections run during tests (scripts/probes/gc_during_tests.py) ---------------------
def test_gc_during_tests_names_the_test_and_the_thread_of_each_collection(tmp_path):
    """The script lists a collection on a thread other than the main one, and a long one
    on the main thread, each with the test that was running; bad arguments are refused."""
    import subprocess

    (tmp_path / "test_gc_case.py").write_text(
        "import gc, threading\n"
        "def test_collects():\n"
        "    junk = [[i] for i in range(200000)]\n"
        "    t = threading.Thread(target=gc.collect, name='driver-like')\n"
        "    t.start(); t.join()\n"
        "    gc.collect()\n")
    out = tmp_path / "gc.txt"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "probes" / "gc_during_tests.py"),
                        "--min-ms", "0", "--out", str(out), "--", "-q", "-p", "no:cacheprovider",
                        "-o", "addopts=", "-p", "no:xdist", str(tmp_path / "test_gc_case.py")],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    text = out.read_text()
    assert "-- test_gc_case.py::test_collects" in text
    assert "thread 'driver-like'  during test_gc_case.py::test_collects" in text
    assert "thread 'MainThread'  during test_gc_case.py::test_collects" in text
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "probes" / "gc_during_tests.py"),
                          "--min-ms", "-1", "--", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--min-ms must be 0 or more" in bad.stderr
    none = subprocess.run([sys.executable, str(ROOT / "scripts" / "probes" / "gc_during_tests.py")],
                          capture_output=True, text=True)
    assert none.returncode == 2 and "give pytest's arguments after --" in none.stderr


def test_the_concurrent_start_benchmark_runs_and_refuses_bad_input(tmp_path):
    """benchmarks/concurrent_start.py (lesson 03's staggered producers): it runs each
    variant, marking each producer's part right or wrong (on the simulator, which runs
    one kernel at a time, none is wrong; on a GPU the consumer races the producers it does
    not wait for, so parts may be), and on a GPU gives each run's lag; --out writes the
    page; a single producer is refused, saying why."""
    import re
    import subprocess

    import streamlab

    script = str(ROOT / "benchmarks" / "concurrent_start.py")
    page = tmp_path / "page.md"
    out = subprocess.run([sys.executable, script, "--reps", "1", "--out", str(page)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-800:]
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith(("off ", "on "))]
    assert len(rows) == 4, out.stdout
    parts = [re.match(r"(on|off) +(on|off) +1  ([x.]{4})  GPU: ", r) for r in rows]
    assert all(parts), rows
    if streamlab.on_simulator():
        assert all(p.group(3) == "...." for p in parts), rows
    else:
        assert all(re.search(r"  lag [+-]\d+\.\d\d$", r) for r in rows), rows
    text = page.read_text()
    assert text.startswith("# Do lesson 03's producers start at once?")
    assert text.count("\n| o") == 4 and streamlab.device_name() in text, text
    bad = subprocess.run([sys.executable, script, "--m", "1"], capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 2 and "at least one run and two producers" in bad.stderr


def test_the_judging_benchmark_turns_the_graders_judgement_off_and_on(monkeypatch):
    """benchmarks/grading_times.py --compare judging: the way 'judged again' goes through
    streamlab.grading.judge_in_grader, and the other way does not (a judge that refuses
    everything is put in its place: one way fails, the other passes)."""
    import importlib.util

    import streamlab.grading as grading

    spec = importlib.util.spec_from_file_location(
        "grading_times", ROOT / "benchmarks" / "grading_times.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def refuse(cells, part, transcripts, verdict):
        return grading.Verdict(False, "refused by the test's judge", verdict.output, "Test")

    monkeypatch.setattr(grading, "judge_in_grader", refuse)
    assert bench.grade("lab03__rendezvous", "off", judged=False) > 0
    assert grading.judge_in_grader is refuse  # put back after the unjudged way
    with pytest.raises(SystemExit, match="refused by the test's judge"):
        bench.grade("lab03__rendezvous", "off", judged=True)


def test_a_claims_margin_is_its_slack_over_its_spread_and_guards_count():
    """scripts/gpu/claim_margins.py: the slack of each comparison, its mean over its spread
    across runs; `and` takes the weakest part, `or` the strongest; one run has no margin."""
    import ast
    import math
    import statistics

    import claim_margins as cm

    def trees(condition, runs):
        tree = ast.parse(condition, mode="eval")
        return [cm.slack(tree, figures, condition) for figures in runs]

    runs = [{"a": 5.0, "b": 1.0, "z": -1.0}, {"a": 6.0, "b": 1.0, "z": 0.0},
            {"a": 7.0, "b": 1.0, "z": 1.0}]
    # where a side can be 0 or less, the slack is a difference: (a - 4) - (b - 1): 1, 2, 3
    assert cm.margin(trees("a - 4 > b - 1", runs)) == pytest.approx(2.0)
    assert cm.margin(trees("b - 1 < a - 4", runs)) == pytest.approx(2.0)
    assert cm.margin(trees("a + z - 5 > 0", runs)) == pytest.approx(0.5)  # -1, 1, 3
    # both sides positive: a ratio, log(a / 3b)
    logs = [math.log(a / 3) for a in (5, 6, 7)]
    want = statistics.fmean(logs) / statistics.stdev(logs)
    assert cm.margin(trees("a > 3 * b", runs)) == pytest.approx(want)
    # far from its threshold in ratio, however much it varies: a > 0.01
    assert cm.margin(trees("a > 0.01", runs)) > 30
    # a chained comparison is two, and `and` takes the weaker
    upper = [math.log(7.5 / a) for a in (5, 6, 7)]
    weaker = statistics.fmean(upper) / statistics.stdev(upper)
    assert cm.margin(trees("2 <= a < 7.5", runs)) == pytest.approx(weaker)
    assert cm.margin(trees("a > 3 * b and a < 7.5", runs)) == pytest.approx(weaker)
    assert cm.margin(trees("a > 100 or b < 2", runs)) == math.inf  # a guard that holds
    assert cm.margin(trees("b > 2", runs)) == -math.inf            # never held
    assert cm.margin(trees("not a < b", runs)) == math.inf
    assert cm.margin(trees("a > 3", runs[:1])) is None             # one run: no spread
    flags = [{"ok": True}, {"ok": True}, {"ok": False}]
    assert cm.margin(trees("ok", flags)) < 1


def test_the_claims_margin_script_reads_a_lessons_runs_and_refuses_bad_input(capsys):
    import claim_margins as cm

    lesson = "notebooks/01__default_streams__eight_streams__SOLUTION.ipynb"
    rows = cm.rows_for(lesson)
    assert rows and all(r["runs"] >= 1 for r in rows)
    committed = cm.claims_of(json.loads((ROOT / lesson).read_text()))
    assert committed["on_gpu"] and committed["device"].startswith("NVIDIA")
    assert {r["claim"] for r in rows} == set(committed["claims"]) | set(
        committed["gpu_claims"])
    assert "claim rows have a margin under 3 spreads" in cm.page(rows, 3)
    assert cm.main(["notebooks/99__none.ipynb"]) == 2
    assert "no such notebook" in capsys.readouterr().err
    assert cm.main(["--under", "0", lesson]) == 2


def test_the_span_profile_runs_each_path_and_refuses_bad_input(tmp_path):
    env = dict(os.environ, STREAMLAB_QUIET="1", NUMBA_ENABLE_CUDASIM="1",
               STREAMLAB_DEVICE="sim", PYTHONPATH=os.pathsep.join(
                   [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    script = str(ROOT / "benchmarks" / "span_profile.py")
    run = subprocess.run([sys.executable, script, "--n", "100", "--top", "5"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    for path in ("two bare records", "a timeline span", "a span under record_ops"):
        assert f"== {path}: " in run.stdout and "us per call" in run.stdout
    assert "tottime" in run.stdout
    bad = subprocess.run([sys.executable, script, "--n", "10"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "at least 50 calls" in bad.stderr


def test_the_span_benchmark_times_its_paths_in_turn(tmp_path):
    """benchmarks/span_overhead.py times each host path once a round, ROUNDS rounds, and
    gives each figure's best round and its median (the host's pace drifts within a
    process: issue 54); on the simulator it states no target."""
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim",
               PYTHONPATH=os.pathsep.join(
                   [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "span_overhead.py"),
                          "--json", str(out)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    rows = {r["name"]: r["value"] for r in json.loads(out.read_text())}
    rounds = _benchmark("span_overhead").ROUNDS
    for path in ("two event records", "one timeline span", "one span while record_ops is on"):
        median = rows[f"host: {path}, median of {rounds} rounds"]
        best = next(v for k, v in rows.items() if k.startswith(f"host: {path}")
                    and "median" not in k)
        assert 0 < best <= median, (path, best, median)
    assert rows["host: one span over two bare records"] == pytest.approx(
        rows["host: one timeline span (2 events)"] / rows["host: two event records"],
        rel=0.01)
    assert not any(k.startswith("target:") for k in rows)


def _benchmark(name: str):
    """A benchmark script as a module (benchmarks/ is on the tests' path: pyproject.toml)."""
    import importlib

    return importlib.import_module(name)


@pytest.mark.parametrize("name, page, data", [
    ("graph_launch_wait", "graph-launch-wait.md", "graph-launch-wait.json"),
    ("exercise_hold", "exercise-hold.md", "exercise-hold.json")])
def test_issue_54s_gpu_pages_are_what_their_kept_runs_give(name, page, data):
    """docs/graph-launch-wait.md and docs/exercise-hold.md are written by the benchmark
    that measured them, from its kept JSON (data/runs/2026-11-27-issue54/)."""
    kept = json.loads((ROOT / "data" / "runs" / "2026-11-27-issue54" / data).read_text())
    assert _benchmark(name).page(kept) == (ROOT / "docs" / page).read_text(), \
        f"run benchmarks/{name}.py --page data/runs/2026-11-27-issue54/{data} --out docs/{page}"


def test_the_graph_page_says_which_launches_waited_and_how_they_were_made():
    """The page's summary comes from the rows: a launch that waited out the hold is named by
    how its graph was made, and complete()'s graphs are split by consumers."""
    bench = _benchmark("graph_launch_wait")
    rows = [dict(how="cuda.core capture, complete()", k=8, n=n, rendezvous_node=False,
                 nodes=8 + n, edges=8 * n, idle_ms=0.05, behind_hold_ms=held, hold_ms=10.0,
                 right=True) for n, held in ((8, 0.06), (64, 10.1))]
    rows.append(dict(how="driver capture, cuGraphInstantiate", k=64, n=64,
                     rendezvous_node=False, nodes=128, edges=4096, idle_ms=0.07,
                     behind_hold_ms=0.08, hold_ms=10.0, right=True))
    text = bench.page({"device": "GPU", "date": "today", "rows": rows})
    assert "1 of 3 rows, made as: cuda.core capture, complete()." in text
    assert "had n = 64 consumers; those that did not, n = 8." in text
    rows[1]["behind_hold_ms"] = 0.07
    assert "No launch waited for the hold" in bench.page({"device": "GPU", "date": "d",
                                                          "rows": rows})


def test_the_results_page_names_what_the_model_does_not_know():
    """Issue 54 item 5: a model row off by more than 15 % in some run is named under the
    model's table, with its errors, the GPU's own spread and what the model leaves out."""
    def record(err, measured):
        return {"model": {"profile": "p", "median_abs_error_pct": abs(err), "rows": [
            {"experiment": "04: 256 MB pageable h2d beside a 30 ms kernel",
             "predicted_ms": measured * (1 + err / 100), "measured_ms": measured,
             "error_pct": err}]}}
    lines = gpu_results.model_limits([record(28.0, 30.0), record(-5.0, 40.0)])
    text = "\n".join(lines)
    assert "**What the model does not know.**" in text
    assert "off by -5.0 % to +28.0 % (1 of 2 runs beyond 15 %)" in text
    assert "The GPU measured 30.000 to 40.000 ms across these runs, a spread of 33 %" in text
    assert "the one rate for pageable copies" in text
    assert "Every row is within 15 %" in "\n".join(
        gpu_results.model_limits([record(5.0, 30.0), record(-3.0, 31.0)]))


def test_a_benchmark_page_is_written_after_a_run_and_again_from_its_kept_json(tmp_path):
    """benchmarks/kept_page.py: --json and --out after a run; --page writes the same page
    from the kept JSON, and refuses without --out."""
    import argparse

    import kept_page

    def page(result):
        return f"{result['device']}: {result['n']}\n"

    ap = argparse.ArgumentParser()
    kept_page.add_options(ap)
    a = ap.parse_args(["--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "p.md")])
    assert kept_page.page_again(a, page) is None
    result = kept_page.keep(a, page, "GPU X", n=3)
    assert json.loads((tmp_path / "r.json").read_text()) == result and result["date"]
    assert (tmp_path / "p.md").read_text() == "GPU X: 3\n"
    again = ap.parse_args(["--page", str(tmp_path / "r.json"), "--out", str(tmp_path / "q.md")])
    assert kept_page.page_again(again, page) == 0
    assert (tmp_path / "q.md").read_text() == "GPU X: 3\n"
    assert kept_page.page_again(ap.parse_args(["--page", str(tmp_path / "r.json")]), page) == 2


def test_the_implicit_sync_reference_runs_each_case_and_measures_only_on_a_gpu():
    """benchmarks/implicit_sync.py (issue 57, item 3): --smoke runs every case once (here on
    the simulator, on a GPU in the GPU pass), each a row that ran; without --smoke, the
    simulator is refused with a reason, since the reference is a driver's facts."""
    env = dict(os.environ, STREAMLAB_QUIET="1")
    script = ROOT / "benchmarks" / "implicit_sync.py"
    smoke = subprocess.run([sys.executable, str(script), "--smoke"], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    ran = [line for line in smoke.stdout.splitlines()
           if line.rstrip().endswith("ran (smoke: nothing measured)")]
    listed, _ = _benchmark("implicit_sync").cases()
    assert len(ran) == len(listed) >= 20, smoke.stdout
    import streamlab

    if streamlab.on_simulator():
        refused = subprocess.run([sys.executable, str(script)], env=env, cwd=ROOT,
                                 capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2 and "Run it on a GPU" in refused.stderr, refused


def test_the_implicit_sync_page_says_what_each_call_did():
    """A call waited where it held the host for more than half the kernel in flight beyond
    its own time on an idle GPU: for every stream's work where it waited behind a
    non-blocking stream's kernel, for the blocking streams' where only behind a blocking
    one's, for its own stream's where only behind its own stream's. One that left the host
    free but kept a later kernel in another stream from overlapping ordered the streams
    (the blocking ones alone, or every one); else it was asynchronous. A call's own time
    is not a wait: a 64 MB pinned allocation that takes 44 ms idle and 45 ms behind a
    kernel did not wait. Each row says whether the reference's claim for it held, the
    page's head counts those that did not, and a case that failed is a row that says so."""
    bench = _benchmark("implicit_sync")

    def row(what, idle, host, host_nb, own, blocking, nonblocking, claim, hold=20.0):
        return dict(what=what, idle_ms=idle, hold_ms=hold, host_ms=host,
                    host_nonblocking_ms=host_nb, host_own_ms=own, blocking_overlap=blocking,
                    nonblocking_overlap=nonblocking, claim=claim)

    rows = [row("sync", 0.01, 19.8, 19.9, 19.9, False, False, bench.EVERY),
            row("legacy copy", 0.02, 19.7, 0.02, 19.8, False, True, bench.BLOCKING),
            row("pageable in a stream", 0.05, 0.05, 0.05, 19.9, True, True, bench.OWN),
            row("legacy", 0.01, 0.01, 0.01, 0.01, False, True, bench.ORDERS_BLOCKING),
            row("free", 0.2, 0.2, 0.2, 0.2, False, False, bench.ORDERS_ALL),
            row("pinned", 44.0, 45.1, 43.9, 44.5, True, True, bench.ASYNC, hold=152.0),
            row("launch", 0.005, 0.004, 0.004, 0.004, True, True, bench.ASYNC),
            row("claimed wrongly", 0.005, 0.004, 0.004, 0.004, True, True, bench.EVERY),
            dict(what="broken", claim=bench.ASYNC, error="RuntimeError('x')")]
    text = bench.page({"device": "GPU", "date": "today", "rows": rows})
    table = [line.split(" | ") for line in text.splitlines()
             if line.startswith("| ") and "---" not in line][1:]
    said = {cells[0][2:]: cells[-2] for cells in table}
    held = {cells[0][2:]: cells[-1].rstrip(" |") for cells in table}
    assert said["sync"] == "waits for every stream's work", said
    assert said["legacy copy"] == "waits for the blocking streams' work", said
    assert said["pageable in a stream"] == "waits for its own stream's work", said
    assert said["legacy"] == "orders the blocking streams", said
    assert said["free"] == "orders every stream", said
    assert said["pinned"] == said["launch"] == "asynchronous", said
    assert said["claimed wrongly"] == "asynchronous", said
    assert held["claimed wrongly"].endswith("**does not hold**"), held
    assert all(held[w].endswith(": holds") for w in said if w not in
               ("claimed wrongly", "broken")), held
    assert "failed: RuntimeError('x')" in text and held["broken"].endswith("**not shown**")
    assert "**2 call(s) did not do what the reference says:** claimed wrongly; broken." in text
    assert [r["what"] for r in bench.failed_claims(rows)] == ["claimed wrongly", "broken"]
    assert "**Every call did what the reference says.**" in bench.page(
        {"device": "GPU", "rows": rows[:7]})


def test_the_implicit_sync_page_measures_harriss_list_against_the_calls():
    """Each entry of the Programming Guide's list that Harris quotes is read against the
    calls that measure it: true where every one of them left the host free, "not so" with
    the calls that held it. Each call the list names is one of the reference's cases, so
    that a renamed case cannot drop out of it unseen."""
    bench = _benchmark("implicit_sync")
    listed = {what for what, *_ in bench.cases()[0]}
    named = [w for _, whats in bench.HARRIS for w in whats]
    assert set(named) <= listed, set(named) - listed
    free = dict(idle_ms=0.01, hold_ms=20.0, host_ms=0.02, host_nonblocking_ms=0.02,
                host_own_ms=0.02, blocking_overlap=True, nonblocking_overlap=True)
    rows = [dict(free, what=w, claim=bench.ASYNC) for w in named]
    waits = "copy to the device from pageable memory, 16 KB, no stream"
    rows = [dict(r, host_ms=20.1, host_own_ms=20.2, blocking_overlap=False)
            if r["what"] == waits else r for r in rows]
    text = bench.page({"device": "GPU", "rows": rows})
    said = {line[3:].split("*:")[0]: line for line in text.splitlines()
            if line.startswith("- *")}
    assert len(said) == len(bench.HARRIS), said
    entry = "Memory copies from host to device of a memory block of 64 KB or less"
    assert "**not so here**" in said[entry] and waits in said[entry], said[entry]
    assert "20.1 ms behind a blocking stream's kernel" in said[entry], said[entry]
    assert all("true here" in line for e, line in said.items() if e != entry), said
    assert "not measured in this run" in bench.page({"device": "GPU", "rows": []})
    # the other sources: each named call is a case, and a source is "so" only where every
    # call it names did what it says
    assert {w for _, _, whats, _ in bench.OTHERS for w in whats} <= listed
    memset = "memset, 64 MB, no stream (driver.device_memset)"
    free_memset = [dict(free, what=memset, claim=bench.ORDERS_BLOCKING)]
    text = bench.page({"device": "GPU", "rows": free_memset})
    assert "synchronous (the host waits for it). **Not so here**: memset" in text, text
    held = [dict(free_memset[0], host_ms=20.1, host_own_ms=20.1)]
    assert "synchronous (the host waits for it). So here" in bench.page(
        {"device": "GPU", "rows": held})


def test_the_implicit_sync_page_is_what_its_latest_kept_run_gives():
    """docs/implicit-sync.md is written by benchmarks/implicit_sync.py from the latest kept
    GPU run (data/runs/implicit-sync/*.json, the last by name), against today's claims."""
    kept = sorted((ROOT / "data" / "runs" / "implicit-sync").glob("*.json"))[-1]
    assert _benchmark("implicit_sync").page(json.loads(kept.read_text())) == \
        (ROOT / "docs" / "implicit-sync.md").read_text(), \
        f"run benchmarks/implicit_sync.py --page {kept.relative_to(ROOT)} --out docs/implicit-sync.md"


def test_a_kept_implicit_sync_run_is_read_against_todays_reference():
    """--page writes a kept run's page again against the claims the reference makes today
    (a claim mended after a run is checked against that run's figures), and a call that is
    no longer a case keeps the claim it was run against."""
    bench = _benchmark("implicit_sync")
    pinned = "cuda.pinned_array, 64 MB (cuMemHostAlloc)"
    today = {what: claim for what, _, _, claim in bench.cases()[0]}
    measured = dict(idle_ms=42.0, hold_ms=146.0, host_ms=42.7, host_nonblocking_ms=40.6,
                    host_own_ms=44.0, blocking_overlap=True, nonblocking_overlap=True)
    kept = [dict(measured, what=pinned, claim=bench.EVERY),
            dict(measured, what="a call since dropped", claim=bench.EVERY)]
    assert [r["claim"] for r in bench.claimed(kept)] == [today[pinned], bench.EVERY]
    assert [r["what"] for r in bench.failed_claims(kept)] == (
        ["a call since dropped"] if today[pinned] == bench.ASYNC else
        [pinned, "a call since dropped"])
