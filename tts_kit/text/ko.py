"""Korean rules for numbers: every rule that reads digits is one alternative of `NUMERIC`,
most specific first, so a text is scanned once; native numbers go before the counters that
take them (3개 -> 세 개). Letters, symbols and weekdays: `ko_words`."""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal

from tts_kit.text import ko_words, tables
from tts_kit.text import numbers as nw
from tts_kit.text.charset import make_cleanup
from tts_kit.text.common import Rule, Step, Steps, TraceStep, make_numeric, trie_alt
from tts_kit.text.common import grammar as g
from tts_kit.text.lexicon import Lexicon
from tts_kit.text.tables import CURRENCIES, CURRENCY_CODES, MAGNITUDES, PER, UNITS, Currency

_COUNTERS = trie_alt(tables.KO_COUNTERS)
_PARTICLES = trie_alt(tables.KO_PARTICLES)
_BIG = trie_alt(tables.KO_BIG_UNITS)


def _counter(p: str) -> str:
    # Written after a space, a counter must end the word or take a particle: "3 개를"
    # is a count, "3 개발" is not.
    return (
        rf"(?:(?P<{p}c1>{_COUNTERS})"
        rf"|\s(?P<{p}c2>{_COUNTERS})(?:(?![가-힣])|(?={_PARTICLES})))"
    )


# Structured forms first, then one number and what it counts (`m.lastgroup`; ``qn``).
NUMERIC = g.numeric(
    g.NUM_START + r"|-?[" + g.SYMS + r"]|제\s?\d|[vV]\d|\(\d{2,4}\)|[AB]\d|" + g.CODE_START + "|"
    + g.ROOT_START + "|" + g.PREFIX_START,
    g.NUM_FIRST + "제vV(AB√∛" + g.CODE_FIRST + g.PREFIX_FIRST,
    [
        g.DIGITS,
        g.ROOT,
        r"(?P<date>(?P<dy>\d{4})(?P<ds>[-/.]|\.\s)(?P<dm>\d{1,2})(?P=ds)(?P<dd>\d{1,2})"
        r"(?!\d|\.\d))",
        r"(?P<date_dmy>(?P<ea>\d{1,2})/(?P<eb>\d{1,2})/(?P<ey>\d{4})(?!\d))",
        g.TRANGE,
        g.TIME_ALT,
        r"(?P<phone>(?:" + g.PHONE_SHARED + "|"
        r"\+\d{1,3}(?:[-\s]\d{1,4}){2,3}(?!\d)"
        r"|\+\d{1,3}\s?\(\d{1,4}\)\s?\d{3,4}[-.\s]\d{4}(?!\d)"
        r"|\(\d{2,4}\)\s?\d{3,4}[-.]\d{4}(?!\d)"
        r"|0\d{1,2}(?P<ps>[-.\s])\d{3,4}(?P=ps)\d{4}(?!\d)|0\d{1,2}\.\d{3,4}-\d{4}(?!\d)"
        r"|1[5-9]\d{2}-\d{4}(?!\d)|[1-9]\d{2}[-.]\d{3}[-.]\d{4}(?!\d)"
        r"|\d{4}(?P<ps4>[-\s])\d{4}(?P=ps4)\d{4}(?P=ps4)\d{4}(?!\d))" + g.PHONE_EXT + ")",
        g.GROUPS,
        g.currency(_BIG),
        g.code_first(_BIG),
        g.MIDDOT,
        r"(?P<paper>(?<![A-Za-z])(?P<pl>[AB])(?P<pn>\d)(?![A-Za-z0-9]))",
        g.VERSION,
    ],
    [
        # Counters first: the commonest tail, and no other tail starts with Hangul.
        rf"(?P<counter>{_counter('k')}"
        r"(?:\s?\((?P<kwd>[월화수목금토일])\))?"
        rf"(?:\s?{g.RANGE_SIGN}\s?(?:(?P<kap>오전|오후)\s?)?(?P<kn2>{g.NUM})(?P<kc3>{_COUNTERS})"
        r"(?:\s?\((?P<kwd2>[월화수목금토일])\))?)?"
        rf"{g.per('k')}?)",
        g.CURRENCY_CODE,
        g.currency_post(),
        rf"(?P<range>\s?(?P<rsep>{g.RANGE_SIGN})\s?(?P<rb>{g.NUM})"
        rf"(?:(?P<rpct>\s?%(?:p(?![A-Za-z]))?)|{g.unit('r')}|{_counter('r')})?)",
        rf"(?P<big>(?P<bu>{_BIG})(?:\s?(?P<bc>{_COUNTERS}))?)",
        g.MAGNITUDE,
        r"(?P<percent>\s?(?P<pp>%(?:p(?![A-Za-z]))?))",
        rf"(?P<unit>{g.unit('u')}{g.per('u')}?)",
        g.ORDINAL,
        g.AMPM_TAIL,
        g.TIMES,
        g.RATIO,
        r"(?P<quarter>/4\s?분기)",
        rf"(?P<fraction>(?:/|(?P<fsp>\s/\s))(?P<fb>\d{{1,16}})(?!\d)(?:{g.unit('f')})?)",
    ],
    prefix=r"(?P<kje>제\s?)?",
)


