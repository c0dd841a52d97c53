"""The package's layering: tts_kit modules form no import cycle, and loading stays below the engine.

Read statically from the source (every ``import``/``from ... import`` of a tts_kit module,
function-level ones, ``if TYPE_CHECKING:`` blocks and re-exports included), so a cycle hidden
in a function body that only bites at call time is found too, and so is one that only type
hints close: a circle is a design knot whether or not it runs.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "tts_kit"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The tts_kit module or package ``name`` denotes (``tts_kit.text.normalize`` may be a
    function of ``tts_kit.text``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    """The tts_kit modules ``module`` imports anywhere in its source."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from . import events`` imports the submodule; ``from .x import f`` module x.
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source
                       for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        for target in targets:
            if target.split(".")[0] == "tts_kit":
                resolved = _resolve(target)
                if resolved and resolved != module:
                    out.add(resolved)
    return out


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every module's tts_kit imports, parsed on first use (not at collection, which
    every xdist worker and every quick loop pays)."""
    return {m: imports_of(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph()[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_the_checker_sees_function_level_imports_and_finds_cycles():
    assert "tts_kit.models.family" in graph()["tts_kit.tuning.stage_costs"]  # in a function
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_tts_kit_modules_form_no_import_cycle():
    assert _cycles(graph()) == []


def test_loading_stays_below_the_models_and_the_measurements():
    # The models and what drives them (tuning, fidelity, precision, faces), packages too.
    above = ("models", "tuning", "fidelity", "precision", "report", "notebook", "doctor",
             "serve", "cli")
    reached = {m for m in _reachable("tts_kit.runtime.loading") if m.split(".")[1] in above}
    assert not reached, (reached, graph()["tts_kit.runtime.loading"])
    assert "tts_kit.runtime.loading" in graph()["tts_kit.models.engine_base"]


def test_procfacts_imports_no_tts_kit_module():
    # Only the settings (`tts_kit.core.settings`), which import no tts_kit module themselves.
    assert graph()["tts_kit.core.procfacts"] <= {"tts_kit.core.settings"}
    assert graph()["tts_kit.core.settings"] == set()


def test_importing_loading_does_not_load_the_engine():
    code = ("import sys, tts_kit.runtime.loading; "
            "print(sorted(m for m in sys.modules if m.startswith('tts_kit')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "tts_kit.models.supertonic.engine" not in out, out
    assert "tts_kit.tuning.stage_costs" not in out, out


def test_workload_sits_on_the_contract_only():
    # What is synthesised is data: it must not pull in the engine, sessions or ONNX Runtime.
    workload = graph()["tts_kit.tuning.workload"]
    assert workload <= {"tts_kit.core.contract", "tts_kit.core.errors"}, workload


#: The layers of docs/architecture.md's package table, bottom to top. A module may import its own
#: layer and the ones below it, never one above (``tts_kit`` itself re-exports lazily).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("text",),
    ("runtime",),
    ("models",),
    ("fidelity", "tuning"),
    ("precision",),
    ("report", "notebook", "doctor", "serve", "cli"),
)


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and the table in "
                         "docs/architecture.md")


def test_every_module_imports_only_its_layer_or_below():
    upward = sorted(
        f"{m} -> {t}" for m, targets in graph().items() if m != "tts_kit"
        for t in targets if t != "tts_kit" and _layer(t) > _layer(m)
    )
    assert upward == []


def test_the_architecture_table_names_every_module():
    readme = (PKG.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for names in LAYERS:
        for name in names:
            path = f"tts_kit/{name}/" if (PKG / name).is_dir() else f"tts_kit/{name}.py"
            assert f"`{path}`" in readme, path
