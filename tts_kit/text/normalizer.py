"""`Normalizer` and `normalize`: markup tags pass through, each stretch between them is
prepared (`common.prepare`) and run through the language's steps (`ko.rules`, `en.rules`)."""

from __future__ import annotations

import importlib
import unicodedata
import warnings
from collections.abc import Iterable
from functools import lru_cache

from tts_kit.core.errors import TtsKitError
from tts_kit.text import common
from tts_kit.text.common import Step, TraceStep, prepare, split_tags
from tts_kit.text.lexicon import LexiconSource, load


class Normalizer:
    """The normaliser of one language, with its lexicon (built-in plus yours).

    Example:
        >>> Normalizer("en", lexicons=[{"Supertonic": "super tonic"}]).normalize("Supertonic 3")
        'super tonic three'
    """

    def __init__(self, lang: str = "ko",
                 lexicons: Iterable[LexiconSource] | LexiconSource | None = None) -> None:
        """``lexicons``: ``.tsv`` files or mappings overriding the built-in entries, in order."""
        self.lang = common.check_lang(lang)
        self.lexicon = load(lang, lexicons)
        # Imported on first use: an English-only process never compiles the Korean patterns.
        rules: list[Step] = importlib.import_module(f"tts_kit.text.{lang}").rules(self.lexicon)
        *self._rules, self._cleanup = rules

    def __repr__(self) -> str:
        return f"Normalizer({self.lang!r}, {len(self.lexicon)} lexicon terms)"

    def normalize(self, text: str) -> str:
        """The text with numbers, dates, symbols and acronyms spelled out (an error for
        empty text, text over `MAX_CHARS`, or nothing speakable left).

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

    def normalize_for_speech(self, text: str) -> str:
        """`normalize`, then warn about what it removed (`check_speakable`): what the
        engine synthesises.

        Example:
            >>> Normalizer("en").normalize_for_speech("Hello there!!!!!!")
            'Hello there!!!'
        """
        dropped: list[str] = []
        out = self._run(text, None, dropped)
        check_speakable(text, out, self.lang, dropped)
        return out

    def _run(self, text: str, steps: list[TraceStep] | None,
             dropped: list[str] | None = None) -> str:
        common.check_text(text)
        parts: list[str] = []
        for is_tag, piece in split_tags(text):
            if is_tag:
                parts.append(piece)
                continue
            core = prepare(piece, steps)
            for step in self._rules if core else ():
                core = step(core, steps)
            if core and dropped is None:
                core = self._cleanup(core, steps)
            elif core:  # the last step's "remove" trace steps are what was dropped
                log: list[TraceStep] = steps if steps is not None else []
                start = len(log)
                core = self._cleanup(core, log)
                dropped.extend(s.before for s in log[start:] if s.rule == "remove")
            lead, trail = piece[:1].isspace(), piece[-1:].isspace()
            if not core:
                parts.append(" " if (lead or trail) and parts else "")
                continue
            parts.append((" " if lead else "") + core + (" " if trail else ""))
        out = "".join(parts).strip()
        if not out and dropped is None:
            raise TtsKitError(
                "text has nothing the model can say once normalised (only emoji, symbols "
                "or characters of another script); give it some words"
            )
        return out


def check_speakable(original: str, text: str, lang: str, dropped: Iterable[str] = (),
                    normalised: bool = True) -> None:
    """Warn about the characters normalisation ``dropped`` from ``original`` on its way to
    ``text``; refuse text with no letter or digit left, or that lost over half its letters.

    Example:
        >>> check_speakable("....", "...", "en")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: text has nothing to speak after normalisation: only '...' is left; ...
    """
    # Marks and format characters (zero-width joiners) carry no sound: not counted as lost.
    lost = [c for run in dropped for c in run
            if not c.isspace() and unicodedata.category(c) not in ("Mn", "Me", "Cf")]
    unique = list(dict.fromkeys(lost))
    shown = " ".join(repr(c) for c in unique[:8]) + (" ..." if len(unique) > 8 else "")
    spoken = "".join(piece for is_tag, piece in split_tags(text) if not is_tag)
    if not any(c.isalnum() for c in spoken):
        left = " ".join(spoken.split())
        what = f"only {left[:20]!r} is left" if left else "nothing is left"
        if lost:
            what = f"'{lang}' dropped {shown} and {what}"
        where = " after normalisation" if normalised else ""
        raise TtsKitError(f"text has nothing to speak{where}: {what}; "
                         "give it some words" + (" or pass the text's own lang=" if lost else ""))
    if not lost:
        return
    letters = sum(c.isalpha() for is_tag, piece in split_tags(original) if not is_tag
                  for c in piece)
    dropped_letters = sum(c.isalpha() for c in lost)
    if letters and 2 * dropped_letters > letters:
        raise TtsKitError(
            f"normalisation for '{lang}' dropped {dropped_letters} of {letters} letters "
            f"({shown}): the text is mostly in a script '{lang}' does not read; pass its own "
            "lang= or transliterate it"
        )
    warnings.warn(
        f"normalisation for '{lang}' dropped {len(lost)} character(s) the model cannot say: "
        f"{shown}; pass the text's own lang= or spell them out to keep them",
        UserWarning, stacklevel=3,
    )


@lru_cache(maxsize=8)
def _default(lang: str) -> Normalizer:
    return Normalizer(lang)


def normalize_for_speech(text: str, lang: str = "ko") -> str:
    """`normalize`, then `check_speakable` (`Normalizer.normalize_for_speech`).

    Example:
        >>> normalize_for_speech("Hello there.", "en")
        'Hello there.'
    """
    return _default(lang).normalize_for_speech(text)


def normalize(text: str, lang: str = "ko") -> str:
    """Spell ``text`` out in ``lang`` with the built-in lexicon (`Normalizer` adds yours).

    Example:
        >>> normalize("FastAPI 서버는 2 vCPU에서 15,000원입니다", "ko")
        '패스트 에이피아이 서버는 이 브이씨피유에서 만 오천 원입니다'
    """
    return _default(lang).normalize(text)
