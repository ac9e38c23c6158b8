"""The lessons read as the course promises: short cells, questions before answers, a table
of contents, sources named and linked (scripts/course/prose_stats.py measures them)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

import prose_stats  # noqa: E402

LESSONS = prose_stats.lessons()


def test_the_median_markdown_cell_is_short(capsys):
    median = prose_stats.median_words(LESSONS)
    with capsys.disabled():
        print(f"\nmedian words per markdown cell over {len(LESSONS)} lessons: {median:.1f}")
    assert median <= prose_stats.MEDIAN_WORDS, \
        f"the median markdown cell has {median} words: say it once, beside the code it explains"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_questions_come_before_their_answers(path):
    assert prose_stats.question_problems(path) == []


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_the_title_cell_links_every_section(path):
    assert prose_stats.contents_problems(path) == []


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_sources_are_named_with_their_author_and_linked(path):
    assert prose_stats.source_problems(path) == []


def test_the_checks_catch_what_they_are_for(tmp_path):
    """Each rule fails a notebook that breaks it."""
    import json

    def nb(*cells):
        path = tmp_path / "00__x__y.ipynb"
        path.write_text(json.dumps({"cells": [
            {"cell_type": t, "source": s, "metadata": {}} for t, s in cells]}))
        return path

    nav = ("markdown", "nav")
    bad = nb(nav, ("markdown", "# T\n\n1. [One](#1-·-One)"), ("markdown", "## 1 · One"),
             ("markdown", "## 2. Two"), ("markdown", "**Prediction.** It is fast."),
             ("markdown", "**Question.** Fast?"), ("markdown", "**Answer.** Yes."),
             ("markdown", "As GPU Pro Tip: CUDA 7 Streams Simplify Concurrency says"))
    contents = prose_stats.contents_problems(bad)
    assert any("section '## 2. Two'" in p for p in contents)
    assert any("#1-·-One, which JupyterLab cannot follow" in p for p in contents), contents
    problems = prose_stats.question_problems(bad)
    assert any("Prediction" in p for p in problems)
    assert any("before any code has run" in p for p in problems)
    sources = prose_stats.source_problems(bad)
    assert any("Mark Harris" in p for p in sources) and any("never linked" in p for p in sources)
    good = nb(nav, ("markdown", "# T\n\n1. [One](#1.-One's)"), ("markdown", "## 1. One's"),
              ("markdown", "**Question.** Fast?"), ("code", "x = 1"),
              ("markdown", "**Answer.** Yes."))
    assert prose_stats.contents_problems(good) == []
    assert prose_stats.question_problems(good) == []
    assert prose_stats.jupyterlab_anchor("## The `query()` call") == "The-query()-call"
