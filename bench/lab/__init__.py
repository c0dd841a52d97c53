"""Research code that did not win, kept runnable for ``bench/`` scripts (not shipped).

``python bench/NAME.py`` puts ``bench/`` first on ``sys.path``, so a script imports
``from lab import cpu_split``; the tests reach it the same way (the root ``conftest.py``).
Findings are in docs/benchmarks.md.
"""
