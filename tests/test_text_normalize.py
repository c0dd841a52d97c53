"""`normalize` and `Normalizer`: errors, tags, trace, lexicons, num2words, the article's bugs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from num2words import num2words

from tts_kit.text import MAX_CHARS, Normalizer, TraceStep, normalize
from tts_kit.text import numbers as nw

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def article():
    """The source article's normaliser, transcribed in bench/_article_normalizer.py."""
    spec = importlib.util.spec_from_file_location("_article", ROOT / "bench/_article_normalizer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SupertonicTextNormalizer()


# -- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
@pytest.mark.parametrize("lang", ["ko", "en"])
def test_empty_text_is_refused(text, lang):
    with pytest.raises(ValueError, match="text is empty"):
        normalize(text, lang)


def test_unknown_language_names_the_supported_ones():
    with pytest.raises(ValueError, match=r"'ja'.*ko, en"):
        normalize("こんにちは", "ja")
    with pytest.raises(ValueError, match="ko, en"):
        Normalizer("fr")


def test_over_long_text_is_refused_not_cut():
    with pytest.raises(ValueError, match=r"100,001 characters.*100,000"):
        normalize("가" * (MAX_CHARS + 1), "ko")
    out = normalize("가 " * (MAX_CHARS // 2), "ko")  # exactly the limit is fine, all kept
    assert out.count("가") == MAX_CHARS // 2


def test_non_string_is_a_type_error():
    with pytest.raises(TypeError, match="str"):
        normalize(123, "en")  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["😀👍", "★☆", "漢字", "\u200b\u200b"])
def test_text_with_nothing_speakable_is_refused(text):
    with pytest.raises(ValueError, match="nothing the model can say"):
        normalize(text, "ko")


# -- tags and clean-up ------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_tags_pass_through_byte_for_byte(lang):
    tags = ['<break time="300ms"/>', "<break  time='1.5 s' />", "<en>", "</en>", "<mark name=x_1>"]
    text = f"{tags[0]} 3 {tags[1]}10:30{tags[2]}ABC{tags[3]} {tags[4]}😀"
    out = normalize(text, lang)
    assert re.findall(r"<[^<>]*>", out) == tags
    assert not re.search(r"\d", re.sub(r"<[^<>]*>", "", out))


def test_only_tags_are_kept():
    assert normalize('<break time="1s"/>', "en") == '<break time="1s"/>'


def test_spaces_around_tags_are_tidied_not_merged():
    assert normalize('  a  <b/>  c  ', "en") == "a <b/> c"
    assert normalize("a<b/>c", "en") == "a<b/>c"


def test_full_width_and_other_scripts_digits_are_read():
    assert normalize("３개", "ko") == "세 개"
    assert normalize("٣ apples", "en") == "three apples"  # Arabic-Indic three
    assert normalize("① item", "en") == "one item"


# -- trace ------------------------------------------------------------------------------


def test_trace_lists_each_change_with_its_rule():
    steps = Normalizer("ko").trace("AWS로 10:30에 사과 3개 😀")
    assert all(isinstance(s, TraceStep) for s in steps)
    assert [(s.rule, s.before, s.after) for s in steps] == [
        ("time", "10:30", "열 시 삼십 분"),
        ("counter", "3개", "세 개"),
        ("acronym", "AWS", "에이더블유에스"),
        ("remove", "😀", " "),
    ]


def test_trace_names_lexicon_and_english_rules():
    steps = Normalizer("en").trace("Dr. Kim's API costs $5 on 2026-08-24.")
    rules = [s.rule for s in steps]
    assert rules == ["lexicon", "abbreviation", "currency", "date_iso"]
    assert steps[0] == TraceStep("lexicon", "API", "A P I")


def test_trace_is_empty_when_nothing_changes_and_agrees_with_normalize():
    norm = Normalizer("ko")
    assert norm.trace("안녕하세요.") == []
    text = "FastAPI 서버 2대, 15,000원, 2026-08-24"
    steps = norm.trace(text)
    want = "패스트 에이피아이 서버 두 대, 만 오천 원, 이천이십육 년 팔월 이십사 일"
    assert steps and norm.normalize(text) == want


def test_trace_records_unicode_preparation():
    steps = Normalizer("ko").trace("３㎏")
    assert steps[0] == TraceStep("unicode", "３㎏", "3kg")
    assert steps[1].rule == "unit"


# -- lexicons ---------------------------------------------------------------------------


def test_user_lexicon_file_overrides_builtin(tmp_path):
    lex = tmp_path / "mine.tsv"
    lex.write_text("# my terms\nonnx\t오엔엔엑스\nTuBrief\t튜브리프\n", encoding="utf-8")
    norm = Normalizer("ko", lexicons=[lex])
    assert norm.normalize("ONNX 모델, TuBrief 편집팀") == "오엔엔엑스 모델, 튜브리프 편집팀"
    assert normalize("ONNX 모델", "ko") == "온닉스 모델"  # the default is untouched


def test_later_lexicons_win_and_mappings_work():
    norm = Normalizer("en", lexicons=[{"Supertonic": "super tonic"}, {"supertonic": "soup"}])
    assert norm.normalize("Supertonic rocks") == "soup rocks"


def test_lexicon_matches_whole_words_longest_first_any_case():
    norm = Normalizer("ko")
    assert norm.normalize("FastAPI api Api") == "패스트 에이피아이 에이피아이 에이피아이"
    assert norm.normalize("FastAPIs") == "FastAPIs"  # glued to more letters: not the term
    assert norm.normalize("ONNX Runtime") == "온닉스 런타임"  # the longer term wins


def test_malformed_lexicon_line_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("ok\t오케이\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tsv:2: expected 'term<TAB>pronunciation'"):
        Normalizer("ko", lexicons=[bad])
    with pytest.raises(FileNotFoundError, match="lexicon file not found"):
        Normalizer("ko", lexicons=[tmp_path / "missing.tsv"])


def test_shipped_lexicons_hold_the_article_terms():
    from tts_kit.text.lexicon import builtin

    ko = builtin("ko")
    assert {k: ko[k] for k in ("FastAPI", "SaaS", "TTS", "ONNX", "Python", "SDK", "API")} == {
        "FastAPI": "패스트 에이피아이", "SaaS": "새스", "TTS": "티티에스", "ONNX": "온닉스",
        "Python": "파이썬", "SDK": "에스디케이", "API": "에이피아이",
    }
    assert len(ko) >= 150 and len(builtin("en")) >= 100
    en = builtin("en")
    assert {"FastAPI", "SaaS", "TTS", "ONNX", "SDK", "API"} <= set(en)


def test_shipped_pronunciations_survive_the_later_rules():
    from tts_kit.text.lexicon import builtin

    for term, spoken in builtin("ko").items():
        assert re.fullmatch(r"[가-힣 ]+", spoken), (term, spoken)
    for term, spoken in builtin("en").items():
        # A run of capitals would be spelled out again by the acronym rule.
        assert not re.search(r"[A-Z]{2}", spoken), (term, spoken)
        assert not re.search(r"\d", spoken), (term, spoken)


# -- number words -------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 10, 11, 20, 99, 100, 101, 1000, 10000, 15000, 123456,
                               10**8, 110000000, 1234567890123])
