"""Korean rules for what is not a number (Latin letters as Korean letter names, symbols,
addresses, weekdays) and `particle`, which chooses a particle again after a reading."""

from __future__ import annotations

import re

from tts_kit.text import numbers as nw
from tts_kit.text.common import Rule, Step
from tts_kit.text.common import grammar as g
from tts_kit.text.tables import CURRENCY_CODES, KO_LETTERS, KO_SIGNS, KO_WEB_SIGNS

WEEKDAYS = {day: day + "요일" for day in "월화수목금토일"}
_ACRONYM = re.compile(r"(?=[A-Z])(?<![A-Za-z])(?P<a>[A-Z]+)(?![A-Z])s?(?![A-Za-z])")
_VOWELS = frozenset("AEIOU")
WEB_WORDS = g.WebWords(KO_WEB_SIGNS, lambda t: "".join(KO_LETTERS[c] for c in t.upper()),
                       nw.ko_digits, {"com": "컴", "net": "넷"}, ip_dot=" 점 ",
                       ip_number=nw.ko_number)
#: A weekday in brackets after a date the counter tail did not take (1/1(월), 25일 (금)).
_WEEKDAY_AFTER = re.compile(r"(?<=\d)\s?\((?P<wd>[월화수목금토일])\)")
_WD = "[월화수목금토일]"
#: A short date with its weekday (3/2(월), 3.5 (목)): the weekday makes it a date.
_SHORT_DATE = re.compile(
    rf"(?<![\d./])(?P<m>\d{{1,2}})[/.](?P<d>\d{{1,2}})(?P<wd>\s?\({_WD}\))")
#: AM or PM written before a time (PM 3:00, AM 9시): 오전/오후, as Korean says it.
_AMPM_BEFORE = re.compile(r"(?<![A-Za-z])(?P<ap>[AaPp])\.?[Mm]\.?\s?(?=\d{1,2}(?::\d{2}|\s?시))")
#: Weekdays listed with middle dots (월·수·금), kept by `prepare`.
_WEEKDAY_LIST = re.compile(rf"(?<![가-힣]){_WD}(?:·{_WD})+(?![가-힣])")
#: Weekday ranges (월~금, (월)~(금)) and the wave dash after a weekday read out
#: (월요일~목요일, from 3월 2일(월)~5일(목)): 에서 between them.
_WEEKDAY_RANGE = re.compile(
    rf"(?<![\d가-힣])\(?(?P<a>{_WD})\)?\s?~\s?\(?(?P<b>{_WD})\)?(?![가-힣])"
    r"|(?<=요일)\s?~\s?")
#: 과/와 glued between numbers (1과1/2, 3과4): a word of its own before the next number.
_AND_BETWEEN_NUMBERS = re.compile(r"(?<=\d)[과와](?=[\d√∛])")
#: A lower-case letter glued after a number that is no unit, magnitude or sign (Pixel
#: 8a, 5e): a model suffix, spelled like capitals (팔 에이), not left in Latin.
_LOWER_LETTERS = re.compile(r"(?<=\d)[acdefijnoqruvwyz](?![A-Za-z0-9])")


def _short_date(m: re.Match[str]) -> str:
    """3/2(월) -> 삼월 이 일 월요일 (an impossible date is left as written)."""
    mo, d = int(m["m"]), int(m["d"])
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return m.group(0)
    return f"{nw.ko_month(mo)} {nw.ko_sino(d)} 일 {WEEKDAYS[m['wd'].strip()[1]]}"


def _weekday_range(m: re.Match[str]) -> str:
    """월~금 -> 월요일에서 금요일; the dash after a weekday read out -> 에서."""
    return f"{WEEKDAYS[m['a']]}에서 {WEEKDAYS[m['b']]}" if m["a"] else "에서 "


def _acronym(m: re.Match[str]) -> str:
    """Capitals letter by letter (AWS -> 에이더블유에스), ISO codes as their currency."""
    run = m["a"]
    if run in CURRENCY_CODES and not m.group(0).endswith("s"):
        return CURRENCY_CODES[run].ko  # KRW, USD: the currency, not its letters
    if len(run) >= 6 and _VOWELS.intersection(run):
        return m.group(0)  # a shouted word, not an acronym: leave it to the model
    return "".join(KO_LETTERS[c] for c in run)


_SYMBOL = re.compile(r"[&+=@%×÷±°–—]")
_SYMBOL_WORDS = {**KO_SIGNS, "–": ", ", "—": ", "}  # dashes: a pause


def _symbol(m: re.Match[str]) -> str:
    """A symbol said (& -> 앤); = after Hangul is the topic particle (일 = 1: 일은)."""
    ch = m.group(0)
    if ch != "=":
        return _SYMBOL_WORDS[ch]
    last = m.string[: m.start()].rstrip()[-1:]
    if "가" <= last <= "힣":
        # The topic particle after the last syllable: 일은, 이는 (with or without 받침).
        return ("은 " if (ord(last) - 0xAC00) % 28 else "는 ")
    return " 이퀄 "


#: The steps `ko` runs before its numbers: dates known by their weekday, weekdays, 과/와
#: between numbers, AM/PM before a time, a letter after a model number.
BEFORE_NUMBERS: list[Step] = [
    Rule("weekday", _SHORT_DATE, _short_date),
    Rule("weekday", _WEEKDAY_AFTER, lambda m: " " + WEEKDAYS[m["wd"]]),
    Rule("weekday_range", _WEEKDAY_RANGE, _weekday_range),
    Rule("weekday", _WEEKDAY_LIST, lambda m: ", ".join(WEEKDAYS[d] for d in m.group(0).split("·"))),
    Rule("spacing", _AND_BETWEEN_NUMBERS, lambda m: m.group(0) + " "),
    Rule("ampm", _AMPM_BEFORE, lambda m: "오전 " if m["ap"] in "Aa" else "오후 "),
    Rule("letters", _LOWER_LETTERS, lambda m: " " + KO_LETTERS[m.group(0).upper()]),
]
#: The steps after the numbers: capitals, then symbols.
AFTER_NUMBERS: list[Step] = [Rule("acronym", _ACRONYM, _acronym), Rule("symbol", _SYMBOL, _symbol)]


#: Particles whose form follows the last syllable (받침 or not): written for the digits,
#: they are chosen again from the reading (4/7이 -> 칠분의 사가).
_PARTICLE_PAIRS = {form: pair for pair in (("이", "가"), ("을", "를"), ("은", "는"), ("과", "와"),
                                           ("으로", "로"), ("이나", "나"), ("이랑", "랑"))
                   for form in pair}
PARTICLE_AFTER = re.compile(r"(?:으로|이나|이랑|[이가을를은는과와로])(?![가-힣])")


def particle(reading: str, written: str) -> str:
    """The form of ``written`` that follows ``reading`` (사 + 이 -> 사가).

    Example:
        >>> particle("사", "이"), particle("칠", "로")
        ('가', '로')
    """
    last = reading[-1:]
    if not ("가" <= last <= "힣"):
        return written
    final = (ord(last) - 0xAC00) % 28
    with_final, without = _PARTICLE_PAIRS[written]
    if with_final == "으로":
        return without if final in (0, 8) else with_final  # ㄹ takes 로: 일로, 칠로
    return with_final if final else without
