"""Split a long text into chunks the model reads one at a time, never dropping a word, at
the best boundary (sentence, clause, space); a tag is never split, nor a number from its
unit or words (``5 kg``), nor ``Dr.`` from its name."""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.text.common import TAG
from tts_kit.text.tables import EN_WORDS, KO_COUNTERS, UNITS

#: Boundaries by preference. A break is the position right after the match.
_LEVELS = (
    # sentence ends (CJK and Devanagari full stops need no space) and newlines
    re.compile(r"[.!?…]+[\"')\]}»”’」』]*(?=\s)|[。！？؟।]+[\"')\]}»”’」』]*|\n"),
    # clause punctuation, and dashes used as pauses
    re.compile(r"[,;:]+[\"')\]}»”’]*(?=\s)|[、，；：،]|\s[-–—]\s"),
    # spaces
    re.compile(r"\s+"),
)
_SPACE_LEVEL = 2

_EN_UNIT_WORDS = sorted({w for u in UNITS.values() for w in (u.en, u.en_plural)}
                        | set(EN_WORDS["unit_word"]), key=len, reverse=True)
_EN_NUM = r"(?:" + "|".join(EN_WORDS["number_word"]) + r")(?:-[a-z]+)?"
_KO_NUM = (r"[영공일이삼사오육칠팔구십백천만억조경]+|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열"
           r"|스무|스물|서른|마흔|쉰|예순|일흔|여든|아흔")
_KO_AFTER = "|".join(sorted({*KO_COUNTERS, *(u.ko for u in UNITS.values() if u.ko), "점",
                             "퍼센트", "원", "달러"}, key=len, reverse=True))
#: What stays in one chunk: a number (in digits or words) with what it counts, and an
#: abbreviation with the word after it.
_PROTECTED = re.compile(
    r"(?:[$€£¥₩]\s?)?\d[\d.,:/]*(?:\s+(?:\d[\d.,:/]*|[%A-Za-z가-힣]+))?"
    rf"|\b{_EN_NUM}(?:\s+(?:and\s+)?{_EN_NUM})*"
    rf"(?:\s+(?:{'|'.join(re.escape(w) for w in _EN_UNIT_WORDS)})\b)?"
    rf"|(?<![가-힣])(?:{_KO_NUM})(?:\s(?:{_KO_NUM}))*(?:\s?(?:{_KO_AFTER}))?"
    r"|\b(?:Mr|Mrs|Ms|Dr|St|Prof|Mt|No|Fig|Vol|vs|cf|Gen|Gov|Sen|Capt|Sgt|Lt|[A-Z])\.\s+\S"
    r"|\b(?:e\.g|i\.e|a\.k\.a)\.,?\s+\S"
)


def model_length(text: str) -> int:
    """How many characters the model reads for ``text``: its NFKD length.

    Example:
        >>> model_length("한국어"), model_length("abc")
        (8, 3)
    """
    return len(text) if text.isascii() else len(unicodedata.normalize("NFKD", text))


