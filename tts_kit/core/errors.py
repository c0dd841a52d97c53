"""The one root of the errors a user can fix: `TtsKitError`.

Everything tts_kit raises on purpose, for a problem the user can act on (a model that does
not match its contract, a bad argument, a report that cannot be read), is a `TtsKitError`.
The CLI prints those as one line and exits 2; any other exception is a bug and is reported
as one. `TtsKitError` subclasses `ValueError`, so callers that caught `ValueError` keep
working.

Example:
    >>> from tts_kit.core.errors import BundleError, TtsKitError
    >>> issubclass(BundleError, TtsKitError) and issubclass(TtsKitError, ValueError)
    True
"""

from __future__ import annotations


class TtsKitError(ValueError):
    """A problem the user can fix; its message names the problem and the fix, in one line."""

    # Shown (in tracebacks and doctests) and pickled as ``tts_kit.TtsKitError``.
    __module__ = "tts_kit"


class BundleError(TtsKitError):
    """A model is missing a file or does not match its family's contract."""

    __module__ = "tts_kit"


__all__ = ["BundleError", "TtsKitError"]
