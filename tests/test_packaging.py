"""Packaging: the wheel carries what a non-editable install needs (lexicons, the report
notebook, schema), and environment.yml installs what pyproject.toml's ``.[all]`` does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
#: pip's words when it cannot download setuptools for an isolated build.
_NO_BACKEND = ("No matching distribution found for setuptools",
               "Could not find a version that satisfies the requirement setuptools")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once per run: under a lock, by whichever xdist worker asks
    first (the two tests below often land on different workers)."""
    from tts_kit.core.atomic import atomic_dir, build_lock

    base = tmp_path_factory.getbasetemp()  # this run's root, as tests/conftest.py's _run_dir
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = root / "wheel"
    with build_lock(root / "wheel.lock"):
        if not out.is_dir():
            with atomic_dir(out) as work:
                _build_wheel(work)
    (whl,) = out.glob("tts_kit-*.whl")
    return whl


def _build_wheel(out: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                          str(ROOT)], capture_output=True, text=True, timeout=600)
    # Only a build backend pip cannot fetch (an offline machine) skips; a build that breaks
    # on the project itself (pyproject, package data) must fail here, not be skipped.
    if run.returncode != 0 and any(m in run.stderr for m in _NO_BACKEND):
        pytest.skip(f"cannot fetch the build backend: {run.stderr.strip().splitlines()[-1:]}")
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.slow  # builds a wheel (10 s): out of the quick loop
def test_the_wheel_holds_the_data_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in ("tts_kit/_data/lexicons/ko.tsv", "tts_kit/_data/lexicons/en.tsv",
                 "tts_kit/_data/notebooks/06_tuning_report.py",
                 "tts_kit/report/report_schema.json", "tts_kit/py.typed",
                 "tts_kit/precision/conversion.py"):
        assert want in names, want