# -- readings ---------------------------------------------------------------------------


def _sino(s: str) -> str:
    """A number used as a quantity: its value, so 05분 is 오 분 (not 공오 분)."""
    if g.is_int(s):
        return nw.ko_sino(g.to_int(s))
    whole, _, frac = s.replace(",", "").partition(".")
    return f"{nw.ko_sino(int(whole or 0))} 점 {nw.ko_digits(frac)}"


def _with_counter(num: str, counter: str, sign: str | None = None) -> str:
    kind = tables.KO_COUNTERS[counter]
    integer = g.is_int(num) and not sign
    v = g.to_int(num) if integer else -1
    if kind == "month" and integer:
        return nw.ko_month(v)
    if counter == "시" and integer and 13 <= v <= 24:
        return f"{nw.ko_sino(v)} 시"  # 24-hour clock: 십오 시 (tests/golden/README.md)
    if kind == "ordinal" and integer and v >= 1:  # 첫 번째, 두 번째; 189번째: 백팔십구 번째
        return f"{nw.ko_sino(v) if v >= 100 else '첫' if v == 1 else nw.ko_native(v)} {counter}"
    if kind == "nominal" and integer and v >= 1:  # 첫째, 둘째 ... 열두째, 백한째
        head = nw.ko_sino(v - v % 100) if v >= 100 else ""
        word = nw.KO_NATIVE_NOMINAL[v] if v < 10 else nw.ko_native(v % 100) or ""
        return f"{head}{word}{counter}"
    if kind == "native" and integer and 1 <= v <= 99 and not (counter == "대" and v % 10 == 0):
        # 20대 is "the twenties" (이십 대); 3대 is three machines (세 대).
        return f"{nw.ko_native(v)} {counter}"
    return f"{_signed(_sino(num), sign, counter == '도')} {counter}"


def _signed(words: str, sign: str | None, degrees: bool) -> str:
    """``words`` after their sign's word: 영하 below zero degrees, else 마이너스, 플러스."""
    return ("영하 " if sign == "-" and degrees else _SIGNS[sign]) + words


def _with_unit(num: str, unit: str, sign: str | None = None, said: bool = False) -> str:
    """``said``: the prefix word (시속) is already written before the number."""
    u = UNITS[unit]
    native = u.ko_native and not sign and g.is_int(num) and nw.ko_native(g.to_int(num))  # 1-99
    words = _signed(native or _sino(num), sign, unit in ("°C", "°F", "°"))
    prefix = f"{u.ko_prefix} " if u.ko_prefix and not said else ""
    return f"{prefix}{words} {u.ko}" if u.ko else f"{prefix}{words}"


def _percent(num: str, p: str) -> str:
    return f"{_sino(num)} {'퍼센트포인트' if p == '%p' else '퍼센트'}"


def _money(amount: str, cur: Currency, mag: str | None) -> str:
    if mag in tables.KO_BIG_UNITS:
        return f"{_before_big(amount, mag)}{mag} {cur.ko}"  # ₩30억, $1.5만
    if mag:
        return f"{_scaled(amount, mag)} {cur.ko}"
    whole, _, frac = amount.replace(",", "").partition(".")
    if frac and cur.ko_minor and len(frac) <= 2:
        amounts = ((int(whole or 0), cur.ko), (int(frac.ljust(2, "0")), cur.ko_minor))
        return " ".join(f"{nw.ko_sino(n)} {word}" for n, word in amounts if n) or f"영 {cur.ko}"
    return f"{_sino(amount)} {cur.ko}"


