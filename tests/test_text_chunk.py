"""`chunk`: boundaries by preference, tags kept whole, nothing lost, upstream limits."""

from __future__ import annotations

import unicodedata

import pytest

from tts_kit.core import contract
from tts_kit.text import chunk, normalize
from tts_kit.text.chunking import model_length


def _bare(s: str) -> str:
    return "".join(s.split())


def test_default_limits_are_the_models_300_characters():
    # Measured as the model reads the text (NFKD): a Hangul syllable is 2 or 3 jamo.
    ko = "가나다라마바사. " * 40
    en = "The quick brown fox jumps. " * 40
    assert max(map(model_length, chunk(ko, "ko"))) <= contract.CHUNK_CHARS == 300
    assert max(map(len, chunk(en, "en"))) <= 300
    assert max(map(len, chunk(en, "ja"))) <= 300  # any language code chunks
    # Counting code points, the upstream sizes: 120 for Korean.
    assert max(map(len, chunk(ko, "ko", measure="chars"))) <= contract.CHUNK_CHARS_KO == 120


def test_korean_chunks_are_sized_by_their_nfkd_length():
    text = "한국어 문장은 자모로 풀리면 길어집니다. " * 10  # about 2.6 jamo a syllable
    for limit in (40, 80, 150):
        chunks = chunk(text, "ko", max_chars=limit)
        assert all(len(unicodedata.normalize("NFKD", c)) <= limit for c in chunks), limit
        # Code points would have let chunks grow 2.6 times longer for the model.
        assert max(len(c) for c in chunks) < limit
    assert len(chunk(text, "ko", max_chars=80)) > len(chunk(text, "ko", max_chars=80,
                                                              measure="chars"))


def test_a_number_and_its_unit_or_words_stay_in_one_chunk():
    text = "The parcel weighs twenty-five kilograms and costs five hundred dollars today."
    for limit in range(22, 60):
        for c in chunk(text, "en", max_chars=limit):
            assert not c.endswith(("twenty-five", "five", "hundred")), (limit, c)
            assert not c.startswith(("kilograms", "hundred", "dollars")), (limit, c)
    ko = normalize("회의는 2026년 8월 24일 10:30에 시작하고 참가비는 15,000원입니다.", "ko")
    for limit in range(30, 80):
        chunks = chunk(ko, "ko", max_chars=limit)
        assert "만 오천 원입니다." in chunks[-1], (limit, chunks)
        assert any("이천이십육 년" in c for c in chunks), (limit, chunks)
    assert chunk("add 5 kg of rice", "en", max_chars=6)[:2] == ["add", "5 kg"]


def test_an_abbreviation_stays_with_its_word():
    for limit in range(15, 30):  # "e.g. tomorrow." fits
        chunks = chunk("Meet Dr. Smith at the clinic, e.g. tomorrow.", "en", max_chars=limit)
        assert not any(c.endswith(("Dr.", "e.g.")) for c in chunks), (limit, chunks)


def test_a_span_longer_than_the_limit_is_cut_at_its_spaces_not_inside_words():
    words = "one hundred and twenty-three thousand four hundred and fifty-six"
    chunks = chunk(words, "en", max_chars=20)
    assert len(chunks) > 1 and all(len(c) <= 20 for c in chunks)
    assert " ".join(chunks) == words  # every cut at a space: no word was cut


def test_the_last_word_is_never_alone():
    assert chunk("alpha beta gamma delta epsilon", "en", max_chars=24) == [
        "alpha beta gamma", "delta epsilon"]
    for limit in range(12, 40):
        text = "we walked along the quiet river until evening came"
        chunks = chunk(text, "en", max_chars=limit)
        if len(chunks) > 1:
            assert " " in chunks[-1], (limit, chunks)


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
    assert chunk(text, "ko", max_chars=15, measure="chars") == want
    assert chunk(text, "ko", max_chars=30) == want  # 24-25 jamo each
    assert chunk("今日は。明日は。", "ja", max_chars=4) == ["今日は。", "明日は。"]


def test_newlines_are_sentence_boundaries():
    # (and "here" does not end up alone)
    assert chunk("title\nbody text here", "en", max_chars=12) == ["title", "body", "text here"]


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
