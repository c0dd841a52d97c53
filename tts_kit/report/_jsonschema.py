"""Import `jsonschema` without the seconds its optional IRI checker (`SLOW_OPTIONAL`) costs
(docs/guide.md, "How a report is made and judged").
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

#: The optional module jsonschema's format checkers import and tts_kit never uses.
SLOW_OPTIONAL = "rfc3987_syntax"
_LOCK = threading.Lock()


def import_jsonschema() -> ModuleType:
    """`jsonschema`, imported without `SLOW_OPTIONAL`; call it before nbformat, papermill or
    nbconvert (they import jsonschema).

    Example:
        >>> import_jsonschema().__name__
        'jsonschema'
    """
    with _LOCK:
        if "jsonschema" not in sys.modules:
            hide = SLOW_OPTIONAL not in sys.modules
            if hide:  # None: the import system's "absent", for this import only
                sys.modules[SLOW_OPTIONAL] = None  # type: ignore[assignment]
            try:
                import jsonschema  # noqa: F401
            finally:
                if hide and sys.modules.get(SLOW_OPTIONAL, ...) is None:
                    del sys.modules[SLOW_OPTIONAL]
        return sys.modules["jsonschema"]
