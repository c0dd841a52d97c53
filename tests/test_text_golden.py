"""Table-driven golden cases for `tts_kit.text.normalize` (tests/golden/text_<lang>.tsv).

Each row is ``rule<TAB>input<TAB>expected``; ``\\n`` and ``\\t`` in a cell stand for a
newline and a tab. The ``rule`` column says which rule the row exercises, so the
coverage test below can insist that every rule of the issue has cases.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tts_kit.text import Normalizer, normalize

GOLDEN = Path(__file__).resolve().parent / "golden"

#: Rules the issue asks for, per language, each of which must have golden rows.
REQUIRED = {
    "ko": {
        "lexicon", "acronym", "number", "native_counter", "sino_counter", "month", "ordinal",
        "date", "time", "currency", "percent", "unit", "phone", "range", "tag", "remove",
        "whitespace", "symbol", "article", "article_bug",
    },
    "en": {
        "lexicon", "acronym", "number", "ordinal", "year", "date", "time", "currency",
        "percent", "unit", "phone", "range", "fraction", "abbreviation", "tag", "remove",
        "whitespace", "symbol", "article",
    },
}


def _unescape(cell: str) -> str:
    """``\\n``, ``\\t``, ``\\e`` (ESC) and ``\\uXXXX`` as the characters they stand for."""
    cell = cell.replace("\\n", "\n").replace("\\t", "\t").replace("\\e", "\x1b")
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), cell)


def load(lang: str) -> list[tuple[str, str, str]]:
    rows = []
    path = GOLDEN / f"text_{lang}.tsv"
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        assert len(cells) == 3, f"{path.name}:{lineno}: expected 3 tab-separated cells"
        rows.append((cells[0], _unescape(cells[1]), _unescape(cells[2])))
    return rows


CASES = [
    pytest.param(lang, text, want, id=f"{lang}-{rule}-{i}")
    for lang in ("ko", "en")
    for i, (rule, text, want) in enumerate(load(lang))
]


@pytest.mark.parametrize(("lang", "text", "want"), CASES)
def test_golden(lang, text, want):
    assert normalize(text, lang) == want


#: The class groups of issue 14 (what the field's reference grammars read and the rules
#: did not), each of which must have at least 40 golden rows of its own.
CLASS_GROUPS = {
    "en": {"years_dates", "roman_caps", "hyphen_signs", "web", "units_fractions",
           "phones_codes"},
    "ko": {"dates_times", "money", "phones", "counters_particles", "units_web"},
}


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_every_class_group_has_forty_cases(lang):
    counts = {g: 0 for g in CLASS_GROUPS[lang]}
    for rule, _, _ in load(lang):
        if rule in counts:
            counts[rule] += 1
    assert min(counts.values()) >= 40, counts


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_golden_set_is_large_and_covers_every_rule(lang):
    rows = load(lang)
    assert len(rows) >= 150
    assert REQUIRED[lang] <= {rule for rule, _, _ in rows}
    inputs = [text for _, text, _ in rows]
    assert len(inputs) == len(set(inputs)), "duplicate golden inputs"


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_normalised_text_is_a_fixed_point(lang):
    # What the normaliser writes must need no further normalising (no digit, symbol or
    # acronym left for a second pass to find).
    norm = Normalizer(lang)
    for _, _, want in load(lang):
        assert norm.normalize(want) == want


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_golden_outputs_are_readable_by_the_real_indexer(lang, shared_assets):
    import json

    from tts_kit.text import unsupported_characters

    indexer = json.loads((shared_assets / "onnx" / "unicode_indexer.json").read_text())
    for _, text, want in load(lang):
        assert unsupported_characters(want, indexer) == [], (text, want)


#: The classes of issue 24 (read wrong before it), each with at least 20 golden rows in
#: the two files together.
ISSUE24_CLASSES = ("per_units", "fraction_root", "currency_code", "phone_layout",
                   "time_ko", "date_range_abbr", "number_context",
                   "latin_ko", "glued_symbols")


def test_every_issue24_class_has_twenty_cases():
    counts = dict.fromkeys(ISSUE24_CLASSES, 0)
    for lang in ("ko", "en"):
        for rule, _, _ in load(lang):
            if rule in counts:
                counts[rule] += 1
    assert min(counts.values()) >= 20, counts


#: The classes of issue 36 (English round three) and issue 39's normaliser readings, each
#: with at least 20 golden rows of its own.
ISSUE36_CLASSES = ("year_context", "address", "unit_rate", "math", "fraction_forms",
                   "web_paths", "serial_code", "large_number", "leftovers", "hostile_text")


def test_every_issue36_class_has_twenty_cases():
    counts = dict.fromkeys(ISSUE36_CLASSES, 0)
    for rule, _, _ in load("en"):
        if rule in counts:
            counts[rule] += 1
    assert min(counts.values()) >= 20, counts
