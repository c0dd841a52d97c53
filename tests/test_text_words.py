"""No word is lost: every word of the input is reflected in the normalised text.

A word is a run of Latin letters, a run of Hangul, or a group of digits. Hangul words are
kept as written (a rule may put a space inside or change a particle, named in the trace);
Latin words and digits may be rewritten, but only by a named rule whose trace step
covers the whole word and writes something in its place (issue 24: ``사진.JPG`` lost
사진 to the file-name rule, ``50%price`` lost the p of price to ``%p``).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tts_kit.text import Normalizer

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
WORD = re.compile(r"[A-Za-z]+|[가-힣]+|\d+")
NORM = {lang: Normalizer(lang) for lang in ("ko", "en")}
#: Rules that may rewrite the Hangul they matched (they write a reading of it):
#: a particle chosen again after a number (3이 -> 삼이, 4/7이 -> 칠분의 사가), a weekday
#: in brackets said in full, a unit word said once (시속 90km/h).
HANGUL_REWRITES = {"particle", "weekday", "counter", "unit"}

HANGUL_WORDS = st.sampled_from(
    ["사진", "파일을", "보냈어요", "개", "명", "시", "분", "원", "월", "일", "이", "가", "을",
     "는", "과", "시속", "약", "제", "번", "층", "호", "달러", "억", "만", "퍼센트", "요일",
     "오후", "부터", "까지", "서울시", "강남구"])
LATIN_WORDS = st.sampled_from(
    ["JPG", "pdf", "kim", "price", "dev", "IPv", "km", "h", "kg", "m", "St", "th", "s",
     "API", "Thu", "Sept", "jul", "USD", "KRW", "HK", "ext", "v", "x", "AM", "pm", "com",
     "Henry", "VIII", "mid", "Elm", "bn", "M", "K", "p"])
DIGITS = st.from_regex(r"\A[0-9]{1,6}\Z")
PUNCT = st.sampled_from(list(".,-/:@%$~()+&'!?#*=_") + ["\u00b7", "\u301c", "√", "₩", "€"])
WORDS = st.one_of(HANGUL_WORDS, LATIN_WORDS, DIGITS,
                  st.text(alphabet="가나다라마바사아자차카타파하", min_size=1, max_size=4),
                  st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                          min_size=1, max_size=5))
PIECES = st.lists(st.one_of(WORDS, PUNCT, st.sampled_from([" ", " ", ""])),
                  min_size=1, max_size=10).map("".join)


def lost_words(text: str, lang: str) -> list[str]:
    """The words of ``text`` its normalised form does not reflect (see the module doc)."""
    norm = NORM[lang]
    try:
        out = norm.normalize(text)
    except ValueError:
        return []  # refused as a whole (nothing speakable): nothing silently lost
    steps = norm.trace(text)
    flat = out.replace(" ", "")
    lost = []
    for m in WORD.finditer(text):
        w = m.group(0)
        if "가" <= w[0] <= "힣":
            if w in flat or any(w in s.before.replace(" ", "") and s.rule in HANGUL_REWRITES
                                or _particle_changed(w, s, flat) or _split(w, s, flat)
                                for s in steps):
                continue
            if lang == "en" and any(s.rule == "remove" for s in steps):
                continue  # English removes Hangul, and says so (rule "remove")
        elif w.isalpha() and w.lower() in out.lower().split() or w in out:
            continue
        # Rewritten: a named step matched the whole word (with what was glued to it) and
        # wrote words in its place.
        if any(w in s.before and re.search(r"\w", s.after) for s in steps):
            continue
        lost.append(w)
    return lost


def _particle_changed(word: str, step, flat: str) -> bool:
    """``word`` ends in a particle the ``particle`` rule chose again (4차이 -> 사 차가)."""
    return (step.rule == "particle" and word.endswith(step.before)
            and word[: len(word) - len(step.before)] + step.after in flat)


def _split(word: str, step, flat: str) -> bool:
    """A rule took the head of ``word`` with a number (HK$74억파일을: 억 is the amount's)
    and the rest is in the output."""
    return any(step.before.endswith(word[:k]) and word[k:] in flat
               for k in range(1, len(word)))


@pytest.mark.parametrize(("text", "word"), [
    ("사진.JPG 파일을 보냈어요", "사진"),
    ("보고서.pdf를 열어", "보고서"),
    ("자료_v2.csv를 봐요", "자료"),
])
def test_a_korean_word_glued_to_a_file_name_is_kept(text, word):
    out = NORM["ko"].normalize(text)
    assert word in out, out
    assert lost_words(text, "ko") == []


def test_the_lost_word_bug_reads_naturally():
    assert NORM["ko"].normalize("사진.JPG 파일을 보냈어요") == "사진 닷 제이피지 파일을 보냈어요"


@pytest.mark.parametrize("lang", ["ko", "en"])
@SETTINGS
@given(text=PIECES)
@example(text="사진.JPG 파일을 보냈어요")
@example(text="50%price")
@example(text="dev2 IPv6 kim@naver.com")
@example(text="시속 90km/h 2과 √3/2 HK$ 80")
@example(text="3월 2일(월)~5일(목) 22-95-81")
@example(text="HK$7421억파일을=503")
def test_every_word_is_reflected_in_the_output(lang, text):
    assert lost_words(text, lang) == [], (text, NORM[lang].normalize(text),
                                          NORM[lang].trace(text))
