"""Word tables the rules read, most of them from ``data/lexicons/*.tsv``: units,
currencies, "per" words, Korean counters and letter names, English abbreviations."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path


def builtin_dir() -> Path:
    """The folder of the built-in lexicons and tables (a source checkout's first).

    Example:
        >>> (builtin_dir() / "ko.tsv").is_file()
        True
    """
    root = Path(__file__).resolve().parents[2]
    repo = root / "data" / "lexicons"
    # Only a source checkout: installed, parents[2] is site-packages.
    if (root / "pyproject.toml").is_file() and repo.is_dir():
        return repo
    packaged = resources.files("tts_kit") / "_data" / "lexicons"
    if packaged.is_dir():
        return Path(str(packaged))
    raise FileNotFoundError(
        f"built-in lexicons not found in {repo} nor in the installed package "
        "(tts_kit/_data/lexicons); reinstall tts_kit"
    )


def read_table(name: str, width: int) -> list[list[str]]:
    """The rows of ``data/lexicons/<name>.tsv``, ``width`` fields each (``#``: a comment).

    Example:
        >>> read_table("units", 6)[0]
        ['mg', '밀리그램', 'milligram', 'milligrams', '', '']
    """
    text = (builtin_dir() / f"{name}.tsv").read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line.strip() and line[0] != "#"]
    return [row + [""] * (width - len(row)) for row in rows]


def read_words(name: str) -> dict[str, list[str]]:
    """``kind -> words`` of ``data/lexicons/<name>.tsv`` (``kind<TAB>word word ...``; a kind
    may take several lines).

    Example:
        >>> read_words("ko_words")["ordinal"]
        ['번째']
    """
    out: dict[str, list[str]] = {}
    for kind, words in read_table(name, 2):
        out.setdefault(kind, []).extend(words.split())
    return out


@dataclass(frozen=True)
class Unit:
    """How to say a unit after a number, in both languages.

    Example:
        >>> UNITS["°C"].ko_prefix, UNITS["°C"].en_plural
        ('섭씨', 'degrees Celsius')
    """

    ko: str  #: after the number (킬로그램)
    en: str
    en_plural: str
    ko_prefix: str = ""  #: before the number (섭씨 25 도, 시속 60 킬로미터)
    ko_native: bool = False  #: Korean reads the number natively (2h -> 두 시간)
    spaced: bool = True  #: may follow "5 " (not m, s, g: "5 m..." is rarely meters)


UNITS: dict[str, Unit] = {
    written: Unit(ko, en, plural, prefix, "native" in opts, "unspaced" not in opts)
    for written, ko, en, plural, prefix, opts in read_table("units", 6)
}


@dataclass(frozen=True)
class Currency:
    """A currency's words, major and minor unit.

    Example:
        >>> CURRENCIES["$"].ko, CURRENCIES["£"].en_minor_plural
        ('달러', 'pence')
    """

    ko: str
    ko_minor: str  #: 센트; empty when amounts have no minor unit
    en: str
    en_plural: str
    en_minor: str = ""
    en_minor_plural: str = ""


_CURRENCY_ROWS = read_table("currencies", 8)
#: Currency signs, before or after an amount ($5, 5€).
CURRENCIES: dict[str, Currency] = {
    row[1]: Currency(*row[2:]) for row in _CURRENCY_ROWS if row[0] == "sign"}
#: ISO codes written after (or before) an amount.
CURRENCY_CODES: dict[str, Currency] = {
    row[1]: Currency(*row[2:]) for row in _CURRENCY_ROWS if row[0] == "code"}
#: Dollar signs with a country prefix (HK$ 80, US$5, A$20): the currency they name.
PREFIXED_DOLLARS: dict[str, Currency] = {
    row[1]: CURRENCY_CODES[row[2]] for row in _CURRENCY_ROWS if row[0] == "prefix"}
_SIGNS = read_table("signs", 3)
#: How signs are said (``data/lexicons/signs.tsv``), a space each side: a sign no earlier
#: rule read (& -> and, 앤) and a separator inside an address (. -> dot, 닷).
EN_SIGNS, KO_SIGNS, EN_WEB_SIGNS, KO_WEB_SIGNS = (
    {sign: f" {said} " for k, sign, said in _SIGNS if k == kind}
    for kind in ("en_sign", "ko_sign", "en_web", "ko_web"))
#: What "/" before a word means after an amount or a unit ($20/mo, 5 kg/day): the English
#: word after "per", the Korean phrase before the amount.
PER: dict[str, tuple[str, str]] = {
    written: (en, ko) for written, en, ko in read_table("per", 3)}
_MAGNITUDE_ROWS = read_table("magnitudes", 3)
#: Magnitude suffixes after an amount ($5M, $1.5 billion) and what they multiply by ...
MAGNITUDES: dict[str, int] = {written: 10 ** int(power) for written, power, _ in _MAGNITUDE_ROWS}
#: ... and their English word (M: million).
MAGNITUDE_WORDS: dict[str, str] = {written: en for written, _, en in _MAGNITUDE_ROWS}

_KO_WORDS = read_words("ko_words")
#: Korean counters and the numerals before them (``native``, ``sino``, ``month``,
#: ``ordinal``, ``nominal``: see ``data/lexicons/ko_words.tsv``).
KO_COUNTERS: dict[str, str] = {
    word: kind for kind in ("native", "sino", "month", "ordinal", "nominal")
    for word in _KO_WORDS[kind]}
#: Particles and words that may follow a counter written after a space ("3 개를").
KO_PARTICLES: tuple[str, ...] = tuple(_KO_WORDS["particle"])
#: Big Korean units written after digits (5만, 3억, 2천만).
KO_BIG_UNITS: tuple[str, ...] = tuple(_KO_WORDS["big"])

KO_LETTERS: dict[str, str] = dict(zip(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "에이 비 씨 디 이 에프 지 에이치 아이 제이 케이 엘 엠 엔 오 피 큐 알 에스 티 유 브이 "
    "더블유 엑스 와이 제트".split(),
))

#: English abbreviations: (written form, spoken form, may end a sentence).
EN_ABBREVIATIONS: tuple[tuple[str, str, bool], ...] = tuple(
    (written, said, end == "end") for written, said, end in read_table("en_abbreviations", 3))
#: English word lists by kind (``data/lexicons/en_words.tsv``).
EN_WORDS = read_words("en_words")
#: Words after which a 4-digit number is a year ("in 1999", "since 2020").
EN_YEAR_CONTEXT: tuple[str, ...] = tuple(EN_WORDS["year_context"])
#: Nouns a number + 번 names (3번 출구, 삼 번): 번 as a label, not as a count of times.
KO_LABEL_NOUNS: tuple[str, ...] = tuple(_KO_WORDS["label"])
