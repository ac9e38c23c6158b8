"""The child side of :func:`streamlab.grading.run_part`: one graded part, in plain Python.

Reads the part's spec (JSON) from stdin, runs the notebook's cells in order (the other
graded cells left out), guards what the locked cells set up, and writes the verdict to
the pipe it was given, after the number it was given (``<number> V <verdict>``), with
the transcript of each judged check's run before it (``<number> T <transcript>``; see
:mod:`streamlab.transcript`).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import sys
import traceback

from .answers import RULE, defines, refusal
from .sandbox import inside

# What the guard compares: objects learner code has no business replacing.
WATCHED_MODULES = ("streamlab", "numba.cuda", "numpy", "builtins", "asyncio", "threading",
                   "time", "math", "contextlib", "functools", "warnings", "logging", "json")


def _watched(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in WATCHED_MODULES) and \
        not name.startswith(("numpy.f2py", "numpy.distutils", "numpy.testing"))


def _worth_watching(obj) -> bool:
    return inspect.isroutine(obj) or inspect.isclass(obj) or inspect.ismodule(obj)


def _settings(name: str, obj) -> bool:
    """streamlab's own module-level settings (``labs.GRADING``, sizes): plain values that
    no code changes once the module is loaded."""
    return name.startswith("streamlab") and isinstance(obj, (bool, int, float, str, tuple,
                                                             type(None)))


def _same(now, before) -> bool:
    """Is ``now`` the setting ``before`` was, of the very same type (a float subclass
    whose ``__eq__`` says yes to anything is not the float it replaced)?"""
    if type(now) is not type(before):
        return False
    if isinstance(before, tuple):
        return len(now) == len(before) and all(map(_same, now, before))
    return now == before


class Guard:
    """A snapshot of modules, classes and the locked cells' names, compared later."""

    def __init__(self):
        self.modules: dict = {}   # module name -> {attribute: object}
        self.classes: dict = {}   # (module, class name) -> {attribute: object}
        self.names: dict = {}     # names the locked cells defined -> object
        self.sysmods: dict = {}
        # every watched Python function -> (its code, defaults, keyword defaults): a
        # function whose __code__ was swapped is the same object doing something else
        self.codes: dict = {}

    def snapshot_modules(self) -> None:
        """Note the objects of every watched module loaded now (and not noted yet)."""
        for name, mod in list(sys.modules.items()):
            if mod is None or not _watched(name) or name in self.modules:
                continue
            self.sysmods[name] = mod
            attrs = {}
            for attr, value in list(vars(mod).items()):
                if attr.startswith("__") and attr.endswith("__"):
                    continue
                if _worth_watching(value) or _settings(name, value):
                    attrs[attr] = value
                    self._note_code(value)
                    if inspect.isclass(value) and value.__module__ == name:
                        self.classes[(name, attr)] = (value, {
                            k: v for k, v in list(vars(value).items())
                            if _worth_watching(v) or isinstance(v, (staticmethod, classmethod,
                                                                    property))})
                        for v in self.classes[(name, attr)][1].values():
                            self._note_code(getattr(v, "__func__", v))
                            for part in ("fget", "fset", "fdel"):
                                self._note_code(getattr(v, part, None))
            self.modules[name] = attrs

    def _note_code(self, fn) -> None:
        if inspect.isfunction(fn) and fn not in self.codes:
            self.codes[fn] = (fn.__code__, fn.__defaults__, fn.__kwdefaults__)

    def remember(self, ns: dict, before: dict) -> None:
        """Note the names a locked cell (re)defined: learner code must leave them."""
        for key, value in ns.items():
            if key.startswith("__"):
                continue
            if key not in before or before[key] is not value:
                self.names[key] = value
                self._note_code(value)

    def problems(self, ns: dict) -> list[str]:
        """What was replaced since the snapshots, in words; empty if nothing."""
        found = []
        for name, mod in self.sysmods.items():
            if sys.modules.get(name) is not mod:
                found.append(f"the module {name} in sys.modules")
        for name, attrs in self.modules.items():
            mod = self.sysmods[name]
            for attr, value in attrs.items():
                now = getattr(mod, attr, None)
                if now is not value and not (_settings(name, value) and _same(now, value)):
                    found.append(f"{name}.{attr}")
        if os.environ.get("STREAMLAB_GRADING") != "1":
            found.append("the environment variable STREAMLAB_GRADING")
        for (modname, clsname), (cls, attrs) in self.classes.items():
            for attr, value in attrs.items():
                if vars(cls).get(attr) is not value:
                    found.append(f"{modname}.{clsname}.{attr}")
        for key, value in self.names.items():
            if ns.get(key) is not value:
                found.append(f"the name {key!r} that the lab's locked cells define")
        for fn, (code, defaults, kwdefaults) in self.codes.items():
            if fn.__code__ is not code or fn.__defaults__ is not defaults or \
                    fn.__kwdefaults__ is not kwdefaults:
                found.append(f"the code of {fn.__module__}.{fn.__qualname__}")
        return found


