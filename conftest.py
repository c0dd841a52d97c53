"""Settings for every test, the library's doctests (tts_kit/) included.

Users get the full-scale stand-in when no model is found (realistic costs, a 400 MB
build); tests and doctests use the tiny one, so discovery stays fast. The users' default
is checked on its own (tests/test_standin.py). tests/conftest.py holds the fixtures.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

# Scripts that generate test fixtures (they import tools the suite does not install, such as
# librosa) are run by hand, not collected: `--doctest-modules` would import them.
collect_ignore_glob = ["tests/fixtures/*.py"]

# Bytecode caches, as Python writes them by default, even where the environment turns
# them off (PYTHONDONTWRITEBYTECODE): the run starts hundreds of Python processes
# (trials, servers, kernels, CLI runs), and each would otherwise compile every module it
# imports again. Written lazily, for what is imported; the README's test command therefore
# installs without `--compile-bytecode` (9,103 files, 22 s of CI's install on 2026-12-04).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False

# The research code that did not win lives in bench/lab/ (not shipped): bench scripts import
# it as `lab` (run as `python bench/NAME.py`, bench/ is first on sys.path); so do the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

# Test modules import nbformat (notebooks, reports) at collection, on every xdist worker and
# in the quick loop: have it find jsonschema imported as tts_kit's report code imports it,
# without the IRI grammars that cost ~2.5 CPU-s (tts_kit.report._jsonschema).
try:
    from tts_kit.report._jsonschema import import_jsonschema

    import_jsonschema()
except ImportError:  # jsonschema not installed: the tests that need it skip
    pass


@pytest.fixture(autouse=True)
def _tiny_standin_for_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTS_KIT_STANDIN_SCALE", "tiny")


class _SettingsMonkeyPatch(pytest.MonkeyPatch):
    """`pytest.MonkeyPatch` that makes `tts_kit.core.settings.settings()` read the
    environment again after each change and each undo: the package reads it once
    (`tts_kit.core.settings`), tests change it freely."""

    def setenv(self, name: str, value: str, prepend: str | None = None) -> None:
        super().setenv(name, value, prepend)
        _reset()

    def delenv(self, name: str, raising: bool = True) -> None:
        super().delenv(name, raising)
        _reset()

    def undo(self) -> None:
        super().undo()
        _reset()


def _reset() -> None:
    from tts_kit.core.settings import reset_settings

    reset_settings()


@pytest.fixture
def monkeypatch():
    """Every test's (and doctest's) ``monkeypatch``, with settings re-read on each change."""
    mp = _SettingsMonkeyPatch()
    yield mp
    mp.undo()


# -- garbage collection -----------------------------------------------------------------
# The library collects garbage after every session load and release (`release_memory`:
# freed memory must leave RSS), and a full collection walks every object the process
# holds: in a test process, every module the run imported. Freezing what is alive at a
# test module's start (after a collection, so no garbage is frozen) leaves each later
# collection only the objects made since. Objects frozen still die by reference count.


def _freeze_heap() -> None:
    """Collect, then move every live object out of the collector's reach (`gc.freeze`)."""
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The collected run (its modules, tests and doctests) is frozen once."""
    _freeze_heap()


_module_now: list[str] = [""]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """At each test module's first test (the previous module's fixtures torn down, this
    one's not yet made), freeze again: what earlier tests imported stays frozen."""
    module = item.nodeid.split("::", 1)[0]
    if module != _module_now[0]:
        _module_now[0] = module
        _freeze_heap()


# -- parallel runs (`pytest -n 2`, README's test command) --------------------------------

#: Test modules whose tests share an expensive module-scoped fixture (a server, a wheel,
#: FP16/INT8 conversions, the recipes' conversions, a medium stand-in, a Dask cluster, a
#: Piper voice, its take spread, a sweep, a written report): under ``pytest -n`` one
#: worker runs all of such a module, so the fixture is built once, not once per worker.
SHARED_FIXTURE_MODULES = ("test_serve", "test_packaging", "test_precision", "test_recipes",
                          "test_stage_costs", "test_cluster", "test_piper_voice",
                          "test_piper_precision", "test_tune", "test_report_trust",
                          "test_serve_attacks", "test_serve_chunks")


def _cost_rank(item: pytest.Item) -> int:
    """Longest first: the full-scale job, the notebooks and benchmarks, then the rest."""
    names = {m.name for m in item.iter_markers()}
    for rank, marker in enumerate(("slow", "notebook", "bench")):
        if marker in names:
            return rank
    return 3


def _scope(nodeid: str) -> str:
    """The unit a worker is given: a `SHARED_FIXTURE_MODULES` module whole, else one test."""
    path = nodeid.split("::", 1)[0]
    return path if Path(path).stem in SHARED_FIXTURE_MODULES else nodeid


def run_order(entries: list[tuple[str, int]]) -> list[int]:
    """The order to hand out ``(nodeid, cost rank)`` entries, as indices: each unit
    (`_scope`) ranked by its costliest test, the larger units of a rank first, and a
    unit's tests together, costliest first. Long work starts first, so the two workers
    end close together (the run lasts as long as its longest worker).

    Example:
        >>> run_order([("a.py::t", 3), ("test_serve.py::x", 3), ("test_serve.py::y", 0),
        ...            ("b.py::n", 1)])
        [2, 1, 3, 0]
    """
    scopes: dict[str, list[int]] = {}
    for i, (nodeid, rank) in enumerate(entries):
        unit = scopes.setdefault(_scope(nodeid), [rank, 0, i])
        unit[0], unit[1] = min(unit[0], rank), unit[1] + 1

    def key(i: int) -> tuple[int, ...]:
        nodeid, rank = entries[i]
        unit_rank, size, first = scopes[_scope(nodeid)]
        return unit_rank, -size, first, rank, i

    return sorted(range(len(entries)), key=key)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, hand out the long work first (`run_order`; every worker collects the
    same order, so the scheduler sees one). A plain run keeps the file order."""
    if hasattr(config, "workerinput"):
        order = run_order([(item.nodeid, _cost_rank(item)) for item in items])
        items[:] = [items[i] for i in order]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``-n N`` (xdist's ``load``): each test on its own, except that the tests of one
    `SHARED_FIXTURE_MODULES` module go to one worker together, in `run_order` (xdist's
    own reordering, by the number of tests in a unit, is off: it put the shared modules
    before the full-scale job and the notebooks). (xdist's ``loadgroup`` would group
    with markers, but its grouping is lost with pytest 9's node ids.)"""
    if config.getvalue("dist") != "load":
        return None  # an explicit --dist choice stands
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return SharedFixtureScheduling(config, log)
