"""The grader keeps the course's files from the learner's code (issue 32, item 2): each
part runs with the course hidden, by bubblewrap where this system allows it and by the
grader's audit hook in any case. A cheat that takes a right answer from the course's own
tests scores where nothing is hidden, and nothing where the course is."""

import ast
import os
import sys
from pathlib import Path

import pytest
import streamlab
from attacks import SILENCED_WHILE_CHECKED
from labtools import ROOT, at_call, cells_of, prepended, submission

from streamlab.grading import plan, run_part, sandbox

#: part 3 of lab 02 answered with a right answer that the course's tests keep, found
#: through streamlab's location (as a learner would find it): in Python, or through libc
IN_PYTHON = '''
import pathlib, streamlab
kept = (pathlib.Path(streamlab.__file__).resolve().parents[2] / "tests" / "wrong_solutions"
        / "lab02__events.py")
ns = {}
exec(kept.read_text(), ns)
exec(next(code for target, code, *_ in ns["RIGHT"].values()
          if target == "add_in_two_streams"))
'''
BELOW_PYTHON = '''
import ctypes, pathlib, streamlab
kept = (pathlib.Path(streamlab.__file__).resolve().parents[2] / "tests" / "wrong_solutions"
        / "lab02__events.py")
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
f = libc.fopen(str(kept).encode(), b"r")
if not f:
    raise PermissionError("libc could not open " + str(kept))
buf = ctypes.create_string_buffer(1 << 20)
libc.fread(buf, 1, len(buf) - 1, ctypes.c_void_p(f))
ns = {}
exec(buf.value.decode(), ns)
exec(next(code for target, code, *_ in ns["RIGHT"].values()
          if target == "add_in_two_streams"))
'''
#: the same read through another process's view of the files: /proc/PID/root (and cwd)
#: lead to the machine's own folders, whatever this process's mounts hide; in Python and
#: through libc
THROUGH_PROC = '''
import os, pathlib, streamlab
kept = (pathlib.Path(streamlab.__file__).resolve().parents[2] / "tests" / "wrong_solutions"
        / "lab02__events.py")
text = None
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        text = READ("/proc/" + pid + "/root" + str(kept))
        break
    except OSError:
        pass
if text is None:
    raise PermissionError("no process's view of the files showed " + str(kept))
ns = {}
exec(text, ns)
exec(next(code for target, code, *_ in ns["RIGHT"].values()
          if target == "add_in_two_streams"))
'''
IN_PYTHON_PROC = "READ = lambda path: open(path).read()\n" + THROUGH_PROC
BELOW_PYTHON_PROC = '''
import ctypes
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p

def READ(path):
    f = libc.fopen(path.encode(), b"r")
    if not f:
        raise OSError("libc could not open " + path)
    buf = ctypes.create_string_buffer(1 << 20)
    libc.fread(buf, 1, len(buf) - 1, ctypes.c_void_p(f))
    return buf.value.decode()
''' + THROUGH_PROC
LAB = "lab02__events"
BWRAP = sandbox.status()[0]


def cheat(code):
    """Lab 02 as graded, with part 3 answered by ``code``, run when the check calls the
    answer (the grader runs no top-level code of the learner's: see the next test)."""
    return plan(submission(LAB, {"add_in_two_streams": at_call(code, "add_in_two_streams")}))


