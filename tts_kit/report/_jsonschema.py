"""Import `jsonschema` without the seconds its optional IRI checker (`SLOW_OPTIONAL`) costs.

That module only serves the ``iri`` format checkers, which tts_kit never asks for; it is
hidden for the import only (docs/guide.md, "How a report is made and judged").

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
