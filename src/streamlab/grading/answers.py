"""What a learner's cell may hold when a lab is graded: definitions only (issue 56).

The grader runs a learner's cells before the graded check calls their functions. A cell
that only defines runs none of the learner's code then: its functions run when a check
calls them, and nothing at the top of a cell can patch the checks, the guard or the
interpreter first. :func:`refusal` reads a cell's source (its syntax tree: nothing runs)
and says what is not a definition, or returns None.

A cell may hold:

* ``def`` and ``async def`` (decorated by a name such as ``cuda.jit``, or a call of one
  with constant arguments, such as ``cuda.jit(device=True)``; default values constants
  or names);
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

#: the one line a refused cell's feedback ends with
RULE = ("When a lab is graded, a cell may only define: functions and classes, imports, "
        "and names given constant values. The checks call your functions; put any other "
        "code inside one")

_LITERALS = (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp)
_OPERATORS = (ast.operator, ast.unaryop, ast.Load, ast.expr_context)


def refusal(source: str, defined=frozenset()) -> str | None:
    """Why the cell ``source`` is more than definitions ("line N: ..."), or None. A cell
    that does not parse is left to Python, which says why when the cell runs.

    ``defined``: the names the learner's earlier cells define (:func:`defines`). A
    decorator or a base class named by one of them, or by a name this cell defined
    above it, would run the learner's code as the cell runs (the decorator itself, or a
    base's ``__init_subclass__``), and is refused."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    mine = set(defined)
    for node in tree.body:
        why = _statement(node, mine)
        if why:
            return f"line {node.lineno}: {why}: only definitions are allowed"
        mine |= defines(node)
    return None


def defines(node) -> set:
    """The names a cell (its source) or a statement defines with ``def`` and ``class``."""
    if isinstance(node, str):
        try:
            node = ast.parse(node)
        except SyntaxError:
            return set()
    body = node.body if isinstance(node, ast.Module) else [node]
    return {n.name for n in body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _statement(node, mine: set) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _function(node, mine)
    if isinstance(node, ast.ClassDef):
        return _class(node, mine)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import(node)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(isinstance(t, ast.Name) for t in targets):
            return f"an assignment to more than a name ({_text(node)})"
        if node.value is None or not _literal(node.value):
            return f"a value that is not a constant ({_text(node)})"
        annotation = getattr(node, "annotation", None)  # (evaluated at the top of a cell)
        if annotation is not None and not (_named(annotation) or
                                           isinstance(annotation, ast.Constant)):
            return f"an annotation that is more than a name ({_text(annotation)})"
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return None  # a docstring
    if isinstance(node, ast.Pass):
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.Await)):
        return f"a call at the top of the cell ({_text(node)})"
    return f"{type(node).__name__.lower()} at the top of the cell ({_text(node)})"


def _function(node, mine: set) -> str | None:
    for decorator in node.decorator_list:
        if not _decorator(decorator):
            return f"a decorator that is more than a name ({_text(decorator)})"
        if _root(decorator) in mine:
            return (f"a decorator of your own ({_text(decorator)}), which would run as the "
                    f"cell does")
    args = node.args
    for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
        if not (_literal(default) or _named(default)):
            return f"a default value that is not a constant or a name ({_text(default)})"
    annotations = [a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs
                   + [args.vararg, args.kwarg] if a is not None] + [node.returns]
    for annotation in annotations:
        if annotation is not None and not (_named(annotation) or
                                           isinstance(annotation, ast.Constant)):
            return f"an annotation that is more than a name ({_text(annotation)})"
    return None


def _class(node, mine: set) -> str | None:
    if node.keywords:
        return f"a class with keywords ({_text(node.keywords[0])})"
    if not all(_named(base) for base in node.bases):
        return f"a class whose base is more than a name ({node.name})"
    if any(_root(base) in mine for base in node.bases):
        return (f"a class whose base is a class of your own ({node.name}): its "
                f"__init_subclass__ would run as the cell does")
    for decorator in node.decorator_list:
        if not _decorator(decorator):
            return f"a decorator that is more than a name ({_text(decorator)})"
        if _root(decorator) in mine:
            return (f"a decorator of your own ({_text(decorator)}), which would run as the "
                    f"cell does")
    inside = set(mine)  # (a class body's own names come first in its decorators)
    for statement in node.body:
        why = _statement(statement, inside)
        if why:
            return f"in class {node.name}, {why}"
        inside |= defines(statement)
    return None


def _import(node) -> str | None:
    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
        [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level:
        return f"a relative import ({_text(node)})"
    for name in names:
        if any(name == m or name.startswith(m + ".") for m in REFUSED_MODULES):
            return f"an import of {name}, the grader's own"
    return None


def _decorator(node) -> bool:
    if isinstance(node, ast.Call):
        return _named(node.func) and all(_literal(a) for a in node.args) and \
            all(_literal(k.value) for k in node.keywords)
    return _named(node)


def _root(node) -> str | None:
    """The name a decorator or a base starts from (``cuda`` in ``cuda.jit(...)``)."""
    node = node.func if isinstance(node, ast.Call) else node
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _named(node) -> bool:
    """A name, or a name's attribute (``cuda.jit``): looked up, nothing called."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _literal(node) -> bool:
    """Constants, and containers and arithmetic of constants only."""
    return all(isinstance(n, _LITERALS + _OPERATORS) for n in ast.walk(node))


def _text(node) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= 60 else text[:57] + "..."