@pytest.mark.parametrize("code", [IN_PYTHON, BELOW_PYTHON], ids=["in Python", "below Python"])
def test_an_attack_at_the_top_of_an_answer_cell_is_never_run(tmp_path, code):
    """Issue 56: the grader refuses an answer cell that does more than define, before it
    runs. The kept right answer these cheats read and define passes nothing: the cell is
    not run, and the feedback says why and what to do."""
    cells = plan(submission(LAB, {"add_in_two_streams": code}))
    got = run_part(cells, "check_part3", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got
    assert any("add_in_two_streams was not run (line" in e and "may only define" in e
               for e in got.learner_errors), got


@pytest.mark.parametrize("code", [IN_PYTHON, BELOW_PYTHON, IN_PYTHON_PROC, BELOW_PYTHON_PROC],
                         ids=["in Python", "below Python", "in Python through /proc",
                              "below Python through /proc"])
def test_a_cheat_that_reads_the_courses_tests_passes_only_where_nothing_is_hidden(tmp_path,
                                                                                  code):
    cells = cheat(code)
    open_door = run_part(cells, "check_part3", cwd=str(tmp_path), timeout=120)
    assert open_door.passed, ("the cheat must work where nothing is hidden, or this test "
                              f"proves nothing: {open_door}")
    hook_only = run_part(cells, "check_part3", cwd=str(tmp_path), hide=[str(ROOT)],
                         sandbox="off", timeout=120)
    assert hook_only.sandbox == "off: asked for"
    if code is IN_PYTHON:
        assert not hook_only.passed and "does not let lab code read" in str(hook_only), \
            hook_only
    elif code is IN_PYTHON_PROC:  # the hook resolves /proc's links: every try refused
        assert not hook_only.passed and "no process's view" in str(hook_only), hook_only
    else:  # the audit hook does not see libc: the documented gap that the sandbox closes
        assert hook_only.passed, hook_only
    if BWRAP is None:
        pytest.skip(f"no sandbox on this machine: {sandbox.status()[1]}")
    boxed = run_part(cells, "check_part3", cwd=str(tmp_path), hide=[str(ROOT)],
                     sandbox="bwrap", timeout=120)
    assert boxed.sandbox == "bubblewrap"
    assert not boxed.passed, boxed


def test_in_the_sandbox_a_right_answer_passes_and_the_folder_holds_the_submission_alone(
        tmp_path):
    (tmp_path / "course" / "tests").mkdir(parents=True)
    (tmp_path / "course" / "tests" / "kept.py").write_text("SECRET = 1\n")
    cwd = tmp_path / "course" / "autograded" / "ada" / LAB
    cwd.mkdir(parents=True)
    (cwd / f"{LAB}.ipynb").write_text("{}")
    look = '''
import os
SEEN = sorted(os.listdir("."))
try:
    open(os.path.join("..", "..", "..", "tests", "kept.py")).read()
    LEAKED = True
except OSError:
    LEAKED = False
'''
    cells = plan(submission(LAB, cells_of(LAB, "solution")))
    cells.append({"source": look + "assert SEEN == ['lab02__events.ipynb'], SEEN\n"
                                   "assert not LEAKED", "role": "graded", "id": "look"})
    for mode in ("off",) + (("bwrap",) if BWRAP else ()):
        verdict = run_part(cells, "check_part1", cwd=str(cwd), hide=[str(tmp_path / "course"),
                                                                     str(ROOT)],
                           sandbox=mode, timeout=120)
        assert verdict.passed, (mode, verdict)
        seen = run_part(cells, "look", cwd=str(cwd), hide=[str(tmp_path / "course"), str(ROOT)],
                        sandbox=mode, timeout=120)
        assert seen.passed, (mode, seen)


def test_a_sandbox_asked_for_where_none_can_be_made_is_a_clear_error(tmp_path, monkeypatch):
    missing = sandbox.status(str(tmp_path / "no-bwrap"))
    assert missing[0] is None and "could not run" in missing[1]
    monkeypatch.setattr(sandbox, "status", lambda bwrap=None: missing)
    with pytest.raises(sandbox.SandboxError, match="no sandbox can be made for grading here"):
        run_part([], "p", cwd=str(tmp_path), hide=[str(ROOT)], sandbox="bwrap")
    # issue 56 item 3: without a sandbox the grader grades only where the teacher turned
    # it off by name; "auto" (the default) stops and says why, and what to do
    with pytest.raises(sandbox.SandboxError, match="no sandbox can be made for grading "
                       "here: .*could not run.*sandbox='off'"):
        run_part([], "p", cwd=str(tmp_path), hide=[str(ROOT)])
    verdict = run_part([{"source": "pass", "role": "graded", "id": "p"}], "p",
                       cwd=str(tmp_path), hide=[str(ROOT)], timeout=60, sandbox="off")
    assert verdict.passed and verdict.sandbox == "off: asked for"
    with pytest.raises(ValueError, match="sandbox='box': use one of auto, bwrap, off"):
        run_part([], "p", cwd=str(tmp_path), sandbox="box")


def test_the_sandbox_never_puts_back_a_folder_that_holds_the_course():
    cmd = sandbox.wrap(["python3"], hide=["/c/course"], keep=["/c", "/c/course/.venv", "/usr"],
                       cwd="/c/course/autograded/ada", bwrap="bwrap")
    binds = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--ro-bind"]
    assert binds == ["/", "/c/course/.venv"], binds
    hidden = os.path.realpath(sys.prefix)
    kept = sandbox.needed(sys.executable, os.environ, hide=[hidden])
    assert kept and not any(hidden == p or hidden.startswith(p.rstrip(os.sep) + os.sep)
                            for p in kept), kept


def test_nbgrader_config_refuses_an_unknown_sandbox():
    pytest.importorskip("nbgrader")
    from traitlets import TraitError

    from streamlab.grading.preprocessor import GradeInFreshProcesses

    with pytest.raises(TraitError, match="sandbox"):
        GradeInFreshProcesses(sandbox="container")
    assert GradeInFreshProcesses().sandbox == "auto"


def test_the_status_probe_names_what_is_missing(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    found, why = sandbox.status(str(fake))
    assert found is None and "No permissions to creating new namespace" in why


#: part 3 taken from the course's tests while something the grader's hook uses is
#: replaced, and put back before the check runs (so the guard finds nothing replaced)
DONE_AND_UNDONE = '''
import os, pathlib, streamlab
import streamlab.grading._child as child
kept = (pathlib.Path(streamlab.__file__).resolve().parents[2] / "tests" / "wrong_solutions"
        / "lab02__events.py")
saved = {name}
{name} = {fake}
try:
    text = kept.read_text()
finally:
    {name} = saved
ns = {{}}
exec(text, ns)
exec(next(code for target, code, *_ in ns["RIGHT"].values()
          if target == "add_in_two_streams"))
'''


def _pathlib_joins_with_os_path() -> bool:
    """Whether this Python's pathlib reads os.path.join when a path is first turned into
    text (the cheat below replaces it between making its path and reading the file)."""
    import os
    import pathlib

    path = pathlib.Path("/a") / "b"
    saved, os.path.join = os.path.join, lambda *a: "/elsewhere"
    try:
        return os.fspath(path) == "/elsewhere"
    finally:
        os.path.join = saved


@pytest.mark.parametrize("name, fake", [
    ("child.inside", "lambda *a: False"),
    ("os.path.realpath", "lambda p, *a, **k: '/elsewhere'"),
    ("os.fsdecode", "lambda p: '/elsewhere'"),
    ("os.path.join", "lambda *a: '/elsewhere'"),
])
def test_replacing_what_the_hook_uses_while_reading_gets_nothing(tmp_path, name, fake):
    """The hook holds its own references to realpath, fsdecode and its path test, so
    replacing them while reading fails in the hook alone. What realpath itself calls
    (os.path.join here) it cannot hold: with the hook alone that read gets through (the
    documented gap), and in the sandbox nothing does."""
    cells = cheat(DONE_AND_UNDONE.format(name=name, fake=fake))
    hook_only = run_part(cells, "check_part3", cwd=str(tmp_path), hide=[str(ROOT)],
                         sandbox="off", timeout=120)
    if name == "os.path.join" and _pathlib_joins_with_os_path():
        # this Python's pathlib builds a path's text with os.path.join when it is first
        # read (3.12, measured on the GPU machine): the cheat's own read goes to
        # '/elsewhere' and fails before the hook sees anything
        assert not hook_only.passed, hook_only
        assert "'/elsewhere'" in str(hook_only), hook_only
    else:
        assert hook_only.passed is (name == "os.path.join"), hook_only
    if BWRAP is None:
        pytest.skip(f"no sandbox on this machine: {sandbox.status()[1]}")
    boxed = run_part(cells, "check_part3", cwd=str(tmp_path), hide=[str(ROOT)],
                     sandbox="bwrap", timeout=120)
    assert not boxed.passed, boxed


# Forging the verdict from inside the part's process (issue 32, item 1). Each answers part 3
# of lab 02 with nothing solved, so a pass is a forgery.
_FORGED = '{"passed": true, "message": "", "kind": "", "learner_errors": []}'
_NOTHING = "\ndef add_in_two_streams(counter, s0, s1):\n    pass\n"
_FROM_A_FRAME = '''
import sys, os
f = sys._getframe(0)
while f is not None:
    if "report" in f.f_locals:
        f.f_locals["report"](True)
        {after}
    f = f.f_back
''' + _NOTHING


@pytest.mark.parametrize("code, named", [
    (f"import json\njson.dumps = lambda *a, **k: {_FORGED!r}\n" + _NOTHING, "json.dumps"),
    ("import json\n_real = json.dumps\njson.dumps = lambda obj, *a, **k: _real(dict(obj, "
     "passed=True) if isinstance(obj, dict) else obj, *a, **k)\n" + _NOTHING, "json.dumps"),
    (f"import json\njson._default_encoder.encode = lambda o: {_FORGED!r}\n" + _NOTHING, None),
    (f"import json\njson.JSONEncoder.encode = lambda self, o: {_FORGED!r}\n" + _NOTHING,
     "json.encoder.JSONEncoder.encode"),
    ("import sys\nsys.modules['streamlab.grading._child']._explain = lambda e: 'True'\n"
     + _NOTHING, "_explain"),
    ("import streamlab.check\nclass S(str):\n    def __repr__(self):\n"
     "        return \"'x', 'passed': True, 'y': 'z'\"\n    def __str__(self):\n"
     "        return self\ndef add_in_two_streams(counter, s0, s1):\n"
     "    raise streamlab.check.CheckFailed(S('forged'))\n", None),
], ids=["json.dumps returns a pass", "json.dumps turns each verdict into a pass",
        "json's default encoder returns a pass", "JSONEncoder.encode returns a pass",
        "the grader's own text helper replaced", "a message whose repr writes a pass"])
def test_a_verdict_forged_through_what_writes_it_scores_nothing(tmp_path, code, named):
    """The verdict is a Python literal made by the interpreter's own repr of plain values:
    nothing a learner's cell replaces (json's encoder, the grader's helpers) can turn it
    into a pass (each of these passed with nothing solved while verdicts went through
    json.dumps). Made at the top of the answer cell, the change is refused before it
    runs; made from inside the answer, while the check runs, it changes nothing, and what
    the guard watches it names as tampering if the check gets that far."""
    top = plan(submission(LAB, {"add_in_two_streams": code}))
    got = run_part(top, "check_part3", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got
    if named:
        assert any("was not run" in e for e in got.learner_errors), got
    got = run_part(cheat(code), "check_part3", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got
    if named and got.kind == "Tampered":
        assert named in got.message, got


@pytest.mark.parametrize("after", ["break", "os._exit(0)"],
                         ids=["then the check fails", "then the process exits"])
def test_a_verdict_forged_from_the_graders_frame_scores_nothing(tmp_path, after):
    """Lab 02's checks are judged in the grader, from what their runs sent: a pass the
    part's process writes is not a grade. (Passed with nothing solved before.)"""
    got = run_part(cheat(_FROM_A_FRAME.replace("{after}", after)), "check_part3",
                   cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got
    if after == "os._exit(0)":  # its one verdict is the forged pass: no check sent anything
        assert got.kind == "Unjudged" and "received 0" in got.message, got


_FORGED_PRIORITY = '''
def launch_urgent(work_ns, last_end, out, started):
    least, greatest = streamlab.priority_range()
    low, high = cuda.stream(), cuda.stream()      # plain numba streams: no priority
    from streamlab.sim.made import note_stream
    note_stream(high.handle, False, greatest)     # the simulator's record, written by hand
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    urgent[1, 32, high](out, started)
'''


@pytest.mark.skipif("not streamlab.on_simulator()", reason="a GPU's driver knows its streams")
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "open (issue 32, item 1): on the simulator, what a stream was made as is streamlab's own "
    "record in the learner's process (streamlab.sim.made), which code can write by hand; a "
    "GPU's driver knows its streams, so there this scores nothing. The fix judges outside "
    "the learner's process. Remove this mark when that lands."))
def test_a_priority_written_into_the_simulators_record_scores_nothing(tmp_path):
    cells = plan(submission("lab08__hardware", {"launch_urgent": _FORGED_PRIORITY}))
    got = run_part(cells, "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got


_LOOSENED = '''
import streamlab.labs.lab05 as _lab

class _Loose(float):
    def __eq__(self, other):
        return True
    __hash__ = float.__hash__

_lab.LONGEST_PAUSE = {value}
''' + __import__("wrong_solutions.lab05__host_functions", fromlist=["RIGHT_PART2"]).RIGHT_PART2


@pytest.mark.parametrize("value, tampered", [("_Loose(1e9)", True), ("float('0.25')", False)],
                         ids=["a float that equals anything", "the same float, made anew"])
def test_a_setting_replaced_by_one_that_only_compares_equal_is_tampering(tmp_path, value,
                                                                          tampered):
    """The guard lets a streamlab setting be the same plain value again, but not an object
    of another type that only says it is equal: a float subclass whose __eq__ says yes to
    anything, put in the place of lab 05's LONGEST_PAUSE, let a loop blocked for the whole
    wait pass on a GPU (an attack on this lab)."""
    code = at_call(_LOOSENED.replace("{value}", value), "checksum_when_done")
    cells = plan(submission("lab05__host_functions", {"checksum_when_done": code}))
    got = run_part(cells, "check_part2", cwd=str(tmp_path), timeout=120, sandbox="off")
    if tampered:
        assert not got.passed and got.kind == "Tampered", got
        assert "streamlab.labs.lab05.LONGEST_PAUSE" in got.message, got
    else:
        assert got.passed, got


#: a learner's cell above the lab's setup that patches a module of the checks before the
#: lab imports it: the check runner's Run (which lab 02's checks make) made to mark every
#: host wait as the check's own
_ABOVE_THE_SETUP = '''
import dataclasses, streamlab.runner as L
from streamlab.ops import OpLog
_Run = L.Run
def Run(ops, *a, **k):
    return _Run(OpLog(dataclasses.replace(op, internal=True) if op.kind == "sync" else op
                      for op in ops), *a, **k)
L.Run = Run
'''


_HOST_WAIT = '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    producer_stream.synchronize()
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
'''


def test_a_lab_module_patched_above_the_setup_is_tampering(tmp_path):
    """The guard's first look at the lab's modules is taken before the learner's first
    cell, wherever that cell sits (a cell above the setup once patched lab 02's Run into
    the guard's baseline and passed a host wait: found by an attack; lab 02's checks now
    make theirs in streamlab.runner)."""
    nb = submission(LAB, {**cells_of(LAB, "solution"), "produce_then_consume": _HOST_WAIT})
    nb.cells.insert(0, {"cell_type": "code", "source": _ABOVE_THE_SETUP, "metadata": {},
                        "outputs": [], "execution_count": None})
    got = run_part(plan(nb), "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    # (issue 56: a cell that does more than define is refused before it runs)
    assert not got.passed and any("a cell you added was not run" in e
                                  for e in got.learner_errors), got
    # the same patch made from inside the answer, while the check runs, is tampering
    inside = submission(LAB, {**cells_of(LAB, "solution"), "produce_then_consume": at_call(
        _ABOVE_THE_SETUP + _HOST_WAIT, "produce_then_consume")})
    got = run_part(plan(inside), "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind == "Tampered" and "runner.Run" in got.message, got


@pytest.mark.parametrize("lab", ["lab01__eight_streams", "lab02__events"])
def test_an_answer_that_does_not_compile_is_named_at_the_check(tmp_path, lab):
    """A syntax error in an answer cell leaves its function undefined, and the check
    then fails with a NameError that names the function: the verdict also says which
    cell of the learner's failed before, with its error, and what to do."""
    answers = cells_of(lab, "solution")
    target = next(iter(answers))
    broken = answers[target].replace("def ", "def (", 1)
    cells = plan(submission(lab, {**answers, target: broken}))
    part = next(c["id"] for c in cells if c["role"] == "graded")
    got = run_part(cells, part, cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind == "NameError", got
    assert "a cell of yours failed (" + target + ": SyntaxError" in got.message, got
    assert got.message.endswith("then this check again"), got
    # the right answer, with a failing cell of the learner's own beside it, still passes:
    # a failed cell that the check does not need costs nothing, and is shown
    cells = plan(submission(lab, answers))
    at = next(i for i, c in enumerate(cells) if c["role"] == "graded")
    cells.insert(at, {**cells[at], "role": "other", "id": "", "source": "def (oops):\n    pass"})
    got = run_part(cells, part, cwd=str(tmp_path), timeout=120, sandbox="off")
    assert got.passed, got
    assert [e.split(":")[:2] for e in got.learner_errors] == [["a cell of yours",
                                                               " SyntaxError"]], got


#: a cell whose error the verdict names (_child._earlier), turned into a forged pass: the
#: helper replaced by one that finds the grader's report function in its caller's frame
_EARLIER_FORGED = '''
import sys
import streamlab.grading._child as _c
def _earlier(errors):
    report = sys._getframe(1).f_locals.get("report")
    if report:
        report(True, "", "", [])
    return ""
'''


@pytest.mark.parametrize("when", ["before the graded cell", "from inside the answer"])
def test_the_helper_that_names_an_earlier_failure_cannot_turn_it_into_a_pass(tmp_path, when):
    """The verdict of a part that fails after a cell of the learner's failed is built with
    _child._earlier. A cell of the learner's own that replaces it is refused before it
    runs (issue 56: only definitions); replaced from inside the answer while the check
    runs, it is tampering: the guard looks again after a check that fails, before the
    verdict is written."""
    answers = cells_of("lab01__eight_streams", "solution")
    if when == "before the graded cell":
        code = {**answers, "launch_on_streams": "def (broken):\n    pass"}
        extra = _EARLIER_FORGED + "_c._earlier = _earlier\n"
    else:
        code = {**answers, "launch_on_streams": at_call(_EARLIER_FORGED + '''
def launch_on_streams(inputs, outputs, streams):
    _c._earlier = _earlier
    raise RuntimeError("the answer fails, after replacing the helper")
''', "launch_on_streams")}
        extra = "def (oops):\n    pass\n"  # an earlier failing cell: the helper is called
    cells = plan(submission("lab01__eight_streams", code))
    at = next(i for i, c in enumerate(cells) if c["role"] == "graded")
    cells.insert(at, {**cells[at], "role": "other", "id": "", "source": extra})
    got = run_part(cells, "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got
    if when == "before the graded cell":  # (issue 56: refused before it runs)
        assert any("a cell you added was not run" in e for e in got.learner_errors), got
    else:  # the guard looks again after a failing check too: the helper is not called
        assert got.kind == "Tampered" and "_child._earlier" in got.message, got


#: names of streamlab's modules that streamlab's code rebinds after the module ran, and
#: why that is safe: each is set once, before the grader's first look
SET_AT_IMPORT = {
    ("streamlab._device", "SIMULATOR"): "set_mode, run as streamlab is imported",
    ("streamlab.order", "_session"): "start_session, run as streamlab is imported, and only "
                                     "with STREAMLAB_RACE_CHECK=1, which the grader unsets",
    ("streamlab.transcript", "_sink"): "set by the grader's own child process (send_to), "
                                       "before it imports streamlab and takes its first look",
}


def _modules_imported(tree, module: str, package: Path) -> dict[str, str]:
    """{local name: streamlab module} for the modules of streamlab a file imports as
    modules (``from . import ops as _ops``, ``from .sim import driver``, ``import
    streamlab.x as y``)."""
    def is_module(name):
        rel = Path(*name.split(".")[1:])
        return (package / rel).with_suffix(".py").is_file() or (package / rel).is_dir()

    here = module if (package / Path(*module.split(".")[1:]) / "__init__.py").is_file() \
        else module.rsplit(".", 1)[0]
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(here.split(".")[:len(here.split(".")) - node.level + 1]) \
                if node.level else ""
            parent = ".".join(p for p in (base, node.module or "") if p)
            for alias in node.names:
                full = f"{parent}.{alias.name}"
                if full.startswith("streamlab.") and is_module(full):
                    out[alias.asname or alias.name] = full
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("streamlab.") and alias.asname:
                    out[alias.asname] = alias.name
    return out


def test_no_module_level_setting_of_streamlab_changes_while_a_part_runs():
    """The grader takes streamlab's module-level plain values for settings that no code
    changes (streamlab.grading._child._settings), and a part that finds one changed scores
    nothing, as "Tampered". A value that streamlab itself changes as it runs fails a right
    answer whenever the grader's look falls at another moment than its check: the
    simulator's count of queued host functions once did (lab 05 part 2, under load, about
    one run in three). So streamlab rebinds no module-level name after its module ran,
    neither from a function of the module (``global``) nor from another module
    (``mod.NAME = ...``, ``setattr(mod, ...)``), but the ones listed in SET_AT_IMPORT."""
    package = Path(streamlab.__file__).resolve().parent
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(("streamlab", *path.relative_to(package).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        modules = _modules_imported(tree, module, package)
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                found += [f"{module}.{name} (global, {path.name}:{node.lineno})"
                          for name in node.names if (module, name) not in SET_AT_IMPORT]
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id == "setattr" and node.args and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id in modules:
                found.append(f"{modules[node.args[0].id]}.? (setattr, {path.name}:"
                             f"{node.lineno})")
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and \
                        t.value.id in modules and \
                        (modules[t.value.id], t.attr) not in SET_AT_IMPORT:
                    found.append(f"{modules[t.value.id]}.{t.attr} ({path.name}:{t.lineno})")
    assert not found, (f"rebound as streamlab runs, though the grader takes a module's "
                       f"names for fixed settings: {found}. Keep such a value on an object "
                       f"(an attribute of an instance), or list it in SET_AT_IMPORT if it "
                       f"is set only at import")


_QUEUED_WHEN_LOOKED = '''
import os, threading
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
os.environ["STREAMLAB_DEVICE"] = "sim"   # (a GPU run of the tests sets it to gpu)
import streamlab
from numba import cuda
from streamlab.grading._child import Guard

s, gate = cuda.stream(), threading.Event()
streamlab.launch_host_func(s, gate.wait)          # queued, and held until the look is over
guard = Guard()
guard.snapshot_modules()                           # the grader's look, with one outstanding
gate.set()
s.synchronize()                                    # it has run: none outstanding now
print("PROBLEMS", guard.problems({}))
'''


def test_a_host_function_queued_when_the_grader_looks_is_not_tampering(tmp_path):
    """The case that failed: the grader's look taken while a host function is queued on
    the simulator, its comparison after it has run."""
    import subprocess

    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_GRADING="1")
    out = subprocess.run([sys.executable, "-c", _QUEUED_WHEN_LOOKED], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=120)
    assert "PROBLEMS []" in out.stdout, out.stdout + out.stderr


#: a learner's cell that turns the simulator's host-function flush off: the count it asks
#: is an attribute of the driver now, which the grader does not watch (a module-level
#: number, it was watched)
_NO_FLUSH = "import streamlab.sim.driver as _d\n_d.driver.outstanding = -10**6\n"


@pytest.mark.skipif("not streamlab.on_simulator()", reason="the simulator's driver alone")
@pytest.mark.parametrize("name", [
    "the host waits, then post-processes", "a lambda that closes over the loop variable",
    "does not wait at all", "the future resolved without waiting for it"])
def test_a_wrong_answer_with_the_simulators_flush_turned_off_still_fails(tmp_path, name):
    """With its flush turned off, the simulator runs a stream's host functions late (after
    its delay), not before a synchronize: results come late or never, and the part's
    recorded operations are judged as before. A wrong answer of lab 05 still fails."""
    wrong = __import__("wrong_solutions.lab05__host_functions", fromlist=["WRONG"]).WRONG
    target, code, part = wrong[name][:3]
    cells = {**cells_of("lab05__host_functions", "solution"), target: _NO_FLUSH + code}
    got = run_part(plan(submission("lab05__host_functions", cells)), part,
                   cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed, got


def test_no_learner_code_runs_as_a_cell_of_definitions_runs(tmp_path):
    """Issue 56, item 2: a decorator of the learner's own would run as its cell does, so
    it is refused; and a module that learner code wrote into the part's folder (as an
    earlier part's check called it) is not on the import path, so importing it runs
    nothing. Each answer is wrong: where its code ran, the guard would have to catch it."""
    own_decorator = '''
def deco(f):
    import streamlab.check as c
    c.fail = lambda *a, **k: None
    return f

@deco
def produce_then_consume(*args):
    pass
'''
    got = run_part(plan(submission(LAB, {**cells_of(LAB, "solution"),
                                         "produce_then_consume": own_decorator})),
                   "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind != "Tampered", got
    assert any("a decorator of your own (deco)" in e for e in got.learner_errors), got
    (tmp_path / "planted.py").write_text("print('the planted module ran')\n")
    planted = "import planted\n\ndef produce_then_consume(*args):\n    pass\n"
    got = run_part(plan(submission(LAB, {**cells_of(LAB, "solution"),
                                         "produce_then_consume": planted})),
                   "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and "the planted module ran" not in got.output, got
    assert any("ModuleNotFoundError" in e and "planted" in e for e in got.learner_errors), got


def test_a_check_that_no_locked_cell_defined_is_not_called(tmp_path):
    """Issue 56, item 1 in part: with the lab's setup cell deleted, or its nbgrader marks
    removed, a cell of the learner's could define the check the graded cell calls (a
    definition, which the grader runs). The graded cell's checks must be the lab's own
    cells' names, or the part scores nothing and says why. (The deleted setup passed,
    before.)"""
    import nbformat

    answers = cells_of("lab01__eight_streams", "solution")
    fake = "def check_part1(*args, **kwargs):\n    print('Part 1: passed')\n"
    for how in ("deleted", "marks removed"):
        nb = submission("lab01__eight_streams", answers)
        (setup,) = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {})
                    .get("grade_id") == "setup"]
        if how == "deleted":
            nb.cells.remove(setup)
            nb.cells.insert(0, nbformat.v4.new_code_cell(fake))
        else:
            setup.metadata.pop("nbgrader")  # (its source as released: the lab's import)
            nb.cells.insert(nb.cells.index(setup) + 1, nbformat.v4.new_code_cell(fake))
        got = run_part(plan(nb), "check_part1", cwd=str(tmp_path), timeout=120,
                       sandbox="off")
        assert not got.passed and got.kind == "Missing", (how, got)
        assert "none of the lab's own (locked) cells defined" in got.message, (how, got)
    # the lab as handed out, answered: its checks are the lab's
    got = run_part(plan(submission("lab01__eight_streams", answers)), "check_part1",
                   cwd=str(tmp_path), timeout=120, sandbox="off")
    assert got.passed, got


def _gid(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def test_the_grader_runs_the_lab_as_released_with_the_learners_answers_alone(tmp_path):
    """Issue 56, item 1: the notebook a part runs is rebuilt from the lab's source: every
    lab cell as released, each answer cell's source from the learner's copy by its grade
    id, a cell the learner added where it was (the learner's, without any nbgrader marks
    it carries), never a released answer. What was not where the lab put it is named."""
    import nbformat
    from labtools import filled, notebook

    from streamlab.grading import rebuild

    lab = "lab01__eight_streams"
    released, answers = notebook("solutions", lab), cells_of(lab, "solution")
    copy = filled(notebook("labs", lab), answers)
    run, notes = rebuild(copy, released)
    assert notes == [] and [c["id"] for c in plan(run)] == [c["id"] for c in plan(released)]
    assert plan(run) == plan(submission(lab, answers))  # the hidden tests, from the source
    # the untouched copy: its answers are the stubs, never the solutions
    stubs, notes = rebuild(notebook("labs", lab), released)
    solution = {_gid(c): c.source for c in released.cells}
    for cell in plan(stubs):
        if cell["role"] == "solution":
            assert cell["source"] != solution[cell["id"]] and "YOUR CODE HERE" in cell["source"]
    # the setup cell deleted, an answer deleted, a forged graded cell and a scratch cell
    # added: the lab's cells as released, the added ones the learner's, in place
    broken = filled(notebook("labs", lab), answers)
    broken.cells = [c for c in broken.cells if _gid(c) not in ("setup", "wait_for")]
    forged = nbformat.v4.new_code_cell("check_part3(print)")
    forged.metadata["nbgrader"] = {"grade": True, "grade_id": "check_part9", "points": 9,
                                   "locked": True, "solution": False}
    scratch = nbformat.v4.new_code_cell("def helper():\n    return 1\n")
    at = [_gid(c) for c in broken.cells].index("check_part1")
    broken.cells[at + 1:at + 1] = [scratch, forged]
    run, notes = rebuild(broken, released)
    assert [(c["role"], c["id"]) for c in plan(run)] == [
        ("locked", "setup"), ("solution", "launch_on_streams"), ("graded", "check_part1"),
        ("other", ""), ("other", ""), ("solution", "launch_with_dummies"),
        ("graded", "check_part2"), ("solution", "wait_for"), ("graded", "check_part3")]
    assert [c["source"] for c in plan(run)][7] == ""
    assert any("'setup' was not in your notebook" in n and "as the lab has it" in n
               for n in notes), notes
    assert any("answer cell 'wait_for'" in n and "ran it empty" in n for n in notes), notes
    assert len(notes) == 2 and _gid(broken.cells[at + 2]) == "check_part9"  # (not changed)


@pytest.mark.parametrize("how", ["deleted", "marks removed and rewritten"])
def test_a_setup_cell_deleted_or_rewritten_is_run_as_released(tmp_path, how):
    """Issue 56, item 1: with the lab's setup cell deleted, or stripped of its marks and
    rewritten to define the checks, the rebuilt notebook runs the lab's setup as
    released: the learner's own check_part1 is the lab's again, so a wrong answer fails
    and a right one passes (the learner who deleted the cell by mistake is graded as
    the others are)."""
    import nbformat
    from labtools import filled, notebook

    from streamlab.grading import rebuild

    lab = "lab01__eight_streams"
    fake = ("import numpy as np\n\ndef check_part1(*args, **kwargs):\n"
            "    print('Part 1: passed')\n")
    wrong = "def launch_on_streams(inputs, outputs, streams):\n    pass\n"
    verdicts = {}
    for answer in ("right", "wrong"):
        answers = dict(cells_of(lab, "solution"))
        if answer == "wrong":
            answers["launch_on_streams"] = wrong
        nb = filled(notebook("labs", lab), answers)
        (setup,) = [c for c in nb.cells if _gid(c) == "setup"]
        if how == "deleted":
            nb.cells.remove(setup)
            nb.cells.insert(0, nbformat.v4.new_code_cell(fake))
        else:
            setup.metadata.pop("nbgrader")
            setup.source = fake
        run, notes = rebuild(nb, notebook("solutions", lab))
        assert any("'setup' was not in your notebook" in n for n in notes), notes
        verdicts[answer] = run_part(plan(run), "check_part1", cwd=str(tmp_path),
                                    timeout=120, sandbox="off")
    assert verdicts["right"].passed, verdicts["right"]
    assert not verdicts["wrong"].passed and verdicts["wrong"].kind in (
        "CheckFailed", "Tampered"), verdicts["wrong"]


UNDO_THE_SANDBOX = r"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
tried = {"uid": os.getuid(), "capabilities": caps}
if UNDO:  # (only where the sandbox is: outside it, as root, this would change the machine)
    tried["unmount the course"] = libc.umount2(COURSE.encode(), 2)
    tried["remount / writable"] = libc.mount(b"none", b"/", None, 32 | 4096, None)
    for where in ("/", "/etc"):
        try:
            open(os.path.join(where, "streamlab-escaped"), "w").close()
            tried["write in " + where] = "written"
        except OSError as e:
            tried["write in " + where] = type(e).__name__
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=2)
        tried["network"] = "connected"
    except OSError as e:
        tried["network"] = type(e).__name__
print("TRIED", tried)
assert tried["uid"] != 0 and int(tried["capabilities"], 16) == 0, tried
assert tried["unmount the course"] == -1 and tried["remount / writable"] == -1, tried
assert tried["write in /"] != "written" and tried["write in /etc"] != "written", tried
assert tried["network"] != "connected", tried
"""


def test_in_the_sandbox_a_part_is_nobody_and_cannot_undo_it(tmp_path):
    """Issue 56 item 3: as root with every capability, a part unmounted the folder that
    hid the course, remounted / writable and set its own grade in the gradebook. In the
    sandbox it is an unprivileged user with no capability, in namespaces of its own:
    unmounting, remounting, writing outside its folder and reaching the network all fail,
    whether or not the grader runs as root (these tests run as root on CI)."""
    if BWRAP is None:
        pytest.skip(f"no sandbox on this machine: {sandbox.status()[1]}")
    course = tmp_path / "course"
    cwd = course / "autograded" / "ada"
    cwd.mkdir(parents=True)
    code = f"COURSE = {str(course)!r}\nUNDO = True\n" + UNDO_THE_SANDBOX
    verdict = run_part([{"source": code, "role": "graded", "id": "p"}], "p", cwd=str(cwd),
                       hide=[str(course), str(ROOT)], sandbox="bwrap", timeout=120)
    assert verdict.sandbox == "bubblewrap" and verdict.passed, verdict
    assert "'unmount the course': -1" in verdict.output, verdict.output
    # outside the sandbox, as root here, the part is root with its capabilities (only
    # looked at: the test can fail)
    if os.getuid() == 0:
        look = code.replace("UNDO = True", "UNDO = False")
        loose = run_part([{"source": look, "role": "graded", "id": "p"}], "p",
                         cwd=str(cwd), sandbox="off", timeout=120)
        assert not loose.passed and "'uid': 0" in loose.output, loose


@pytest.mark.parametrize("target", ["streamlab.check.fail", "the lab's setup helper"])
def test_a_function_whose_code_is_swapped_is_tampering(tmp_path, target):
    """Issue 56, mechanism 1: assigning a new ``__code__`` (or new defaults) keeps the
    function the same object, which an identity check took as unchanged; check.fail
    swapped so that it raises nothing passed a wrong answer. The guard keeps each watched
    function's code, and a locked cell's own functions' too."""
    lab = "lab01__eight_streams"
    if target == "the lab's setup helper":
        swap = ("import streamlab.labs.lab01 as lab\n"
                "lab.fresh_inputs.__defaults__ = (99,)\n")
    else:
        module, name = target.rsplit(".", 1)
        swap = (f"import {module} as m\n"
                f"m.{name}.__code__ = (lambda *a, **k: None).__code__\n")
    wrong = "def launch_on_streams(inputs, outputs, streams):\n    pass\n"
    code = at_call(swap + wrong, "launch_on_streams")
    got = run_part(plan(submission(lab, {**cells_of(lab, "solution"),
                                         "launch_on_streams": code})),
                   "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind == "Tampered", got
    assert "the code of" in got.message, got


@pytest.mark.parametrize("how", ["rebound", "code swapped"])
def test_the_guard_cannot_be_turned_off_through_itself(tmp_path, how):
    """Issue 56, mechanism 2: the guard's own look (Guard.problems on the grader's child
    module), rebound or its code swapped, answered "nothing replaced"; with check.fail's
    code swapped as well, a wrong answer passed. The child calls the look it took before
    any learner code ran, and compares the code of its own functions in its running main
    function, which no swap reaches."""
    lab = "lab01__eight_streams"
    off = ("c.Guard.problems = lambda self, ns: []\n" if how == "rebound" else
           "c.Guard.problems.__code__ = (lambda self, ns: []).__code__\n")
    attack = ("import streamlab.grading._child as c\nimport streamlab.check as k\n" + off +
              "k.fail.__code__ = (lambda *a, **kw: None).__code__\n"
              "def launch_on_streams(inputs, outputs, streams):\n    pass\n")
    got = run_part(plan(submission(lab, {**cells_of(lab, "solution"), "launch_on_streams":
                                         at_call(attack, "launch_on_streams")})),
                   "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind == "Tampered", got
    assert "Guard.problems" in got.message, got


def test_ipythons_transformer_replaced_or_planted_drops_no_hidden_test(tmp_path):
    """Issue 56, mechanism 4: a learner's code that replaced IPython's input transformer
    (or planted a module in its place in sys.modules) emptied the cells after it, hidden
    tests included. No learner code runs now until a check calls it, and by then every
    cell, the graded one with its hidden tests, has been read: the hidden test still
    runs (its check's second pass is in the output)."""
    lab = "lab01__eight_streams"
    answers = cells_of(lab, "solution")
    attack = ("import sys, types\n"
              "from IPython.core import inputtransformer2 as t\n"
              "t.TransformerManager.transform_cell = lambda self, cell: 'pass'\n"
              "sys.modules['IPython.core.inputtransformer2'] = types.ModuleType('planted')\n")
    code = prepended(answers["launch_on_streams"], attack)
    got = run_part(plan(submission(lab, {**answers, "launch_on_streams": code})),
                   "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert got.passed, got
    assert got.output.count("Part 1: passed") == 2, got.output  # the hidden test's too


SIDE_DOORS = r"""
import os, shutil, sqlite3
tried = {}
for name, attempt in (
        ("a hard link", lambda: os.link(SECRET, "leak")),
        ("a move", lambda: os.rename(SECRET, "moved")),
        ("a copy", lambda: shutil.copyfile(SECRET, "copied")),
        ("SQLite", lambda: sqlite3.connect(DB).execute("create table mine (x)")),
        ("SQLite by URI", lambda: sqlite3.connect("file:" + DB + "?mode=rw", uri=True)
         .execute("create table mine (x)")),
        ("a removal", lambda: os.remove(DB))):
    try:
        attempt()
        tried[name] = "done"
    except Exception as e:
        tried[name] = type(e).__name__
print("TRIED", tried)
"""


def test_with_the_sandbox_off_no_side_door_reaches_the_solutions_or_the_gradebook(tmp_path):
    """Issue 56, mechanism 6: with the sandbox off, the audit hook refused open() of a
    protected file, but a hard link or a move gave it a path in the part's folder, and
    SQLite (which opens its file in C) wrote the gradebook. The hook now sees the paths
    of links, moves, copies, removals and SQLite's connections (a URI's too)."""
    course = tmp_path / "course"
    (course / "solutions").mkdir(parents=True)
    secret = course / "solutions" / "answer.py"
    secret.write_text("ANSWER = 42\n")
    db = course / "gradebook.db"
    import sqlite3

    sqlite3.connect(db).execute("create table grade (x)").connection.commit()
    cwd = tmp_path / "work"
    cwd.mkdir()
    lab = "lab01__eight_streams"
    answers = cells_of(lab, "solution")
    probe = f"SECRET, DB = {str(secret)!r}, {str(db)!r}\n" + SIDE_DOORS
    code = prepended(answers["launch_on_streams"], probe)
    got = run_part(plan(submission(lab, {**answers, "launch_on_streams": code})),
                   "check_part1", cwd=str(cwd), protect=[str(secret.parent), str(db)],
                   timeout=120, sandbox="off")
    line = next(l for l in got.output.splitlines() if l.startswith("TRIED"))
    tried = ast.literal_eval(line[len("TRIED "):])
    assert set(tried.values()) == {"PermissionError"}, tried
    # the hook keeps what it reads: at the interpreter's exit, module globals are None
    assert "Exception ignored in audit hook" not in got.output, got.output
    assert secret.read_text() == "ANSWER = 42\n" and sorted(os.listdir(cwd)) == []
    tables = sqlite3.connect(db).execute("select name from sqlite_master").fetchall()
    assert tables == [("grade",)], tables




#: lab 05 part 1 answered with a host wait (its results right): wrong by a rule alone
_WAITS = __import__("wrong_solutions.lab05__host_functions", fromlist=["WRONG"]).WRONG[
    "the host waits, then post-processes"][1]


@pytest.mark.parametrize("lab, answer, wrong", [
    ("lab04__pipeline", "copy_compute_copy", None),
    # judged in the grader since its check sends its results as data: silenced in the
    # part's process, the host wait passes there, and the grader's judge refuses it
    ("lab05__host_functions", "post_process_in_order", _WAITS),
    # (judged in the learner's process alone, lab 01's part 1 passed: its best run, the
    # one that launched nothing, is sent now, and the grader finds no launch in it)
    ("lab01__eight_streams", "launch_on_streams", None)])
def test_a_check_silenced_while_it_runs_and_put_back_scores_nothing(tmp_path, lab, answer,
                                                                      wrong):
    """Issue 56, mechanisms 7 and 9: a tracer (or a thread) that silences check.fail only
    while a check runs, and puts it back before the guard's second look. The grader
    judges again from what the check sent, so the wrong answer scores nothing."""
    source = (wrong.strip("\n") + "\n" if wrong
              else "def " + answer + "(*args):\n    pass\n")
    code = prepended(source, SILENCED_WHILE_CHECKED)
    got = run_part(plan(submission(lab, {**cells_of(lab, "solution"), answer: code})),
                   "check_part1", cwd=str(tmp_path), timeout=120, sandbox="off")
    assert not got.passed and got.kind == "CheckFailed" and "Part 1:" in got.message, got
    if wrong:
        assert "you synchronized the host" in got.message, got


def test_the_table_of_attacks_in_labs_readme_names_tests_that_exist():
    """labs/README.md's table of what each attack comes to names, for each row, the tests
    that keep it: each must be a test of that file (issue 56: a table that matches the
    tests)."""
    import re

    text = (ROOT / "labs" / "README.md").read_text()
    start = text.index("| the attack |")
    table = text[start:text.index("\n\n", start)]
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", table)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 15 and len(named) >= len(rows) - 1, (len(rows), named)
    for path, name in named:
        source = (ROOT / path).read_text()
        assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name} is not a test"
