"""How many tests and notebooks each part of a whole GPU pass ran, and how long it took.

    python scripts/gpu/gpu_parts.py --doctor OUT/doctor.txt --part t1=T1/junit.xml \\
        --part t2=T2/junit.xml --part t3=T3/junit.xml --part notebooks=NB/notebooks.json --out docs/gpu-check-parts.md

``scripts/gpu/gpu-check.sh`` runs a whole pass in parts, each within one GPU call's 10 minutes
(the notebooks in parts, the tests as t1, t2 and t3). Its header points here for the parts'
sizes and times rather than stating them: this page is written from a pass's own files
(each tests part's junit XML, the notebooks' JSON that run_notebooks.py wrote), never by
hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_results import RecordError, junit_date, junit_summary, parse_doctor  # noqa: E402


def junit_row(name: str, path: Path) -> list[str]:
    import xml.etree.ElementTree as ET

    tot, _ = junit_summary(path)
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    seconds = sum(float(s.get("time", 0)) for s in suites)
    return [name, f"{tot['tests']} tests ({tot['passed']} passed, {tot['failures']} failed, "
                  f"{tot['errors']} errors, {tot['skipped']} skipped)",
            f"{seconds:.0f}", junit_date(path)]


def notebooks_rows(name: str, path: Path) -> list[list[str]]:
    results = json.loads(path.read_text())
    if not isinstance(results, dict) or not all(
            isinstance(r, dict) and "seconds" in r for r in results.values()):
        raise RecordError(f"{path}: not what run_notebooks.py --json writes")
    failed = sum(r.get("error") is not None for r in results.values())
    seconds = sum(float(r["seconds"]) for r in results.values())
    when = max((r.get("at", "") for r in results.values()), default="")
    return [[name, f"{len(results)} notebooks ({failed} failed)", f"{seconds:.0f}",
             when.replace("T", " ")[:16] + (" UTC" if when else "")]]


def page(gpu: str, rows: list[list[str]]) -> str:
    lines = ["# The parts of a whole GPU pass", "",
             f"Written by `scripts/gpu/gpu_parts.py` from the files of a whole pass of "
             f"`scripts/gpu/gpu-check.sh` on {gpu}: what each part ran and how long it took "
             "(seconds of pytest's or the notebooks' own time; one GPU call may run 10 "
             "minutes).", "", "| part | ran | seconds | when |", "| --- | --- | ---: | --- |"]
    lines += [f"| {' | '.join(r)} |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--doctor", required=True, help="the pass's doctor.txt")
    ap.add_argument("--part", action="append", default=[], metavar="NAME=FILE",
                    help="a part and its file: junit XML (tests) or notebooks JSON")
    ap.add_argument("--out", help="write the page here")
    a = ap.parse_args(argv)
    try:
        gpu = parse_doctor(Path(a.doctor).read_text())["gpu"]
        rows = []
        for part in a.part:
            name, sep, file = part.rpartition("=")
            if not sep or not Path(file).is_file():
                raise RecordError(f"--part {part!r}: give NAME=FILE, an existing file")
            path = Path(file)
            if path.suffix == ".xml":
                rows.append(junit_row(name, path))
            else:
                rows += notebooks_rows(name, path)
    except (RecordError, OSError, ValueError) as exc:
        print(f"gpu_parts.py: {exc}", file=sys.stderr)
        return 2
    text = page(gpu, rows)
    if a.out:
        Path(a.out).write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
