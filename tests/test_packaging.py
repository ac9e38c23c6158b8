"""pyproject.toml and environment.yml give the same set of packages."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def pip_spec(req: str) -> tuple[str, str]:
    """('numba-cuda', '==0.30.*') from 'numba-cuda[cu13]==0.30.*' (extras dropped)."""
    m = re.match(r"^\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$", req)
    name, spec = m.group(1).lower().replace("_", "-"), m.group(3).replace(" ", "")
    return name, ",".join(sorted(spec.split(","))) if spec else ""


def conda_spec(dep: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*(.*)$", dep)
    name, spec = m.group(1).lower(), m.group(2).replace(" ", "")
    if re.fullmatch(r"=[0-9.]+", spec):  # conda's fuzzy '=0.30' is pip's '==0.30.*'
        spec = f"={spec}.*"
    return name, ",".join(sorted(spec.split(","))) if spec else ""


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(pip_spec(r) for r in project["dependencies"]
                  + project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = dict(conda_spec(d) for d in env["dependencies"]
                 if isinstance(d, str) and not d.startswith(("python", "pip")))
    assert conda == wanted
    pip_part = [d for d in env["dependencies"] if isinstance(d, dict)]
    assert pip_part == [{"pip": ["-e ."]}]


def test_environment_python_is_one_the_project_supports():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    (py,) = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert py in ("python=3.11", "python=3.12")


def test_gpu_extras_are_numba_cudas_own():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert extras["cu12"] == ["numba-cuda[cu12]==0.30.*"]
    assert extras["cu13"] == ["numba-cuda[cu13]==0.30.*"]
