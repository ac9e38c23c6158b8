"""Kept answers written as the one change that makes them differ from a right answer, so
that a reader sees at once what the wrong one does differently (and the right answer it
changes stays a kept right answer of its own)."""


def change(template: str, *pairs: tuple[str, str]) -> str:
    """``template`` with each (old, new) replaced; every old must be there."""
    for old, new in pairs:
        assert old in template, f"{old!r} is not in the answer it changes"
        template = template.replace(old, new)
    return template
