"""Korean rules: numbers with counters, dates, times, money, units, letters, symbols.

Every rule that reads digits is one alternative of a single regular expression
(`NUMERIC`), tried left to right in the order below, so a text is scanned once for
all of them and the most specific reading wins where several could apply (a date
before a range, a range before a counter, a counter before a bare number). The
pattern opens with a lookahead on what a number can start with, which lets the
scanner skip everything else at C speed.

Readings:

- Sino-Korean numbers (num2words): ``15,000`` -> 만 오천, ``3.14`` -> 삼 점 일사,
  ``-5`` -> 마이너스 오; codes with a leading zero digit by digit (007 -> 공공칠).
- Native numbers before the counters that take them, up to 99: 3개 -> 세 개, 20명 ->
  스무 명, 12시 -> 열두 시; Sino-Korean before the others (분, 초, 원, 년, 일 ...)
  and from 100 on (150명 -> 백오십 명). Months: 6월 -> 유월, 10월 -> 시월.
- Dates (2026-08-24, 2026.08.24, 2026/08/24, 2026. 8. 24.), times (10:30 -> 열 시
  삼십 분; 10:30 PM -> 오후 열 시 삼십 분), ranges (3~5개 -> 세 개에서 다섯 개),
  money (₩, 원, $, €, ¥, £, ISO codes, $5M), percent, units, phone numbers digit by
  digit with 0 as 공, ordinals, fractions, versions.
- Latin capitals not in the lexicon, letter by letter: AWS -> 에이더블유에스.

Example:
    >>> from tts_kit.text import normalize
    >>> normalize("2026년 8월 24일 10:30에 3명이 만나요", "ko")
    '이천이십육 년 팔월 이십사 일 열 시 삼십 분에 세 명이 만나요'
"""

from __future__ import annotations

import re
from decimal import Decimal

from . import numbers as nw
from .charset import make_cleanup
from .common import Rule, Step, make_numeric, trie_alt
from .lexicon import Lexicon
from .tables import (
    CURRENCIES,
    CURRENCY_CODES,
    KO_BIG_UNITS,
    KO_COUNTERS,
    KO_LETTERS,
    KO_PARTICLES,
    MAGNITUDES,
    UNITS,
    Currency,
)

_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


# A number: thousands groups, or at most 16 digits (longer runs are codes, read digit by
# digit by the ``digits`` alternative; this also keeps int() away from huge strings).
_NUM = r"\d{1,3}(?:,\d{3}){1,6}(?!,?\d)(?:\.\d+)?|\d{1,16}(?!\d)(?:\.\d+)?"
_COUNTERS = trie_alt(KO_COUNTERS)
_PARTICLES = trie_alt(KO_PARTICLES)
_UNITS_ALL = trie_alt(UNITS)
_UNITS_SPACED = trie_alt(k for k, u in UNITS.items() if u.spaced)
_MAGS = trie_alt(MAGNITUDES)
_CODES = trie_alt(CURRENCY_CODES)
_BIG = trie_alt(KO_BIG_UNITS)
_SYMS = "".join(CURRENCIES)
_AMPM = r"[AaPp]\.?[Mm](?:\.(?=\S))?(?![A-Za-z])"
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?"


def _unit(p: str) -> str:
    return rf"(?:(?P<{p}u1>{_UNITS_ALL})|\s(?P<{p}u2>{_UNITS_SPACED}))(?![A-Za-z0-9])"


def _counter(p: str) -> str:
    # Written after a space, a counter must end the word or take a particle: "3 개를"
    # is a count, "3 개발" is not.
    return (
        rf"(?:(?P<{p}c1>{_COUNTERS})"
        rf"|\s(?P<{p}c2>{_COUNTERS})(?:(?![가-힣])|(?={_PARTICLES})))"
    )


