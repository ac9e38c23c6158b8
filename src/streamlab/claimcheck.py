"""Claims as code: every number a notebook's text states, tied to a figure it printed and
a condition a machine checks.

A lesson ends with one cell tagged ``claims``::

    streamlab.claims(
        figures={"concurrency_8": c8, "legacy_concurrency": c_legacy},
        claims={"8 streams run about 8 kernels at once": "concurrency_8 >= 7"},
        gpu_claims={"the legacy stream serialises them": "legacy_concurrency < 1.2"})

It prints each claim with the figures it reads and whether it holds, keeps the figures in
the cell's output, and raises :class:`ClaimFailed` naming the claim when one does not.
``claims`` hold on every machine (the simulator's model GPU included); ``gpu_claims``
only on a GPU, and the simulator lists them as not checked there. Because the conditions
sit in the cell's source and the figures in its output, a test re-checks a committed
notebook without running it (:func:`check_notebook`): CI does that for every committed
lesson, and ``scripts/gpu/run_notebooks.py`` for every fresh GPU run.

A condition is a Python expression over the figures' names: comparisons, ``and``/``or``/
``not``, arithmetic, ``abs``/``min``/``max`` and numbers. Nothing else runs. ``and`` and
``or`` stop as Python's do, so a figure measured only on some machines can be read behind
a guard: ``"n_gpus < 2 or overlap_ms > 0"``.

>>> from streamlab.claimcheck import holds
>>> holds("a < 2 * b and not late", {"a": 3, "b": 2, "late": False})
True
"""

from __future__ import annotations

import ast
import json
import math
import operator
from pathlib import Path

__all__ = ["ClaimFailed", "ClaimError", "claims", "holds", "check_notebook", "MIME"]

#: where a claims cell keeps its figures: the metadata of its display output
MIME = "streamlab/claims"

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCTIONS = {"abs": abs, "min": min, "max": max}


class ClaimError(ValueError):
    """A claim or a figure that cannot be checked: the message says what to change."""


class ClaimFailed(AssertionError):
    """A claim the figures do not bear out; its message names the claim."""


def _value(node, figures: dict, text: str):
    if isinstance(node, ast.Expression):
        return _value(node.body, figures, text)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in figures:
            raise ClaimError(f"the condition {text!r} reads the figure {node.id!r}, which is "
                             f"not among the figures ({', '.join(sorted(figures)) or 'none'}): "
                             "add it to figures=, or correct the name")
        return figures[node.id]
    if isinstance(node, ast.BoolOp):  # short-circuits as Python does: "n_gpus < 2 or ..."
        want = isinstance(node.op, ast.Or)  # the value that decides an `or`
        for v in node.values:
            if bool(_value(v, figures, text)) is want:
                return want
        return not want
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        v = _value(node.operand, figures, text)
        return (not v) if isinstance(node.op, ast.Not) else -v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_value(node.left, figures, text),
                                      _value(node.right, figures, text))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _value(node.left, figures, text)
        for op, right_node in zip(node.ops, node.comparators):
            right = _value(right_node, figures, text)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS and not node.keywords):
        return _FUNCTIONS[node.func.id](*(_value(a, figures, text) for a in node.args))
    raise ClaimError(f"the condition {text!r} uses {ast.unparse(node)!r}, which a claim "
                     "cannot: write it with figures' names, numbers, comparisons, "
                     "and/or/not, + - * /, abs, min and max")


def _names(text: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)
            and n.id not in _FUNCTIONS}


def holds(condition: str, figures: dict) -> bool:
    """Whether ``condition`` holds for ``figures`` (a dict of name: number)."""
    if not isinstance(condition, str) or not condition.strip():
        raise ClaimError(f"a condition is an expression in a string, such as "
                         f"'concurrency >= 7'; got {condition!r}")
    try:
        tree = ast.parse(condition.strip(), mode="eval")
    except SyntaxError as e:
        raise ClaimError(f"the condition {condition!r} is not an expression Python can "
                         f"read ({e.msg}): write it as, say, 'speedup > 1.5'") from None
    try:
        result = _value(tree, figures, condition)
    except TypeError as e:
        raise ClaimError(f"the condition {condition!r} cannot be worked out from these "
                         f"figures ({e}): compare numbers with numbers") from None
    if not isinstance(result, bool):
        raise ClaimError(f"the condition {condition!r} gives {result!r}, not True or False: "
                         "make it a comparison, such as 'x > 0'")
    return result


def _check_figures(figures) -> dict:
    if not isinstance(figures, dict) or not figures:
        raise ClaimError("figures= is a dict of the numbers the text states, by name, such "
                         f"as {{'concurrency': c}}; got {figures!r}")
    clean = {}
    for name, value in figures.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ClaimError(f"figure name {name!r} must be a Python name (letters, digits "
                             "and _), so that a condition can read it")
        if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()  # numpy scalars
        if isinstance(value, float) and math.isnan(value):
            raise ClaimError(f"figure {name!r} is NaN: the measurement behind it failed; "
                             "find why before checking a claim on it")
        if not isinstance(value, (bool, int, float, str)):
            raise ClaimError(f"figure {name!r} is {type(value).__name__} {value!r}: a figure "
                             "is a number, a bool or a string")
        clean[name] = value
    return clean


