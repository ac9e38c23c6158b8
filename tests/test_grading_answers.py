"""streamlab.grading.answers: when a lab is graded, a learner's cell may only define
(issue 56, item 2). Every answer the course keeps as right is a cell of definitions; the
ways a cell could run code at its top, before any check, are each refused with a reason."""

import importlib

import pytest
from labtools import LABS, cells_of

from streamlab.grading.answers import RULE, refusal

ALLOWED = {
    "imports": "import numpy as np\nfrom numba import cuda\nimport sys, logging\n",
    "constants": "N = 1 << 20\nstate = {}\nSIZES = (1, 2, 3)\nx: int = -3\nNAME = 'a' * 2\n",
    "a kernel": "@cuda.jit\ndef k(x):\n    x[0] = 1\n",
    "a kernel, numba imported here": "from numba import cuda\nimport numba\n@cuda.jit\n"
                                     "def k(x):\n    x[0] = 1\n@numba.cuda.jit\ndef j(x):\n"
                                     "    pass\n",
    "the standard library's own decorators": (
        "import functools\nfrom dataclasses import dataclass\n@functools.lru_cache(maxsize=None)"
        "\ndef f(n):\n    return n\n@dataclass\nclass P:\n    x: int = 0\n"
        "    @staticmethod\n    def s():\n        pass\n"),
    "a device function": "@cuda.jit(device=True)\ndef k(x):\n    return x + 1\n",
    "defaults and annotations": "def f(x: np.ndarray, n=N, *, s: 'cuda.Stream' = None) -> int:"
                                "\n    return n\n",
    "a coroutine": "async def f(loop):\n    await loop.run_in_executor(None, print)\n",
    "a class": "class Slot(object):\n    '''A slot.'''\n    SIZE = 4\n"
               "    def __init__(self):\n        self.x = print('runs when called')\n",
    "a docstring and pass": "'''My answer.'''\npass\n",
    "a syntax error (left to Python)": "def (broken):\n    pass\n",
}

REFUSED = {
    "a call": ("print(1)\n", "a call at the top of the cell (print(1))"),
    "a check replaced": ("check.fail = None\n", "an assignment to more than a name"),
    "a function's code replaced": ("check.fail.__code__ = (lambda: None).__code__\n",
                                   "an assignment to more than a name"),
    "a lambda": ("f = lambda: 1\n", "a value that is not a constant"),
    "a call's result": ("x = make()\n", "a value that is not a constant"),
    "a name's value": ("x = y\n", "a value that is not a constant"),
    "a decorator that runs code": ("@(lambda f: f)\ndef g():\n    pass\n", "a decorator"),
    "a decorator given code": ("@register(lambda: 1)\ndef g():\n    pass\n", "a decorator"),
    "a default that runs code": ("def f(x=__import__('os').getpid()):\n    pass\n",
                                 "a default value"),
    "an annotation that runs code": ("def f(x: print('hi')):\n    pass\n", "an annotation"),
    "a metaclass": ("class A(metaclass=M):\n    pass\n", "a class with keywords"),
    "a base made by a call": ("class A(make()):\n    pass\n", "base is more than a name"),
    "code in a class body": ("class A:\n    print(1)\n", "in class A, a call"),
    "a loop": ("for i in range(3):\n    pass\n", "for at the top"),
    "a with block": ("with open('x') as f:\n    pass\n", "with at the top"),
    "an if": ("if True:\n    x = 1\n", "if at the top"),
    "a try": ("try:\n    x = 1\nexcept Exception:\n    pass\n", "try at the top"),
    "an augmented assignment": ("x = 1\nx += 1\n", "line 2: augassign"),
    "a delete": ("del check\n", "delete at the top"),
    "a global": ("global x\n", "global at the top"),
    "the grader's module": ("import streamlab.grading._child as c\n", "the grader's own"),
    "the grader's module, from": ("from streamlab.grading import _child\n",
                                  "the grader's own"),
    "a relative import": ("from . import x\n", "a relative import"),
    "an await": ("await asyncio.sleep(0)\n", "a call at the top"),
    "an expression with a walrus": ("(x := make())\n", "expr at the top"),
    "an expression that reads": ("check.fail\n", "expr at the top"),
    "an annotation that runs code, at the top": ("x: print('hi') = 1\n", "an annotation"),
}


