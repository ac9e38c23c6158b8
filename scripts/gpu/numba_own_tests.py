"""numba-cuda's own tests, run twice: without streamlab, and with ``import streamlab``
first. streamlab changes numba (it fills the simulator's gaps and watches numba's calls);
this shows that numba's own tests cannot tell, on the simulator and on a GPU.

    python scripts/gpu/numba_own_tests.py            # the simulator (NUMBA_ENABLE_CUDASIM=1)
    python scripts/gpu/numba_own_tests.py --gpu      # the GPU

It prints each way's totals and every test whose outcome differs, and exits 1 if any
does. A test module this machine cannot import (a library it lacks) is listed with the
reason; it counts as a difference only if it loads one way and not the other. numba-cuda's tests need the ``filecheck`` package (in the course's test extra).
The set: numba-cuda's ``cudadrv``, ``cudasim`` and ``doc_examples`` test packages, and
its ``cudapy`` modules on streams, synchronisation and arrays (what streamlab touches).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SUITES = [
    "numba.cuda.tests.cudadrv",
    "numba.cuda.tests.cudasim",
    "numba.cuda.tests.doc_examples",
    "numba.cuda.tests.cudapy.test_stream_api",
    "numba.cuda.tests.cudapy.test_sync",
    "numba.cuda.tests.cudapy.test_array",
    "numba.cuda.tests.cudapy.test_array_args",
    "numba.cuda.tests.cudapy.test_cuda_array_interface",
]

# Run in a fresh Python: argv[1] "with" imports streamlab first; then each test's outcome.
CHILD = r'''
import json, sys, unittest
if sys.argv[1] == "with":
    import streamlab
outcomes = {}

class Result(unittest.TestResult):
    def _put(self, test, what):
        outcomes[test.id()] = what
    def addSuccess(self, test): outcomes.setdefault(test.id(), "passed")
    def addFailure(self, test, err): self._put(test, "failed")
    def addError(self, test, err):
        if "_FailedTest" in test.id():  # a module that could not be imported here
            self._put(test, "not loadable: " + str(err[1]).strip().splitlines()[-1][:200])
        else:
            self._put(test, "error")
    def addSkip(self, test, reason): self._put(test, "skipped")
    def addExpectedFailure(self, test, err): self._put(test, "xfailed")
    def addUnexpectedSuccess(self, test): self._put(test, "xpassed")
    def addSubTest(self, test, subtest, err):
        if err is not None:  # a failed subtest fails its test
            outcomes[test.id()] = "failed"

suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromName(n) for n in sys.argv[2:])
suite.run(Result())
print("OUTCOMES " + json.dumps(outcomes))
'''


def run(way: str, gpu: bool, suites: list[str]) -> dict[str, str]:
    """Each test's outcome, run ``way`` ("without" or "with" streamlab)."""
    env = dict(os.environ, STREAMLAB_QUIET="1")
    env.pop("STREAMLAB_RACE_CHECK", None)
    if gpu:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        env["STREAMLAB_DEVICE"] = "gpu"
    else:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        env["STREAMLAB_DEVICE"] = "sim"
    r = subprocess.run([sys.executable, "-c", CHILD, way, *suites], capture_output=True,
                       text=True, env=env, timeout=1800)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("OUTCOMES ")), None)
    if line is None:
        raise SystemExit(f"numba's tests did not finish {way} streamlab (exit "
                         f"{r.returncode}):\n{r.stderr[-3000:]}")
    outcomes = json.loads(line[len("OUTCOMES "):])
    if any("filecheck" in o for o in outcomes.values() if o.startswith("not loadable")):
        raise SystemExit("numba-cuda's tests need the filecheck package: pip install "
                         "filecheck (it is in the course's test extra)")
    return outcomes


def totals(outcomes: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for o in outcomes.values():
        o = "not loadable" if o.startswith("not loadable") else o
        counts[o] = counts.get(o, 0) + 1
    return ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))


def unloadable(outcomes: dict[str, str]) -> list[str]:
    """The test modules that could not be imported on this machine, and why."""
    return [f"{t.rsplit('.', 1)[-1]}: {o[len('not loadable: '):]}"
            for t, o in sorted(outcomes.items()) if o.startswith("not loadable")]


def compare(without: dict[str, str], with_: dict[str, str]) -> list[tuple[str, str, str]]:
    """(test, outcome without, outcome with) for each test whose outcome differs."""
    return [(t, without.get(t, "not run"), with_.get(t, "not run"))
            for t in sorted(set(without) | set(with_)) if without.get(t) != with_.get(t)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="run on the GPU, not the simulator")
    parser.add_argument("--json", help="also write the outcomes and differences here")
    parser.add_argument("suites", nargs="*", default=SUITES,
                        help="numba test packages or modules (default: the set above)")
    args = parser.parse_args(argv)
    without = run("without", args.gpu, args.suites)
    with_ = run("with", args.gpu, args.suites)
    differ = compare(without, with_)
    where = "GPU" if args.gpu else "simulator"
    print(f"numba-cuda's own tests on the {where}, {len(without)} outcomes each way")
    print(f"| way | outcomes |\n| --- | --- |\n| without streamlab | {totals(without)} |\n"
          f"| with `import streamlab` first | {totals(with_)} |")
    for line in unloadable(without):
        print(f"- not loadable here either way (a missing library, not streamlab): {line}")
    if differ:
        print(f"\n{len(differ)} test(s) differ:")
        for test, a, b in differ:
            print(f"- {test}: {a} without, {b} with")
    else:
        print("\nEvery test has the same outcome both ways.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"where": where, "without": without, "with": with_,
                       "differ": differ}, f, indent=1)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
