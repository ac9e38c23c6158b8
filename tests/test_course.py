"""``python -m streamlab lab``: JupyterLab at the course root, nbgrader hidden from learners.

The server is started for real (no browser): the course's README, notebooks/ and labs/
are served, the contents open rendered, and nbgrader's pieces are off unless --teacher.
"""

import importlib.util
import json
from pathlib import Path

import pytest

import streamlab
from jupyter_server_for_tests import Server, get

from streamlab import course as lab

ROOT = Path(__file__).resolve().parent.parent

if importlib.util.find_spec("jupyterlab") is None:
    if streamlab.on_simulator():
        pytest.fail("JupyterLab is not installed: pip install -e '.[test]'", pytrace=False)
    pytest.skip("JupyterLab is not installed on this GPU machine (no package index); CI "
                "runs these tests", allow_module_level=True)


def test_the_course_root_is_found_from_inside_it():
    assert lab.course_root(ROOT / "notebooks") == ROOT
    assert lab.course_root(ROOT / "labs" / "lab01__eight_streams") == ROOT


def test_outside_a_course_the_error_says_where_to_run(tmp_path, monkeypatch):
    monkeypatch.setattr(lab, "__file__", str(tmp_path / "a" / "b" / "lab.py"))
    with pytest.raises(lab.CourseNotFound, match="Run this from the folder you cloned"):
        lab.course_root(tmp_path)


def test_the_learner_config_switches_nbgrader_off(tmp_path):
    lab.learner_config(tmp_path)
    server = json.loads((tmp_path / "jupyter_server_config.json").read_text())
    exts = server["ServerApp"]["jpserver_extensions"]
    assert set(exts) == set(lab.NBGRADER_SERVER_EXTENSIONS) and not any(exts.values())
    page = json.loads((tmp_path / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"][lab.NBGRADER_LAB_EXTENSION] is True


def test_the_workspace_opens_the_readme_rendered_and_is_written_once(tmp_path):
    path = lab.course_workspace(tmp_path)
    ws = json.loads(path.read_text())
    assert ws["data"]["markdownviewer-widget:README.md"]["data"] == {
        "path": "README.md", "factory": "Markdown Preview"}
    path.write_text('{"data": {}, "metadata": {"id": "streamlab"}}')  # the learner's layout
    lab.course_workspace(tmp_path)
    assert json.loads(path.read_text())["data"] == {}


def test_a_learner_gets_the_whole_course_and_no_teacher_tools():
    with Server() as srv:
        assert get(srv.base + "/")[0] == 200
        for path in ("README.md", "notebooks", "labs/lab01__eight_streams"):
            assert get(f"{srv.base}/api/contents/{path}?content=0")[0] == 200, path
        config = srv.page_config(f"/lab/workspaces/{lab.WORKSPACE}")
        assert lab.NBGRADER_LAB_EXTENSION in config["disabledExtensions"]
        assert get(srv.base + "/formgrader")[0] == 404


def test_a_teacher_gets_nbgrader():
    with Server("--teacher") as srv:
        config = srv.page_config()
        assert lab.NBGRADER_LAB_EXTENSION not in config["disabledExtensions"]
        assert get(srv.base + "/formgrader")[0] != 404
