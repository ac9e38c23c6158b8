"""``python -m streamlab lab``: open the whole course in JupyterLab.

JupyterLab is started at the course's root folder, so that the contents table
(``README.md``), ``notebooks/`` and ``labs/`` are all reachable and every relative link in
them works. It opens on the contents table, rendered.

Learners see no teacher tools: nbgrader is installed with the ``[test]`` extra (the
tests grade the labs with it), but its JupyterLab menus and panels are switched off
here. ``python -m streamlab lab --teacher`` switches them on.

Any other argument goes to ``jupyter lab`` as it is (``--port 8899``, ``--no-browser``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

WORKSPACE = "streamlab"

# nbgrader's pieces in JupyterLab: its server extensions and its lab extension.
NBGRADER_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
)
NBGRADER_LAB_EXTENSION = "@jupyter/nbgrader"
# JupyterLab's "get notified about Jupyter news?" pop-up: noise in a lesson.
NEWS_PLUGIN = "@jupyterlab/apputils-extension:announcements"


class CourseNotFound(RuntimeError):
    """The course folder (with notebooks/ and labs/) could not be found."""


def _is_course(folder: Path) -> bool:
    return all((folder / name).exists() for name in ("notebooks", "labs", "README.md"))


def course_root(start: Path | None = None) -> Path:
    """The course folder: ``start`` (default: the current folder) or one above it, else
    the folder this package was installed from (``pip install -e .``)."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if _is_course(folder):
            return folder
    installed = Path(__file__).resolve().parents[2]  # src/streamlab/course.py -> the repo
    if _is_course(installed):
        return installed
    raise CourseNotFound(
        f"no course folder (one with notebooks/, labs/ and README.md) at or above {start}, "
        f"and streamlab was not installed from one. Run this from the folder you cloned "
        f"the course into, after `python -m pip install -e \".[test]\"` there.")


def learner_config(folder: Path) -> Path:
    """Write the Jupyter config that hides nbgrader (and the news pop-up) into ``folder``;
    return it, for JUPYTER_CONFIG_PATH."""
    server = {"ServerApp": {"jpserver_extensions": {
        name: False for name in NBGRADER_SERVER_EXTENSIONS}}}
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    (folder / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
    page = {"disabledExtensions": {NBGRADER_LAB_EXTENSION: True, NEWS_PLUGIN: True}}
    (folder / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=1))
    return folder


def course_workspace(workspaces: Path) -> Path:
    """The JupyterLab workspace that opens README.md rendered, written once: after that
    JupyterLab keeps the learner's own layout in it."""
    from jupyterlab_server.workspaces_handler import WORKSPACE_EXTENSION, slugify

    workspaces.mkdir(parents=True, exist_ok=True)
    path = workspaces / (slugify(WORKSPACE) + WORKSPACE_EXTENSION)
    if not path.exists():
        readme = "markdownviewer-widget:README.md"
        path.write_text(json.dumps({
            "data": {
                "layout-restorer:data": {
                    "main": {"dock": {"type": "tab-area", "currentIndex": 0,
                                      "widgets": [readme]},
                             "current": readme},
                    "left": {"collapsed": False, "visible": True,
                             "current": "filebrowser", "widgets": ["filebrowser"]},
                    "right": {"collapsed": True, "visible": True, "widgets": []},
                },
                readme: {"data": {"path": "README.md", "factory": "Markdown Preview"}},
            },
            "metadata": {"id": WORKSPACE},
        }, indent=1))
    return path


def command(root: Path, extra: list[str]) -> list[str]:
    """The ``jupyter lab`` command line that serves the course from ``root``."""
    return [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={root}",
            f"--LabApp.workspaces_dir={root / '.jupyter' / 'workspaces'}",
            f"--LabApp.default_url=/lab/workspaces/{WORKSPACE}", *extra]


def environment(config: Path | None, base=None) -> dict[str, str]:
    """The environment for ``jupyter lab``: with ``config`` first on JUPYTER_CONFIG_PATH."""
    env = dict(os.environ if base is None else base)
    if config is not None:
        rest = env.get("JUPYTER_CONFIG_PATH", "")
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (str(config), rest) if p)
    return env


def main(argv: list[str]) -> int:
    """``python -m streamlab lab [--teacher] [jupyter lab options]`` (see the module)."""
    teacher = "--teacher" in argv
    extra = [a for a in argv if a != "--teacher"]
    try:
        root = course_root()
    except CourseNotFound as err:
        print(f"streamlab lab: {err}", file=sys.stderr)
        return 2
    course_workspace(root / ".jupyter" / "workspaces")
    who = "teacher (nbgrader's tools on)" if teacher else \
        "learner (nbgrader's tools off; --teacher switches them on)"
    print(f"streamlab: opening the course at {root} in JupyterLab, as a {who}.", flush=True)
    config = None if teacher else learner_config(root / ".jupyter" / "learner-config")
    os.chdir(root)
    # Become jupyter lab (no child process): Ctrl-C and a terminate reach it directly.
    cmd = command(root, extra)
    os.execve(cmd[0], cmd, environment(config))
    return 0  # not reached