#: definitions that would run the learner's own code as the cell runs: refused, with the
#: names the learner's earlier cells define (``helper``) known
OWN_CODE_AT_DEFINITION = {
    "a decorator of one's own, in the cell": (
        "def deco(f):\n    return f\n@deco\ndef g():\n    pass\n", "a decorator of your own"),
    "a decorator of one's own, from an earlier cell": (
        "@helper\ndef g():\n    pass\n", "a decorator of your own"),
    "a decorator that is a method of one's own class": (
        "class cuda:\n    def jit(f):\n        return f\n@cuda.jit\ndef k():\n    pass\n",
        "a decorator of your own"),
    "a decorator from the class body": (
        "class A:\n    def deco(f):\n        return f\n    @deco\n    def g(self):\n"
        "        pass\n", "in class A, a decorator of your own"),
    "a decorator that hands the function to the interpreter": (
        "import sys\n@sys.settrace\ndef tracer(frame, event, arg):\n    return tracer\n",
        "not one of the libraries' own (sys.settrace, that is sys.settrace)"),
    "a decorator that runs the function at exit": (
        "import atexit\n@atexit.register\ndef later():\n    pass\n", "that is atexit.register"),
    "a library's function imported under a decorator's name": (
        "from sys import settrace as jit\n@jit\ndef tracer(frame, event, arg):\n    pass\n",
        "that is sys.settrace"),
    "a property's setter (its name is the learner's)": (
        "class A:\n    @property\n    def x(self):\n        return 1\n    @x.setter\n"
        "    def x(self, v):\n        pass\n", "a decorator of your own (x.setter)"),
    "a base of one's own (its __init_subclass__ runs)": (
        "class B:\n    def __init_subclass__(cls):\n        pass\nclass C(B):\n    pass\n",
        "base is a class of your own"),
}


@pytest.mark.parametrize("source, said", OWN_CODE_AT_DEFINITION.values(),
                         ids=OWN_CODE_AT_DEFINITION)
def test_a_definition_that_runs_the_learners_own_code_is_refused(source, said):
    why = refusal(source, {"helper": None})
    assert why is not None and said in why, why


def test_what_a_cell_defines():
    from streamlab.grading.answers import defines

    assert defines("import os, numba.cuda\nimport numpy as np\nfrom numba import cuda as c\n"
                   "N = 1\ndef f():\n    pass\nclass A:\n    pass\n") == \
        {"os": "os", "numba": "numba", "np": "numpy", "c": "numba.cuda", "f": None, "A": None}
    assert defines("def (broken") == {}


@pytest.mark.parametrize("source", ALLOWED.values(), ids=ALLOWED)
def test_a_cell_of_definitions_is_allowed(source):
    assert refusal(source) is None


@pytest.mark.parametrize("source, said", REFUSED.values(), ids=REFUSED)
def test_a_cell_that_runs_code_is_refused_with_where_and_why(source, said):
    why = refusal(source)
    assert why is not None and said in why, why
    assert why.startswith("line ") and why.endswith("only definitions are allowed"), why


def test_every_answer_the_course_keeps_as_right_is_allowed():
    """The lab solutions' answer cells and every kept right answer in other words: the
    rule refuses nothing a learner was taught to write."""
    for lab in LABS:
        for grade_id, source in cells_of(lab, "solution").items():
            assert refusal(source) is None, (lab, grade_id, refusal(source))
        kept = importlib.import_module(f"wrong_solutions.{lab}")
        for name, (_target, source, *_) in kept.RIGHT.items():
            assert refusal(source) is None, (lab, name, refusal(source))


def test_the_rule_says_what_to_do():
    assert "may only define" in RULE and "put any other code inside one" in RULE