def _check_claims(claims, what: str, figures: dict) -> dict:
    if claims is None:
        return {}
    if not isinstance(claims, dict):
        raise ClaimError(f"{what}= is a dict of claim text: condition, such as "
                         f"{{'8 streams overlap': 'concurrency >= 7'}}; got {claims!r}")
    for text, condition in claims.items():
        if not isinstance(text, str) or not text.strip():
            raise ClaimError(f"each claim in {what}= is named by the sentence it checks; "
                             f"got {text!r}")
        holds(condition, figures)  # raises ClaimError on a condition that cannot be read
    return dict(claims)


def _show(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value) if isinstance(value, str) else str(value)


def evaluate(figures: dict, claims: dict | None, gpu_claims: dict | None, *,
             on_gpu: bool) -> tuple[list[str], list[str]]:
    """The report's lines and the texts of the claims that fail."""
    figures = _check_figures(figures)
    both = _check_claims(claims, "claims", figures)
    gpu = _check_claims(gpu_claims, "gpu_claims", figures)
    if not both and not gpu:
        raise ClaimError("no claims given: pass claims= (hold everywhere) or gpu_claims= "
                         "(hold on a GPU)")
    lines, failed = [], []
    for group, conditions in (("", both), ("GPU only: ", gpu)):
        for text, condition in conditions.items():
            read = ", ".join(f"{n} = {_show(figures[n])}" if n in figures else f"{n} not measured"
                             for n in sorted(_names(condition)))
            if group and not on_gpu:
                lines.append(f"  -  {group}{text}  (not checked on the simulator)")
                continue
            ok = holds(condition, figures)
            if not ok:
                failed.append(text)
            lines.append(f"  {'ok' if ok else 'NO'} {group}{text}  [{read}: {condition}]")
    return lines, failed


def claims(figures: dict, claims: dict | None = None, gpu_claims: dict | None = None):
    """Check the numbers a notebook's text states; see the module's docstring."""
    from ._device import device_name, on_simulator

    on_gpu = not on_simulator()
    lines, failed = evaluate(figures, claims, gpu_claims, on_gpu=on_gpu)
    held = sum(1 for ln in lines if ln.startswith("  ok"))
    head = (f"claims checked against this run on {device_name()}: {held} of "
            f"{held + len(failed)} hold")
    report = "\n".join([head, *lines])
    figures = _check_figures(figures)
    try:
        from IPython import get_ipython
        from IPython.display import display
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        display({"text/plain": report}, raw=True,
                metadata={MIME: {"figures": figures, "on_gpu": on_gpu}})
    else:
        print(report)
    if failed:
        # each with the figures it read, so that a failed run's log says by how much
        named = []
        for text in failed:
            line = next((ln for ln in lines if ln.startswith("  NO ") and f"{text}  [" in ln), "")
            named.append(repr(text) + (f" [{line.split('  [', 1)[1]}" if "  [" in line else ""))
        raise ClaimFailed(f"{len(failed)} claim(s) of the text do not hold in this run: "
                          + "; ".join(named)
                          + ". Rerun; if it still fails, the text (or the code) is wrong")


# ---- re-checking a saved notebook ----------------------------------------------------

def _call(source: str):
    """The ``streamlab.claims(...)`` call in a cell's source: its literal arguments."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise ClaimError(f"the claims cell is not valid Python: {e}") from None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and ast.unparse(n.func) in ("streamlab.claims", "claims")]
    if len(calls) != 1:
        raise ClaimError(f"the claims cell must call streamlab.claims(...) once; found "
                         f"{len(calls)} calls")
    call = calls[0]
    names = ["figures", "claims", "gpu_claims"]
    args = {names[i]: a for i, a in enumerate(call.args)}
    args.update({k.arg: k.value for k in call.keywords})
    out = {}
    for name in ("claims", "gpu_claims"):
        if name in args:
            try:
                out[name] = ast.literal_eval(args[name])
            except ValueError:
                raise ClaimError(f"{name}= in the claims cell must be written out as a dict "
                                 "of strings, so that a saved notebook can be re-checked")
    return out


def check_notebook(path, *, on_gpu: bool | None = None) -> tuple[list[str], list[str]]:
    """Re-check a saved notebook's claims against the figures in its output, without
    running it: the report's lines and the claims that fail. ``on_gpu`` defaults to what
    the saved run says it ran on."""
    nb = json.loads(Path(path).read_text())
    cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"
             and "claims" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ClaimError(f"{path}: expected one code cell tagged 'claims', found {len(cells)}")
    cell = cells[0]
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    conditions = _call(source)
    saved = [o["metadata"][MIME] for o in cell.get("outputs", [])
             if MIME in o.get("metadata", {})]
    if len(saved) != 1:
        raise ClaimError(f"{path}: the claims cell has no saved figures: execute the notebook")
    figures, ran_on_gpu = saved[0]["figures"], saved[0]["on_gpu"]
    return evaluate(figures, conditions.get("claims"), conditions.get("gpu_claims"),
                    on_gpu=ran_on_gpu if on_gpu is None else on_gpu)
