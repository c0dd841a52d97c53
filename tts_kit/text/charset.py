"""Which characters a normalised text may keep (the last step removes the rest), and which a
bundle's indexer can read (`unsupported_characters`)."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Sequence

from tts_kit.text.common import Rule, Step, Steps, char_class

#: Punctuation the output may keep (the model reads these as prosody).
BASIC_PUNCT = " .,!?'\"-:;()"
#: Korean keeps the wave dash too: "안녕~" is an intonation, not a symbol.
PUNCT = {"ko": BASIC_PUNCT + "~", "en": BASIC_PUNCT}

#: Combining marks Supertonic's indexer has tokens for; a precomposed Latin letter is kept
#: only when NFKD splits it into ASCII letters and these.
_MARKS = frozenset(
    chr(c) for c in [*range(0x300, 0x305), *range(0x306, 0x30D), 0x313, 0x314, 0x31B, 0x323,
                     0x326, 0x327, 0x328, 0x342]
)
_LATIN_SPECIAL = "ßæÆøØœŒðÐþÞđĐłŁħĦıŋ"


#: Latin letters the output may keep.
LATIN = "".join(sorted({*string.ascii_letters, *_LATIN_SPECIAL} | {
    ch for ch in map(chr, [*range(0xC0, 0x250), *range(0x1E00, 0x1F00)])
    if unicodedata.category(ch)[0] == "L"
    and all(p in string.ascii_letters or p in _MARKS for p in unicodedata.normalize("NFKD", ch))}))
#: Modern Hangul: syllables, compatibility Jamo (less two the indexer lacks after NFKD),
#: and conjoining Jamo (NFKC turns compatibility Jamo into these).
HANGUL_RANGES = (
    "\uac00-\ud7a3\u3131-\u313f\u3141-\u3143\u3145-\u3163"
    "\u1100-\u1112\u1161-\u1175\u11a8-\u11c2"
)


#: Characters that vanish without leaving a space: combining marks NFKC could not
#: compose, zero-width and format characters, variation selectors, emoji tag characters.
_SILENT = re.compile(
    "[\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u064b-\u065f\u1ab0-\u1aff\u1dc0-\u1dff"
    "\u20d0-\u20ff\ufe20-\ufe2f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff"
    "\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef\u180b-\u180e\u034f"
    "\u3099\u309a]+"
)

_SPACE_BEFORE_PUNCT = re.compile(r" (?=[.,!?;:)])")
_SPACE_AFTER_OPEN = re.compile(r"\( ")
_REPEATED_COMMA = re.compile(r",(?: ?,)+")
#: Four or more punctuation marks in a row ("......"), each a pause: kept as the first three.
_PUNCT_RUN = re.compile(r"[.,!?;:~\-](?: ?[.,!?;:~\-]){3,}")


def _drop(m: re.Match[str]) -> str:
    # A run of only marks or format characters sits inside a word: leave no gap there.
    return "" if _SILENT.fullmatch(m.group(0)) else " "


def make_cleanup(lang: str) -> Step:
    """The last step: remove what ``lang`` output may not contain, then tidy spaces and
    cut runs of punctuation to three marks.

    Example:
        >>> make_cleanup("en")("Wait👍.......... what ,  now?!?!?!", None)
        'Wait... what, now?!?'
    """
    allowed = (HANGUL_RANGES if lang == "ko" else "") + char_class(LATIN + PUNCT[lang])
    remove = Rule("remove", re.compile(f"[^{allowed}]+"), _drop)

    def cleanup(text: str, steps: Steps) -> str:
        text = " ".join(remove(text, steps).split())
        if "," in text:
            text = _REPEATED_COMMA.sub(",", text)
        text = _PUNCT_RUN.sub(lambda m: m.group(0).replace(" ", "")[:3], text)
        if " " in text:
            text = _SPACE_BEFORE_PUNCT.sub("", text)
            if "(" in text:
                text = _SPACE_AFTER_OPEN.sub("(", text)
        return text

    return cleanup


def unsupported_characters(text: str, supported: Iterable[str] | Sequence[int], *,
                           model_cleanup: bool = False) -> list[str]:
    """The characters of ``text`` a bundle cannot read (after NFKD), sorted, each once.

    ``supported`` is a set of characters or a bundle's indexer (token ids by code point,
    -1 for none). With ``model_cleanup=True`` what the model's own clean-up removes (emoji)
    counts as readable: what the official ``validate_text`` reports.

    Example:
        >>> unsupported_characters("한 a 漢 😀", set("한 a"), model_cleanup=True)
        ['漢']
    """
    if model_cleanup:
        from tts_kit.core.textproc import clean as parts  # the model-facing step
    else:
        def parts(ch: str) -> str:
            return unicodedata.normalize("NFKD", ch)

    named = isinstance(supported, (set, frozenset, str, dict))

    def ok(c: str) -> bool:
        if named:
            return c in supported
        return ord(c) < len(supported) and supported[ord(c)] >= 0

    # A set names characters, so a character counts as well as its parts; an indexer, parts.
    return sorted(ch for ch in set(text)
                  if not ((named and ok(ch)) or all(ok(c) for c in parts(ch))))
