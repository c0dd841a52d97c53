"""`Normalizer` and `normalize`: spell a text out the way the model should read it.

The text is split at markup tags, which pass through untouched; each stretch between
them is prepared (NFKC, plain punctuation, one space) and run through the language's
steps (`ko.rules`, `en.rules`), the last of which removes every character the output
alphabet lacks (`charset`).

Example:
    >>> from tts_kit.text import Normalizer
    >>> norm = Normalizer("ko")
    >>> norm.normalize('TTS API를 3개 <break time="300ms"/> 써요')
    '티티에스 에이피아이를 세 개 <break time="300ms"/> 써요'
    >>> [(s.rule, s.before, s.after) for s in norm.trace("3개")]
    [('counter', '3개', '세 개')]
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from . import en, ko
from .common import (
    TraceStep,
    check_lang,
    check_text,
    prepare,
    run_steps,
    split_tags,
)
from .lexicon import LexiconSource, load

_RULES = {"ko": ko.rules, "en": en.rules}


class Normalizer:
    """The normaliser of one language, with its lexicon (built-in plus yours).

    Example:
        >>> Normalizer("en", lexicons=[{"Supertonic": "super tonic"}]).normalize("Supertonic 3")
        'super tonic three'
    """

    def __init__(
        self,
        lang: str = "ko",
        lexicons: Iterable[LexiconSource] | LexiconSource | None = None,
    ) -> None:
        """``lang`` is ``"ko"`` or ``"en"``; ``lexicons`` are extra ``.tsv`` files (or
        term -> pronunciation mappings) that override the built-in entries, in order."""
        self.lang = check_lang(lang)
        self.lexicon = load(lang, lexicons)
        self._pipeline = _RULES[lang](self.lexicon)

    def __repr__(self) -> str:
        return f"Normalizer({self.lang!r}, {len(self.lexicon)} lexicon terms)"

    def normalize(self, text: str) -> str:
        """The text with numbers, dates, symbols and acronyms spelled out.

        Raises ValueError for empty text, text over 100,000 characters, or text with
        nothing speakable left (only emoji or symbols).

        Example:
            >>> Normalizer("en").normalize("It costs $5 at 10:30.")
            'It costs five dollars at ten thirty.'
        """
        return self._run(text, None)

    def trace(self, text: str) -> list[TraceStep]:
        """Every change the rules made to ``text``, in order (rule, before, after).

        Example:
            >>> [s.rule for s in Normalizer("ko").trace("AWS 10:30")]
            ['time', 'acronym']
        """
        steps: list[TraceStep] = []
        self._run(text, steps)
        return steps

    def _run(self, text: str, steps: list[TraceStep] | None) -> str:
        check_text(text)
        parts: list[str] = []
        for is_tag, piece in split_tags(text):
            if is_tag:
                parts.append(piece)
                continue
            core = prepare(piece, steps)
            if core:
                core = run_steps(self._pipeline, core, steps)
            lead, trail = piece[:1].isspace(), piece[-1:].isspace()
            if not core:
                parts.append(" " if (lead or trail) and parts else "")
                continue
            parts.append((" " if lead else "") + core + (" " if trail else ""))
        out = "".join(parts).strip()
        if not out:
            raise ValueError(
                "text has nothing the model can say once normalised (only emoji, symbols "
                "or characters of another script); give it some words"
            )
        return out


@lru_cache(maxsize=8)
def _default(lang: str) -> Normalizer:
    return Normalizer(lang)


def normalize(text: str, lang: str = "ko") -> str:
    """Spell ``text`` out for Supertonic in ``lang`` (``"ko"`` or ``"en"``).

    Uses the built-in lexicon; build a `Normalizer` to add your own.

    Example:
        >>> normalize("FastAPI 서버는 2 vCPU에서 15,000원입니다", "ko")
        '패스트 에이피아이 서버는 이 브이씨피유에서 만 오천 원입니다'
    """
    check_lang(lang)
    return _default(lang).normalize(text)
