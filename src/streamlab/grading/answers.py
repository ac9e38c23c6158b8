"""What a learner's cell may hold when a lab is graded: definitions only (issue 56).

The grader runs a learner's cells before the graded check calls their functions. A cell
that only defines runs none of the learner's code then: its functions run when a check
calls them, and nothing at the top of a cell can patch the checks, the guard or the
interpreter first. :func:`refusal` reads a cell's source (its syntax tree: nothing runs)
and says what is not a definition, or returns None.

A cell may hold:

* ``def`` and ``async def`` (decorated by one of the libraries' own, :data:`DECORATORS`,
  such as ``cuda.jit`` or ``cuda.jit(device=True)`` with constant arguments; default
  values constants or names);
* ``class`` (bases named, no keywords such as ``metaclass``; its body held to the same
  rules);
* imports (of any module but the grader's own, :data:`REFUSED_MODULES`);
* names given constant values (``N = 1 << 20``, ``state = {}``), and docstrings.

>>> refusal("import numpy as np\\nN = 1 << 10\\ndef f(x, n=N):\\n    return x")
>>> print(refusal("def f():\\n    pass\\nprint(f())"))
line 3: a call at the top of the cell (print(f())): only definitions are allowed
"""

from __future__ import annotations

import ast

#: the modules an answer cell may not import: the grader's own. Any other import is a
#: definition (it binds a module's name, and runs none of the learner's code): a list of
#: allowed modules would refuse honest imports (``sys``, ``logging``, ``warnings``) and
#: stop no cheat, since a function may import what it likes when a check calls it
REFUSED_MODULES = ("streamlab.grading",)

#: the decorators a cell may use, by what they stand for (``cuda.jit`` as the lab's setup
#: imports it, or the learner's own import of it): the libraries' own, which wrap a
#: function and run none of it. Any other would be handed the learner's function as the
#: cell runs (``sys.settrace``, ``atexit.register``: the learner's code then runs when
#: the interpreter says, not when a check calls it). A property's ``setter`` is refused
#: too: its name is the learner's, and could be a class of theirs
DECORATORS = frozenset({
    "cuda.jit", "numba.cuda.jit", "numba.jit", "numba.njit", "jit", "njit",
    "staticmethod", "classmethod", "property", "functools.cache", "functools.lru_cache",
    "cache", "lru_cache", "dataclasses.dataclass", "dataclass", "contextlib.contextmanager",
    "contextmanager", "contextlib.asynccontextmanager", "asynccontextmanager",
    "abc.abstractmethod", "abstractmethod",
    # lab 05's ctypes type of a host function, as its setup cell makes it, or streamlab's
    "HOST_FN", "streamlab.hostfn.HOST_FN"})

#: the one line a refused cell's feedback ends with
RULE = ("When a lab is graded, a cell may only define: functions and classes, imports, "
        "and names given constant values. The checks call your functions; put any other "
        "code inside one")

_LITERALS = (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp)
_OPERATORS = (ast.operator, ast.unaryop, ast.Load, ast.expr_context)


def refusal(source: str, defined=None) -> str | None:
    """Why the cell ``source`` is more than definitions ("line N: ..."), or None. A cell
    that does not parse is left to Python, which says why when the cell runs.

    ``defined``: what the learner's earlier cells bound (:func:`defines`). A decorator
    must be one of :data:`DECORATORS`, found through the names the learner imported it
    as; a decorator or a base class of the learner's own would run the learner's code as
    the cell runs (the decorator itself, or a base's ``__init_subclass__``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = _body(tree.body, dict(defined or {}))
    return found and f"line {found[0].lineno}: {found[1]}: only definitions are allowed"


def defines(node) -> dict:
    """What a cell (its source) or a statement binds: each ``def`` and ``class`` name to
    None (the learner's own), each imported name to the dotted name it stands for."""
    if isinstance(node, str):
        try:
            node = ast.parse(node)
        except SyntaxError:
            return {}
    out = {}
    for n in node.body if isinstance(node, ast.Module) else [node]:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] = None
        elif isinstance(n, ast.Import):
            out.update({a.asname: a.name for a in n.names if a.asname})
            out.update({a.name.split(".")[0]: a.name.split(".")[0]
                        for a in n.names if not a.asname})
        elif isinstance(n, ast.ImportFrom):
            out.update({a.asname or a.name: f"{n.module}.{a.name}" for a in n.names
                        if a.name != "*"})
    return out


