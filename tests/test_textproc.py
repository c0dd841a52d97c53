"""Model-facing text processing must give the official package's ids for any text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tts_kit.core.textproc import encode, preprocess
from tts_kit.text import unsupported_characters

supertonic_core = pytest.importorskip("supertonic.core")


@pytest.fixture(scope="module")
def official(tiny_bundle_dir):
    return supertonic_core.UnicodeProcessor(str(tiny_bundle_dir / "onnx/unicode_indexer.json"))


TEXTS = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.sampled_from(["en", "ko", "na"]))
def test_preprocess_matches_official(official, text, lang):
    assert preprocess(text, lang) == official._preprocess_text(text, lang)


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_unsupported_matches_official(official, text):
    indexer = np.asarray(official.indexer)
    assert (unsupported_characters(text, indexer, model_cleanup=True)
            == official.validate_text(text)[1])


def test_encode_matches_official(official):
    texts = ["Hello, world!", "안녕하세요. 반갑습니다.", "Café — “quotes” and 'ticks'"]
    ids, mask = encode(texts, "en", np.asarray(official.indexer))
    want_ids, want_mask = official(texts, "en")
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(mask, want_mask)
