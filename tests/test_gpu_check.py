"""scripts/gpu/gpu-check.sh says no when it should (issue 53): a failed test, a failed notebook
and a benchmark that missed its stated target each give an exit status of their own, and a
missed target is said at the top of the results page. Run here with stand-ins for python3
and nvidia-smi that fail the step asked of them."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PYTHON = """#!/bin/bash
case "$*" in
  *"-m pytest"*) echo "$*" >> "${FAKE_ARGS:-/dev/null}"; exit ${FAKE_PYTEST:-0} ;;
  *run_notebooks.py*) exit ${FAKE_NOTEBOOKS:-0} ;;
  *span_overhead.py*) exit ${FAKE_BENCH:-0} ;;
  *implicit_sync.py*) exit ${FAKE_IMPLICIT:-0} ;;
  *) exit 0 ;;
esac
"""


@pytest.fixture
def gpu_check(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("python3", _PYTHON), ("nvidia-smi", "#!/bin/bash\necho GPU 0\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)

    def run(part, **fake):
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PART=part,
                   OUT=str(tmp_path / "out"), NOTEBOOKS="notebooks/none.ipynb",
                   **{f"FAKE_{k.upper()}": str(v) for k, v in fake.items()})
        env.pop("PYTHONPATH", None)
        done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu" / "gpu-check.sh")], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stdout + done.stderr

    return run


def test_each_failure_has_an_exit_status_of_its_own(gpu_check):
    assert gpu_check("tests")[0] == 0
    code, said = gpu_check("tests", pytest=1)
    assert code == 1 and "a test failed" in said, said
    code, said = gpu_check("notebooks", notebooks=1)
    assert code == 4 and "a notebook failed" in said, said
    code, said = gpu_check("tests", bench=3)
    assert code == 8 and "missed its stated target" in said, said
    code, said = gpu_check("tests", pytest=1, bench=3)
    assert code == 9 and "a test failed; a benchmark missed" in said, said
    code, said = gpu_check("tests", bench=1)
    assert code == 16 and "another step failed" in said, said
    code, said = gpu_check("no-such-part")
    assert code == 2 and "PART=no-such-part" in said, said


def test_the_tests_parts_name_real_files_and_each_file_once(gpu_check, tmp_path):
    """t1, t2 and t2b name test files that exist, none twice; t3 leaves out exactly theirs
    (t2 and t2b are halves so that each fits one command's 10 minutes on one H200: whole,
    it was cut at 590 s, 97 % done)."""
    named = {}
    for part in ("t1", "t2", "t2b", "t3"):
        args = tmp_path / f"{part}.args"
        status, out = gpu_check(part, args=args)
        assert status == 0, out
        words = args.read_text().split()
        named[part] = ([w[len("--ignore="):] for w in words if w.startswith("--ignore=")]
                       if part == "t3" else [w for w in words if w.startswith("tests/")])
    listed = named["t1"] + named["t2"] + named["t2b"]
    assert all(named[p] for p in ("t1", "t2", "t2b")), named
    assert len(listed) == len(set(listed)), listed
    assert all((ROOT / f).is_file() for f in listed), listed
    assert sorted(named["t3"]) == sorted(listed), named["t3"]


def test_the_implicit_sync_reference_is_checked_on_every_whole_pass(gpu_check, tmp_path):
    """PART=implicit runs benchmarks/implicit_sync.py alone, and PART=t3 (the last tests
    part, as the whole pass does) runs it too: 0 when every call did what the reference
    says, 8 (a missed target) when one did not (the script's 3), 16 (another step failed)
    when it could not run. The other parts leave it out."""
    assert gpu_check("implicit")[0] == 0
    status, out = gpu_check("implicit", implicit=1)
    assert status == 16 and "another step failed" in out, out
    status, out = gpu_check("implicit", implicit=3)
    assert status == 8 and "missed its stated target" in out, out
    status, out = gpu_check("t3", implicit=3)
    assert status == 8, out
    for part in ("t1", "t2", "t2b", "notebooks"):
        assert gpu_check(part, implicit=3)[0] == 0, part


def test_a_missed_target_is_said_at_the_top_of_the_results_page():
    import gpu_results

    record = {"gpu": "NVIDIA test", "visible": 1, "date": "2026-11-27 10:00 UTC",
              "driver": "580", "versions": {}, "tests": {"tests": 1, "passed": 1,
                                                        "failures": 0, "errors": 0,
                                                        "skipped": 0},
              "skipped": [], "failed": [], "figures": [], "model": None, "notebooks": None,
              "bench": [{"test": "b", "name": "host: one timeline span (2 events)",
                         "value": 20.0, "unit": "us", "note": ""},
                        {"test": "b", "name": "target: a span at most 12 us and 1.6 x two "
                                              "records", "value": 0.0, "unit": "met", "note": ""}]}
    top = gpu_results.page([record]).split("## The runs")[0]
    assert "**Not met:** a span at most 12 us and 1.6 x two records" in top, top
    record["bench"][1]["value"] = 1.0
    assert "Not met" not in gpu_results.page([record])


def test_a_test_that_asks_for_the_simulator_in_a_child_says_so_to_streamlab_too():
    """A GPU run of the tests exports STREAMLAB_DEVICE=gpu (scripts/gpu/gpu-check.sh), which every
    child process inherits: a child that sets NUMBA_ENABLE_CUDASIM=1 and imports streamlab
    then fails (STREAMLAB_DEVICE=gpu and the simulator both asked for), on a GPU alone. So
    every test, or code for a child, that sets NUMBA_ENABLE_CUDASIM=1 names STREAMLAB_DEVICE
    too (tests/test_mode.py tests the choice itself, and is left out)."""
    import ast
    import re

    found = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        if path.name == "test_mode.py":
            continue
        source = path.read_text()
        for node in ast.parse(source).body:
            if not isinstance(node, (ast.FunctionDef, ast.Assign, ast.ClassDef)):
                continue
            text = ast.get_source_segment(source, node) or ""
            if re.search(r"NUMBA_ENABLE_CUDASIM\W{0,6}\s*(=|,)?\s*\W{0,3}1", text) and \
                    "STREAMLAB_DEVICE" not in text:
                found.append(f"{path.name}:{node.lineno}")
    assert not found, f"NUMBA_ENABLE_CUDASIM=1 without STREAMLAB_DEVICE=sim: {found}"


def test_the_parts_page_counts_what_each_part_ran(tmp_path):
    import gpu_parts

    junit = tmp_path / "t1.xml"
    junit.write_text('<testsuites><testsuite tests="3" failures="1" errors="0" skipped="1" '
                     'time="12.5" timestamp="2026-11-27T10:00:00"></testsuite></testsuites>')
    runs = tmp_path / "nb.json"
    runs.write_text('{"a.ipynb": {"seconds": 3.0, "error": null, "at": "2026-11-27T09:00:00Z"},'
                    ' "b.ipynb": {"seconds": 4.5, "error": "x", "at": "2026-11-27T09:01:00Z"}}')
    doctor = ROOT / "data" / "runs" / "2026-11-27-owed-h100-tests" / "doctor.txt"
    out = tmp_path / "page.md"
    assert gpu_parts.main(["--doctor", str(doctor), "--part", f"t1={junit}",
                           "--part", f"notebooks (a=b)={runs}", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| t1 | 3 tests (1 passed, 1 failed, 0 errors, 1 skipped) | 12 |" in text, text
    assert "| notebooks (a=b) | 2 notebooks (1 failed) | 8 |" in text, text
    assert gpu_parts.main(["--doctor", str(doctor), "--part", "t1"]) == 2


def test_a_change_is_stale_by_module_for_every_notebook_that_imported_it_and_by_what_ran_for_fewer():
    import stale_by_change

    import json

    some = next(p for p in stale_by_change.executed()  # one with its GPU run (not owed)
                if "streamlab_run" in json.loads(p.read_text())["metadata"])
    ran = json.loads(some.read_text())["metadata"]["streamlab_run"]["ran"]
    module = next(f for f in ran if f != "__init__.py")
    never = {"patch": "x", "files": [module], "scopes": [f"{module}: no_such_function"],
             "data": [], "code_cells": []}
    by_module, by_ran = stale_by_change.stale(never)
    assert stale_by_change.rel(some) in by_module and by_ran == []
    body = dict(never, scopes=[f"{module}: <module>"])
    assert stale_by_change.rel(some) in stale_by_change.stale(body)[1]
    cells = dict(never, files=[], scopes=[], code_cells=[stale_by_change.rel(some)])
    assert stale_by_change.stale(cells) == ([stale_by_change.rel(some)],) * 2
    page = stale_by_change.page("abc", [(never, by_module, by_ran)])
    assert f"| `x` | `{module}: no_such_function` | {len(by_module)} | 0 |" in page, page


def test_the_recorder_cost_page_is_written_from_its_json():
    import recorder_cost

    data = ROOT / "data" / "runs" / "2026-11-27-recorder2-tests" / "recorder-cost.json"
    page = (ROOT / "docs" / "recorder-cost.md").read_text()
    import io
    from contextlib import redirect_stdout

    with redirect_stdout(io.StringIO()):
        assert recorder_cost.main(["--from-json", str(data)]) == 0
    import json

    d = json.loads(data.read_text())
    span = {False: d["span"]["False"], True: d["span"]["True"]}
    lesson = {False: d["lesson06"]["False"], True: d["lesson06"]["True"]}
    assert recorder_cost.page(span, lesson, d["device"], 2, d["when"], d["python"],
                              d["recorder"]) == page, \
        "docs/recorder-cost.md is not what its JSON gives: benchmarks/recorder_cost.py " \
        "--from-json ... --out docs/recorder-cost.md"
    assert "claims held in 4 of 4 runs" in page
