"""The order `pytest -n 2` hands out the tests (the root conftest.py): long work first, the
modules that share an expensive fixture kept whole, so the two workers end together."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_long_units_first_and_shared_modules_whole():
    c = _root_conftest()
    entries = [("tests/test_a.py::t1", 3), ("tests/test_serve.py::quick", 3),
               ("tests/test_report.py::main_job", 0), ("tests/test_notebooks.py::nb", 1),
               ("tests/test_serve.py::server", 0), ("tests/test_bench.py::b", 2),
               ("tests/test_precision.py::p1", 3), ("tests/test_precision.py::p2", 3),
               ("tests/test_precision.py::p3", 3), ("tests/test_a.py::t2", 3)]
    order = [entries[i][0] for i in c.run_order(entries)]
    # test_serve (a slow test inside, two tests) before the lone slow test; its tests
    # together, the slow one first; then notebooks, benchmarks, the largest shared module
    # of the rest, and the single tests in file order.
    assert order == ["tests/test_serve.py::server", "tests/test_serve.py::quick",
                     "tests/test_report.py::main_job", "tests/test_notebooks.py::nb",
                     "tests/test_bench.py::b", "tests/test_precision.py::p1",
                     "tests/test_precision.py::p2", "tests/test_precision.py::p3",
                     "tests/test_a.py::t1", "tests/test_a.py::t2"]
    assert c._scope("tests/test_precision.py::p1") == "tests/test_precision.py"
    assert c._scope("tests/test_a.py::t1") == "tests/test_a.py::t1"


def test_a_plain_run_keeps_the_file_order():
    """Without xdist the collection is left alone (no ``workerinput``)."""
    c = _root_conftest()
    items = ["b", "a"]
    config = type("Config", (), {})()
    c.pytest_collection_modifyitems(config, items)
    assert items == ["b", "a"]


def test_a_test_runs_with_the_collected_run_frozen():
    """The root conftest freezes the live heap at each module's start (after a collection),
    so the library's `gc.collect()` after each session load walks only what this module
    made, not every module the run imported."""
    import gc

    assert gc.get_freeze_count() > 10_000
