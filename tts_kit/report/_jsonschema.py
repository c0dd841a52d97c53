"""Import `jsonschema` without the seconds its optional IRI checker costs at import.

`jsonschema` (imported by `validate_report`, and by nbformat, which papermill and nbconvert
import) imports ``rfc3987_syntax`` whenever it is installed (JupyterLab brings it:
jupyter-events asks for jsonschema's ``format-nongpl`` extra), and that package compiles
its lark grammars at import: 2.5-3 CPU-s in every process that writes, validates or
re-runs a report, the report's own kernel included. Its only use is jsonschema's
``iri``/``iri-reference`` *format* checkers, which nothing in tts_kit asks for (the report
schema has no ``format``, and formats are only checked when a ``FormatChecker`` is given).

So tts_kit imports jsonschema with that one optional module hidden, which is exactly the
state jsonschema documents for an environment without it: those two format checkers are
left out and everything else is the same. The hiding lasts for the import only; afterwards
``import rfc3987_syntax`` works as before. A process that imported jsonschema first keeps
its own copy untouched.

Example:
    >>> import_jsonschema().Draft202012Validator({"type": "integer"}).is_valid(3)
    True
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from types import ModuleType

#: The optional module jsonschema's format checkers import and tts_kit never uses.
SLOW_OPTIONAL = "rfc3987_syntax"
_LOCK = threading.Lock()


@contextlib.contextmanager
def _hidden(name: str) -> Iterator[None]:
    """``import name`` fails inside the block (as if not installed), unless already
    imported; the entry is removed again on leaving, whatever happened."""
    if name in sys.modules:
        yield
        return
    sys.modules[name] = None  # type: ignore[assignment]  # the import system's "absent"
    try:
        yield
    finally:
        if sys.modules.get(name, ...) is None:
            del sys.modules[name]


def import_jsonschema() -> ModuleType:
    """`jsonschema`, imported without `SLOW_OPTIONAL` if this process has not imported it.

    Call it before importing nbformat, papermill or nbconvert too: they import jsonschema.

    Example:
        >>> import_jsonschema().__name__
        'jsonschema'
    """
    with _LOCK:
        if "jsonschema" not in sys.modules:
            with _hidden(SLOW_OPTIONAL):
                import jsonschema  # noqa: F401
        return sys.modules["jsonschema"]
