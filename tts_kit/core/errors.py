"""The one root of the errors a user can fix: `TtsKitError` (a `ValueError`), which the CLI
prints as one line, exiting 2; any other exception is a bug.

Example:
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
