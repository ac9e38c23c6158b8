"""The lessons' exercises: small practice beside each idea, each checked in one line.

Each lesson's module (``streamlab.exercises.lesson02``, ...) gives its exercises' kernels
and checks. An exercise cell holds a stub and its check::

    from streamlab.exercises.lesson00 import add_one, blocks_for, THREADS, check_exercise1

    def launch_on(stream, d_x):
        raise NotImplementedError("Exercise 1: ... (about 1 line)")

    check_exercise1(launch_on)

The check prints ``Exercise 1: not done yet`` while the stub raises, ``Exercise 1:
passed`` once the function is right, or fails with one message that says what is wrong.
The checks are the labs' (:mod:`streamlab.labs`): they judge the order of what the
function issued, as CUDA would, so a missing wait fails on the simulator too. The worked
answers are in each lesson's ``__SOLUTION`` copy, beside it in ``notebooks/``.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

import streamlab

from ..check import events_read, once_in, part  # noqa: F401  (two rules the checks use)
from ..runner import Check

__all__ = ["exercise", "exercise_check", "THREADS", "N", "BUSY_NS", "blocks_for", "add_one",
           "fill", "fresh", "events_read", "once_in"]

exercise = functools.partial(part, what="Exercise")
exercise.__doc__ = """Run an exercise's check: ``Exercise N: passed``, ``Exercise N: not done
yet`` while the function raises NotImplementedError, or CheckFailed naming what is wrong."""



def exercise_check(number: int, arrange, rules, **options) -> Check:
    """An exercise as the runner's :class:`~streamlab.runner.Check` (``Exercise N``),
    judged in the learner's process only: the lessons' exercises are not graded."""
    return Check(number, None, arrange, rules, what="Exercise", **options)


THREADS = streamlab.pick(gpu=256, sim=64)
# On the simulator, more than a block's worth, so that one block cannot cover it by luck.
N = streamlab.pick(gpu=1 << 20, sim=3 * 64 + 5)
# Work the checks put in a stream first, so that a missing wait shows (20 ms on a GPU).
BUSY_NS = streamlab.ms_to_ns(streamlab.pick(gpu=20, sim=2))


def blocks_for(size: int) -> int:
    """Blocks of THREADS threads enough for ``size`` elements."""
    return (size + THREADS - 1) // THREADS


@cuda.jit
def add_one(x):
    """x[i] += 1, one thread an element."""
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


@cuda.jit
def fill(x, value):
    """x[i] = value, one thread an element."""
    i = cuda.grid(1)
    if i < x.size:
        x[i] = value


def fresh(seed=None, size: int = N):
    """A random float32 host array and its copy on the device (landed)."""
    h = np.random.default_rng(seed).integers(0, 1000, size).astype(np.float32)
    s = cuda.stream()
    d = cuda.to_device(h, stream=s)
    s.synchronize()
    return h, d
