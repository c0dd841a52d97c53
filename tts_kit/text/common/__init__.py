"""What every language shares: limits, the rule runner and its trace, tags, Unicode. A
language is a list of steps, ``step(text, steps) -> text``, most of them a `Rule`."""

from __future__ import annotations

import os
import re
import string
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tts_kit.core.errors import TtsKitError

#: Languages `normalize` knows the rules of.
LANGS: tuple[str, ...] = ("ko", "en")
#: Longest text one call accepts; longer input is refused, never cut.
MAX_CHARS = 100_000


@dataclass(frozen=True)
class TraceStep:
    """One change a rule made: which rule, the span it matched, what it wrote.

    Example:
        >>> TraceStep("counter", "3개", "세 개")
        TraceStep(rule='counter', before='3개', after='세 개')
    """

    rule: str
    before: str  #: the span the rule matched
    after: str  #: what the rule replaced it with


Steps = list[TraceStep] | None
Step = Callable[[str, Steps], str]
#: What follows a period that also ends the sentence (etc. Then): the end, a capital, a quote.
SENTENCE_NEXT = re.compile(r"\s*(?:$|[A-Z\"'(])")


@dataclass(frozen=True)
class Rule:
    """One regular expression and the function that writes each replacement.

    Example:
        >>> Rule("x", re.compile("a"), lambda m: "b")("banana", None)
        'bbnbnb'
    """

    name: str  #: shown in traces
    pattern: re.Pattern[str]
    repl: Callable[[re.Match[str]], str]  #: returning the match leaves it alone
    by_group: bool = False  #: trace each step as the alternative that matched (lastgroup)
    aliases: dict[str, str] = field(default_factory=dict)  #: group -> trace name (qn: number)
    needs: str = ""  #: a string every match contains: text without it is not scanned

    def __call__(self, text: str, steps: Steps) -> str:
        if self.needs and self.needs not in text:
            return text
        if steps is None:
            return self.pattern.sub(self.repl, text)

        def recording(m: re.Match[str]) -> str:
            out = self.repl(m)
            if out != m.group(0):
                name = self.name
                if self.by_group and m.lastgroup:
                    name = self.aliases.get(m.lastgroup, m.lastgroup)
                steps.append(TraceStep(getattr(out, "rule", name), m.group(0), out))
            return out

        return self.pattern.sub(recording, text)


class Reading(str):
    """A replacement naming, in a trace, the reading its context chose (``year``).

    Example:
        >>> Reading("nineteen seventy", "year").rule
        'year'
    """

    rule: str

    def __new__(cls, text: str, rule: str) -> Reading:
        self = super().__new__(cls, text)
        self.rule = rule
        return self


def record_diff(rule: str, before: str, after: str, steps: Steps) -> str:
    """Record a whole-text change as the span that differs (common ends trimmed); ``after``.

    Example:
        >>> record_diff("unicode", "a①b", "a1b", steps := []), steps
        ('a1b', [TraceStep(rule='unicode', before='①', after='1')])
    """
    if steps is not None and before != after:
        i = len(os.path.commonprefix([before, after]))
        j = len(os.path.commonprefix([before[i:][::-1], after[i:][::-1]]))
        steps.append(TraceStep(rule, before[i : len(before) - j], after[i : len(after) - j]))
    return after


def trie_alt(words: Iterable[str], end: Callable[[str], str] | None = None) -> str:
    """A regex alternation of ``words`` shaped like a trie (``a(?:pi|ws)``), longest first;
    ``end(word)``, if given, is the pattern written after each word.

    Example:
        >>> trie_alt(["개", "개월", "명"]), trie_alt(["ab"], lambda w: "$")
        ('(?:개(?:월)?|명)', '(?:ab$)')
    """
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = w

    def emit(node: dict) -> str:
        alts = [re.escape(ch) + emit(node[ch]) for ch in sorted(k for k in node if k)]
        if end is not None and "" in node:
            alts.append(end(node[""]))
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "(?:" + body + ")?" if end is None and "" in node else body

    out = emit(trie)
    return out if len([k for k in trie if k]) > 1 else "(?:" + out + ")"


def char_class(chars: Iterable[str]) -> str:
    """The body of a regex character class of ``chars``.

    Example:
        >>> print(char_class("a-]"))
        a\\-\\]
    """
    return "".join("\\" + c if c in "\\]^-[" else c for c in chars)


# -- validation -------------------------------------------------------------------------