# Structured forms first (each fails fast on its fixed shape), then one number followed
# by whatever says what it counts. The tail alternatives are named after their rule;
# being the last group to close, the name is `m.lastgroup` (a bare number: ``qn``).
NUMERIC = re.compile(
    r"(?=[-+]?\d|[" + _SYMS + r"]|제\s?\d|[vV]\d)(?:"
    r"(?P<digits>\d{17,})"
    r"|(?P<date>(?P<dy>\d{4})(?P<ds>[-/.]|\.\s)(?P<dm>\d{1,2})(?P=ds)(?P<dd>\d{1,2})(?!\d|\.\d))"
    rf"|(?P<trange>(?P<ta>{_TIME})\s?[~\-–]\s?(?P<tb>{_TIME})(?![\d:]))"
    rf"|(?P<time>(?P<th>\d{{1,2}}):(?P<tm>\d{{2}})(?::(?P<ts>\d{{2}}))?(?![\d:])"
    rf"(?:\s?(?P<tap>{_AMPM}))?)"
    r"|(?P<phone>\+\d{1,3}(?:[-\s]\d{1,4}){2,3}(?!\d)"
    r"|0\d{1,2}(?P<ps>[-.])\d{3,4}(?P=ps)\d{4}(?!\d)|1[5-9]\d{2}-\d{4}(?!\d))"
    rf"|(?P<currency>(?P<csym>[{_SYMS}])\s?(?P<cn>{_NUM})"
    rf"(?:\s?(?P<cmag>{_MAGS})(?![A-Za-z]))?"
    rf"(?:\s?[~\-–]\s?(?P=csym)?(?P<cn2>{_NUM})(?:\s?(?P<cmag2>{_MAGS})(?![A-Za-z]))?)?)"
    r"|(?P<version>(?P<vv>[vV])?(?P<vn>\d+(?:\.\d+){2,})|(?P<vv2>[vV])(?P<vn2>\d+(?:\.\d+)?))"
    rf"|(?P<kje>제\s?)?(?P<qsg>[-+])?(?P<qn>{_NUM})(?:"
    # Counters first: the commonest tail, and no other tail starts with Hangul.
    rf"(?P<counter>{_counter('k')}"
    rf"(?:\s?[~\-–]\s?(?P<kn2>{_NUM})(?P<kc3>{_COUNTERS}))?)"
    rf"|(?P<currency_code>\s?(?P<ccode>{_CODES})(?![A-Za-z]))"
    rf"|(?P<currency_post>\s?(?P<csym2>[{_SYMS}]))"
    rf"|(?P<range>\s?(?P<rsep>[~\-–])\s?(?P<rb>{_NUM})"
    rf"(?:(?P<rpct>\s?%p?)|{_unit('r')}|{_counter('r')})?)"
    rf"|(?P<big>(?P<bu>{_BIG})(?:\s?(?P<bc>{_COUNTERS}))?)"
    r"|(?P<magnitude>(?P<mg>[KkMB]|bn|mn)(?![A-Za-z0-9]))"
    r"|(?P<percent>\s?(?P<pp>%p?))"
    rf"|(?P<unit>{_unit('u')})"
    r"|(?P<ordinal>(?:st|nd|rd|th)(?![A-Za-z]))"
    rf"|(?P<ampm>\s?(?P<aap>{_AMPM}))"
    rf"|(?P<times>\s?[x×](?:\s?(?P<xb>{_NUM}))?(?![A-Za-z0-9]))"
    r"|(?P<ratio>:(?P<qb>\d{1,16})(?!\d))"
    r"|(?P<fraction>/(?P<fb>\d{1,16})(?!\d))"
    r")?)"
)
# The same groups as the number alternative (kje never matches), for `_number`.
_PLAIN = re.compile(rf"(?P<digits>\d{{17,}})|(?P<kje>(?!))?(?P<qsg>[-+])?(?P<qn>{_NUM})")


# -- readings ---------------------------------------------------------------------------


def _int(s: str) -> int:
    return int(s.replace(",", ""))


def _is_int(s: str) -> bool:
    return "." not in s


def _sino(s: str) -> str:
    """A number used as a quantity: its value, so 05분 is 오 분 (not 공오 분)."""
    if _is_int(s):
        return nw.ko_sino(_int(s))
    whole, _, frac = s.replace(",", "").partition(".")
    return f"{nw.ko_sino(int(whole))} 점 {nw.ko_digits(frac)}"


def _with_counter(num: str, counter: str, sign: str | None = None) -> str:
    kind = KO_COUNTERS[counter]
    integer = _is_int(num) and not sign
    v = _int(num) if integer else -1
    if kind == "month" and integer:
        return nw.ko_month(v)
    if kind in ("ordinal", "nominal") and integer and v >= 1:
        low = v % 100
        head = nw.ko_sino(v - low) if v >= 100 else ""
        if v < 100:
            word = nw.ko_native_ordinal(v) if kind == "ordinal" else nw.ko_native_nominal_ordinal(v)
        else:
            word = nw.ko_native(low) or ""
        return f"{head}{word} {counter}" if kind == "ordinal" else f"{head}{word}{counter}"
    if kind == "native" and integer and 1 <= v <= 99 and not (counter == "대" and v % 10 == 0):
        # 20대 is "the twenties" (이십 대); 3대 is three machines (세 대).
        return f"{nw.ko_native(v)} {counter}"
    words = _sino(num)
    if sign == "-":
        words = ("영하 " if counter == "도" else "마이너스 ") + words
    elif sign == "+":
        words = "플러스 " + words
    return f"{words} {counter}"


