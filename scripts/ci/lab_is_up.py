"""Wait until the JupyterLab that `python3 scripts/start.py` started answers; say what it
serves. For .ci/run (standard library only: it runs before the course is installed).

    python3 scripts/ci/lab_is_up.py [--wait SECONDS] [--pid PID]

Finds the server through `jupyter server list --json` in the course's .venv, asks its
/api/status and /api/contents, and exits 0 once it answers, printing its folder; 1 if the
process PID ended first or SECONDS passed.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # start.py
from start import venv_python  # noqa: E402  (the course's .venv, as the README's commands make it)

JUPYTER = venv_python().with_name("jupyter")


def servers() -> list[dict]:
    if not JUPYTER.exists():
        return []
    out = subprocess.run([str(JUPYTER), "server", "list", "--json"], capture_output=True,
                         text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]


def answers(server: dict) -> dict | None:
    """The server's listing of its root folder, or None if it does not answer yet."""
    token = f"?token={server['token']}" if server.get("token") else ""
    try:
        with urllib.request.urlopen(server["url"] + "api/status" + token, timeout=10) as r:
            if r.status != 200:
                return None
        with urllib.request.urlopen(server["url"] + "api/contents" + token +
                                    ("&" if token else "?") + "content=1", timeout=10) as r:
            return json.loads(r.read())
    except OSError:
        return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wait", type=float, default=600)
    ap.add_argument("--pid", type=int)
    args = ap.parse_args()
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if args.pid is not None:
            try:
                os.kill(args.pid, 0)
            except ProcessLookupError:
                print("lab_is_up: the command ended before JupyterLab answered",
                      file=sys.stderr)
                return 1
        for server in servers():
            listing = answers(server)
            if listing is not None:
                names = sorted(item["name"] for item in listing.get("content") or [])
                print(f"lab_is_up: JupyterLab answers at {server['url']}, serving "
                      f"{server.get('root_dir')}: {', '.join(names)}")
                return 0
        time.sleep(2)
    print(f"lab_is_up: no JupyterLab answered within {args.wait:.0f} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
