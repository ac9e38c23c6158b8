"""Print the README's quick-start commands, one per line (set up and open, test).

.ci/run runs both, so CI checks exactly what the README tells users.
"""

import re
import sys
from pathlib import Path

MARK = "<!-- quick-start:"


def commands(readme: Path) -> list[str]:
    text = readme.read_text()
    if MARK not in text:
        raise SystemExit(f"{readme}: no '{MARK}' marker before the quick-start block")
    after = text.split(MARK, 1)[1]
    m = re.search(r"```bash\n(.*?)```", after, re.S)
    if not m:
        raise SystemExit(f"{readme}: no ```bash block after the quick-start marker")
    return [line.strip() for line in m.group(1).splitlines() if line.strip()]


if __name__ == "__main__":
    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    print("\n".join(commands(readme)))