def _with_unit(num: str, unit: str, sign: str | None = None) -> str:
    u = UNITS[unit]
    if u.ko_native and _is_int(num) and 1 <= _int(num) <= 99 and not sign:
        words = nw.ko_native(_int(num))
    else:
        words = _sino(num)
    if sign == "-":
        words = ("영하 " if unit in ("°C", "°F", "°") else "마이너스 ") + words
    elif sign == "+":
        words = "플러스 " + words
    prefix = f"{u.ko_prefix} " if u.ko_prefix else ""
    return f"{prefix}{words} {u.ko}" if u.ko else f"{prefix}{words}"


def _percent(num: str, p: str) -> str:
    return f"{_sino(num)} {'퍼센트포인트' if p == '%p' else '퍼센트'}"


def _money(amount: str, cur: Currency, mag: str | None) -> str:
    value = Decimal(amount.replace(",", ""))
    if mag:
        value *= MAGNITUDES[mag]
        if value == value.to_integral_value():
            return f"{nw.ko_sino(int(value))} {cur.ko}"
        return f"{_sino(format(value.normalize(), 'f'))} {cur.ko}"
    whole, _, frac = amount.replace(",", "").partition(".")
    if frac and cur.ko_minor and len(frac) <= 2:
        cents = int(frac.ljust(2, "0"))
        major = int(whole or 0)
        parts = [f"{nw.ko_sino(major)} {cur.ko}"] if major else []
        if cents:
            parts.append(f"{nw.ko_sino(cents)} {cur.ko_minor}")
        return " ".join(parts) or f"영 {cur.ko}"
    return f"{_sino(amount)} {cur.ko}"


def _clock(h: int, mi: int, s: int | None, ap: str | None) -> str:
    words = "영 시" if h == 0 else f"{nw.ko_native(h)} 시"
    if mi:
        words += f" {nw.ko_sino(mi)} 분"
    if s:
        words += f" {nw.ko_sino(s)} 초"
    if ap:
        words = ("오전 " if ap[0] in "Aa" else "오후 ") + words
    return words


def _parse_time(t: str) -> tuple[int, int, int | None] | None:
    parts = [int(x) for x in t.split(":")]
    h, mi = parts[0], parts[1]
    s = parts[2] if len(parts) > 2 else None
    if h > 24 or mi > 59 or (s is not None and s > 59):
        return None
    return h, mi, s


def _plain(text: str) -> str:
    return _PLAIN.sub(_plain_number, text)


def _plain_number(m: re.Match[str]) -> str:
    return _digits(m) if m.lastgroup == "digits" else _number(m)


def _digits(m: re.Match[str]) -> str:
    return nw.ko_digits(m.group(0), phone=True)


def _lead(m: re.Match[str]) -> tuple[str, str | None]:
    """(text kept before the reading, the sign's meaning) for the number alternative.

    A ``-`` or ``+`` glued to a word or digit before it is a hyphen or an operator
    ("A-5", "3+4"), kept as written; otherwise it is the number's sign.
    """
    kept = m["kje"] or ""
    sign = m["qsg"]
    if sign:
        i = m.start("qsg")
        if i > 0 and m.string[i - 1].isalnum():
            return kept + sign, None
    return kept, sign


def _sign_word(sign: str | None) -> str:
    return {"-": "마이너스 ", "+": "플러스 "}.get(sign or "", "")


# -- handlers, one per alternative of NUMERIC ---------------------------------------------


def _date(m: re.Match[str]) -> str:
    y, mo, d = int(m["dy"]), int(m["dm"]), int(m["dd"])
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return _version_like(m.group(0)) if m["ds"] == "." else _plain(m.group(0))
    return f"{nw.ko_sino(y)} 년 {nw.ko_month(mo)} {nw.ko_sino(d)} 일"


def _trange(m: re.Match[str]) -> str:
    a, b = _parse_time(m["ta"]), _parse_time(m["tb"])
    if a is None or b is None:
        return _plain(m.group(0))
    return f"{_clock(*a, None)}에서 {_clock(*b, None)}"


