"""`unsupported_characters`: a bundle's indexer (or a set) against a text, after NFKD."""

from __future__ import annotations

import json

import numpy as np

from tts_kit.text import normalize, unsupported_characters


def _indexer(chars: str) -> list[int]:
    ix = [-1] * 65536
    for i, c in enumerate(chars):
        ix[ord(c)] = i
    return ix


def test_with_a_set_of_characters():
    assert unsupported_characters("hello wörld ☃", set("helo wrd")) == ["ö", "☃"]
    assert unsupported_characters("abc", "abc") == []


def test_hangul_is_checked_by_its_jamo_as_the_model_sees_it():
    jamo = "".join(chr(c) for c in [*range(0x1100, 0x1113), *range(0x1161, 0x1176),
                                    *range(0x11A8, 0x11C3)])
    ix = _indexer(jamo + " ")
    assert unsupported_characters("한국어 문장", ix) == []  # no syllable has a token itself
    assert unsupported_characters("한국어 漢字", ix) == ["字", "漢"]


def test_reports_original_characters_sorted_once():
    ix = _indexer("e \u0301")  # e, space, combining acute
    # é decomposes to e + acute: fine. ﬁ (ligature) decomposes to f + i: not.
    assert unsupported_characters("é ﬁ ﬁ é x", ix) == ["x", "ﬁ"]


def test_numpy_indexer_and_out_of_range_code_points():
    ix = np.full(65536, -1, dtype=np.int64)
    ix[[ord(c) for c in "ab"]] = [1, 2]
    assert unsupported_characters("ab😀", ix) == ["😀"]  # beyond the 65,536 entries


def test_normalised_text_is_readable_by_the_real_supertonic_indexer(shared_assets):
    indexer = json.loads((shared_assets / "onnx" / "unicode_indexer.json").read_text())
    raw = "AWS 비용은 $120, 44.1kHz 😀 漢字 ＡＢＣ ①"
    assert unsupported_characters(raw, indexer)  # emoji, at least, cannot be read raw
    assert unsupported_characters(normalize(raw, "ko"), indexer) == []
    assert unsupported_characters(normalize("Café naïve 25°C ½ 😀", "en"), indexer) == []
