"""Command line: ``python -m streamlab doctor`` and ``python -m streamlab lab``."""

import sys

USAGE = """usage: python -m streamlab doctor
       python -m streamlab lab [--teacher] [jupyter lab options]

  doctor   say which device the course runs on (GPU or simulator), the
           versions that matter, and any known trap with its fix
  lab      open the whole course in JupyterLab: the contents table, the
           notebooks and the labs (--teacher: with nbgrader's tools)"""


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["doctor"]:
        from .doctor import report

        text, status = report()
        print(text)
        return status
    if argv[:1] == ["lab"]:
        from .course import main as lab

        return lab(argv[1:])
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
