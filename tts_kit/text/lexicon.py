"""Pronunciation lexicons (``term<TAB>pronunciation`` files; the built-in ones are
``data/lexicons/<lang>.tsv``) compiled into one regex: case-insensitive, longest term first,
whole-word (not glued to Latin letters or digits; a Korean particle may follow: "API를")."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from tts_kit.core.errors import TtsKitError
from tts_kit.text.common import Rule, Steps, char_class, trie_alt
from tts_kit.text.tables import UNITS, builtin_dir

LexiconSource = str | os.PathLike | Mapping[str, str]

_HANGUL = "\uac00-\ud7a3"
#: What a term must not be glued to: Latin letters (accented too) and digits.
_WORDCHAR = "A-Za-z0-9\u00c0-\u024f"
_LETTER = "A-Za-z\u00c0-\u024f"
#: A number (and one space) or a slash right before a term: it may be a unit (3 m2, L/m2).
_AFTER_NUMBER = re.compile(r"(?:\d ?|/)$")
_DECIMAL_BEFORE = re.compile(r"\d[.,]$")
#: Characters a term may be glued after that read as words of their own.
_GLUE = frozenset("0123456789%$€£¥₩")


def read_lexicon(path: str | os.PathLike) -> dict[str, str]:
    """Read one ``term<TAB>pronunciation`` file (``#`` starts a comment line; later lines
    override earlier ones; a malformed line is an error naming it).

    Example:
        >>> read_lexicon(builtin_dir() / "ko.tsv")["ONNX"]
        '온닉스'
    """
    out: dict[str, str] = {}
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: lexicon file not found") from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        term, sep, spoken = raw.partition("\t")
        term, spoken = " ".join(term.split()), " ".join(spoken.split())
        if not sep or not term or not spoken:
            raise TtsKitError(f"{path}:{lineno}: expected 'term<TAB>pronunciation', got {raw!r}")
        out[term] = spoken
    return out


@lru_cache(maxsize=4)
def builtin(lang: str) -> dict[str, str]:
    """The built-in lexicon of ``lang`` (read once per process).

    Example:
        >>> builtin("ko")["ONNX"]
        '온닉스'
    """
    return read_lexicon(builtin_dir() / f"{lang}.tsv")


def _is_hangul(ch: str) -> bool:
    return "\uac00" <= ch <= "\ud7a3"


def _end(term: str) -> str:
    # What may follow ``term``: after Hangul anything (a particle), after a letter digits
    # (Python3), after anything else no word character. A term of one character is its last.
    last = term[-1]
    if _is_hangul(last):
        return ""
    if last.isalpha():
        return f"(?![{_LETTER}])"
    return f"(?![{_WORDCHAR}]|[.,]\\d)"  # COVID-19.5: the term is not the number's head


def _class(chars: Iterable[str]) -> str:
    return "[" + char_class(sorted(chars)) + "]"


def _shared_end(lasts: set[str]) -> str | None:
    """One end check after the trie, by last character; None unless ASCII or Hangul."""
    if any(not c.isascii() and not _is_hangul(c) for c in lasts):
        return None
    groups: dict[str, set[str]] = {}
    for c in lasts:
        groups.setdefault(_end(c), set()).add(c)
    return "(?:" + "|".join(f"(?<={_class(cs)}){end}" for end, cs in sorted(groups.items())) + ")"


@lru_cache(maxsize=32)
def _compile(keys: tuple[str, ...]) -> re.Pattern[str] | None:
    if not keys:
        return None
    hangul = [k for k in keys if _is_hangul(k[0])]
    other = [k for k in keys if not _is_hangul(k[0])]
    parts = []
    for group, before in ((other, _WORDCHAR), (hangul, _HANGUL)):
        if not group:
            continue
        firsts = {c for k in group for c in (k[0], k[0].upper(), k[0].lower())}
        head = f"(?={_class(firsts)})"  # the trie is tried only where a term can start
        shared = _shared_end({k[-1] for k in group})
        body = trie_alt(group, _end if shared is None else lambda term: "")
        parts.append(f"{head}(?<![{before}])" + (body if shared is None else f"(?:{body}){shared}"))
    return re.compile("|".join(parts), re.IGNORECASE)


class Lexicon:
    """Terms and pronunciations, matched whole-word and case-insensitively.

    Example:
        >>> Lexicon({"SaaS": "새스"}).apply("saas 서비스", None)
        '새스 서비스'
    """

    def __init__(self, entries: Mapping[str, str]) -> None:
        self.entries = {" ".join(term.split()).lower(): spoken
                        for term, spoken in entries.items() if term.strip()}
        self._folded = {k.casefold(): v for k, v in self.entries.items()}
        self.pattern = _compile(tuple(sorted(self.entries)))
        self._rule = Rule("lexicon", self.pattern, self._repl) if self.pattern else None

    def __len__(self) -> int:
        return len(self.entries)

    def _repl(self, m: re.Match[str]) -> str:
        found = m.group(0)
        if found in UNITS and _AFTER_NUMBER.search(m.string, max(0, m.start() - 2), m.start()):
            return found  # "a 3 m2 room": a unit as written after a number, not the M2 chip
        if found[0].isdigit() and _DECIMAL_BEFORE.search(m.string, max(0, m.start() - 2),
                                                          m.start()):
            return found  # "1.5g": the 5 is a decimal digit, not the 5G network
        spoken = self.entries.get(found.lower())
        if spoken is None:
            # IGNORECASE also matches a few special case pairs (Kelvin sign, long s).
            spoken = self._folded.get(found.casefold(), found)
        # Glued to a number or a sign (dev2, 50%price): a space keeps the readings apart.
        s, a, b = m.string, m.start(), m.end()
        if a and s[a - 1] in _GLUE and spoken[:1].isalpha():
            spoken = " " + spoken
        if b < len(s) and s[b].isdigit() and spoken[-1:].isalpha():
            spoken += " "
        return spoken

    def apply(self, text: str, steps: Steps) -> str:
        """Replace every term in ``text``; record each replacement in ``steps``.

        Example:
            >>> Lexicon({"TTS": "티티에스"}).apply("TTS와 TTSX", None)
            '티티에스와 TTSX'
        """
        return self._rule(text, steps) if self._rule else text


def load(lang: str, extra: Iterable[LexiconSource] | LexiconSource | None = None) -> Lexicon:
    """The built-in lexicon of ``lang`` overridden by ``extra`` files or mappings, in order.

    Example:
        >>> load("ko", [{"ONNX": "오엔엔엑스"}]).apply("ONNX 모델", None)
        '오엔엔엑스 모델'
    """
    merged = dict(builtin(lang))
    if isinstance(extra, (str, os.PathLike, Mapping)):
        extra = [extra]
    for src in extra or ():
        # Added last, a user's entry wins over a built-in one whatever its case (Lexicon
        # keys terms by their lower case, the last one written kept).
        merged.update(src if isinstance(src, Mapping) else read_lexicon(src))
    return Lexicon(merged)
