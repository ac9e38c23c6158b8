"""What streamlab changes in numba, and what it gives back.

``streamlab.uninstall()`` puts back every object streamlab replaced: each module and class
of numba (and ``threading.Thread``) holds exactly what it held before ``import
streamlab``, on the simulator and on a GPU (run in a fresh Python, where numba's modules
are loaded and looked at first). And numba-cuda's own tests give the same outcome with
streamlab imported as without (scripts/gpu/numba_own_tests.py)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = textwrap.dedent('''
    import importlib, inspect, json, sys, threading
    simulator = sys.argv[1] == "sim"
    import numba.cuda
    from numba.cuda import dispatcher                          # what the GPU hooks wrap
    for name in (["numba.cuda.simulator.api", "numba.cuda.simulator.kernel",
                  "numba.cuda.simulator.kernelapi", "numba.cuda.simulator.cudadrv.devices",
                  "numba.cuda.simulator.cudadrv.devicearray"] if simulator else
                 ["numba.cuda.cudadrv.driver", "numba.cuda.args"]):
        importlib.import_module(name)
    import cuda  # the namespace package whose attribute "core" the simulator's stand-in takes
    import asyncio.base_events                                # call_soon_threadsafe (hostfn)
    import concurrent.futures, queue                          # Future, Queue (hostfn)
    from cuda.bindings import driver                          # cuLaunchHostFunc (hostfn)
    entries = {name: sys.modules.get(name) for name in ("cuda.core",)}  # sys.modules entries

    def owners():
        """Every loaded numba module, every class any of them holds (wherever it was
        defined: numba re-exports many), threading's Thread and Event, asyncio's event
        loop, concurrent.futures' Future, queue's three queues and cuda.bindings' driver
        module."""
        found = {"threading.Thread": threading.Thread, "threading.Event": threading.Event,
                 "asyncio.BaseEventLoop": asyncio.base_events.BaseEventLoop,
                 "concurrent.futures.Future": concurrent.futures.Future,
                 "queue.Queue": queue.Queue, "queue.LifoQueue": queue.LifoQueue,
                 "queue.PriorityQueue": queue.PriorityQueue,
                 "cuda.bindings.driver": driver}
        seen = {id(v) for v in found.values()}
        for modname, mod in sorted(sys.modules.items()):
            if mod is None or not (modname.startswith("numba") or modname == "cuda"):
                continue
            found[modname] = mod
            for attr, value in list(vars(mod).items()):
                if inspect.isclass(value) and id(value) not in seen:
                    seen.add(id(value))
                    found[f"{modname}.{attr}"] = value
        return found

    def snapshot():
        return {key: dict(vars(obj)) for key, obj in owners().items()}

    def differences(before):
        out = []
        for key, obj in owners().items():
            if key not in before:
                continue
            now, then = dict(vars(obj)), before[key]
            for name in set(now) | set(then):
                if name in ("__dict__", "__weakref__", "__annotations__"):
                    continue
                if now.get(name, then) is not then.get(name, now):
                    out.append(f"{key}.{name}")
        return sorted(out)

    before = snapshot()
    import streamlab
    from streamlab import _patching
    changed = differences(before)
    known = set(before)
    unseen = sorted({f"{getattr(o, '__module__', '')}.{getattr(o, '__qualname__', o)}:{n}"
                     for o, n in _patching.patched()
                     if o is not sys.modules and
                     not any(o is obj for key, obj in owners().items() if key in known)})
    changed += [f"sys.modules[{n!r}]" for n, was in entries.items() if sys.modules.get(n) is not was]
    streamlab.uninstall()
    left = differences(before)
    left += [f"sys.modules[{n!r}]" for n, was in entries.items() if sys.modules.get(n) is not was]
    # plain numba works afterwards
    from numba import cuda
    import numpy as np

    @cuda.jit
    def add_one(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    a = cuda.to_device(np.zeros(8, np.float32))
    s = cuda.stream()
    add_one[1, 8, s](a)
    s.synchronize()
    print(json.dumps({"changed": changed, "left": left, "unseen": unseen,
                      "stream_class": type(s).__module__ + "." + type(s).__name__,
                      "works": a.copy_to_host().tolist() == [1.0] * 8}))
''')


def run(mode):
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE=mode)
    env.pop("STREAMLAB_RACE_CHECK", None)
    if mode == "sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-c", PROGRAM, "sim" if mode == "sim" else "gpu"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def check(out, patched_at_least):
    assert len(out["changed"]) >= patched_at_least, \
        f"import streamlab changed only {out['changed']}: the test no longer sees its patches"
    assert not out["unseen"], (f"patched objects this test does not look at (load their "
                               f"modules first): {out['unseen']}")
    assert not out["left"], f"still replaced after streamlab.uninstall(): {out['left']}"
    assert out["works"]


def test_uninstall_puts_back_every_object_on_the_simulator():
    out = run("sim")
    check(out, 20)  # the simulator's fills and the hooks
    assert out["stream_class"].startswith("numba.cuda.simulator"), out["stream_class"]


@pytest.mark.gpu
def test_uninstall_puts_back_every_object_on_a_gpu():
    out = run("gpu")
    check(out, 10)
    assert out["stream_class"] == "numba.cuda.cudadrv.driver.Stream", out["stream_class"]


STDLIB = textwrap.dedent('''
    import asyncio.base_events, concurrent.futures, json, queue, sys, threading
    methods = {"Thread.start": (threading.Thread, "start"),
               "Thread.join": (threading.Thread, "join"),
               "Event.set": (threading.Event, "set"), "Event.wait": (threading.Event, "wait"),
               "Future.set_result": (concurrent.futures.Future, "set_result"),
               "Future.result": (concurrent.futures.Future, "result"),
               "Queue.put": (queue.Queue, "put"), "Queue.get": (queue.Queue, "get"),
               "Queue._put": (queue.Queue, "_put"),
               "LifoQueue._put": (queue.LifoQueue, "_put"),
               "call_soon_threadsafe": (asyncio.base_events.BaseEventLoop,
                                        "call_soon_threadsafe")}
    before = {k: vars(o)[n] for k, (o, n) in methods.items()}

    def replaced():
        return sorted(k for k, (o, n) in methods.items() if vars(o).get(n) is not before[k])

    import streamlab
    seen = {"after import": replaced()}
    with streamlab.record_ops():
        seen["inside record_ops"] = replaced()
    seen["after record_ops"] = replaced()
    with streamlab.race_check():
        seen["inside race_check"] = replaced()
    seen["after race_check"] = replaced()
    from numba import cuda
    s = cuda.stream()
    streamlab.spin[1, 1, s](1000)
    s.synchronize()
    seen["after work"] = replaced()
    streamlab.uninstall()
    seen["after uninstall"] = replaced()
    print(json.dumps(seen))
''')


@pytest.mark.parametrize("model", ["", "off"])
def test_import_alone_leaves_threading_and_queue_as_they_were(model):
    """Issue 55: the standard library's thread hand-overs (Thread.start/join, Event,
    Future, the queues, call_soon_threadsafe) are replaced only while something needs
    them (streamlab.handovers): a recording or race check, and on the simulator the model
    GPU once it has timed work (it keeps each thread's host clock). Import alone, and the
    end of a recording, leave them the standard library's own."""
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim",
               NUMBA_ENABLE_CUDASIM="1", STREAMLAB_MODEL=model)
    env.pop("STREAMLAB_RACE_CHECK", None)
    r = subprocess.run([sys.executable, "-c", STDLIB], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    every = sorted(["Thread.start", "Thread.join", "Event.set", "Event.wait",
                    "Future.set_result", "Future.result", "Queue.put", "Queue.get",
                    "Queue._put", "LifoQueue._put", "call_soon_threadsafe"])
    assert seen["after import"] == [], seen
    assert seen["inside record_ops"] == every, seen
    assert seen["after record_ops"] == [], seen
    assert seen["inside race_check"] == every, seen
    assert seen["after race_check"] == [], seen
    assert seen["after work"] == (every if model != "off" else []), seen
    assert seen["after uninstall"] == [], seen


def own_tests(tmp_path, figures, *args) -> dict:
    """scripts/gpu/numba_own_tests.py run (on the simulator, or with --gpu): it must find the
    same outcome for every test both ways, and have run some. Its totals become figures."""
    out = tmp_path / "own.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu" / "numba_own_tests.py"),
                        "--json", str(out), *args], capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Every test has the same outcome both ways" in r.stdout
    result = json.loads(out.read_text())
    passed = sum(o == "passed" for o in result["with"].values())
    assert passed >= 50, f"only {passed} of numba's tests passed: {r.stdout[-2000:]}"
    for way, key in (("without streamlab", "without"), ("with import streamlab first", "with")):
        figures(f"numba-cuda's own tests on the {result['where']}, {way}",
                the_script().totals(result[key]), "")
    return result