#: the audit events that name files, and how many of their first arguments are paths
_PATHS = {"open": 1, "os.listdir": 1, "os.scandir": 1, "os.link": 2, "os.symlink": 2,
          "os.rename": 2, "os.remove": 1, "os.truncate": 1, "os.chmod": 1, "os.chown": 1,
          "os.utime": 1, "os.rmdir": 1, "shutil.copyfile": 2, "shutil.copytree": 2,
          "shutil.move": 2, "shutil.rmtree": 1, "sqlite3.connect": 1}
_LISTS = ("open", "os.listdir", "os.scandir")  # (no path: the working folder)


def _guard_hook(protect: list[str], hide=(), allow=()):
    """An audit hook: no reading the solutions, the gradebook, or anything in the hidden
    folders (the course) but what the part needs to run; no starting programs."""
    protect = tuple(os.path.realpath(p) for p in protect)
    hide = tuple(os.path.realpath(p) for p in hide)
    allow = tuple(os.path.realpath(p) for p in allow)
    # held here, not looked up when a file is opened: learner code that replaces
    # os.path.realpath, os.fsdecode or this module's helpers while it reads a file (and
    # puts them back before the check) must not change what the hook sees
    realpath, fsdecode, under = os.path.realpath, os.fsdecode, inside
    paths, lists = dict(_PATHS), _LISTS  # (held too: at exit, module globals are None)

    def hook(event, args):
        if event in paths and args and (protect or hide):
            # (a hard link or a move into the part's folder gave a protected file a path
            # there; SQLite opens a file in C: its path is seen here, with the sandbox
            # off, so that no part writes the gradebook; issue 56)
            for path in args[:paths[event]]:
                if isinstance(path, int) or (path is None and event not in lists):
                    continue
                try:
                    path = fsdecode(path if path is not None else ".")
                    if event == "sqlite3.connect" and path.startswith("file:"):
                        path = path[5:].split("?")[0]  # (a URI: file:PATH?mode=rw)
                    real = realpath(path)
                except (TypeError, ValueError):
                    continue
                if under(real, protect) or (under(real, hide) and not under(real, allow)):
                    raise PermissionError(f"the grader does not let lab code read {real}")
        elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                       "os.spawn", "os.fork", "os.forkpty", "pty.spawn"):
            raise PermissionError("the grader does not let lab code start programs")

    return hook


