"""Run lessons with numba-cuda-mlir in place of numba-cuda, on a GPU, and say what runs.

numba-cuda is in maintenance mode upstream; numba-cuda-mlir is its successor
(``from numba_cuda_mlir import cuda`` where code had ``from numba import cuda``). This
script executes notebooks in a kernel where ``numba.cuda`` *is* ``numba_cuda_mlir.cuda``
(a ``sitecustomize`` sets ``sys.modules["numba.cuda"]`` before anything else runs, so the
notebooks and streamlab import it unchanged), and records, for each notebook, how far it
got: every cell run, or the first cell that failed and the error. It also runs a small
plain program with no streamlab (8 kernels on 8 streams, events, a cuda.core stream) to
tell what numba-cuda-mlir itself does from what streamlab's hooks need.

    PYTHONPATH=DIR_WITH_numba_cuda_mlir python scripts/probes/try_numba_cuda_mlir.py \\
        --json out.json notebooks/00__*.ipynb ...

It never changes the notebooks (it executes copies) and needs a GPU (numba-cuda-mlir has
no simulator). docs/numba-cuda-mlir.md reports a run of it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SITECUSTOMIZE = textwrap.dedent('''
    # numba.cuda is numba-cuda-mlir's, for every import of it in this process: the package
    # is numba_cuda_mlir.cuda, and numba.cuda.X is numba-cuda-mlir's own copy of
    # numba-cuda's module X (numba_cuda_mlir.cuda.X where it has one, else
    # numba_cuda_mlir.numba_cuda.X), the same module object by either name.
    import importlib, importlib.abc, importlib.util, sys
    import numba
    import numba_cuda_mlir.cuda as _mlir_cuda

    class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            if not name.startswith("numba.cuda."):
                return None
            return importlib.util.spec_from_loader(name, self)

        def create_module(self, spec):
            rest = spec.name[len("numba.cuda."):]
            for base in ("numba_cuda_mlir.cuda.", "numba_cuda_mlir.numba_cuda."):
                try:
                    return importlib.import_module(base + rest)
                except ModuleNotFoundError as exc:
                    if exc.name != base + rest:  # a dependency of that module is missing:
                        raise                     # say so, never load the other copy
                    continue
            raise ModuleNotFoundError(f"numba-cuda-mlir has no module {rest}")

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Alias())
    sys.modules["numba.cuda"] = _mlir_cuda
    numba.cuda = _mlir_cuda
''')

PLAIN = textwrap.dedent('''
    import json, time, sys
    import numba
    import numba_cuda_mlir
    from numba import cuda
    out = {"numba.cuda is": cuda.__name__, "version": getattr(numba_cuda_mlir, "__version__", "?")}
    try:
        name = cuda.get_current_device().name
        out["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:
        out["gpu"] = f"FAILED: {type(exc).__name__}"
    import numpy as np

    def step(name, fn):
        try:
            out[name] = fn()
        except Exception as exc:
            out[name] = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"

    @cuda.jit
    def spin(n, out):
        i = cuda.grid(1)
        acc = 0.0
        for k in range(n):
            acc += k * 0.5
        if i == 0:
            out[0] = acc

    d = cuda.device_array(1, np.float64)

    def eight_streams():
        streams = [cuda.stream() for _ in range(8)]
        spin[1, 1, streams[0]](1000, d)
        cuda.synchronize()
        starts = [cuda.event() for _ in streams]
        ends = [cuda.event() for _ in streams]
        for s, a, b in zip(streams, starts, ends):
            a.record(s)
            spin[1, 1, s](2_000_000, d)
            b.record(s)
        cuda.synchronize()
        spans = [(starts[0].elapsed_time(a), starts[0].elapsed_time(b)) for a, b in zip(starts, ends)]
        busy = sum(e - s for s, e in spans)
        makespan = max(e for _, e in spans) - min(s for s, _ in spans)
        return round(busy / makespan, 2)

    def core_stream():
        from cuda.core import Device, StreamOptions
        dev = Device()
        dev.set_current()
        s = dev.create_stream(options=StreamOptions(nonblocking=True))
        spin[1, 1, s](1000, d)
        s.sync()
        return "launched on a cuda.core non-blocking stream"

    def numba_stream_api():
        s = cuda.stream()
        ev = cuda.event(timing=True)
        ev.record(s)
        ev.synchronize()
        return f"cuda.stream {type(s).__module__}.{type(s).__name__}, cuda.event ok"

    def internals():
        found = {}
        for name in ("numba.cuda.cudadrv.driver", "numba.cuda.dispatcher", "numba.cuda.args"):
            try:
                mod = __import__(name, fromlist=["x"])
                found[name] = mod.__file__.split("site-packages/")[-1]
            except Exception as exc:
                found[name] = f"FAILED: {type(exc).__name__}: {exc}"
        return found

    step("numba API: stream and event", numba_stream_api)
    step("8 kernels on 8 streams, concurrency", eight_streams)
    step("cuda.core stream", core_stream)
    step("numba-cuda internals that streamlab wraps", internals)
    print("PLAIN " + json.dumps(out))
''')


def run_notebook(path: Path, env: dict, timeout: int) -> dict:
    """Execute a copy of ``path``; how far it got."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    result = {"code cells": len(code), "error": None}
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        client.execute()
        result["ran"] = len(code)
    except CellExecutionError as exc:
        ran = [i for i in code if any(o.get("output_type") == "error"
                                      for o in nb.cells[i].get("outputs", []))]
        failed = ran[0] if ran else None
        result["ran"] = code.index(failed) if failed in code else None
        err = next((o for o in nb.cells[failed].get("outputs", [])
                    if o.get("output_type") == "error"), {}) if failed is not None else {}
        result["error"] = f"{err.get('ename', '?')}: {str(err.get('evalue', exc))[:400]}"
        result["failed cell"] = "".join(nb.cells[failed].source)[:300] if failed is not None else ""
        result["where"] = [line for line in err.get("traceback", []) if "File" in line][-3:]
    except Exception as exc:  # the kernel died, or it timed out
        result["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    finally:
        os.environ.clear()
        os.environ.update(old)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


PAGE_HEAD = """# numba-cuda-mlir in place of numba-cuda: what runs, what breaks

Written by `scripts/probes/try_numba_cuda_mlir.py --page` from a run of it on a GPU, kept in
`{source}`. numba-cuda is in maintenance mode upstream (NVIDIA/numba-cuda#902); its
successor numba-cuda-mlir compiles kernels through MLIR and has no simulator. The run made
`numba.cuda` *be* numba-cuda-mlir's (`numba_cuda_mlir.cuda`, and each `numba.cuda.X`
its own copy of numba-cuda's module X) before anything imported it, then ran a small plain
program, and lessons 00-02 (the solved copies) unchanged, streamlab included. The course
is not switched to it.

GPU: {gpu}. numba-cuda-mlir {version}.
"""


def page(report: dict, source: str) -> str:
    """The findings page for a kept run (the JSON that --json wrote)."""
    plain = report["plain program"]
    gpu = plain.get("gpu") or ("an NVIDIA H100 (named by the run's file)" if "h100" in source
                               else "not recorded")
    lines = [PAGE_HEAD.format(source=source, gpu=gpu, version=plain.get("version", "?")),
             "## The plain program (no streamlab)", "", "| what | result |", "| --- | --- |"]
    for key, value in plain.items():
        if key in ("gpu", "version"):
            continue
        if isinstance(value, dict):
            value = "; ".join(f"`{k}` from `{v.split('site-packages/')[-1]}`"
                              if not str(v).startswith("FAILED") else f"`{k}`: {v}"
                              for k, v in value.items())
        lines.append(f"| {key} | {value} |")
    lines += ["", "## The lessons, with streamlab", "",
              "| notebook | code cells run | first error | in the cell that begins |",
              "| --- | ---: | --- | --- |"]
    for name, r in report.items():
        if name == "plain program":
            continue
        first = (r.get("failed cell") or "").strip().splitlines()
        lines.append(f"| `{name}` | {r.get('ran')} of {r['code cells']} | "
                     f"{(r.get('error') or 'none').replace('|', '/')} | "
                     f"{('`' + first[0].replace('|', '/') + '`') if first and r.get('error') else ''} |")
    lines += ["", WHY, ""]
    return "\n".join(lines)


# What the table shows, read from it (each point names the row it rests on). Causes not
# measured are said as what was seen, or as a guess.
WHY = """## What it means for the course

- **numba-cuda-mlir itself runs the course's stream and event calls**: `cuda.stream()`,
  `cuda.event()`, launches on 8 streams overlapping as on numba-cuda, and a launch on a
  cuda.core non-blocking stream (the plain program's rows).
- **streamlab imports under it**: each lesson's first cell (`import streamlab`) ran, and
  lesson 01 ran 10 of its 16 code cells, timelines included; the numba-cuda modules
  streamlab wraps (the driver, the dispatcher, the argument classes) exist there as
  numba-cuda-mlir's own copies.
- **streamlab's record of launches sees none of numba-cuda-mlir's kernels**: lesson 01's
  exercise 1 check found "0 add_one launches" from a right answer. streamlab notes a launch
  in numba-cuda's `CUDADispatcher.call`; numba-cuda-mlir's `@cuda.jit` is its own
  `mlir_jit`, so a likely cause (not traced here) is that its launches take another path.
  Every check that counts launches, and the race check, would then judge nothing. Seeing
  launches below both (the driver's launch call, or CUPTI's callbacks) is the way on.
- **Some kernels did not compile under it with streamlab loaded**: lessons 00 and 02 stopped
  at a kernel's first launch inside numba-cuda-mlir's MLIR lowering
  (`lower_expr_assign`, while lowering a call's `*args`). The same kernels were not
  compiled under numba-cuda-mlir without streamlab, so whether streamlab's hooks cause
  this is not established.
- So the forward path for the course is the one issue 31 sets: the learner's stream and
  event calls written against cuda.core (which numba-cuda-mlir keeps), and a recorder that
  does not depend on numba-cuda's internals."""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--json", type=Path, help="where to write what happened")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a cell may take")
    ap.add_argument("--page", type=Path, metavar="JSON",
                    help="write the findings page from a kept run instead of running")
    ap.add_argument("--out", type=Path, help="with --page: where (default: print it)")
    a = ap.parse_args(argv)
    if a.page:
        try:
            report = json.loads(a.page.read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"--page {a.page}: {exc}: give the JSON a run's --json wrote")
        text = page(report, a.page.as_posix())
        if a.out:
            a.out.write_text(text)
        else:
            print(text)
        return 0
    if not a.notebooks or not a.json:
        raise SystemExit("give notebooks and --json to run them, or --page JSON to write the page")
    try:
        import numba_cuda_mlir  # noqa: F401
    except ImportError:
        raise SystemExit("numba_cuda_mlir is not importable: pip install numba-cuda-mlir "
                         "(or put its folder on PYTHONPATH)") from None
    missing = [str(p) for p in a.notebooks if not p.is_file()]
    if missing:
        raise SystemExit(f"no such notebook: {', '.join(missing)}")
    site = Path(tempfile.mkdtemp())
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH", "")])]),
        STREAMLAB_DEVICE="gpu")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    report = {}
    plain = subprocess.run([sys.executable, "-c", PLAIN], capture_output=True, text=True,
                           env=env, timeout=600)
    line = next((ln for ln in plain.stdout.splitlines() if ln.startswith("PLAIN ")), None)
    report["plain program"] = json.loads(line[6:]) if line else \
        {"error": (plain.stderr or plain.stdout)[-1500:]}
    print(json.dumps(report["plain program"], indent=1))
    for path in a.notebooks:
        report[str(path)] = run_notebook(path, env, a.timeout)
        r = report[str(path)]
        print(f"{path}: {r.get('ran')} of {r['code cells']} code cells"
              + (f"; first error: {r['error']}" if r["error"] else ", every one ran"))
    a.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
