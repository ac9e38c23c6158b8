"""``python -m streamlab lab`` started for a test, as the README's second command starts
it (no browser, no token), and stopped after; for test_course.py and test_browser.py."""

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


class Server:
    """``python -m streamlab lab`` with the given flags, run from ``cwd``."""

    def __init__(self, *flags, cwd=ROOT / "notebooks", workspace=None):
        """``workspace``: where the learner's copy goes (STREAMLAB_WORKSPACE); default a
        new temporary folder, so that a test never touches a developer's my-work/."""
        self.port = free_port()
        self.log = tempfile.TemporaryFile("w+")  # a pipe nobody reads would fill up
        self.base = f"http://127.0.0.1:{self.port}"
        self._tmp = None
        if workspace is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="streamlab-work-")
            workspace = Path(self._tmp.name) / "my-work"
        self.workspace = Path(workspace)
        env = dict(os.environ, STREAMLAB_WORKSPACE=str(self.workspace))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlab", "lab", *flags, "--no-browser",
             f"--port={self.port}", "--IdentityProvider.token=", "--ServerApp.password="],
            cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT, text=True)

    def output(self) -> str:
        """What the command printed so far."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def __enter__(self):
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise AssertionError(f"jupyter lab exited: {self.log.read()}")
            try:
                if get(self.base + "/api/status")[0] == 200:
                    return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        raise AssertionError("jupyter lab did not start within 90 s")

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:  # what the server said, for the failure's report
            print(f"--- jupyter lab's output (the test failed inside it) ---\n"
                  f"{self.output()[-8000:]}")
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def page_config(self, path="/lab"):
        status, html = get(self.base + path)
        assert status == 200, path
        m = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                      html, re.S)
        return json.loads(m.group(1))