def _python(source: str) -> str:
    """A cell's source as Python: IPython's %magics made the calls they stand for."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except ImportError:
        return source


def _compile(source: str, name: str):
    return compile(_python(source), name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                   dont_inherit=True)


def _run_cell(source: str, name: str, ns: dict, loop) -> None:
    code = _compile(source, name)
    result = eval(code, ns)  # noqa: S307  (the grader runs the notebook's code)
    if inspect.iscoroutine(result):
        loop.run_until_complete(result)


def _die_with_parent(parent) -> None:
    """A grader that dies (a class's Dask worker killed mid-task) takes this process
    with it: else a part that hangs would run on, orphaned, for ever. Linux's
    PR_SET_PDEATHSIG; ``parent``: the grader's pid, when it is this process's parent (in
    bubblewrap the parent is bwrap, which dies with the grader by itself)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent and os.getppid() != parent:  # the grader died before the line above
        os._exit(1)


def main() -> int:
    """Judge one graded part: read its spec, run the cells, write the verdict."""
    spec = json.loads(sys.stdin.read())
    _die_with_parent(spec.get("parent"))
    verdict_fd, nonce, part = spec["fd"], spec["nonce"], spec["part"]
    # the verdict pipe stays out of reach of the notebook's code once it runs
    verdict = os.fdopen(verdict_fd, "w")

    def report(passed: bool, message: str = "", kind: str = "", errors=()):
        # Written as a Python literal with the !r conversion, which calls the interpreter's
        # own repr of plain str, bool and list (nothing learner code can replace, unlike
        # json's encoder or a function looked up when it is called); every value made a
        # plain str first, so that a str subclass of the learner's cannot bring a __repr__
        # of its own. The grader reads it with ast.literal_eval.
        text = str.__add__  # ("" + a str subclass: a plain str, whatever its methods say)
        plain = {"passed": passed is True, "message": text("", message),
                 "kind": text("", kind), "learner_errors": [text("", e) for e in errors]}
        verdict.write(f"{nonce} V {plain!r}\n")
        verdict.flush()

    # a judged check's run sends what it collected (streamlab.transcript): the
    # grader judges it again in its own process. Only the graded cell's checks send: a
    # learner's own cell that runs a check (to try an answer) is not a graded call
    from .. import transcript

    graded_cell_runs = [False]

    def send_transcript(entry: dict) -> None:
        if graded_cell_runs[0]:
            verdict.write(f"{nonce} T {transcript.write(entry)}\n")
            verdict.flush()

    transcript.send_to(send_transcript)

    import streamlab  # noqa: F401  (hooks installed, simulator or GPU chosen)
    from streamlab.check import CheckFailed
    from streamlab.labs import NotDoneYet

    # every lab's module loaded before the learner's first cell: a cell placed above the
    # lab's setup that patches a lab module (its check, its Run, its send) would otherwise
    # be loaded into the guard's first look at that module, as if the lab had it so
    import importlib
    import pkgutil

    import streamlab.labs

    for info in pkgutil.iter_modules(streamlab.labs.__path__, "streamlab.labs."):
        importlib.import_module(info.name)
    guard = Guard()
    # the grader's own functions as they are now, and the guard's look itself: learner
    # code that swaps their code, or rebinds Guard's methods, must not turn the guard
    # off (with check.fail's code swapped too, a wrong answer passed). Compared in this
    # running function's own code, which no swap reaches
    own = tuple((f, f.__code__) for f in (*vars(sys.modules[__name__]).values(),
                                          *vars(Guard).values()) if inspect.isfunction(f))
    look = Guard.problems
    guard.snapshot_modules()
    loop = asyncio.new_event_loop()
    ns: dict = {"__name__": "__main__", "__builtins__": __builtins__}
    hooked = False
    errors = []
    learners: dict = {}  # what the learner's cells bound (answers.refusal)
    # the part's folder off the import path: a module that learner code wrote there
    # (called by an earlier part's check) must not run when a cell imports it
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != here]
    for i, cell in enumerate(spec["cells"]):
        role = cell["role"]
        if role == "graded" and cell["id"] != part:
            continue
        name = f"<cell {i}: {cell['id'] or role}>"
        if role == "graded":
            found = look(guard, ns) + [f"the code of the grader's own {f.__qualname__}"
                                       for f, code in own if f.__code__ is not code]
            if found:
                report(False, _tampered(found), "Tampered", errors)
                return 0
            unset = [n for n in _called(cell["source"]) if n not in guard.names]
            if unset:  # the checks it calls must be the ones the lab's own cells defined
                report(False, _not_the_labs(unset), "Missing", errors)
                return 0
            graded_cell_runs[0] = True
            failure = None
            try:
                _run_cell(cell["source"], name, ns, loop)
            except BaseException as exc:  # noqa: BLE001  (any failure fails the part)
                failure = exc
            # the guard's second look, whatever the check said: a check whose own
            # functions the learner's code replaced may fail as if it were the course's bug
            found = look(guard, ns) + [f"the code of the grader's own {f.__qualname__}"
                                       for f, code in own if f.__code__ is not code]
            if found:
                report(False, _tampered(found), "Tampered", errors)
            elif failure is None:
                report(True, "", "", errors)
            elif isinstance(failure, NotDoneYet):
                report(False, str(failure) + _earlier(errors), "NotDoneYet", errors)
            elif isinstance(failure, CheckFailed):
                report(False, str(failure) + _earlier(errors), "CheckFailed", errors)
            else:
                report(False, _explain(failure) + _earlier(errors), type(failure).__name__,
                       errors)
            return 0
        if role != "locked":  # the learner's: definitions only, run when a check calls them
            source = _python(cell["source"])
            why = refusal(source, learners)
            if why:
                errors.append(f"{cell['id'] or 'a cell you added'} was not run ({why}). "
                              f"{RULE}")
                continue
            learners.update(defines(source))
        if role != "locked" and not hooked:
            sys.addaudithook(_guard_hook(spec["protect"], spec.get("hide", ()),
                                         spec.get("allow", ())))
            hooked = True
        before = dict(ns)
        try:
            _run_cell(cell["source"], name, ns, loop)
        except BaseException as exc:  # noqa: BLE001  (a learner's cell may fail)
            if role == "locked":
                report(False, f"the lab's own cell {cell['id']!r} failed: {_explain(exc)}. "
                       f"This is not your code: tell your teacher", "LabError", errors)
                return 0
            errors.append(f"{cell['id'] or 'a cell of yours'}: {_explain(exc)}")
        if role == "locked":
            guard.remember(ns, before)
            guard.snapshot_modules()  # modules the lab's own cells imported
    report(False, f"the graded cell {part!r} is missing from the notebook", "Missing", errors)
    return 0