def _time(m: re.Match[str]) -> str:
    t = _parse_time(m["th"] + ":" + m["tm"] + (":" + m["ts"] if m["ts"] else ""))
    if t is None:
        return _plain(m.group(0)).replace(":", " 대 ")
    return _clock(*t, m["tap"])


def _phone(m: re.Match[str]) -> str:
    s = m.group(0)
    if sum(c.isdigit() for c in s) < 7:
        return _plain(s)
    head = "플러스 " if s.startswith("+") else ""
    groups = re.split(r"[-.\s]+", s.lstrip("+"))
    return head + " ".join(nw.ko_digits(g, phone=True) for g in groups)


def _currency(m: re.Match[str]) -> str:
    cur = CURRENCIES[m["csym"]]
    words = _money(m["cn"], cur, m["cmag"])
    if m["cn2"]:
        words += "에서 " + _money(m["cn2"], cur, m["cmag2"])  # $5~$10
    return words


def _version_like(s: str) -> str:
    return " 점 ".join(nw.ko_number(p) for p in s.split(".") if p)


def _version(m: re.Match[str]) -> str:
    v = m["vv"] or m["vv2"]
    words = _version_like(m["vn"] or m["vn2"])
    if v:
        if m.start() > 0 and m.string[m.start() - 1].isalpha():
            return v + " " + words  # "dev1.2.3": the v belongs to a word
        return "버전 " + words
    return words