def _clock(h: int, mi: int, s: int | None, ap: str | None) -> str:
    # Hours of the 24-hour clock past 12 are Sino-Korean (15:40 -> 십오 시 사십 분): the
    # hour as written, not 열다섯 시 (tests/golden/README.md).
    words = "영 시" if h == 0 else f"{nw.ko_native(h) if h <= 12 else nw.ko_sino(h)} 시"
    if mi:
        words += f" {nw.ko_sino(mi)} 분"
    if s:
        words += f" {nw.ko_sino(s)} 초"
    if ap:
        words = ("오전 " if ap[0] in "Aa" else "오후 ") + words
    return words


_SIGNS = {"-": "마이너스 ", "+": "플러스 ", None: ""}


def _lead(m: re.Match[str]) -> str:
    """What is kept before the number alternative's number, and its sign's word."""
    kept, sign = g.lead(m)
    return kept + _SIGNS[sign]


# -- handlers, one per alternative of NUMERIC ---------------------------------------------


def _date(m: re.Match[str]) -> str:
    y, mo, d = int(m["dy"]), int(m["dm"]), int(m["dd"])
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        if m["ds"] == ".":  # 2024.13.45: a version
            return " 점 ".join(nw.ko_number(p) for p in m.group(0).split(".") if p)
        return _plain(m.group(0))
    return _date_words(y, mo, d)


def _date_words(y: int, mo: int, d: int) -> str:
    return f"{nw.ko_sino(y)} 년 {nw.ko_month(mo)} {nw.ko_sino(d)} 일"


def _phone(m: re.Match[str]) -> str:
    s = m.group(0)
    if sum(c.isdigit() for c in s) < 7:
        return _plain(s)
    groups, ext = g.phone_parts(m)
    head = ""
    if s.startswith("+"):
        # +82 10-...: the country code is named (국가번호 팔이), as Korean references say.
        head = f"국가번호 {nw.ko_digits(groups[0], phone=True)} "
        groups = groups[1:]
    words = head + " ".join(nw.ko_digits(p, phone=True) for p in groups)
    return f"{words} 내선 {nw.ko_digits(ext, phone=True)}" if ext else words


def _code_first(m: re.Match[str]) -> str:
    """USD 100 -> 백 달러; a currency word written after it is said once (KRW 5,000원)."""
    cur = CURRENCY_CODES[m["fcode"]]
    words = _money(m["fn"], cur, m["fmag"])
    after = m.string[m.end() : m.end() + 6].lstrip()
    for word in dict.fromkeys((cur.ko, cur.ko.split()[-1])):
        if after.startswith(word) and words.endswith(" " + word):
            head = words[: -len(word)].rstrip()
            return head if m.string[m.end() : m.end() + 1].isspace() else head + " "
    return words