def _called(source: str) -> list[str]:
    """The names a graded cell calls (its checks), builtins left out."""
    import builtins

    try:
        tree = ast.parse(_python(source))
    except SyntaxError:
        return []
    return sorted({n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
                   and isinstance(n.func, ast.Name) and not hasattr(builtins, n.func.id)})


def _not_the_labs(names: list[str]) -> str:
    shown = ", ".join(names)
    return (f"this check calls {shown}, which none of the lab's own (locked) cells defined: "
            f"the lab's setup cell is missing, or its marks were removed, and a cell of "
            f"yours may have defined it in its place. Start again from the lab as handed "
            f"out, copy your answers into it, and hand that in. This part scores nothing")


def _earlier(errors: list[str]) -> str:
    """What to fix first, when a cell of the learner's failed before the check ran: a
    syntax error in an answer cell leaves its function undefined, and the check then
    fails with a NameError that names the function, not the error."""
    if not errors:
        return ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return (f". Before this check ran, a cell of yours failed ({errors[0]}){more}: that may "
            f"be why. Fix it first, run the notebook from the top, then this check again")


def _tampered(found: list[str]) -> str:
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return (f"your code replaced {shown}: the checks and the libraries they use must stay "
            f"as the lab set them up. This part scores nothing")


def _explain(exc: BaseException) -> str:
    """One line for an unexpected error, with the learner's own line when there is one."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename.startswith("<cell")]
    where = f" ({frames[-1].filename.strip('<>')}, line {frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"
