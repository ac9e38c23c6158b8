"""How the lessons read: words per markdown cell, questions and answers, contents, sources.

    python scripts/course/prose_stats.py        # prints each lesson's median and the course's

tests/test_prose.py holds the lessons to what this measures. The rules:

* the median markdown cell, over every lesson, has at most ``MEDIAN_WORDS`` words;
* a section asks a **Question.** before its code runs and gives the **Answer.** after
  the output (never a "Prediction." that states the answer first);
* the title cell links every ``##`` section, by JupyterLab's anchor for it (the heading's
  text, spaces made dashes), and that anchor is one JupyterLab can follow: the markdown
  renderer passes a link through ``encodeURI`` and JupyterLab looks for a heading by the
  encoded id, so a heading with a character ``encodeURI`` escapes (``·``, ``×``, any
  non-ASCII) is never found (seen in Chromium: the notebook does not scroll);
* a source document is named by its title and author, and linked where its public
  address is known.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEDIAN_WORDS = 45

# The source documents the lessons build on: title -> (author, public address or None).
SOURCES = {
    "GPU Pro Tip: CUDA 7 Streams Simplify Concurrency": (
        "Mark Harris",
        "https://developer.nvidia.com/blog/gpu-pro-tip-cuda-7-streams-simplify-concurrency/"),
    "CUDA Rendezvous Stream": (
        "Lei Mao", "https://leimao.github.io/blog/CUDA-Rendezvous-Stream/"),
    "How to Overlap Data Transfers in CUDA C/C++": (
        "Mark Harris", "https://developer.nvidia.com/blog/how-overlap-data-transfers-cuda-cc/"),
    # The three question-style articles: unsigned, no public address known.
    "How can CUDA kernels in different streams communicate efficiently?": (None, None),
    "How can CUDA kernels concurrently transfer data to the host?": (None, None),
    "How can CUDA handle CPU-GPU callbacks with asynchronous memory transfers?": (None, None),
}


def lessons() -> list[Path]:
    """The learners' lesson notebooks, in order (not their solved copies)."""
    return sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb")
                  if "__SOLUTION" not in p.name)


def markdown(path: Path) -> list[str]:
    """The source of each markdown cell of a notebook (a banner that its GPU run is owed,
    scripts/gpu/owed.py's, is not the lesson's prose)."""
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
            and "owed-gpu-run" not in c.get("metadata", {}).get("tags", [])]


def words(text: str) -> int:
    """Words as a reader counts them: runs of text between spaces."""
    return len(text.split())


def median_words(paths) -> float:
    """The median number of words in a markdown cell, over all cells of ``paths``."""
    counts = [words(t) for p in paths for t in markdown(p)]
    if not counts:
        raise ValueError("no markdown cells: give lesson notebooks")
    return statistics.median(counts)


def jupyterlab_anchor(heading: str) -> str:
    """The anchor JupyterLab gives a markdown heading: its text, spaces made dashes."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.lstrip("#").strip())
    text = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", text)
    return text.replace(" ", "-")


# the characters encodeURI leaves as they are (ECMAScript's uriReserved, uriUnescaped, '#')
URI_SAFE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
               ";,/?:@&=+$-_.!~*'()#")


def followable(anchor: str) -> bool:
    """Whether JupyterLab finds the heading a link ``#anchor`` names (see above)."""
    return all(ch in URI_SAFE for ch in anchor)


def sections(path: Path) -> list[str]:
    """The ``##`` headings of a notebook, in order."""
    return [line for t in markdown(path) for line in t.splitlines() if line.startswith("## ")]


def contents_problems(path: Path) -> list[str]:
    """What the title cell's table of contents misses or links wrongly."""
    title = markdown(path)[1]
    links = re.findall(r"\]\(#([^)]+)\)", title)
    anchors = [jupyterlab_anchor(h) for h in sections(path)]
    problems = [f"the contents do not link section {h!r} (#{a})"
                for h, a in zip(sections(path), anchors) if a not in links]
    problems += [f"the contents link #{link}, which is no section's anchor" for link in links
                 if link not in anchors]
    problems += [f"the section {h!r} has the anchor #{a}, which JupyterLab cannot follow: "
                 f"it escapes {''.join(sorted(set(a) - URI_SAFE))!r} in the link, not in the "
                 f"heading's id; write the heading in ASCII (as '## 2. Title')"
                 for h, a in zip(sections(path), anchors) if not followable(a)]
    return problems


def question_problems(path: Path) -> list[str]:
    """A Prediction left, or a Question with no Answer after a code cell below it."""
    nb = json.loads(path.read_text())
    problems, open_question, code_since = [], None, False
    for i, cell in enumerate(nb["cells"]):
        text = "".join(cell["source"])
        if cell["cell_type"] == "code":
            code_since = open_question is not None
            continue
        if "**Prediction.**" in text:
            problems.append(f"cell {i} states a Prediction: ask a **Question.** instead, "
                            f"and give the **Answer.** after the output")
        if "**Answer.**" in text:
            if open_question is None:
                problems.append(f"cell {i} answers a question that was never asked")
            elif not code_since:
                problems.append(f"cell {i} answers the question of cell {open_question} "
                                f"before any code has run")
            open_question, code_since = None, False
        if "**Question.**" in text:
            if open_question is not None:
                problems.append(f"the question of cell {open_question} is never answered")
            open_question, code_since = i, False
            if "**Answer.**" in text.split("**Question.**", 1)[1]:
                problems.append(f"cell {i} answers its question in the same cell")
    if open_question is not None:
        problems.append(f"the question of cell {open_question} is never answered")
    return problems


def source_problems(path: Path) -> list[str]:
    """A source document named without its author or its link."""
    text = "\n".join(markdown(path))
    problems = []
    for title, (author, url) in SOURCES.items():
        if title not in text:
            continue
        if author and author not in text:
            problems.append(f"{title!r} is named without its author, {author}")
        if url and f"({url})" not in text:
            problems.append(f"{title!r} is named but never linked: [{title}]({url})")
    return problems


def main(argv=None) -> int:
    paths = lessons()
    for p in paths:
        counts = [words(t) for t in markdown(p)]
        print(f"{p.name[:40]:<40} {len(counts):>3} markdown cells, median "
              f"{statistics.median(counts):>5.1f} words, longest {max(counts)}")
    overall = median_words(paths)
    print(f"all lessons: median {overall:.1f} words per markdown cell (aim: at most "
          f"{MEDIAN_WORDS})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