def _currency_code(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    return kept + _sign_word(sign) + _money(m["qn"], CURRENCY_CODES[m["ccode"]], None)


def _currency_post(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    return kept + _sign_word(sign) + _money(m["qn"], CURRENCIES[m["csym2"]], None)


def _local_phone(m: re.Match[str]) -> bool:
    """123-4567 is a local phone number; 100-1000 and 300-5000 read as ranges."""
    a, b = m["qn"], m["rb"]
    return (m["rsep"] == "-" and not m["qsg"] and m.group(0) == f"{a}-{b}" and len(a) == 3
            and len(b) == 4 and (a + b).isdigit() and int(b) % 100 != 0)


def _range(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    a, b = m["qn"], m["rb"]
    if _local_phone(m):
        return f"{nw.ko_digits(a, phone=True)} {nw.ko_digits(b, phone=True)}"
    first = _sign_word(sign) + _sino(a)
    if m["rpct"] is not None:
        return f"{kept}{first}에서 {_percent(b, m['rpct'].strip())}"
    unit = m["ru1"] or m["ru2"]
    if unit:
        return f"{kept}{first}에서 {_with_unit(b, unit)}"
    counter = m["rc1"] or m["rc2"]
    if counter:
        # Repeat the counter: 세 개에서 다섯 개 (세 alone cannot stand before 에서).
        return f"{kept}{_with_counter(a, counter, sign)}에서 {_with_counter(b, counter)}"
    return f"{kept}{first}에서 {_sino(b)}"


def _big(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    n, unit = m["qn"], m["bu"]
    # 1만 and 1천 are said 만, 천; 1억 and 1조 keep their 일.
    head = "" if n == "1" and unit[0] in "십백천만" else _sino(n)
    words = kept + _sign_word(sign) + head + unit
    if m["bc"]:
        words += " " + m["bc"]
    return words


def _magnitude(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    value = Decimal(m["qn"].replace(",", "")) * MAGNITUDES[m["mg"]]
    if value == value.to_integral_value():
        words = nw.ko_sino(int(value))
    else:
        words = _sino(format(value.normalize(), "f"))
    return kept + _sign_word(sign) + words


def _percent_h(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    return kept + _sign_word(sign) + _percent(m["qn"], m["pp"])


def _unit_h(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    return kept + _with_unit(m["qn"], m["uu1"] or m["uu2"], sign)


def _ordinal(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    n = m["qn"]
    if sign or not _is_int(n) or _int(n) == 0:
        return kept + _sign_word(sign) + _sino(n) + " 번째"
    return kept + _with_counter(n, "번째")


def _ampm(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    n = m["qn"]
    if sign or not n.isdigit() or int(n) > 24:
        return kept + _sign_word(sign) + nw.ko_number(n) + " " + m["aap"]
    return kept + _clock(int(n), 0, None, m["aap"])


def _times(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    if m["xb"]:
        return f"{kept}{_sign_word(sign)}{_sino(m['qn'])} 곱하기 {_sino(m['xb'])}"
    return kept + _with_counter(m["qn"], "배", sign)


_SCORE_NEXT = re.compile(r"\s?\d")


def _counter_h(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    num, counter, je = m["qn"], m["kc1"] or m["kc2"], m["kje"]
    if je and not (m.start() > 0 and "가" <= m.string[m.start() - 1] <= "힣"):
        words = f"제{_sino(num)} {counter}"
    elif counter == "대" and not m["kn2"] and _SCORE_NEXT.match(m.string, m.end()):
        words = f"{kept}{_sign_word(sign)}{_sino(num)} 대"  # a score: 3 대 1
    else:
        # A 제 that ends a word (문제3개) is not the ordinal prefix: kept as written.
        words = kept + _with_counter(num, counter, sign)
    if m["kn2"]:
        # 9시~18시, 1개~2개: a range written with the counter on both ends.
        words += f"에서 {_with_counter(m['kn2'], m['kc3'])}"
    return words


def _ratio(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    return f"{kept}{_sign_word(sign)}{nw.ko_number(m['qn'])} 대 {nw.ko_number(m['qb'])}"


def _fraction(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    kept += _sign_word(sign)
    num = m["qn"]
    if not _is_int(num):
        return f"{kept}{nw.ko_number(num)} 나누기 {nw.ko_number(m['fb'])}"
    a, b = _int(num), int(m["fb"])
    if b == 0:
        return f"{kept}{nw.ko_number(num)} 나누기 영"
    if not sign and not (a < b <= 10) and 1 <= a <= 12 and 1 <= b <= 31:
        return f"{kept}{nw.ko_month(a)} {nw.ko_sino(b)} 일"  # 8/24: a date
    return f"{kept}{nw.ko_sino(b)}분의 {nw.ko_sino(a)}"


def _number(m: re.Match[str]) -> str:
    kept, sign = _lead(m)
    return kept + _sign_word(sign) + nw.ko_number(m["qn"])


_HANDLERS = {
    "digits": _digits,
    "date": _date, "trange": _trange, "time": _time, "phone": _phone,
    "currency": _currency, "version": _version, "currency_code": _currency_code,
    "currency_post": _currency_post,
    "range": _range, "big": _big, "magnitude": _magnitude, "percent": _percent_h,
    "unit": _unit_h, "ordinal": _ordinal, "ampm": _ampm, "times": _times, "counter": _counter_h,
    "ratio": _ratio, "fraction": _fraction, "qn": _number,
}
#: Trace names of the alternatives whose group name is not the rule's.
_NAMES = {"qn": "number"}


_numeric = make_numeric(_HANDLERS, _plain)


# -- letters and symbols ----------------------------------------------------------------

_ACRONYM = re.compile(r"(?=[A-Z])(?<![A-Za-z])(?P<a>[A-Z]+)s?(?![a-z])")
_VOWELS = frozenset("AEIOU")


def _acronym(m: re.Match[str]) -> str:
    run = m["a"]
    if len(run) >= 6 and _VOWELS.intersection(run):
        return m.group(0)  # a shouted word, not an acronym: leave it to the model
    return "".join(KO_LETTERS[c] for c in run)


_SYMBOL = re.compile(r"[&+=@%×÷±°–—]")
_SYMBOL_WORDS = {
    "&": " 앤 ", "+": " 플러스 ", "@": " 앳 ", "%": " 퍼센트 ", "×": " 곱하기 ",
    "÷": " 나누기 ", "±": " 플러스마이너스 ", "°": " 도 ", "–": ", ", "—": ", ",
}


def _symbol(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch != "=":
        return _SYMBOL_WORDS[ch]
    before = m.string[: m.start()].rstrip()
    last = before[-1:] if before else ""
    if "가" <= last <= "힣":
        # The topic particle after the last syllable: 일은, 이는 (with or without 받침).
        return ("은 " if (ord(last) - 0xAC00) % 28 else "는 ")
    return " 이퀄 "


def rules(lexicon: Lexicon) -> list[Step]:
    """The Korean steps after Unicode preparation, in order.

    Example:
        >>> from tts_kit.text.lexicon import load
        >>> steps = rules(load("ko"))
        >>> len(steps) >= 4
        True
    """
    return [
        lexicon.apply,
        Rule("number", NUMERIC, _numeric, by_group=True, aliases=_NAMES),
        Rule("acronym", _ACRONYM, _acronym),
        Rule("symbol", _SYMBOL, _symbol),
        make_cleanup("ko"),
    ]
