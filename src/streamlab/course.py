"""``python -m streamlab lab``: open the whole course in JupyterLab.

A learner works in their own copy of the course (:mod:`streamlab.workspace`:
``my-work/``, made on first use and brought up to date at each start), never in the
tracked files: JupyterLab is started at that copy's root folder, so that the contents
table (``README.md``), ``notebooks/`` and ``labs/`` are all reachable and every relative
link in them works. It opens on the contents table, rendered. The labs' solutions are not
in the copy.

Learners see no teacher tools: nbgrader's JupyterLab menus and panels, where nbgrader is
installed, are switched off. ``python -m streamlab lab --teacher`` opens the course's own
files instead, with nbgrader's tools on.

Notebooks render every cell at once (JupyterLab's windowing off), so that a link to a
heading lands on it. As root (a container), the server is allowed to run as root.

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
    """A course folder, and not a learner's copy of one (streamlab.workspace)."""
    from .workspace import MARKER

    return all((folder / name).exists() for name in ("notebooks", "labs", "README.md")) \
        and not (folder / MARKER).exists()


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
        f"the course into (python3 scripts/start.py sets it up and opens it).")


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


#: JupyterLab settings the course starts with (a learner's own changes to them stay): a
#: notebook renders every cell, so that a link to a heading lands on it (with windowing
#: on, JupyterLab places cells it has not rendered by an estimate, and a click landed
#: hundreds of pixels off its heading)
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def lab_settings(folder: Path) -> Path:
    """Write :data:`SETTINGS` into ``folder`` (JupyterLab's user settings), each file once;
    return ``folder``."""
    for name, values in SETTINGS.items():
        path = folder / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values, indent=1))
    return folder


def running_as_root() -> bool:
    """Is this process root (a container's usual user), whom jupyter lab refuses unless
    allowed?"""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def command(root: Path, extra: list[str], *, as_root: bool = False) -> list[str]:
    """The ``jupyter lab`` command line that serves the course from ``root``."""
    jupyter = root / ".jupyter"
    allow = ["--ServerApp.allow_root=True"] if as_root and not any(
        a.startswith(("--allow-root", "--ServerApp.allow_root")) for a in extra) else []
    return [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={root}",
            f"--LabApp.workspaces_dir={jupyter / 'workspaces'}",
            f"--LabApp.user_settings_dir={lab_settings(jupyter / 'settings')}",
            f"--LabApp.default_url=/lab/workspaces/{WORKSPACE}", *allow, *extra]


def environment(config: Path | None, base=None) -> dict[str, str]:
    """The environment for ``jupyter lab``: with ``config`` first on JUPYTER_CONFIG_PATH,
    and NUMBA_ENABLE_CUDASIM as the learner left it (this process set it when it imported
    streamlab; a kernel told "NUMBA_ENABLE_CUDASIM is set" would say so, untruly)."""
    from ._mode import as_found

    env = as_found(os.environ if base is None else base)
    if config is not None:
        rest = env.get("JUPYTER_CONFIG_PATH", "")
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (str(config), rest) if p)
    return env


def main(argv: list[str]) -> int:
    """``python -m streamlab lab [--teacher] [jupyter lab options]`` (see the module)."""
    from . import workspace

    teacher = "--teacher" in argv
    extra = [a for a in argv if a != "--teacher"]
    try:
        course = course_root()
        if teacher:
            root = course
        else:
            sync = workspace.prepare(course)
            print("\n".join(sync.lines()), flush=True)
            root = sync.folder
    except (CourseNotFound, workspace.WorkspaceError) as err:
        print(f"streamlab lab: {err}", file=sys.stderr)
        return 2
    course_workspace(root / ".jupyter" / "workspaces")
    who = "teacher, on the course's own files (nbgrader's tools on)" if teacher else \
        "learner (nbgrader's tools off; --teacher switches them on)"
    as_root = running_as_root()
    print(f"streamlab: opening {root} in JupyterLab, as a {who}"
          + (", allowed to run as root" if as_root else "") + ".", flush=True)
    config = None if teacher else learner_config(root / ".jupyter" / "learner-config")
    os.chdir(root)
    # Become jupyter lab (no child process): Ctrl-C and a terminate reach it directly.
    cmd = command(root, extra, as_root=as_root)
    os.execve(cmd[0], cmd, environment(config))
    return 0  # not reached


def reset_main(argv: list[str]) -> int:
    """``python -m streamlab reset NAME ...``: the course's version of each named lesson
    or lab back in the learner's copy (see streamlab.workspace)."""
    from . import workspace

    if not argv or any(a.startswith("-") for a in argv):
        print("usage: python -m streamlab reset NAME ...   (NAME: 00, lab02, or a file "
              "name)", file=sys.stderr)
        return 2
    try:
        course = course_root()
        for name in argv:
            kept = workspace.reset(course, None, name)
            print(f"streamlab: {name}: the course's version is back"
                  + (f"; yours is kept in {kept}" if kept else " (yours was the same)")
                  + ".")
        # JupyterLab keeps an open notebook in its tab: its next save (its own, every few
        # minutes, or Ctrl+S answered with Overwrite) would write the old version back
        print("If it is open in JupyterLab, its tab still holds the old version: there, "
              "choose File > Reload Notebook from Disk (or close the tab without saving) "
              "before anything saves it.")
    except (CourseNotFound, workspace.WorkspaceError) as err:
        print(f"streamlab reset: {err}", file=sys.stderr)
        return 2
    return 0