def the_script():
    """scripts/gpu/numba_own_tests.py, as a module."""
    try:
        import numba_own_tests
    finally:
        sys.path.pop(0)
    return numba_own_tests


def test_numba_cudas_own_tests_cannot_tell_streamlab_is_imported_on_the_simulator(
        tmp_path, figures):
    own_tests(tmp_path, figures)


def test_the_comparison_names_a_test_whose_outcome_differs():
    differ = the_script().compare({"a": "passed", "b": "skipped"},
                                     {"a": "failed", "b": "skipped", "c": "passed"})
    assert differ == [("a", "passed", "failed"), ("c", "not run", "passed")]


@pytest.mark.gpu
def test_numba_cudas_own_tests_cannot_tell_streamlab_is_imported_on_a_gpu(tmp_path, figures):
    own_tests(tmp_path, figures, "--gpu")


def test_uninstall_gives_ipython_its_own_error_display_back():
    """In IPython, streamlab shows a failed check as its one line (set_custom_exc);
    uninstall() puts the shell's own handler back."""
    program = textwrap.dedent('''
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        before = (shell.custom_exceptions, shell.CustomTB)
        import streamlab
        during = shell.custom_exceptions
        streamlab.uninstall()
        after = (shell.custom_exceptions, shell.CustomTB)
        print(during != before[0], after[0] == before[0], after[1] is before[1]
              or after[1] == before[1])
    ''')
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim", NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-3:] == ["True", "True", "True"], r.stdout
