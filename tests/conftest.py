"""Shared fixtures: the tiny stand-in bundle (built once per session) and the real assets."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tts_kit.core.atomic import build_lock

ROOT = Path(__file__).resolve().parent.parent
#: The read-only real Supertonic-3 assets, beside the project root (absent on most machines).
SHARED_ASSETS = ROOT.parent / "shared" / "supertonic3-assets"


@pytest.fixture(scope="session")
def shared_assets() -> Path:
    """The real `tts.json`, indexer and voice styles; skips the test when absent."""
    if not (SHARED_ASSETS / "onnx" / "tts.json").is_file():
        pytest.skip("../shared/supertonic3-assets is absent")
    return SHARED_ASSETS


def _run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temporary root: shared by its xdist workers, else this session's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _standin_once(tmp_path_factory: pytest.TempPathFactory, scale: str) -> Path:
    """A stand-in of ``scale`` shared by the whole test run: built once, under a lock, by
    whichever xdist worker asks first (the build is atomic)."""
    from tts_kit.core.atomic import atomic_dir
    from tts_kit.models.supertonic.standin import build_standin

    root = _run_dir(tmp_path_factory)
    out = root / "standin" / scale
    out.parent.mkdir(exist_ok=True)
    with build_lock(root / f"standin-{scale}.lock"):
        if not out.is_dir():
            with atomic_dir(out) as work:
                build_standin(work, scale=scale, seed=0)
    return out


@pytest.fixture(scope="session")
def tiny_bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A freshly built tiny stand-in bundle, shared by the whole test run."""
    return _standin_once(tmp_path_factory, "tiny")


@pytest.fixture(scope="session")
def standin_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``standin_once(scale)``: that scale's stand-in, built once per run (`_standin_once`)."""
    return lambda scale: _standin_once(tmp_path_factory, scale)


#: An IPython startup file for every kernel the tests start (notebooks, reports): after
#: each cell, collect and freeze the live heap (`gc.freeze`, as the root conftest does for
#: the test processes), so the library's collection after each session load walks only
#: what the cell made, not pandas, matplotlib and every other module the kernel imported.
_KERNEL_STARTUP = """import gc as _gc


def _freeze_after_cell(result=None):
    _gc.collect()
    _gc.freeze()


get_ipython().events.register("post_run_cell", _freeze_after_cell)
"""


@pytest.fixture(scope="session")
def _ipython_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's ``IPYTHONDIR``: no user profile, and the `_KERNEL_STARTUP` file."""
    root = tmp_path_factory.getbasetemp() / "ipython"
    startup = root / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00_freeze_after_cell.py").write_text(_KERNEL_STARTUP)
    return root


@pytest.fixture(scope="session")
def run_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's ``$TTS_KIT_CACHE_DIR``, shared by its xdist workers: what the cache holds
    (a Piper voice's seeded graph, the graphs' external-data and optimised copies) is keyed
    by content, written atomically and built under a lock, so each is built once per run,
    not once per worker. Tests of the cache itself use a directory of their own."""
    return _run_dir(tmp_path_factory) / "tts_kit_cache"


@pytest.fixture(autouse=True)
def _isolated_cache(run_cache_dir: Path, monkeypatch: pytest.MonkeyPatch, _ipython_dir: Path):
    """Keep tests away from the user's caches, IPython profile and model environment
    variables."""
    cache = run_cache_dir
    monkeypatch.setenv("TTS_KIT_CACHE_DIR", str(cache))
    monkeypatch.setenv("IPYTHONDIR", str(_ipython_dir))
    monkeypatch.delenv("TTS_KIT_MODEL_DIR", raising=False)
    # An empty official cache, so discovery never picks up a real model a developer has.
    monkeypatch.setenv("SUPERTONIC_CACHE_DIR", str(cache / "no-official-model"))
    yield


# -- fastr: expensive artefacts built once per run (shared by the xdist workers), and
# one small real report shared by the tests that only read or edit a copy of it


@contextlib.contextmanager
def _fixture_env(run_cache_dir: Path, ipython_dir: Path | None = None) -> Iterator[None]:
    """The environment `_isolated_cache` (and the root conftest) give a test, for a
    module- or session-scoped fixture, which runs before them; settings re-read on entry
    and exit.

    Example:
        >>> with _fixture_env(Path("/tmp/cache")):  # doctest: +SKIP
        ...     write_report(...)
    """
    from tts_kit.core.settings import reset_settings

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TTS_KIT_CACHE_DIR", str(run_cache_dir))
        mp.setenv("SUPERTONIC_CACHE_DIR", str(run_cache_dir / "no-official-model"))
        mp.setenv("TTS_KIT_STANDIN_SCALE", "tiny")
        mp.delenv("TTS_KIT_MODEL_DIR", raising=False)
        if ipython_dir is not None:
            mp.setenv("IPYTHONDIR", str(ipython_dir))
        reset_settings()
        try:
            yield
        finally:
            mp.undo()
            reset_settings()


def _build_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], None]) -> Path:
    """``RUN/name``, filled by ``build(dir)`` once per run, under a lock, by whichever
    xdist worker asks first; a build that did not finish (no ``.done``) is started over.
    For what cannot be renamed into place (its files name their own paths).

    Example:
        >>> d = _build_once(factory, "x", lambda d: (d / "a").write_text("a"))  # doctest: +SKIP
    """
    import shutil

    root = _run_dir(tmp_path_factory)
    out = root / name
    with build_lock(root / f"{name}.lock"):
        if not (out / ".done").is_file():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            (out / ".done").touch()
    return out


@pytest.fixture(scope="session")
def lean_report(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory,
                run_cache_dir: Path) -> tuple[Path, Path]:
    """(report.json, the model it measured: a private copy of the tiny stand-in) of a real
    one-trial report (lean, 1 vCPU, resident, 1 step, 1 repeat; absolute paths), written
    once per run. Read-only: a test that edits the report or the model edits a copy."""
    import shutil

    from tts_kit.report import SweepSpec, write_report
    from tts_kit.tuning.workload import Workload

    def build(d: Path) -> None:
        shutil.copytree(tiny_bundle_dir, d / "model")
        spec = SweepSpec(rounds=1, presets=["lean"], cpus=[1], loadings=["resident"],
                         workload=Workload(steps=1, repeats=1))
        with _fixture_env(run_cache_dir):
            write_report(d / "r", d / "model", spec, full_paths=True)

    out = _build_once(tmp_path_factory, "lean_report", build)
    return out / "r" / "report.json", out / "model"


@pytest.fixture(scope="session")
def fixture_env(run_cache_dir: Path, _ipython_dir: Path) -> Callable[[], Any]:
    """``with fixture_env():`` the environment a test gets (`_fixture_env`), for the body
    of a module- or session-scoped fixture."""
    return lambda: _fixture_env(run_cache_dir, _ipython_dir)


@pytest.fixture(scope="session")
def build_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``build_once(name, build)``: `_build_once` in this run's shared directory."""
    return lambda name, build: _build_once(tmp_path_factory, name, build)


@pytest.fixture
def lab_backends() -> Iterator[None]:
    """Servers started in the test load `lab.backends` (``threads``, ``blocking``,
    ``article``); the environment is restored after."""
    from lab.serve_lab import enable

    from tts_kit.core.settings import reset_settings

    saved = dict(os.environ)
    enable("lab.backends")
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        reset_settings()