def _range(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    a, b = m["qn"], m["rb"]
    if g.local_phone(m):
        return f"{nw.ko_digits(a, phone=True)} {nw.ko_digits(b, phone=True)}"
    first = _SIGNS[sign] + _sino(a)
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


def _before_big(n: str, unit: str) -> str:
    # 1만 and 1천 are said 만, 천; 1억 and 1조 keep their 일.
    return "" if n == "1" and unit[0] in "십백천만" else _sino(n)


def _big(m: re.Match[str]) -> str:
    words = _lead(m) + _before_big(m["qn"], m["bu"]) + m["bu"]
    return f"{words} {m['bc']}" if m["bc"] else words


def _scaled(n: str, mag: str) -> str:
    """5K -> 오천, 1.5M -> 백오십만: the value of ``n`` times a magnitude."""
    value = Decimal(n.replace(",", "")) * MAGNITUDES[mag]
    if value == value.to_integral_value():
        return nw.ko_sino(int(value))
    return _sino(format(value.normalize(), "f"))


def _unit_h(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    unit = m["uu1"] or m["uu2"]
    prefix = UNITS[unit].ko_prefix
    # 시속 90km/h: 시속 is written already; said once (not 시속 시속 구십 킬로미터).
    said = bool(prefix) and m.string[max(0, m.start() - len(prefix) - 1) : m.start()].rstrip(
    ).endswith(prefix)
    words = kept + _with_unit(m["qn"], unit, sign, said)
    return _per(words, m["uper"]) if m["uper"] else words


def _ordinal(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    n = m["qn"]
    if sign or not g.is_int(n) or g.to_int(n) == 0:
        return kept + _SIGNS[sign] + _sino(n) + " 번째"
    return kept + _with_counter(n, "번째")


def _times(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    if m["xb"]:
        return f"{kept}{_SIGNS[sign]}{_sino(m['qn'])} 곱하기 {_sino(m['xb'])}"
    return kept + _with_counter(m["qn"], "배", sign)


_SCORE_NEXT = re.compile(r"\s?\d")

_LABEL_NEXT = re.compile(
    r"\s(?:" + trie_alt(tables.KO_LABEL_NOUNS) + r")(?:" + _PARTICLES + r")?(?![가-힣])")


def _counter_h(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    num, counter, je = m["qn"], m["kc1"] or m["kc2"], m["kje"]
    if je and not (m.start() > 0 and "가" <= m.string[m.start() - 1] <= "힣"):
        words = f"제{_sino(num)} {counter}"
    elif counter == "대" and not m["kn2"] and _SCORE_NEXT.match(m.string, m.end()):
        words = f"{kept}{_SIGNS[sign]}{_sino(num)} 대"  # a score: 3 대 1
    elif counter == "번" and not m["kn2"] and _LABEL_NEXT.match(m.string, m.end()):
        words = f"{kept}{_SIGNS[sign]}{_sino(num)} 번"  # a label: 3번 출구
    else:
        # A 제 that ends a word (문제3개) is not the ordinal prefix: kept as written.
        words = kept + _with_counter(num, counter, sign)
    if m["kwd"]:
        words += " " + ko_words.WEEKDAYS[m["kwd"]]  # 1일(월): the weekday, without brackets
    if m["kn2"]:
        # 9시~18시, 1개~2개, 오전 9시~오후 6시: a range with the counter on both ends.
        ap = f"{m['kap']} " if m["kap"] else ""
        words += f"에서 {ap}{_with_counter(m['kn2'], m['kc3'])}"
        if m["kwd2"]:
            words += " " + ko_words.WEEKDAYS[m["kwd2"]]
    return _per(words, m["kper"]) if m["kper"] else words


def _per(words: str, key: str) -> str:
    """5000원/개 -> 개당 오천 원, $20/mo -> 월 이십 달러."""
    return f"{PER[key][1]} {words}"


def _date_dmy(m: re.Match[str]) -> str:
    a, b, y = int(m["ea"]), int(m["eb"]), int(m["ey"])
    if 1 <= a <= 12 and 1 <= b <= 31:
        return _date_words(y, a, b)
    if 1 <= b <= 12 and 1 <= a <= 31:
        return _date_words(y, b, a)  # 25/12/2026: day first
    return _plain(m.group(0)).replace("/", " ")


#: English digit names in Hangul, for paper sizes (A4: 에이포).
_EN_DIGITS_KO = ("제로", "원", "투", "쓰리", "포", "파이브", "식스", "세븐", "에이트", "나인")


def _root(m: re.Match[str]) -> str:
    """√3 -> 루트 삼, 2√3 -> 이 루트 삼, √3/2 -> 이분의 루트 삼 (∛: 세제곱근)."""
    words = ("루트 " if m["rsym"] == "√" else "세제곱근 ") + _sino(m["rn"])
    if m["rc"]:
        words = f"{_sino(m['rc'])} {words}"
    return f"{_sino(m['rd'])}분의 {words}" if m["rd"] else words


def _fraction(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    kept += _SIGNS[sign]
    num = m["qn"]
    if not g.is_int(num):
        return f"{kept}{nw.ko_number(num)} 나누기 {nw.ko_number(m['fb'])}"
    a, b = g.to_int(num), int(m["fb"])
    unit = m["fu1"] or m["fu2"]
    if b == 0:
        return f"{kept}{nw.ko_number(num)} 나누기 영"
    if (not unit and not sign and not m["fsp"] and not (a < b <= 10) and 1 <= a <= 12
            and 1 <= b <= 31):
        return f"{kept}{nw.ko_month(a)} {nw.ko_sino(b)} 일"  # 8/24: a date
    words = f"{kept}{nw.ko_sino(b)}분의 {nw.ko_sino(a)}"
    return f"{words} {UNITS[unit].ko}" if unit else words


#: Emergency and service numbers, said digit by digit (일일구) when they stand alone.
_SERVICE_NUMBERS = frozenset({"112", "119", "114", "120", "1330"})


def _number(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    if m["qn"] in _SERVICE_NUMBERS and not sign:
        return kept + nw.ko_digits(m["qn"], phone=True)
    return kept + _SIGNS[sign] + nw.ko_number(m["qn"])


_plain = g.plain_reader(lambda d: nw.ko_digits(d, phone=True), _number)
_HANDLERS = {
    **g.handlers(g.Words(_plain, _clock, _money, _SIGNS, "에서 ", " 대 ", _per,
                         nw.ko_number, " 점 ", "버전 ")),
    "digits": lambda m: nw.ko_digits(m.group(0), phone=True),
    "date": _date, "phone": _phone, "date_dmy": _date_dmy,
    "middot": lambda m: nw.ko_digits(m["mda"] + m["mdb"]),  # 6·25: as these dates are named
    "paper": lambda m: tables.KO_LETTERS[m["pl"]] + _EN_DIGITS_KO[int(m["pn"])],
    "quarter": lambda m: _lead(m) + nw.ko_number(m["qn"]) + " 사분기",  # 1/4분기: 일 사분기
    "currency_post": lambda m: _lead(m) + _money(m["qn"], CURRENCIES[m["csym2"]], None),
    "magnitude": lambda m: _lead(m) + _scaled(m["qn"], m["mg"]),
    "percent": lambda m: _lead(m) + _percent(m["qn"], m["pp"]),
    "code_first": _code_first, "range": _range, "big": _big,
    "unit": _unit_h, "ordinal": _ordinal, "times": _times, "counter": _counter_h,
    "fraction": _fraction, "root": _root, "qn": _number,
}
_numeric = make_numeric(_HANDLERS, _plain)


def numbers(text: str, steps: Steps) -> str:
    """Read every number (`NUMERIC`), then match a particle written right after it to
    the reading (trace ``particle``).

    Example:
        >>> numbers("4/7이 3/5를", None)
        '칠분의 사가 오분의 삼을'
    """
    out: list[str] = []
    pos = 0
    for m in NUMERIC.finditer(text):
        rep = _numeric(m)
        if steps is not None and rep != m.group(0):
            name = m.lastgroup if m.lastgroup not in (None, "qn") else "number"
            steps.append(TraceStep(name, m.group(0), rep))
        out.append(text[pos : m.start()])
        out.append(rep)
        pos = m.end()
        if rep != m.group(0) and not m["kje"]:  # 제2과: a lesson, not "2 and"
            pm = ko_words.PARTICLE_AFTER.match(text, pos)
            if pm:
                fixed = ko_words.particle(rep, pm.group(0))
                if fixed != pm.group(0):
                    if steps is not None:
                        steps.append(TraceStep("particle", pm.group(0), fixed))
                    out.append(fixed)
                    pos = pm.end()
    out.append(text[pos:])
    return "".join(out)


def rules(lexicon: Lexicon) -> list[Step]:
    """The Korean steps after Unicode preparation, in order.

    Example:
        >>> from tts_kit.text.lexicon import load
        >>> len(rules(load("ko"))) >= 4
        True
    """
    def known(t: str) -> bool:
        return t.lower() in lexicon.entries

    # A Latin label the lexicon does not know is spelled in Korean letters, as capitals
    # are elsewhere (kim@naver.com: 케이아이엠 앳 네이버 닷 컴), not left in Latin.
    web = replace(ko_words.WEB_WORDS, word=lambda t: t if known(t) else ko_words.WEB_WORDS.spell(t))
    return [
        Rule("web", g.WEB, g.web_repl(web, known), by_group=True),
        lexicon.apply,
        *ko_words.BEFORE_NUMBERS,
        numbers,
        *ko_words.AFTER_NUMBERS,
        make_cleanup("ko"),
    ]
