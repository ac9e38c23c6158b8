"""The helper package's shape, measured from its source (issue 55).

    python scripts/ci/package_shape.py          # a table
    python scripts/ci/package_shape.py --list   # and what each count is made of

It prints, for ``src/streamlab``:

* **code lines**: lines that hold code, without docstrings, comments or blank lines;
* **the longest modules** (all lines), and ``ops.py``'s length;
* **private names used across modules**: ``from .x import _name`` of a name (not a
  module) defined in another streamlab module, and ``module._name`` or
  ``getattr(module, "_name")`` where ``module`` is an imported streamlab module (by an
  alias, or spelled out: ``streamlab.sim.fill._x``). A module that reaches into another's private state is the
  coupling issue 55 asks to remove; a private *module* (``_device``) imported whole is
  the package's own business and is not counted, nor is a name defined in the same
  module;
* **mutable module-level objects**: names bound at a module's top level to a list, dict,
  set, ``threading.local``, a counter (``itertools.count``), a weak dictionary, a lock or
  a ``defaultdict``/``deque``: state a module keeps between calls. A name in capitals
  (``KINDS``, ``COLOURS``) is a constant table by the package's convention, never written
  after import, and is not counted.

The tests hold the limits (tests/test_package.py).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "streamlab"

MUTABLE_CALLS = {"list", "dict", "set", "local", "count", "WeakKeyDictionary",
                 "WeakValueDictionary", "WeakSet", "defaultdict", "deque", "OrderedDict",
                 "Lock", "RLock", "Condition", "Counter", "Event", "Semaphore", "Registry"}


def modules() -> list[Path]:
    """The package's modules, in a fixed order."""
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def code_lines(source: str) -> int:
    """Lines holding code: no blank lines, comments, or docstrings (a string that is a
    statement of its own: a module's, class's or function's first, or any bare one)."""
    tree = ast.parse(source)
    doc_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            doc_lines.update(range(node.lineno, node.end_lineno + 1))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                        tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        for line in range(tok.start[0], tok.end[0] + 1):
            if line not in doc_lines:
                lines.add(line)
    return len(lines)


def module_name(path: Path) -> str:
    """The dotted name of the package's module at ``path`` (``streamlab.sim.fill``)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_target(path: Path, node: ast.ImportFrom) -> str:
    """The dotted module a ``from ... import`` in ``path`` reads from, relative levels
    resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    if node.level:
        base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        return f"{base}.{node.module}" if node.module else base
    return node.module or ""


def is_module(dotted: str) -> bool:
    """Is ``dotted`` one of the package's modules or subpackages?"""
    as_path = PACKAGE.parent / dotted.replace(".", "/")
    return as_path.with_suffix(".py").exists() or as_path.is_dir()


def private_uses(path: Path) -> list[str]:
    """Another streamlab module's private names that ``path`` imports or reads."""
    tree = ast.parse(path.read_text())
    me = module_name(path)
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = import_target(path, node)
            if not target.startswith("streamlab"):
                continue
            for a in node.names:
                if is_module(f"{target}.{a.name}"):
                    aliases[a.asname or a.name] = f"{target}.{a.name}"
                elif a.name.startswith("_") and not a.name.startswith("__") \
                        and target != me:
                    found.append(f"{target}.{a.name} (imported, line {node.lineno})")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("streamlab") and a.asname:
                    aliases[a.asname] = a.name
    def dotted(value) -> str | None:
        """The streamlab module an expression names (``_ops``, ``streamlab.sim.fill``)."""
        if isinstance(value, ast.Name):
            return aliases.get(value.id) or ("streamlab" if value.id == "streamlab" else None)
        if isinstance(value, ast.Attribute):
            base = dotted(value.value)
            return f"{base}.{value.attr}" if base and is_module(f"{base}.{value.attr}") \
                else None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            owner = dotted(node.value)
            if owner and owner != "streamlab" and owner != me:
                found.append(f"{owner}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and node.args[1].value.startswith("_") \
                and not node.args[1].value.startswith("__"):
            owner = dotted(node.args[0])
            if owner and owner != "streamlab" and owner != me:
                found.append(f"{owner}.{node.args[1].value} (getattr, line {node.lineno})")
    return found


def mutable_globals(path: Path) -> list[str]:
    """Names bound at the top level of ``path`` to a mutable container or state object."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        mutable = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp,
                                     ast.DictComp, ast.SetComp))
        if isinstance(value, ast.Call):
            fn = value.func
            called = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            mutable = called in MUTABLE_CALLS
        if mutable:
            for t in targets:
                if isinstance(t, ast.Name) and t.id != "__all__" \
                        and t.id.lstrip("_") != t.id.lstrip("_").upper():
                    found.append(f"{module_name(path)}.{t.id} (line {node.lineno})")
    return found


def measure() -> dict:
    """Every figure the table prints, with what each count is made of."""
    mods = modules()
    lines = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in mods}
    return {
        "code_lines": sum(code_lines(p.read_text()) for p in mods),
        "lines": lines,
        "private": [u for p in mods for u in private_uses(p)],
        "mutable": [m for p in mods for m in mutable_globals(p)],
    }


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="list what each count is made of")
    a = ap.parse_args(argv)
    m = measure()
    longest = sorted(m["lines"].items(), key=lambda kv: -kv[1])[:5]
    print("| measure | value |")
    print("| --- | ---: |")
    print(f"| code lines (no docstrings, comments or blank lines) | {m['code_lines']} |")
    print(f"| ops.py lines | {m['lines']['ops.py']} |")
    for name, n in longest:
        print(f"| lines of {name} | {n} |")
    print(f"| private names used across modules | {len(m['private'])} |")
    print(f"| mutable module-level objects | {len(m['mutable'])} |")
    if a.list:
        print("\nprivate names used across modules:")
        print("\n".join(f"  {u}" for u in m["private"]) or "  none")
        print("\nmutable module-level objects:")
        print("\n".join(f"  {u}" for u in m["mutable"]) or "  none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
