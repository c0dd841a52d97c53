"""Split a long text into chunks the model reads one at a time, never dropping a word.

Chunks are packed greedily up to ``max_chars`` at the best boundary available:
sentence ends first, then clause punctuation, then spaces, and inside a word only when
a single word is longer than the limit. A markup tag is never split. Joining the
chunks gives the text back, up to whitespace at the cuts.

Example:
    >>> from tts_kit.text import chunk
    >>> chunk("One. Two, three four.", "en", max_chars=10)
    ['One.', 'Two,', 'three', 'four.']
"""

from __future__ import annotations

import bisect
import re

from .. import contract
from .common import TAG

#: Boundaries by preference. A break is the position right after the match.
_LEVELS = (
    # sentence ends (also CJK and Devanagari full stops, which need no space) and newlines
    re.compile(r"[.!?…]+[\"')\]}»”’」』]*(?=\s)|[。！？؟।]+[\"')\]}»”’」』]*|\n"),
    # clause punctuation, and dashes used as pauses
    re.compile(r"[,;:]+[\"')\]}»”’]*(?=\s)|[、，；：،]|\s[-–—]\s"),
    # spaces
    re.compile(r"\s+"),
)


def default_max_chars(lang: str) -> int:
    """The upstream chunk size: 120 characters for Korean, 300 otherwise.

    Example:
        >>> default_max_chars("ko"), default_max_chars("en")
        (120, 300)
    """
    return contract.CHUNK_CHARS_KO if lang == "ko" else contract.CHUNK_CHARS


def chunk(text: str, lang: str = "ko", max_chars: int | None = None) -> list[str]:
    """Split ``text`` into chunks of at most ``max_chars`` characters (see module doc).

    A chunk is longer than ``max_chars`` only when it is a single markup tag that is.
    Whitespace-only text gives no chunks.

    Example:
        >>> chunk("첫 문장입니다. 둘째 문장입니다.", "ko", max_chars=10)
        ['첫 문장입니다.', '둘째 문장입니다.']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if max_chars is None:
        max_chars = default_max_chars(lang)
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_chars must be a positive integer, got {max_chars!r}")
    tags = [(m.start(), m.end()) for m in TAG.finditer(text)] if "<" in text else []
    out: list[str] = []
    _Packer(text, max_chars, tags, out).pack(0, len(text), 0)
    return out


class _Packer:
    def __init__(self, text: str, limit: int, tags: list[tuple[int, int]], out: list[str]):
        self.text, self.limit, self.tags, self.out = text, limit, tags, out
        self.tag_starts = [a for a, _ in tags]

    def _tag_at(self, pos: int) -> tuple[int, int] | None:
        """The tag strictly containing ``pos`` (a cut there would split it), if any."""
        i = bisect.bisect_right(self.tag_starts, pos) - 1
        if i >= 0 and self.tags[i][0] < pos < self.tags[i][1]:
            return self.tags[i]
        return None

    def _emit(self, a: int, b: int) -> None:
        piece = self.text[a:b].strip()
        if piece:
            self.out.append(piece)

    def pack(self, a: int, b: int, level: int) -> None:
        text, limit = self.text, self.limit
        if len(text[a:b].strip()) <= limit:
            self._emit(a, b)
            return
        if level == len(_LEVELS):
            self._hard(a, b)
            return
        cuts = [m.end() for m in _LEVELS[level].finditer(text, a, b)]
        cuts = [c for c in cuts if a < c < b and self._tag_at(c) is None]
        if not cuts:
            self.pack(a, b, level + 1)
            return
        bounds = [a, *cuts, b]
        cur_a = cur_b = a
        for s, e in zip(bounds, bounds[1:]):
            if len(text[cur_a:e].strip()) <= limit:
                cur_b = e
                continue
            if cur_b > cur_a:
                self._emit(cur_a, cur_b)
            if len(text[s:e].strip()) > limit:
                self.pack(s, e, level + 1)
                cur_a = cur_b = e
            else:
                cur_a, cur_b = s, e
        if cur_b > cur_a:
            self._emit(cur_a, cur_b)

    def _hard(self, a: int, b: int) -> None:
        """Cut a word longer than the limit every ``limit`` characters, around tags."""
        text = self.text
        while a < b and text[a].isspace():
            a += 1
        while a < b:
            cut = min(a + self.limit, b)
            tag = self._tag_at(cut) if cut < b else None
            if tag is not None:
                cut = tag[0] if tag[0] > a else tag[1]
            self._emit(a, cut)
            a = cut
            while a < b and text[a].isspace():
                a += 1