def check_lang(lang: str) -> str:
    """Return ``lang`` if normalisation rules exist for it, else raise TtsKitError.

    Example:
        >>> check_lang("ko")
        'ko'
    """
    if lang not in LANGS:
        raise TtsKitError(
            f"no normalisation rules for language {lang!r}; use one of: {', '.join(LANGS)}"
        )
    return lang


def check_text(text: str) -> str:
    """Refuse what cannot be normalised: not a str, empty, or over `MAX_CHARS`.

    Example:
        >>> check_text("안녕")
        '안녕'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise TtsKitError(
            f"text has {len(text):,} characters, more than the {MAX_CHARS:,} one call "
            "accepts; split it (tts_kit.text.chunk) and normalise the pieces"
        )
    if not text.strip():
        raise TtsKitError("text is empty (or only whitespace); give at least one word")
    return text


# -- markup tags ------------------------------------------------------------------------

#: A markup tag (``<break time="300ms"/>``, ``</en>``); "3 < 5 > 2" is none.
TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
_TAG_SPLIT = re.compile(f"({TAG.pattern})")


def split_tags(text: str) -> list[tuple[bool, str]]:
    """Split into ``(is_tag, piece)`` pairs; joining the pieces gives ``text`` back.

    Example:
        >>> split_tags('a <break time="1s"/> b')
        [(False, 'a '), (True, '<break time="1s"/>'), (False, ' b')]
    """
    if "<" not in text:
        return [(False, text)]
    return [(i % 2 == 1, piece) for i, piece in enumerate(_TAG_SPLIT.split(text)) if piece]


#: A language tag (``<ko>``, ``</en>``); the model reads one language per call.
LANGUAGE_TAG = re.compile(r"</?([a-z]{2})>", re.IGNORECASE)


def language_tags(text: str, lang: str) -> str:
    """Drop language tags naming ``lang``; refuse a tag naming another language (the
    model-facing step adds ``<lang>`` itself). Other tags are left alone.

    Example:
        >>> language_tags("<en>Hello</en> there", "en")
        'Hello there'
    """
    if "<" not in text:
        return text
    from tts_kit.core.contract import LANGUAGES

    def tag(m: re.Match[str]) -> str:
        code = m.group(1).lower()
        if code not in LANGUAGES:
            return m.group(0)
        if code != lang:
            raise TtsKitError(
                f"text has a <{code}> tag but lang is '{lang}'; the model reads one language "
                f"per call: synthesise that part separately with lang='{code}'"
            )
        return ""

    return LANGUAGE_TAG.sub(tag, text)


_HANGUL = re.compile("[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
_LATIN = re.compile("[A-Za-z]")


def other_language(text: str, lang: str) -> str | None:
    """The language ``text`` is clearly written in when that is not ``lang``, else None:
    for English, more Hangul than Latin letters (two or more); for Korean, no Hangul and
    three Latin letters or more. Mixed text is never flagged.

    Example:
        >>> other_language("회의는 10시에", "en"), other_language("FastAPI 서버", "ko")
        ('ko', None)
    """
    hangul = len(_HANGUL.findall(text))
    latin = len(_LATIN.findall(text))
    if lang == "en" and hangul >= 2 and hangul > latin:
        return "ko"
    if lang == "ko" and hangul == 0 and latin >= 3:
        return "en"
    return None


# -- Unicode preparation ------------------------------------------------------------------

#: Decimal digits of other scripts, read as the ASCII digits they are.
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
#: Typographic punctuation with a plain equivalent the rules and the model know.
_PUNCT_MAP = {
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "`": "'", "\u2212": "-", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2043": "-",
    "\u301c": "~", "\u223c": "~", "\u00b7": " ", "\u30fb": " ", "\u2022": " ",
    "\u300c": '"', "\u300d": '"', "\u300e": '"', "\u300f": '"', "\u2044": "/",
}
_PUNCT = re.compile("[" + "".join(_PUNCT_MAP) + "]")
_WHITESPACE = re.compile(r"\s+")
_WEEKDAY_CHARS = frozenset("월화수목금토일")


def _punct(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in "\u00b7\u30fb":
        # Kept between digits (6·25, a date) and weekdays (월·수·금): the rules read both.
        s, i = m.string, m.start()
        if 0 < i < len(s) - 1 and (s[i - 1].isdigit() and s[i + 1].isdigit()
                                   or s[i - 1] in _WEEKDAY_CHARS and s[i + 1] in _WEEKDAY_CHARS):
            return "\u00b7"
    return _PUNCT_MAP[ch]


#: ANSI escape sequences (colours, cursor moves, window titles).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_]?)")
#: A no-break or thin space between digit groups (10 000 km): a thousands separator.
_SPACED_DIGITS = re.compile(r"(?<=\d)[\u00a0\u202f\u2009](?=\d{3}(?!\d))")
_SPACE_OR_ROMAN = re.compile("[\u00a0\u202f\u2009\u2160-\u2182\u2185-\u2188]")
#: Roman numerals written as their own characters (Ⅻ, ↀ; not the letters U+2183/4).
_ROMAN_CHARS = re.compile("[\u2160-\u2182\u2185-\u2188]+")


def _roman_chars(m: re.Match[str]) -> str:
    # Ⅻ -> 12; after a capitalised word (Louis Ⅻ) the letters, for the Roman rules.
    letters = unicodedata.normalize("NFKC", m.group(0)).upper()
    before = m.string[max(0, m.start() - 20) : m.start()]
    if letters.isascii() and re.search(r"[A-Z][a-z]+ $", before):
        return letters
    return str(roman_value(letters))


def roman_value(letters: str) -> int:
    """The value of Roman numeral letters.

    Example:
        >>> roman_value("XIV"), roman_value("MCMXC")
        (14, 1990)
    """
    total = 0
    for a, b in zip(letters, letters[1:] + " "):
        v = _ROMAN_VALUE.get(a) or int(unicodedata.numeric(a))  # ↀ (no letters): 1000
        total += -v if _ROMAN_VALUE.get(b, 0) > v else v
    return total


_ROMAN_VALUE = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
#: º after a number is a degree sign (45º), which NFKC would make the letter o.
_DEGREE = re.compile(r"(?<=\d)º|(?<=\d )º(?=[CF]?\b)")
#: A digit right before a vulgar fraction (3½): NFKC would glue them into 31⁄2.
_DIGIT_FRACTION = re.compile("(?<=[0-9])(?=[\u00bc-\u00be\u2150-\u215e])")


def prepare(text: str, steps: Steps) -> str:
    """NFKC (Hangul stays composed), other scripts' digits as ASCII, typographic
    punctuation as plain, one space.

    Example:
        >>> prepare("３㎏ “ok”  ①", None)
        '3kg "ok" 1'
    """
    if "\x1b" in text:  # terminal colours and cursor moves are not text
        text = record_diff("control", text, _ANSI.sub("", text), steps)
    if not text.isascii():
        before = text
        if _SPACE_OR_ROMAN.search(text):
            text = _ROMAN_CHARS.sub(_roman_chars, _SPACED_DIGITS.sub(",", text))
            record_diff("digits", before, text, steps)
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", _DIGIT_FRACTION.sub(" ", _DEGREE.sub("°", text)))
            record_diff("unicode", before, text, steps)
        if _OTHER_DIGIT.search(text):
            ascii_digits = _OTHER_DIGIT.sub(lambda m: str(unicodedata.digit(m.group(0), 0)), text)
            text = record_diff("digits", text, ascii_digits, steps)
        if _PUNCT.search(text):
            text = record_diff("punctuation", text, _PUNCT.sub(_punct, text), steps)
    tidy = " ".join(text.split())
    if steps is not None and tidy != text:
        steps.extend(TraceStep("whitespace", ws, " ")
                     for ws in _WHITESPACE.findall(text.strip()) if ws != " ")
    return tidy


ASCII_LETTERS = frozenset(string.ascii_letters)
#: Tails that make no sense after a number glued to letters ("MP3s", "Win10x").
NOT_AFTER_LETTERS = frozenset({"unit", "magnitude", "ampm", "times"})


def make_numeric(handlers: dict[str, Callable[[re.Match[str]], str]],
                 plain: Callable[[str], str]) -> Callable[[re.Match[str]], str]:
    """The replacement function of a language's numeric alternation: ``handlers`` maps
    each named alternative to its reading, ``plain`` reads a bare number.

    Example:
        >>> re.sub(r"(?P<qn>\\d+)", make_numeric({"qn": lambda m: "n"}, str), "a 1 b")
        'a n b'
    """

    def numeric(m: re.Match[str]) -> str:
        s, a, b = m.string, m.start(), m.end()
        group = m.lastgroup
        if group in NOT_AFTER_LETTERS and a and s[a - 1] in ASCII_LETTERS:
            tail = s[m.end("qn") : b]
            return " " + plain(s[a : m.end("qn")]) + " " + tail.strip()
        out = handlers[group](m)
        # Keep words apart from Latin letters they were glued to (RTX4090, 4K).
        if a and s[a - 1] in ASCII_LETTERS:
            out = " " + out
        if b < len(s) and s[b] in ASCII_LETTERS:
            out += " "
        return out

    return numeric
