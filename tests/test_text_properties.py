"""Property tests: for any Unicode text, normalising either refuses it with the documented
ValueError or returns only what the model should read; chunking never loses a character."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tts_kit.text import Normalizer, chunk, normalize
from tts_kit.text.charset import LATIN, PUNCT
from tts_kit.text.common import TAG

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
#: The documented refusals (empty text, nothing speakable left).
REFUSALS = re.compile("text is empty|nothing the model can say")
HANGUL = re.compile("[\uac00-\ud7a3\u3131-\u3163\u1100-\u11ff]")
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d]")

TAGS = st.sampled_from(['<break time="300ms"/>', "<en>", "</en>", "<mark name='a 1'/>", "<b>"])
#: Bits that exercise the rules, mixed with arbitrary Unicode.
SNIPPETS = st.sampled_from([
    "3개", "10:30", "$12.50", "2026-08-24", "AWS", "FastAPI", "50%", "5kg", "-5", "1,000",
    "010-1234-5678", "v1.2.3", "1/2", "제3장", "~", "°C", "3x", "21st", "Dr.", "1990s",
    "😀", "👍🏽", "漢字", "ＡＢＣ１２３", "①", "٣", "\u200d", "e\u0301", "ㅋㅋ", " ", "\n",
])
TEXTS = st.lists(st.one_of(st.text(max_size=20), SNIPPETS, TAGS), max_size=8).map("".join)


def _allowed(lang: str) -> re.Pattern[str]:
    script = "\uac00-\ud7a3\u3131-\u3163\u1100-\u11ff" if lang == "ko" else ""
    body = script + re.escape(LATIN + PUNCT[lang])
    return re.compile(f"[{body}]*")


@pytest.mark.parametrize("lang", ["ko", "en"])
@SETTINGS
@given(text=TEXTS)
def test_any_text_normalises_to_readable_characters_or_is_refused(lang, text):
    try:
        out = normalize(text, lang)
    except ValueError as exc:
        assert REFUSALS.search(str(exc)), exc
        return
    tags_in, tags_out = TAG.findall(text), TAG.findall(out)
    assert tags_out == tags_in  # every tag, unchanged, in order
    rest = TAG.sub("", out)
    assert not any(ch.isdigit() for ch in rest)
    assert not EMOJI.search(rest)
    assert _allowed(lang).fullmatch(rest), (text, out)
    if lang == "en":
        assert not HANGUL.search(rest)
    assert out == out.strip() and all("  " not in piece for piece in TAG.split(out))


@SETTINGS
@given(text=TEXTS)
def test_trace_runs_wherever_normalize_does(text):
    norm = Normalizer("ko")
    try:
        out = norm.normalize(text)
    except ValueError:
        with pytest.raises(ValueError):
            norm.trace(text)
        return
    steps = norm.trace(text)
    assert all(step.before != step.after for step in steps)
    assert out is not None


CHUNK_TEXTS = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
        st.sampled_from([". ", ", ", "! ", "? ", "。", "\n", " ", "; ", " - "]),
        TAGS,
    ),
    max_size=12,
).map("".join)


@SETTINGS
@given(text=CHUNK_TEXTS, limit=st.integers(min_value=1, max_value=60),
       lang=st.sampled_from(["ko", "en", "ja"]))
def test_chunks_join_back_to_the_text_and_respect_the_limit(text, limit, lang):
    chunks = chunk(text, lang, max_chars=limit)
    assert "".join("".join(chunks).split()) == "".join(text.split())
    for c in chunks:
        assert c and c == c.strip()
        assert len(c) <= limit or TAG.fullmatch(c), (limit, c)
    # A tag of the text is whole in exactly one chunk.
    assert sum(len(TAG.findall(c)) for c in chunks) == len(TAG.findall(text))


@SETTINGS
@given(text=TEXTS)
def test_normalised_text_chunks_losslessly(text):
    try:
        out = normalize(text, "ko")
    except ValueError:
        return
    chunks = chunk(out, "ko")
    assert "".join("".join(chunks).split()) == "".join(out.split())
