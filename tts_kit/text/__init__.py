"""Text normalisation for Korean and English, chunking, and the indexer check.

The model reads characters, not phonemes: `normalize` spells out digits, symbols and
acronyms with a lexicon (``data/lexicons/<lang>.tsv``) and rules (`ko`, `en`, sharing
`common`); markup tags pass through; `Normalizer.trace` lists what each rule changed.
`chunk` splits long text without losing a word; `unsupported_characters` lists what a
bundle's indexer cannot read.

Example:
    >>> from tts_kit.text import normalize, chunk
    >>> normalize("회의는 10:30에 시작하고 5000 원입니다", "ko")
    '회의는 열 시 삼십 분에 시작하고 오천 원입니다'
    >>> normalize("The API costs $12.50 (50% off).", "en")
    'The A P I costs twelve dollars and fifty cents (fifty percent off).'
    >>> chunk("One. Two.", "en", max_chars=5)
    ['One.', 'Two.']
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
