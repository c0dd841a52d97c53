"""`chunk`: boundaries by preference, tags kept whole, nothing lost, upstream limits."""

from __future__ import annotations

import pytest

from tts_kit import contract
from tts_kit.text import chunk


def _bare(s: str) -> str:
    return "".join(s.split())


def test_default_limits_are_upstream():
    ko = "가나다라마바사. " * 40
    en = "The quick brown fox jumps. " * 40
    assert max(map(len, chunk(ko, "ko"))) <= contract.CHUNK_CHARS_KO == 120
    assert max(map(len, chunk(en, "en"))) <= contract.CHUNK_CHARS == 300
    assert max(map(len, chunk(en, "ja"))) <= 300  # any language code chunks


def test_short_text_is_one_chunk_and_blank_is_none():
    assert chunk("  Hello there.  ", "en") == ["Hello there."]
    assert chunk("   ", "en") == []


def test_sentences_are_packed_greedily_then_split_at_sentence_ends():
    text = "One two. Three four. Five six seven."
    assert chunk(text, "en", max_chars=20) == ["One two. Three four.", "Five six seven."]


def test_clause_punctuation_before_spaces():
    text = "first part, second part; third part"
    assert chunk(text, "en", max_chars=16) == ["first part,", "second part;", "third part"]


def test_spaces_before_cutting_a_word():
    assert chunk("alpha beta gamma delta", "en", max_chars=11) == ["alpha beta", "gamma delta"]


def test_a_word_longer_than_the_limit_is_cut_inside_only_then():
    assert chunk("ab abcdefghij cd", "en", max_chars=4) == ["ab", "abcd", "efgh", "ij", "cd"]


def test_korean_and_cjk_sentence_ends():
    text = "첫 번째 문장입니다. 두 번째 문장이에요! 세 번째는요?"
    want = ["첫 번째 문장입니다.", "두 번째 문장이에요!", "세 번째는요?"]
    assert chunk(text, "ko", max_chars=15) == want
    assert chunk("今日は。明日は。", "ja", max_chars=4) == ["今日は。", "明日は。"]


def test_newlines_are_sentence_boundaries():
    assert chunk("title\nbody text here", "en", max_chars=12) == ["title", "body text", "here"]


def test_tags_are_never_split():
    tag = '<break time="300ms"/>'
    text = f"aaaa{tag}bbbb cccc. dd {tag} ee"
    for limit in range(1, 40):
        chunks = chunk(text, "en", max_chars=limit)
        assert sum(c.count(tag) for c in chunks) == 2, limit
        assert _bare("".join(chunks)) == _bare(text)
        assert all(len(c) <= limit or c == tag for c in chunks), (limit, chunks)


def test_punctuation_inside_a_tag_is_not_a_boundary():
    text = 'Hi <mark name="end. here, ok"/> there friend.'
    assert chunk(text, "en", max_chars=35) == ['Hi <mark name="end. here, ok"/>', "there friend."]


def test_never_truncates_long_text():
    text = " ".join(f"word{i}" for i in range(5000))
    chunks = chunk(text, "en")
    assert _bare("".join(chunks)) == _bare(text)
    assert all(len(c) <= 300 for c in chunks)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True])
def test_bad_limit_is_refused(bad):
    with pytest.raises(ValueError, match="max_chars must be a positive integer"):
        chunk("text", "en", max_chars=bad)


def test_non_string_is_a_type_error():
    with pytest.raises(TypeError):
        chunk(None, "en")  # type: ignore[arg-type]
