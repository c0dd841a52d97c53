"""Text normalisation for Korean and English (`normalize`, `Normalizer`: digits, symbols
and acronyms spelled out), chunking (`chunk`) and the indexer check.

Example:
    >>> from tts_kit.text import normalize
    >>> normalize("The API costs $12.50 (50% off).", "en")
    'The A P I costs twelve dollars and fifty cents (fifty percent off).'
"""

from __future__ import annotations

from tts_kit.text.charset import unsupported_characters
from tts_kit.text.chunking import chunk
from tts_kit.text.common import LANGS, MAX_CHARS, TraceStep, language_tags, other_language
from tts_kit.text.lexicon import read_lexicon
from tts_kit.text.normalizer import Normalizer, check_speakable, normalize, normalize_for_speech

__all__ = [
    "LANGS",
    "MAX_CHARS",
    "Normalizer",
    "TraceStep",
    "check_speakable",
    "chunk",
    "language_tags",
    "normalize",
    "normalize_for_speech",
    "other_language",
    "read_lexicon",
    "unsupported_characters",
]