@pytest.mark.slow  # builds a wheel (10 s): out of the quick loop
def test_an_installed_copy_finds_its_lexicons_and_report_notebook(wheel, tmp_path):
    target = tmp_path / "site"
    # --no-compile: the copy runs from its sources (byte-compiling them is pip's time, not
    # what this test checks)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                    "--target", str(target), str(wheel)], check=True, capture_output=True,
                   timeout=300)
    code = ("import tts_kit, tts_kit.report as r, tts_kit.text.lexicon as lx;"
            "print(tts_kit.__file__); print(r.report_notebook()); print(lx.builtin_dir());"
            "print(tts_kit.text.normalize('API 3개', 'ko'))")
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("TTS_KIT_REPORT_NOTEBOOK", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout.splitlines()
    assert all(line.startswith(str(target)) for line in out[:3]), out
    assert out[3] == "에이피아이 세 개"


# -- environment.yml and pyproject.toml in step ------------------------------------------------

#: environment.yml entries that are the environment itself, not a requirement of the package.
_CONDA_ONLY = {"python", "pip"}


#: A PyPI requirement (name, extras) -> the conda-forge packages that install it: the
#: PyPI name with an extra is split into packages on conda-forge.
_CONDA_NAMES: dict[tuple[str, frozenset[str]], tuple[str, ...]] = {
    ("dask", frozenset({"distributed"})): ("dask-core", "distributed"),
}


def _name(name: str) -> str:
    """PEP 503 form: case and ``_``/``-``/``.`` do not matter (memory_profiler, memory-profiler)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _lower_bound(spec: str, where: str) -> str:
    bounds = [v for op, v in re.findall(r"(>=|==|~=)\s*([^,\s]+)", spec)]
    assert len(bounds) == 1, f"{where}: expected one lower bound (>=), got {spec!r}"
    return bounds[0]


def pyproject_all(path: Path) -> dict[str, str]:
    """``.[all]`` of a pyproject.toml, self-referencing extras expanded: name -> lower bound."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    me = _name(project["name"])
    out: dict[str, str] = {}
    seen: set[str] = set()

    def add(reqs: list[str]) -> None:
        for text in reqs:
            req = Requirement(text)
            if _name(req.name) == me:  # "tts_kit[notebooks,hub,test]": those extras too
                for extra in sorted(req.extras - seen):
                    seen.add(extra)
                    add(extras[extra])
                continue
            bound = _lower_bound(str(req.specifier), f"{path.name}: {text}")
            extras_of = frozenset(_name(e) for e in req.extras)
            for name in _CONDA_NAMES.get((_name(req.name), extras_of), (req.name,)):
                out[_name(name)] = bound

    add(project.get("dependencies", []))
    seen.add("all")
    add(extras["all"])
    return out


def environment_yml(path: Path) -> dict[str, str]:
    """The conda and pip requirements of an environment.yml: name -> lower bound.

    Read line by line (its list items), so the check needs no YAML library: ``- name>=v``
    in ``dependencies`` and in its ``pip:`` section alike; ``- pip:`` and ``-e .`` are not
    requirements.
    """
    out: dict[str, str] = {}
    in_deps = False
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not line.startswith((" ", "-")):  # a top-level key: name, channels, dependencies
            in_deps = line.startswith("dependencies:")
            continue
        item = re.match(r"\s*-\s+(\S.*)$", line)
        if not in_deps or not item or item.group(1).endswith(":") or item.group(1).startswith("-e"):
            continue
        text = item.group(1)
        name = re.match(r"[A-Za-z0-9_.-]+", text).group(0)
        if name in _CONDA_ONLY:
            continue
        out[_name(name)] = _lower_bound(text[len(name):], f"{path.name}: {text}")
    return out


def drift(pyproject: Path, env: Path) -> list[str]:
    """What differs between ``.[all]`` and environment.yml, one line per package."""
    want, have = pyproject_all(pyproject), environment_yml(env)
    lines = [f"{n}: in pyproject ({want[n]}), not in {env.name}"
             for n in sorted(set(want) - set(have))]
    lines += [f"{n}: in {env.name} ({have[n]}), not in pyproject"
              for n in sorted(set(have) - set(want))]
    lines += [f"{n}: pyproject >={want[n]}, {env.name} >={have[n]}"
              for n in sorted(set(want) & set(have)) if Version(want[n]) != Version(have[n])]
    return lines


def test_environment_yml_installs_what_pyproject_all_does():
    """README and environment.yml promise it: the conda route installs the same set."""
    assert drift(ROOT / "pyproject.toml", ROOT / "environment.yml") == []


def test_the_step_check_sees_a_missing_package_and_a_changed_bound(tmp_path):
    env = (ROOT / "environment.yml").read_text(encoding="utf-8")
    changed = env.replace("  - psutil>=5.9\n", "").replace("tqdm>=4.66", "tqdm>=4.0")
    changed = changed.replace("      - -e .\n", "      - -e .\n      - rich>=13\n")
    (tmp_path / "environment.yml").write_text(changed, encoding="utf-8")
    assert drift(ROOT / "pyproject.toml", tmp_path / "environment.yml") == [
        "psutil: in pyproject (5.9), not in environment.yml",
        "rich: in environment.yml (13), not in pyproject",
        "tqdm: pyproject >=4.66, environment.yml >=4.0",
    ]
    # The self-referencing extra is followed: a test requirement counts as one of .[all].
    assert pyproject_all(ROOT / "pyproject.toml")["hypothesis"] == "6.90"


def test_a_pypi_extra_maps_to_its_conda_forge_packages(tmp_path):
    # dask[distributed] is dask-core + distributed on conda-forge: both must be listed.
    env = (ROOT / "environment.yml").read_text(encoding="utf-8")
    (tmp_path / "environment.yml").write_text(env.replace("  - distributed>=2024.1\n", ""),
                                              encoding="utf-8")
    assert drift(ROOT / "pyproject.toml", tmp_path / "environment.yml") == [
        "distributed: in pyproject (2024.1), not in environment.yml"]
    assert pyproject_all(ROOT / "pyproject.toml")["dask-core"] == "2024.1"