def _body(statements, mine: dict):
    """(the first statement that is more than a definition, why), or None; ``mine``
    takes what each statement binds, in order."""
    for node in statements:
        why = _statement(node, mine)
        if why:
            return node, why
        mine.update(defines(node))
    return None


def _statement(node, mine: dict) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _decorators(node, mine) or _function(node)
    if isinstance(node, ast.ClassDef):
        return _decorators(node, mine) or _class(node, mine)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import(node)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(isinstance(t, ast.Name) for t in targets):
            return f"an assignment to more than a name ({_text(node)})"
        if node.value is None or not _literal(node.value):
            return f"a value that is not a constant ({_text(node)})"
        return _annotations([getattr(node, "annotation", None)])  # (evaluated here)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return None  # a docstring
    if isinstance(node, ast.Pass):
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.Await)):
        return f"a call at the top of the cell ({_text(node)})"
    return f"{type(node).__name__.lower()} at the top of the cell ({_text(node)})"


def _decorators(node, mine: dict) -> str | None:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(decorator, ast.Call) and not (
                all(_literal(a) for a in decorator.args) and
                all(_literal(k.value) for k in decorator.keywords)):
            return f"a decorator given more than constants ({_text(decorator)})"
        dotted = _dotted(target)
        if dotted is None:
            return f"a decorator that is more than a name ({_text(decorator)})"
        root, _, rest = dotted.partition(".")
        if root in mine and mine[root] is None:
            return (f"a decorator of your own ({_text(decorator)}), which would run as the "
                    f"cell does")
        full = ".".join(p for p in (mine.get(root, root), rest) if p)
        if full not in DECORATORS:
            return (f"a decorator that is not one of the libraries' own ({_text(decorator)}, "
                    f"that is {full}): it would run as the cell does")
    return None


def _function(node) -> str | None:
    args = node.args
    for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
        if not (_literal(default) or _dotted(default)):
            return f"a default value that is not a constant or a name ({_text(default)})"
    return _annotations([a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs
                         + [args.vararg, args.kwarg] if a is not None] + [node.returns])


def _annotations(annotations) -> str | None:
    for annotation in annotations:
        if annotation is not None and not (_dotted(annotation) or
                                           isinstance(annotation, ast.Constant)):
            return f"an annotation that is more than a name ({_text(annotation)})"
    return None


def _class(node, mine: dict) -> str | None:
    if node.keywords:
        return f"a class with keywords ({_text(node.keywords[0])})"
    if not all(_dotted(base) for base in node.bases):
        return f"a class whose base is more than a name ({node.name})"
    if any(mine.get(_dotted(base).partition(".")[0], "") is None for base in node.bases):
        return (f"a class whose base is a class of your own ({node.name}): its "
                f"__init_subclass__ would run as the cell does")
    found = _body(node.body, dict(mine))  # (a class body's own names come first in it)
    return found and f"in class {node.name}, {found[1]}"


def _import(node) -> str | None:
    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
        [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level:
        return f"a relative import ({_text(node)})"
    for name in names:
        if any(name == m or name.startswith(m + ".") for m in REFUSED_MODULES):
            return f"an import of {name}, the grader's own"
    return None


def _dotted(node) -> str | None:
    """A name or a name's attribute (``cuda.jit``) as text: looked up, nothing called;
    None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _literal(node) -> bool:
    """Constants, and containers and arithmetic of constants only."""
    return all(isinstance(n, _LITERALS + _OPERATORS) for n in ast.walk(node))


def _text(node) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= 60 else text[:57] + "..."
