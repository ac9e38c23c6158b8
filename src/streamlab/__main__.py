"""Command line: ``python -m streamlab doctor``, ``lab`` and ``reset``."""

import sys

USAGE = """usage: python -m streamlab doctor
       python -m streamlab lab [--teacher] [jupyter lab options]
       python -m streamlab reset NAME ...

  doctor   say which device the course runs on (GPU or simulator), the
           versions that matter, and any known trap with its fix
  lab      open the course in JupyterLab, in your own copy of it (my-work/):
           the contents table, the notebooks and the labs (--teacher: the
           course's own files, with nbgrader's tools)
  reset    put the course's version of a lesson or lab back in your copy
           (NAME: 00, lab02, or a file name); yours is kept in old-versions/"""


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
    if argv[:1] == ["reset"]:
        from .course import reset_main

        return reset_main(argv[1:])
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
