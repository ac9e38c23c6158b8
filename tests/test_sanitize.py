"""scripts/gpu/sanitize.py: compute-sanitizer over the lab solutions and planted errors (issue
33). The GPU run is scripts/gpu/gpu-check.sh's PART=sanitizer; here, without a GPU: the
sanitizer's counts are read right, a missing sanitizer or a wrong argument is named, the
planted memcheck error is a real one (the simulator checks bounds), and a lab solution's
cells run in the script's one plain process, under a stand-in for the sanitizer."""

import os
import subprocess
import sys

import pytest
from labtools import ROOT

import sanitize  # noqa: E402


def test_the_sanitizers_counts_are_read_from_its_summary():
    assert sanitize.errors_in("x\n========= ERROR SUMMARY: 0 errors\n", "memcheck") == 0
    assert sanitize.errors_in("========= ERROR SUMMARY: 1 error\n", "memcheck") == 1
    race = ("========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n"
            "========= ERROR SUMMARY: 0 errors\n")
    assert sanitize.errors_in(race, "racecheck") == 2
    with pytest.raises(sanitize.SanitizerError, match="no ERROR SUMMARY"):
        sanitize.errors_in("Traceback (most recent call last):\nImportError: numba\n",
                           "memcheck")


def test_a_missing_sanitizer_and_a_wrong_argument_are_named(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("COMPUTE_SANITIZER", str(tmp_path / "nowhere"))
    assert sanitize.main(["--planted-only"]) == 2
    err = capsys.readouterr().err
    assert "not an executable file" in err and "bin/compute-sanitizer" in err, err
    with pytest.raises(SystemExit) as e:
        sanitize.main([str(ROOT / "README.md")])
    assert e.value.code == 2
    assert "not a notebook file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sanitize.main(["--timeout", "0"])
    assert "positive number of seconds" in capsys.readouterr().err


def _run_on_simulator(source, tmp_path):
    path = tmp_path / "p.py"
    path.write_text(source)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
                                                STREAMLAB_DEVICE="sim"))


def test_the_planted_out_of_bounds_write_is_one_and_its_twin_is_not(tmp_path):
    """The simulator checks bounds: the planted write past the end raises there (on a GPU
    only memcheck sees it), and the fixed twin runs."""
    _, source, (bad, good) = sanitize.PLANTED["memcheck"]
    planted = _run_on_simulator(source.replace("{FIX}", bad), tmp_path)
    assert planted.returncode != 0 and "IndexError" in planted.stderr, planted.stderr[-800:]
    fixed = _run_on_simulator(source.replace("{FIX}", good), tmp_path)
    assert fixed.returncode == 0 and "sum 1000.0" in fixed.stdout, fixed.stderr[-800:]


def _stand_in_sanitizer(monkeypatch, tmp_path):
    """A stand-in for compute-sanitizer that runs the program and prints a clean summary
    whatever happens (so a row's ok must come from the program having run), on the
    simulator."""
    fake = tmp_path / "compute-sanitizer"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "--report-api-errors" ]; do shift; done\n'
                    'shift 2\n"$@"\necho "========= ERROR SUMMARY: 0 errors"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("COMPUTE_SANITIZER", str(fake))
    monkeypatch.setenv("STREAMLAB_DEVICE", "sim")


def test_a_lab_solutions_cells_run_in_one_process_under_the_sanitizer(monkeypatch, tmp_path):
    """A stand-in for compute-sanitizer that runs the program and prints a clean summary:
    lab 02's solution runs through the script's cell runner with no cell failing (on the
    simulator), and the row says 0 errors, as wanted."""
    _stand_in_sanitizer(monkeypatch, tmp_path)
    row = sanitize.lab(ROOT / "solutions" / "lab02__events" / "lab02__events.ipynb", 300)
    assert row["errors"] == 0 and row["ok"], row
    assert row["cells_failed"] == [], row
    # a cell that fails is named, and the rest run on
    monkeypatch.setattr(sanitize, "_RUNNER", sanitize._RUNNER.replace(
        "for i, source in enumerate(cells):", "cells.insert(1, '1/0')\n"
        "for i, source in enumerate(cells):"))
    row = sanitize.lab(ROOT / "solutions" / "lab02__events" / "lab02__events.ipynb", 300)
    assert row["cells_failed"] == ["cell 1: ZeroDivisionError: division by zero"], row
    assert "1 cell(s) failed" in sanitize.table([row])


def test_the_sanitizer_page_is_the_kept_runs_table():
    """docs/sanitizer.md was written by the script on a GPU; its table is what the kept
    run's JSON gives (a hand edit fails here), and that run found every planted error
    and none in any lab solution."""
    import json

    rows = json.loads((ROOT / "data" / "runs" / "sanitizer" / "2026-11-26-h100.json")
                      .read_text())
    assert sanitize.table(rows) in (ROOT / "docs" / "sanitizer.md").read_text()
    assert all(r["ok"] for r in rows)
    labs = {r["what"] for r in rows if r["what"].endswith(".ipynb")}
    assert labs == {p.relative_to(ROOT).as_posix()
                    for p in ROOT.glob("solutions/*/*.ipynb")}, labs
    assert {r["tool"] for r in rows if r["what"].startswith("planted")} == set(
        sanitize.PLANTED)


def test_a_lab_whose_cells_did_not_run_is_not_called_clean(monkeypatch, tmp_path):
    """0 errors says nothing when the answers never ran: a lab whose own code fails (not a
    check refusing), or whose runner never finished, is not ok; nor is a fixed twin that
    stops before its end. A stand-in sanitizer that prints a clean summary whatever runs."""
    _stand_in_sanitizer(monkeypatch, tmp_path)
    lab = ROOT / "solutions" / "lab02__events" / "lab02__events.ipynb"
    monkeypatch.setattr(sanitize, "_RUNNER", sanitize._RUNNER.replace(
        "for i, source in enumerate(cells):", "cells.insert(0, 'raise ImportError(\"numba\")')\n"
        "for i, source in enumerate(cells):"))
    row = sanitize.lab(lab, 300)
    assert row["errors"] == 0 and not row["ok"], row
    assert row["cells_failed"][0] == "cell 0: ImportError: numba", row
    monkeypatch.setattr(sanitize, "_RUNNER", "import sys\nsys.exit(3)\n")
    row = sanitize.lab(lab, 300)
    assert row["errors"] == 0 and row["cells_failed"] is None and not row["ok"], row
    # a fixed twin that stops before its end (on the simulator here): memcheck's, as it
    # is (ok: the control), then stopped before its last line (not ok)
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setenv("STREAMLAB_DEVICE", "sim")  # (a GPU run of the tests sets it to gpu)
    monkeypatch.setattr(sanitize, "UNSEEN", {})
    what, source, lines = sanitize.PLANTED["memcheck"]

    def fixed_row(program):
        monkeypatch.setattr(sanitize, "PLANTED", {"memcheck": (what, program, lines)})
        return [r for r in sanitize.planted(120) if r["what"].startswith("fixed")][0]

    control = fixed_row(source)
    assert control["errors"] == 0 and control["ok"], control
    stopped = fixed_row(source.replace('print("sum"', 'raise SystemExit(0)\nprint("sum"'))
    assert stopped["errors"] == 0 and not stopped["ok"], stopped
    assert "did not run to its end" in stopped["note"], stopped
