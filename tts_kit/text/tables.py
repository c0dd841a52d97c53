"""Word tables the rules read: units and currencies (``data/lexicons/units.tsv``,
``currencies.tsv``), Korean counters, letter names, English abbreviations.

Example:
    >>> from tts_kit.text.tables import UNITS, KO_COUNTERS
    >>> UNITS["kg"].ko, UNITS["kg"].en_plural, KO_COUNTERS["개"]
    ('킬로그램', 'kilograms', 'native')
"""

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
    "US": CURRENCY_CODES["USD"], "HK": CURRENCY_CODES["HKD"], "NZ": CURRENCY_CODES["NZD"],
    "A": CURRENCY_CODES["AUD"], "AU": CURRENCY_CODES["AUD"], "C": CURRENCY_CODES["CAD"],
    "CA": CURRENCY_CODES["CAD"], "S": CURRENCY_CODES["SGD"], "NT": CURRENCY_CODES["TWD"],
    "R": CURRENCY_CODES["BRL"],
}
#: What "/" before a word means after an amount or a unit ($20/mo, 5 kg/day): the English
#: word after "per", the Korean phrase before the amount.
PER: dict[str, tuple[str, str]] = {
    written: (en, ko) for written, en, ko in read_table("per", 3)}
#: Magnitude suffixes after an amount ($5M, $1.5 billion) and what they multiply by.
MAGNITUDES: dict[str, int] = {
    "K": 10**3, "k": 10**3, "thousand": 10**3,
    "M": 10**6, "million": 10**6, "mn": 10**6,
    "B": 10**9, "bn": 10**9, "billion": 10**9,
    "trillion": 10**12, "tn": 10**12,
    # Lower-case scale letters, read as magnitudes only after an amount (¥20m, $3b).
    "m": 10**6, "b": 10**9,
}

#: Korean counters and the numerals before them: ``native`` (한, 두, 세 ... up to 99,
#: Sino-Korean from 100), ``sino`` (일, 이, 삼), ``month`` (유월, 시월), ``ordinal``
#: (첫 번째), ``nominal`` (첫째, 둘째). Longest match wins, so 개월 is not 개 + 월.
KO_COUNTERS: dict[str, str] = {
    **dict.fromkeys(
        "시 시간 개 명 살 마리 번 배 잔 권 대 그루 송이 장 벌 켤레 채 척 통 병 봉지 그릇 "
        "접시 군데 곳 가지 사람 자루 쌍 줄 판 바퀴 걸음 모금 방울 달 알 발 포기 다발 개비 "
        "조각 칸 끼 차례 골 편 자리 마디 곡".split(),
        "native",
    ),
    **dict.fromkeys(
        "분 초 원 년 일 층 위 도 박 회 차 등 호 번지 번길 개월 개국 개년 개소 개사 주 주년 "
        "주일 주차 세 세대 인 인분 인용 점 쪽 페이지 학년 교시 기 분기 퍼센트 프로 달러 "
        "유로 엔 위안 파운드 센트 킬로 킬로그램 그램 미터 킬로미터 센티미터 센티 밀리 리터 "
        "바이트 메가 기가 메가바이트 기가바이트 헤르츠 와트 볼트 배속 시즌 시리즈 단계 부 "
        "화 절 년대 년생 일째 일간 년간 종 건 평 톤 칼로리 표 석 승 패 무 가구 "
        "연승 연패 시간대".split(),
        "sino",
    ),
    "월": "month",
    "번째": "ordinal",
    "째": "nominal",
}
#: Particles and words that may follow a counter written after a space ("3 개를"):
#: anything else Hangul after "3 개" means it was a word (3 개발), not a counter.
KO_PARTICLES: tuple[str, ...] = tuple(
    "으로 에서 까지 부터 마다 이나 이상 이하 미만 초과 정도 가량 동안 "
    "이 가 은 는 을 를 의 에 도 만 과 와 로 씩 째 간 당 나 쯤 전 후".split()
)
#: Big Korean units written after digits (5만, 3억, 2천만).
KO_BIG_UNITS: tuple[str, ...] = (
    "천만", "백만", "십만", "천억", "백억", "십억", "천조", "백조", "십조",
    "만", "억", "조", "경", "천", "백",
)

KO_LETTERS: dict[str, str] = dict(zip(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "에이 비 씨 디 이 에프 지 에이치 아이 제이 케이 엘 엠 엔 오 피 큐 알 에스 티 유 브이 "
    "더블유 엑스 와이 제트".split(),
))

#: English abbreviations: (written form, spoken form, may end a sentence).
EN_ABBREVIATIONS: tuple[tuple[str, str, bool], ...] = tuple(
    (written, said, end == "end") for written, said, end in read_table("en_abbreviations", 3))
#: Words after which a 4-digit number is a year ("in 1999", "since 2020").
EN_YEAR_CONTEXT: tuple[str, ...] = tuple(
    "in In since Since by By from From of until Until till before Before after After "
    "during During around circa year Year early late mid through to and between Between "
    "spring summer fall autumn winter Spring Summer Fall Autumn Winter born Born founded "
    "Founded established Established".split()
)

#: Nouns a number + 번 names (3번 출구: the exit numbered three, 삼 번), where 번 is a
#: label, read in Sino-Korean; elsewhere 번 counts times (세 번 했다), read natively
#: (National Institute of Korean Language: 번 as 번호 vs as 횟수).
KO_LABEL_NOUNS = (
    "출구 입구 버스 문제 문항 선수 타자 게이트 홀 트랙 채널 방 칸 국도 도로 고속도로 선 "
    "라인 승강장 플랫폼 좌석 자리 테이블 창구 항목 사진 파일 슬라이드 카드 번호 마을버스 "
    "환자 손님 고객 테이블 주차장 열람실 강의실 교실 부스 레인 코스 핀 포트 슬롯 사물함 "
    "케이블 노선 정류장 출입문 타석 트랙 곡 그림 예시 보기 답 후보 참가자 팀 조"
).split()
