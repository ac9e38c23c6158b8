"""What the benchmarks that write a results page share: the options (``--json`` keeps a
GPU run's figures, ``--out`` writes the page, ``--page`` writes it again from a kept
``--json`` without running anything) and the writing of both files, with the run's device
and date stamped on the figures."""

from __future__ import annotations

import json
import sys
import time


def add_options(ap) -> None:
    """``--json``, ``--out`` and ``--page`` on an argparse parser."""
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--out", help="write the results page (markdown) here")
    ap.add_argument("--page", help="run nothing: write --out from this kept --json")


def page_again(a, page) -> int | None:
    """With ``--page``: write ``--out`` with ``page(kept figures)`` and return the exit
    status; without it, None (the benchmark runs)."""
    if not a.page:
        return None
    if not a.out:
        print("--page needs --out: where to write the page", file=sys.stderr)
        return 2
    with open(a.page) as f:
        text = page(json.load(f))
    with open(a.out, "w") as f:
        f.write(text)
    return 0


def keep(a, page, device: str, **figures) -> dict:
    """This run's figures, stamped with the device and the date, written to ``--json`` and
    as ``--out``'s page where asked; returned."""
    result = {"device": device, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              **figures}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(page(result))
    return result