def test_sino_korean_and_english_cardinals_come_from_num2words(n):
    assert nw.ko_sino(n) == num2words(n, lang="ko")
    assert nw.en_cardinal(n) == num2words(n, lang="en").replace(",", "")


def test_native_korean_numerals_are_complete_for_1_to_99():
    # num2words' Korean ordinals hold the native numerals; ours must agree where it is
    # right: below 100, except 20 (below).
    for n in [*range(2, 20), *range(21, 100)]:
        assert normalize(f"{n}번째", "ko") == num2words(n, lang="ko", to="ordinal")
    assert nw.ko_native(100) is None


def test_num2words_korean_ordinals_are_wrong_at_20_and_above_100_ours_are_not():
    # Before a counter 스물 becomes 스무; from 100 on the ordinal is Sino-Korean, one word
    # (백일 번째, as NeMo's Korean grammar reads it), never num2words' "백 한 번째".
    assert num2words(20, lang="ko", to="ordinal") == "스물 번째"
    assert normalize("20번째", "ko") == "스무 번째"
    assert num2words(101, lang="ko", to="ordinal") == "백 한 번째"
    assert normalize("101번째", "ko") == "백일 번째"


# -- the source article's normaliser, side by side ------------------------------------------


def test_article_time_rule_keeps_the_digits_ours_spells_them(article):
    text = "회의는 10:30에 시작합니다"
    assert article.normalize(text) == "회의는 10시 30분에 시작합니다"
    assert normalize(text, "ko") == "회의는 열 시 삼십 분에 시작합니다"


def test_article_currency_rule_is_never_applied_ours_is(article):
    text = "가격은 5000 원입니다"
    assert article.currency_pattern.search(text)  # its pattern matches...
    assert article.normalize(text) == text  # ...but normalize() never uses it
    assert normalize(text, "ko") == "가격은 오천 원입니다"


def test_article_date_rule_leaves_digits_ours_reads_them(article):
    text = "2026년 8월 24일"
    assert article.normalize(text) == text
    assert normalize(text, "ko") == "이천이십육 년 팔월 이십사 일"


def test_article_lexicon_misses_terms_before_particles_ours_does_not(article):
    text = "API를 호출하고 TTS로 읽습니다"
    assert article.normalize(text) == text  # \bAPI\b never matches before 를
    assert normalize(text, "ko") == "에이피아이를 호출하고 티티에스로 읽습니다"