def chunk(text: str, lang: str = "ko", max_chars: int | None = None, *,
          measure: str = "model") -> list[str]:
    """Split ``text`` into chunks of at most ``max_chars`` characters, only a tag longer;
    ``measure``: ``"model"`` (NFKD length: a Hangul syllable is two or three jamo) or ``"chars"``.

    Example:
        >>> chunk("첫 문장입니다. 둘째 문장입니다.", "ko", max_chars=20)
        ['첫 문장입니다.', '둘째 문장입니다.']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if measure not in ("model", "chars"):
        raise TtsKitError(f"measure must be 'model' or 'chars', got {measure!r}")
    if max_chars is None:  # 300 model characters; upstream's 120 code points of Korean
        ko_chars = measure == "chars" and lang == "ko"
        max_chars = contract.CHUNK_CHARS_KO if ko_chars else contract.CHUNK_CHARS
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise TtsKitError(f"max_chars must be a positive integer, got {max_chars!r}")
    tags = [(m.start(), m.end()) for m in TAG.finditer(text)] if "<" in text else []
    packer = _Packer(text, max_chars, tags, measure == "model")
    packer.pack(0, len(text), 0)
    return packer.out


class _Packer:
    def __init__(self, text: str, limit: int, tags: list[tuple[int, int]], model: bool):
        self.text, self.limit, self.tags = text, limit, tags
        self.out: list[str] = []
        self.tag_starts = [a for a, _ in tags]
        spans = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)
                 if m.end() - m.start() > 1 and any(c.isspace() for c in m.group(0))]
        self.spans, self.span_starts = spans, [a for a, _ in spans]
        # Prefix sums of each character's model length (NFKD), for O(1) lengths.
        self.prefix: list[int] | None = None
        if model and not text.isascii():
            self.prefix = [0, *itertools.accumulate(
                1 if ch < "\u00c0" else len(unicodedata.normalize("NFKD", ch)) for ch in text)]

    def _len(self, a: int, b: int) -> int:
        """The measured length of ``text[a:b]`` with its outer whitespace stripped."""
        text = self.text
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        return b - a if self.prefix is None else self.prefix[b] - self.prefix[a]

    def _tag_at(self, pos: int) -> tuple[int, int] | None:
        """The tag strictly containing ``pos`` (a cut there would split it), if any."""
        i = bisect.bisect_right(self.tag_starts, pos) - 1
        if i >= 0 and self.tags[i][0] < pos < self.tags[i][1]:
            return self.tags[i]
        return None

    def _protected(self, pos: int) -> bool:
        """Whether a cut at ``pos`` would part a `_PROTECTED` span."""
        i = bisect.bisect_left(self.span_starts, pos) - 1
        return i >= 0 and pos < self.spans[i][1]

    def _emit(self, a: int, b: int) -> None:
        piece = self.text[a:b].strip()
        if piece:
            self.out.append(piece)

    def pack(self, a: int, b: int, level: int, guard: bool = True) -> None:
        text, limit = self.text, self.limit
        if self._len(a, b) <= limit:
            self._emit(a, b)
            return
        if level == len(_LEVELS):
            if guard:
                # Protected spans longer than the limit: cut at their spaces after all,
                # rather than inside a word.
                self.pack(a, b, _SPACE_LEVEL, guard=False)
            else:
                self._hard(a, b)
            return
        cuts = [m.end() for m in _LEVELS[level].finditer(text, a, b)]
        cuts = [c for c in cuts if a < c < b and self._tag_at(c) is None
                and not (guard and self._protected(c))]
        if not cuts:
            self.pack(a, b, level + 1, guard)
            return
        bounds = [a, *cuts, b]
        groups: list[tuple[int, int]] = []
        cur_a = cur_b = a
        for s, e in zip(bounds, bounds[1:]):
            if self._len(cur_a, e) <= limit:
                cur_b = e
                continue
            if cur_b > cur_a:
                groups.append((cur_a, cur_b))
            if self._len(s, e) > limit:
                groups.append((s, -e))  # too long on its own: the next level cuts it
                cur_a = cur_b = e
            else:
                cur_a, cur_b = s, e
        if cur_b > cur_a:
            groups.append((cur_a, cur_b))
        if level == _SPACE_LEVEL:
            groups = self._no_widow(groups, bounds)
        for s, e in groups:
            if e < 0:
                self.pack(s, -e, level + 1, guard)
            else:
                self._emit(s, e)

    def _no_widow(self, groups: list[tuple[int, int]], bounds: list[int]
                  ) -> list[tuple[int, int]]:
        """Move words from the second-last group into a last one-word group that fits."""
        if len(groups) < 2 or groups[-1][1] < 0 or groups[-2][1] < 0:
            return groups
        (pa, pb), (la, lb) = groups[-2], groups[-1]
        while len(self.text[la:lb].split()) == 1:
            inner = [c for c in bounds if pa < c < pb]  # cuts inside the previous group
            if not inner or self._len(inner[-1], lb) > self.limit:
                break
            pb = la = inner[-1]
        return [*groups[:-2], (pa, pb), (la, lb)]

    def _hard(self, a: int, b: int) -> None:
        """Cut a word longer than the limit every ``limit`` characters, around tags."""
        text = self.text
        while a < b and text[a].isspace():
            a += 1
        while a < b:
            cut = a + 1
            while cut < b and self._len(a, cut + 1) <= self.limit:
                cut += 1
            tag = self._tag_at(cut) if cut < b else None
            if tag is not None:
                cut = tag[0] if tag[0] > a else tag[1]
            self._emit(a, cut)
            a = cut
            while a < b and text[a].isspace():
                a += 1
