"""Import `jsonschema` without the seconds its optional IRI checker (`SLOW_OPTIONAL`) costs
(docs/guide.md, "How a report is made and judged").

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
    """``import name`` fails inside the block (as if not installed), unless imported."""
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
    """`jsonschema`, imported without `SLOW_OPTIONAL`; call it before nbformat, papermill or
    nbconvert (they import jsonschema).

    Example:
        >>> import_jsonschema().__name__
        'jsonschema'
    """
    with _LOCK:
        if "jsonschema" not in sys.modules:
            with _hidden(SLOW_OPTIONAL):
                import jsonschema  # noqa: F401
        return sys.modules["jsonschema"]
