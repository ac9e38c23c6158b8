"""Command line: ``python -m streamlab doctor``."""

import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["doctor"]:
        print("usage: python -m streamlab doctor\n\n"
              "  doctor   say which device the course runs on (GPU or simulator), the\n"
              "           versions that matter, and any known trap with its fix",
              file=sys.stderr)
        return 2
    from .doctor import report

    text, status = report()
    print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