def test_article_filter_drops_percent_and_dollar_ours_reads_them(article):
    text = "비용이 $120에서 50% 줄었다"
    assert article.normalize(text) == "비용이 120에서 50 줄었다"
    assert normalize(text, "ko") == "비용이 백이십 달러에서 오십 퍼센트 줄었다"


@pytest.mark.parametrize("text", ["회의는 10:30", "5000 원", "2026년 8월 24일", "3개", "50%"])
def test_article_output_keeps_digits_ours_never_does(article, text):
    assert re.search(r"\d", article.normalize(text))
    assert not re.search(r"\d", normalize(text, "ko"))


@pytest.mark.parametrize("module", ["common", "charset", "numbers", "tables", "lexicon", "ko",
                                    "en", "normalizer", "chunking", "__init__"])
def test_docstring_examples_hold(module):
    import doctest
    import importlib

    name = "tts_kit.text" if module == "__init__" else f"tts_kit.text.{module}"
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_huge_numbers_are_read_digit_by_digit(lang):
    big = "9" * 5000  # past Python's int() limit for strings: must never reach it
    for text in (big, big + "개", "$" + big, big + ".5", "1." + big, big + "/2", big + ":30",
                 "v" + big + ".1.1", big + "~" + big + "%"):
        out = normalize(text, lang)
        assert out and not any(c.isdigit() for c in out)


# -- issue 14: every new class is a rule the trace names ----------------------------------

TRACED = [
    ("en", "He was born (1986).", "paren_year"),
    ("en", "01/07/98", "date_us"),
    ("en", "Louis XIV ruled", "roman"),
    ("en", "2pm-5pm", "arange"),
    ("en", "see https://example.com", "url"),
    ("en", "mail a.b@example.com", "email"),
    ("en", "open report.pdf", "file"),
    ("en", "ping 8.8.8.8", "ip"),
    ("en", "100 million kg", "scale"),
    ("en", "2 1/2 cups", "mixed"),
    ("en", "my 401(k)", "plan"),
    ("en", "serial SN-4471-XK2", "serial"),
    ("en", "-$5.00", "currency"),
    ("en", "USD 100", "code_first"),
    # issue 36: each reading chosen by context names the rule that chose it
    ("en", "2450 N Oak Ave", "street"),
    ("en", "Austin, TX 78701", "state"),
    ("en", "Apt 4B", "unit_no"),
    ("en", "the A320", "code"),
    ("en", "growth in 2Q22", "quarter"),
    ("en", "12:00 noon", "noon"),
    ("en", "it costs 12/kg", "bare_per"),
    ("en", "the on/off switch", "slash"),
    ("en", "see /usr/local/bin", "path"),
    ("en", "see news.abc", "domain"),
    ("en", "call 1-800-FLOWERS", "vanity"),
    ("en", "a \x1b[31mred\x1b[0m word", "control"),
    ("en", "born in 1970", "year"),  # context chose a year ...
    ("en", "They sold 1970 tickets", "number"),  # ... or a quantity
    ("en", "the RTX 4090", "code"),
    ("en", "on 7/16 we met", "date"),
    ("en", "a 7/16 wrench", "fraction"),
    ("en", "so 3-1=2", "math"),
    ("en", "ZIP 94107-1432", "zip"),
    ("en", "part 7-3-kx-2", "chain"),
    ("en", "Your PIN is 0417", "digit_code"),
    ("en", "at 8 p.m.est", "zone"),
    ("en", "a 4x6 ft sheet", "dimension"),
    ("en", "in 476 AD", "year"),
    ("en", "ref 55/120994/2019", "slashes"),
    ("en", "1/f noise", "over"),
    ("en", "9.81 m/s^2", "power"),
    ("en", "2.5e6 rows", "scientific"),
    ("en", "at 0600 hours", "military"),
    ("en", "ran 2024-03-05T14:30:00Z", "timestamp"),
    ("en", "6 ft 2 in tall", "feet"),
    ("en", "a 4.5/5 stars hotel", "rating"),
    ("en", "runs 2h 15m", "hours"),
    ("en", "on 07700 900123", "phone"),
    ("en", "see C:\\Users\\ann", "win_path"),
    ("ko", "1/1(월)", "weekday"),
    ("ko", "4/7이", "particle"),
    ("ko", "25/12/2026", "date_dmy"),
    ("ko", "6·25", "middot"),
    ("ko", "A4 용지", "paper"),
    ("ko", "1/4분기", "quarter"),
    ("ko", "KRW 5000", "code_first"),
    ("ko", "test@example.com", "email"),
]


@pytest.mark.parametrize(("lang", "text", "rule"), TRACED)
def test_each_new_class_is_named_in_the_trace(lang, text, rule):
    from tts_kit.text import Normalizer

    assert rule in [s.rule for s in Normalizer(lang).trace(text)]
