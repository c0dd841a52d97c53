"""The product stays small (issue 34): a line budget, every module on a user's path, options
objects instead of long parameter lists, no private name borrowed across packages, and
measurement logs in docs/benchmarks.md rather than in docstrings.

Read statically from the source, as tests/test_layers.py reads the import graph (whose
checker this module reuses: type-hint imports and re-exports count as edges there too).
"""

from __future__ import annotations

import ast
import functools
import re

from test_layers import MODULES, PKG, _resolve, imports_of

ROOT = PKG.parent

#: The package (``tts_kit/``, without ``bench/``) may hold at most this many lines: a ratchet,
#: lowered as the package shrinks (issue 34's goal is 27,000; 34,058 before the split, 31,935
#: after it, 32,686 with issues 35-37; 28,726 after two trimming passes by area: unused
#: options and one-caller modules out, duplicates made one, rationale in docs/, word tables
#: in data/lexicons; 26,650 after two more: one-use helpers inlined, small modules of one
#: concern joined, hand-written /proc reads on psutil).
LINE_BUDGET = 26_650


#: Imports made by name at run time (``importlib.import_module``), which no static reading
#: sees: the importer and what it may import. Each entry is checked against its source.
DYNAMIC = {
    "tts_kit.text.normalizer": ("tts_kit.text.en", "tts_kit.text.ko"),
}

#: Functions allowed more than eight parameters, each with the reason.
WIDE_EXCEPTIONS: dict[str, str] = {}


@functools.cache
def _trees() -> dict[str, ast.Module]:
    return {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}


def _user_roots() -> set[str]:
    """Where a user starts: the public API (``tts_kit`` and its lazy names), the CLI (the
    ``tts-kit`` entry point), the server, and every ``tts_kit`` import of a notebook."""
    roots = {"tts_kit", "tts_kit.cli", "tts_kit.cli.__main__", "tts_kit.serve.app"}
    lazy = ast.literal_eval(
        re.search(r"_LAZY = (\{.*?\})\n", (PKG / "__init__.py").read_text(encoding="utf-8"),
                  re.S).group(1))
    roots |= {f"tts_kit.{target}" for target in lazy.values()}
    for nb in (ROOT / "notebooks").glob("*.py"):
        for node in ast.walk(ast.parse(nb.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tts_kit"):
                for alias in node.names:
                    roots.add(_resolve(f"{node.module}.{alias.name}") or node.module)
            elif isinstance(node, ast.Import):
                roots |= {_resolve(a.name) or a.name for a in node.names
                          if a.name.startswith("tts_kit")}
    return roots


def reachable() -> set[str]:
    """Every module a user path imports, directly, in a function, or by name; a module's
    packages come with it."""
    seen: set[str] = set()
    todo = list(_user_roots())
    while todo:
        module = todo.pop()
        if module in seen or module not in MODULES:
            continue
        seen.add(module)
        todo += imports_of(module) | set(DYNAMIC.get(module, ()))
        parent = module.rpartition(".")[0]
        if parent:
            todo.append(parent)
    return seen


def package_lines() -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES.values())


def test_the_package_stays_within_its_line_budget():
    lines = package_lines()
    assert lines <= LINE_BUDGET, (
        f"tts_kit/ has {lines} lines, over its budget of {LINE_BUDGET}: research code "
        "belongs in bench/lab/, measurement logs in docs/benchmarks.md")


def test_the_dynamic_imports_table_matches_the_source():
    for importer, targets in DYNAMIC.items():
        assert "import_module" in MODULES[importer].read_text(encoding="utf-8"), importer
        assert all(t in MODULES for t in targets), targets


def test_every_module_is_on_a_user_path():
    unreached = sorted(set(MODULES) - reachable())
    assert unreached == [], ("no command, notebook, server or public name reaches these: "
                             "move them to bench/lab/ or delete them")


def test_the_reachability_check_sees_an_orphan():
    # A module nothing imports is found: the CLI reaches the doctor, nothing reaches this name.
    assert "tts_kit.doctor" in reachable()
    assert "tts_kit.tuning.no_such_module" not in reachable()


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]


def wide_functions() -> dict[str, int]:
    """``module.qualname`` of every function over eight parameters, with its count."""
    out: dict[str, int] = {}
    for module, tree in _trees().items():
        todo: list[tuple[ast.AST, str]] = [(tree, f"{module}.")]
        while todo:
            node, prefix = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if len(_parameters(child)) > 8:
                        out[f"{prefix}{child.name}"] = len(_parameters(child))
                    todo.append((child, f"{prefix}{child.name}."))
                elif isinstance(child, ast.ClassDef):
                    todo.append((child, f"{prefix}{child.name}."))
    return out


def test_no_function_takes_more_than_eight_parameters():
    wide = {k: v for k, v in wide_functions().items() if k not in WIDE_EXCEPTIONS}
    assert wide == {}, "take an options object (SynthesisConfig, a spec) instead"


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def private_imports() -> list[str]:
    """``importer: source.name`` for every private name (or private module) imported from
    another package; dunders such as ``__version__`` are public."""
    out: list[str] = []
    for module, tree in _trees().items():
        here = _package_of(module)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = node.module or ""
            if node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            if not source.startswith("tts_kit"):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                target = full if full in MODULES else _resolve(source)
                private = [p for p in full.split(".") if p.startswith("_")
                           and not (p.startswith("__") and p.endswith("__"))]
                if private and target and _package_of(target) != here:
                    out.append(f"{module}: {full}")
    return out


def test_no_private_name_is_imported_across_packages():
    assert private_imports() == []


def test_the_private_import_check_sees_one():
    tree = ast.parse("from tts_kit.core.atomic import _sweep")
    assert isinstance(tree.body[0], ast.ImportFrom) and tree.body[0].names[0].name[0] == "_"


_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def test_no_docstring_carries_a_dated_measurement_log():
    dated = []
    for module, tree in _trees().items():
        for node in ast.walk(tree):
            doc = (ast.get_docstring(node, clean=False)
                   if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                        ast.AsyncFunctionDef)) else None)
            if doc and _DATE.search(doc):
                dated.append(f"{module}:{getattr(node, 'lineno', 1)}")
    assert dated == [], "measurement logs belong in docs/benchmarks.md"


def test_notebooks_are_numbered_once_each_in_reading_order():
    numbers = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    assert numbers == [f"{i:02d}" for i in range(len(numbers))], numbers
