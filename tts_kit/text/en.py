"""English rules: abbreviations, dates, times, money, units, years, acronyms, symbols.

As in `ko`, every rule that reads digits is one alternative of a single regular
expression (`NUMERIC`), most specific first, behind a lookahead that lets the scanner
skip text without digits at C speed. Two passes run before it because their matches
start with letters: abbreviations (Dr., e.g., etc.) and dates written with a month
name (December 2, 2026; 2 December 2026; June 2026).

Readings (num2words for the words):

- Cardinals, decimals (three point one four), negatives, ordinals (21st ->
  twenty-first), years where the context says year (in 1999 -> in nineteen
  ninety-nine; 2026-08-24; the 1990s -> the nineteen nineties).
- Dates: December 2, 2026; 12/25/2026 (US month/day; day/month when the first part is
  over 12); ISO 2026-08-24. Times: 10:30 -> ten thirty, 3:05 pm -> three oh five P M,
  10:00 -> ten o'clock.
- Money with cents ($12.50 -> twelve dollars and fifty cents), $5M, ISO codes;
  percent; units with plurals; phone numbers digit by digit; ranges (10-20 -> ten to
  twenty); fractions (1/2 -> one half); versions (v1.2.3).
- Capitals not in the lexicon, letter by letter: API -> A P I.

Example:
    >>> from tts_kit.text import normalize
    >>> normalize("Dr. Kim paid $12.50 at 3:05 pm", "en")
    'Doctor Kim paid twelve dollars and fifty cents at three oh five P M'
    >>> normalize("on Dec. 2, 2026", "en")
    'on December second, twenty twenty-six'
"""

from __future__ import annotations

import re
from decimal import Decimal

from tts_kit.text import numbers as nw
from tts_kit.text.charset import make_cleanup
from tts_kit.text.common import Rule, Step, Steps, TraceStep, make_numeric, trie_alt
from tts_kit.text.common import grammar as g
from tts_kit.text.lexicon import Lexicon
from tts_kit.text.tables import (
    CURRENCIES,
    EN_ABBREVIATIONS,
    EN_YEAR_CONTEXT,
    PER,
    UNITS,
    Currency,
)

_MONTH_NAMES = {
    **{name: name for name in nw.EN_MONTHS[1:]},
    **{name[:3]: name for name in nw.EN_MONTHS[1:]},
    "Sept": "September",
}
#: Month names as dates are also written: lower case (july 25 2012; not "may" and
#: "march", which are words first) and capitals (JULY, JAN 15 2020).
_MONTHS_ANY = {
    **_MONTH_NAMES,
    **{k.upper(): v for k, v in _MONTH_NAMES.items()},
    **{k.lower(): v for k, v in _MONTH_NAMES.items()
       if len(k) > 3 and k not in ("May", "March", "Sept")},
}
_MONTH = trie_alt(_MONTHS_ANY)
_NUM = g.NUM
_unit = g.unit
_SCALE_WORDS = "thousand|million|billion|trillion"


# Structured forms first, then one number followed by what it measures; as in `ko`,
# the tail that matched is `m.lastgroup` (a bare number: ``qn``). The shapes both
# languages share come from `common.grammar`.
NUMERIC = g.numeric(
    g.NUM_START + r"|-?[" + g.SYMS + r"]|[vV]\d|[#~']\d|\(\d|" + g.CODE_START,
    g.NUM_FIRST + "vV#~'(" + g.CODE_FIRST,
    [
        g.DIGITS,
        r"(?P<date_iso>(?P<iy>\d{4})(?P<is>[-/.])(?P<im>\d{1,2})(?P=is)(?P<id>\d{1,2})(?!\d))",
        r"(?P<date_us>(?P<ua>\d{1,2})(?P<us>[/.-])(?P<ub>\d{1,2})(?P=us)"
        r"(?P<uy>\d{4}|(?<=/)\d{2})(?![\d/]))",
        rf"(?P<arange>(?P<ah>\d{{1,2}}(?::\d{{2}})?)(?:\s?(?P<aa>{g.AMPM}))?\s?[-–~]\s?"
        rf"(?P<bh>\d{{1,2}}(?::\d{{2}})?)\s?(?P<ab>{g.AMPM}))",
        g.TRANGE,
        g.TIME_ALT,
        r"(?P<phone>(?:\+\d{1,3}[-.\s]?)?(?:\(\d{3}\)\s?|\d{3}[-.])\d{3}[-.]\d{4}(?!\d)"
        r"|1-\d{3}-\d{3}-\d{4}(?!\d)|\+\d{1,3}(?:[-.\s]\d{1,4}){2,5}(?!\d)"
        r"|0\d{1,2}-\d{3,4}-\d{4}(?!\d))",
        g.currency(),
        g.code_first(),
        r"(?P<decade>'(?P<dd2>\d0)s|(?P<dd4>\d{3}0)s)(?![A-Za-z])",
        r"(?P<paren_year>\((?P<py>1[1-9]\d\d|20\d\d)\))",
        r"(?P<plan>(?P<pd>\d{3})\((?P<pl>[a-z])\)(?:\((?P<pn>\d{1,2})\))?)",
        r"(?P<mixed>(?<![\d.,/])(?P<mw>\d{1,3})\s(?P<mn>\d{1,2})/(?P<md>\d{1,2})(?![\d/]))",
        rf"(?P<number_sign>\#(?P<hn>{_NUM}))",
        rf"(?P<approx>~(?P<tn>{_NUM}))",
        g.MIDDOT,
        g.VERSION,
    ],
    [
        g.CURRENCY_CODE,
        g.currency_post("¢"),
        rf"(?P<range>(?P<rpa>\s?%)?\s?(?P<rsep>{g.RANGE_SIGN})\s?(?P<rb>{_NUM})"
        rf"(?:(?P<rpct>\s?%)|{_unit('r')})?)",
        g.MAGNITUDE,
        r"(?P<percent>\s?%)",
        rf"(?P<scale>\s(?P<sw>{_SCALE_WORDS})\s(?P<su>{g.UNITS_SPACED})(?![A-Za-z0-9])"
        rf"{g.per('s')}?)",
        rf"(?P<unit>{_unit('u')}{g.per('u')}?)",
        g.ORDINAL,
        g.AMPM_TAIL,
        g.TIMES,
        g.RATIO,
        g.FRACTION,
    ],
)
_PLAIN = re.compile(rf"(?P<digits>\d{{17,}})|(?P<qsg>[-+])?(?P<qn>{_NUM})")
_YEAR_BEFORE = re.compile(
    r"(?:(?:(?<![A-Za-z])" + trie_alt(EN_YEAR_CONTEXT) + r"|" + _MONTH + r"\.?,?|Q[1-4])\s|FY)$"
)
#: "the 2024 Olympics": a year before a name; "the 2000 items" stays a number.
_THE_BEFORE = re.compile(r"(?<![A-Za-z])[Tt]he\s$")
_NAME_AFTER = re.compile(r"\s[A-Z][a-z]")
_YEAR_AFTER = re.compile(r"\s?(?:AD|BC|BCE|CE)\b")


# -- readings ---------------------------------------------------------------------------


def _plural(num: str, singular: str, plural: str) -> str:
    return singular if num in ("1", "-1", "+1") else plural


_SIGNS = {"-": "minus ", "+": "plus "}


def _sign_word(sign: str | None) -> str:
    return _SIGNS.get(sign or "", "")


def _is_year(n: int) -> bool:
    return 1000 <= n <= 2099


def _with_unit(num: str, unit: str, sign: str | None = None) -> str:
    u = UNITS[unit]
    words = nw.en_number(num)
    if sign == "-":
        words = "minus " + words
    elif sign == "+":
        words = "plus " + words
    return f"{words} {_plural(num, u.en, u.en_plural)}"


_MAGNITUDE_WORDS = {"K": "thousand", "k": "thousand", "M": "million", "mn": "million",
                    "B": "billion", "bn": "billion"}


def _money(amount: str, cur: Currency, mag: str | None) -> str:
    if mag:
        word = _MAGNITUDE_WORDS.get(mag, mag)
        return f"{nw.en_number(amount)} {word} {cur.en_plural}"
    whole, _, frac = amount.replace(",", "").partition(".")
    if frac and cur.en_minor and len(frac) <= 2:
        cents = int(frac.ljust(2, "0"))
        major = int(whole or 0)
        parts = []
        if major:
            parts.append(f"{nw.en_cardinal(major)} {cur.en if major == 1 else cur.en_plural}")
        if cents:
            minor = cur.en_minor if cents == 1 else cur.en_minor_plural
            parts.append(f"{nw.en_cardinal(cents)} {minor}")
        return " and ".join(parts) or f"zero {cur.en_plural}"
    value = Decimal(amount.replace(",", ""))
    return f"{nw.en_number(amount)} {cur.en if value == 1 else cur.en_plural}"


def _clock(h: int, mi: int, s: int | None, ap: str | None) -> str:
    if s is not None and not ap:
        return _duration(h, mi, s)
    words = nw.en_cardinal(h)
    if mi:
        words += " " + (f"oh {nw.en_cardinal(mi)}" if mi < 10 else nw.en_cardinal(mi))
    elif not ap:
        words += " o'clock"
    if s:
        words += f" and {nw.en_cardinal(s)} {'second' if s == 1 else 'seconds'}"
    if ap:
        words += " A M" if ap[0] in "Aa" else " P M"
    return words


def _duration(h: int, mi: int, s: int) -> str:
    """1:01:01 -> one hour one minute and one second (zero parts left out)."""
    parts = [f"{nw.en_cardinal(v)} {name if v == 1 else name + 's'}"
             for v, name in ((h, "hour"), (mi, "minute"), (s, "second")) if v]
    if not parts:
        return "zero seconds"
    return parts[0] if len(parts) == 1 else " ".join(parts[:-1]) + " and " + parts[-1]


def _per(words: str, key: str) -> str:
    return f"{words} per {PER[key][0]}"


def _date_words(y: int | None, mo: int, d: int) -> str:
    words = f"{nw.EN_MONTHS[mo]} {nw.en_ordinal(d)}"
    return f"{words}, {nw.en_year(y)}" if y is not None else words


def _fraction_words(a: int, b: int) -> str:
    if b == 2:
        den = "half" if a == 1 else "halves"
    elif b == 4:
        den = "quarter" if a == 1 else "quarters"
    else:
        den = nw.en_ordinal(b) + ("" if a == 1 else "s")
    return f"{nw.en_cardinal(a)} {den}"


def _plain(text: str) -> str:
    return _PLAIN.sub(_plain_number, text)


def _plain_number(m: re.Match[str]) -> str:
    return _digits(m) if m.lastgroup == "digits" else _number(m)


def _digits(m: re.Match[str]) -> str:
    return nw.en_digits(m.group(0))


# -- handlers -----------------------------------------------------------------------------


def _date_iso(m: re.Match[str]) -> str:
    y, mo, d = int(m["iy"]), int(m["im"]), int(m["id"])
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        if m["is"] == ".":
            return " point ".join(nw.en_number(p) for p in m.group(0).split("."))
        return _plain(m.group(0)).replace(m["is"], " ")
    return _date_words(y, mo, d)


def _short_year(yy: str) -> str:
    """'98 -> ninety-eight, '05 -> oh five: a two-digit year as written."""
    return nw.en_cardinal(int(yy)) if yy[0] != "0" else "oh " + nw.en_cardinal(int(yy))


def _date_us(m: re.Match[str]) -> str:
    a, b, yy = int(m["ua"]), int(m["ub"]), m["uy"]
    year = nw.en_year(int(yy)) if len(yy) == 4 else _short_year(yy)
    if 1 <= a <= 12 and 1 <= b <= 31:
        return f"{nw.EN_MONTHS[a]} {nw.en_ordinal(b)}, {year}"
    if 1 <= b <= 12 and 1 <= a <= 31:
        return f"{nw.EN_MONTHS[b]} {nw.en_ordinal(a)}, {year}"  # 25/12/2026: day first
    return _plain(m.group(0)).replace(m["us"], " ")


def _arange(m: re.Match[str]) -> str:
    """2pm-5pm, 9-11 am, 10:30am-2pm: a range of clock times."""
    ends = []
    for hm, ap in ((m["ah"], m["aa"]), (m["bh"], m["ab"])):
        h, _, mi = hm.partition(":")
        if int(h) > 12 or (mi and int(mi) > 59):
            return _plain(m.group(0))
        mins = int(mi or 0)
        ends.append(_clock(int(h), mins, None, ap) if ap or mins else nw.en_cardinal(int(h)))
    return " to ".join(ends)


def _paren_year(m: re.Match[str]) -> str:
    return f"({nw.en_year(int(m['py']))})"


def _code_digits(d: str) -> str:
    """401 -> four oh one: a three-digit name said digit by digit, zero as oh."""
    return " ".join("oh" if c == "0" else nw.EN_DIGITS[int(c)] for c in d)


def _plan(m: re.Match[str]) -> str:
    """401(k), 501(c)(3): sections of a code, named by their numbers."""
    words = f"{_code_digits(m['pd'])} {m['pl']}"
    return words + (f" {nw.en_cardinal(int(m['pn']))}" if m["pn"] else "")


def _mixed(m: re.Match[str]) -> str:
    """2 1/2 -> two and a half; 3 5/2 -> three and five halves (never a date)."""
    a, b = int(m["mn"]), int(m["md"])
    if a == 0 or b < 2:
        return _plain(m.group(0)).replace("/", " over ")
    whole = nw.en_cardinal(int(m["mw"]))
    if a == 1 and b in (2, 4):
        return f"{whole} and a {'half' if b == 2 else 'quarter'}"  # as NeMo says it
    return f"{whole} and {_fraction_words(a, b)}"


def _middot(m: re.Match[str]) -> str:
    return f"{nw.en_number(m['mda'])} {nw.en_number(m['mdb'])}"


def _phone(m: re.Match[str]) -> str:
    s = m.group(0)
    if sum(c.isdigit() for c in s) < 7:
        return _plain(s)
    head = "plus " if s.startswith("+") else ""
    return head + ", ".join(nw.en_digits(p) for p in g.phone_groups(s))


def _currency_post(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    if m["csym2"] == "¢":
        n = m["qn"]
        return kept + _sign_word(sign) + nw.en_number(n) + (" cent" if n == "1" else " cents")
    return kept + _sign_word(sign) + _money(m["qn"], CURRENCIES[m["csym2"]], None)


def _decade(m: re.Match[str]) -> str:
    return nw.en_decade(int(m["dd2"] or m["dd4"]))


def _number_sign(m: re.Match[str]) -> str:
    return "number " + nw.en_number(m["hn"])


def _approx(m: re.Match[str]) -> str:
    return "about " + nw.en_number(m["tn"])


def _version(m: re.Match[str]) -> str:
    v = m["vv"] or m["vv2"]
    words = " point ".join(nw.en_number(p) for p in (m["vn"] or m["vn2"]).split("."))
    if v:
        if m.start() > 0 and m.string[m.start() - 1].isalpha():
            return v + " " + words
        return "version " + words
    return words


def _range(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    a, b = m["qn"], m["rb"]
    tail = m["rpct"] or m["ru1"] or m["ru2"]
    if g.local_phone(m):
        return f"{nw.en_digits(a)}, {nw.en_digits(b)}"
    if not sign and not tail and all(len(x) == 4 and x.isdigit() for x in (a, b)):
        if _is_year(int(a)) and _is_year(int(b)):
            return f"{kept}{nw.en_year(int(a))} to {nw.en_year(int(b))}"
    first = kept + _sign_word(sign) + nw.en_number(a)
    if m["rpa"]:
        first += " percent"  # 2%-10%
    elif (m["rsep"] == "-" and not tail and " - " in m.group(0)
            and "=" in m.string[m.end() : m.end() + 24]):
        return f"{first} minus {nw.en_number(b)}"  # 5 - 3 = 2
    if a == b and m["rsep"] == "-" and not tail:
        return f"{first}-{nw.en_number(b)}"  # fifty-fifty
    if m["rpct"] is not None:
        return f"{first} to {nw.en_number(b)} percent"
    unit = m["ru1"] or m["ru2"]
    if unit:
        return f"{first} to {_with_unit(b, unit)}"
    return f"{first} to {nw.en_number(b)}"


def _magnitude(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    return kept + _sign_word(sign) + nw.en_number(m["qn"]) + " " + _MAGNITUDE_WORDS[m["mg"]]


def _percent(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    return kept + _sign_word(sign) + nw.en_number(m["qn"]) + " percent"


def _unit_h(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    num, unit = m["qn"], m["uu1"] or m["uu2"]
    if unit == "s" and not sign and num in ("20", "30", "40", "50", "60", "70", "80", "90"):
        if m.string[max(0, m.start() - 4) : m.start()].lower() == "the ":
            return nw.en_decade(int(num))  # the 80s
    words = kept + _with_unit(num, unit, sign)
    return _per(words, m["uper"]) if m["uper"] else words


def _scale(m: re.Match[str]) -> str:
    """100 million kg -> one hundred million kilograms."""
    kept, sign = g.lead(m)
    u = UNITS[m["su"]]
    words = f"{kept}{_sign_word(sign)}{nw.en_number(m['qn'])} {m['sw']} {u.en_plural}"
    return _per(words, m["sper"]) if m["sper"] else words


def _ordinal(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    n = m["qn"]
    if not (n.isdigit() and len(n) <= nw.EN_MAX_DIGITS):
        return kept + _sign_word(sign) + nw.en_number(n) + " " + m.group(0)[-2:]
    return kept + _sign_word(sign) + nw.en_ordinal(int(n))


def _ampm(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    n = m["qn"]
    if sign or not n.isdigit() or int(n) > 24:
        return kept + _sign_word(sign) + nw.en_number(n) + " " + m["aap"]
    return kept + _clock(int(n), 0, None, m["aap"])


def _times(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    a = kept + _sign_word(sign) + nw.en_number(m["qn"])
    if m["xb"]:
        op = "times" if m["xo"] == "*" else "by"
        return f"{a} {op} {nw.en_number(m['xb'])}"
    return a + (" time" if m["qn"] == "1" else " times")


def _ratio(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    return f"{kept}{_sign_word(sign)}{nw.en_number(m['qn'])} to {nw.en_number(m['qb'])}"


def _fraction(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    kept += _sign_word(sign)
    num, den = m["qn"], m["fb"]
    if not g.is_int(num) or int(den) == 0:
        return f"{kept}{nw.en_number(num)} over {nw.en_number(den)}"
    a, b = g.to_int(num), int(den)
    if 1 <= a < b <= 10:
        return kept + _fraction_words(a, b)
    if not sign and 1 <= a <= 12 and 1 <= b <= 31:
        return kept + _date_words(None, a, b)
    return f"{kept}{nw.en_number(num)} over {nw.en_number(den)}"


def _number(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    num = m["qn"]
    if not sign and len(num) == 4 and num.isdigit() and _is_year(int(num)):
        s, a, b = m.string, m.start(), m.end()
        if (_YEAR_BEFORE.search(s, max(0, a - 20), a) or _YEAR_AFTER.match(s, b)
                or (_THE_BEFORE.search(s, max(0, a - 5), a) and _NAME_AFTER.match(s, b))):
            return nw.en_year(int(num))
    if num == "911" and not sign:
        return "nine one one"  # the emergency number, said digit by digit
    return kept + _sign_word(sign) + nw.en_number(num)


_HANDLERS = {
    **g.handlers(g.Words(_plain, _clock, _money, _SIGNS, " to ", " to ", _per)),
    "digits": _digits,
    "date_iso": _date_iso, "date_us": _date_us, "arange": _arange,
    "paren_year": _paren_year, "plan": _plan, "mixed": _mixed, "middot": _middot,
    "scale": _scale,
    "phone": _phone, "decade": _decade, "number_sign": _number_sign,
    "approx": _approx, "version": _version,
    "currency_post": _currency_post,
    "range": _range, "magnitude": _magnitude, "percent": _percent, "unit": _unit_h,
    "ordinal": _ordinal, "ampm": _ampm, "times": _times, "ratio": _ratio,
    "fraction": _fraction, "qn": _number,
}
_NAMES = {"qn": "number"}


_numeric = make_numeric(_HANDLERS, _plain)


# -- abbreviations and month-name dates ---------------------------------------------------

_ABBR = {written: (spoken, ends) for written, spoken, ends in EN_ABBREVIATIONS}
_ABBR.update({f"{short}.": (full, False) for short, full in _MONTH_NAMES.items()
              if short != full})
ABBREVIATION = re.compile(
    "(?=[" + "".join(sorted({w[0] for w in _ABBR} | set("DSNnw"))) + "])"
    r"(?<![A-Za-z.])(?:(?P<ab>" + trie_alt(_ABBR) + r")|(?P<dr>Dr\.|St\.)"
    r"|(?P<no>No\.|no\.)(?=\s?\d)|(?P<wo>w/o)(?![A-Za-z])|(?P<w>w/)(?=\s))"
)
_SENTENCE_NEXT = re.compile(r"\s*(?:$|[A-Z\"'(])")
_NAME_NEXT = re.compile(r" ([A-Z][A-Za-z']*)")
#: Capitalised words that start sentences rather than name people.
_SENTENCE_STARTERS = frozenset(
    "It The He She We They I This That There Then A An In On At But And So Our My His Her "
    "Its You Your Their These Those When While After Before If As Now Later Next What Why "
    "How Where Who".split()
)


def _abbreviation(m: re.Match[str]) -> str:
    s, b = m.string, m.end()
    if m["ab"]:
        spoken, ends = _ABBR[m["ab"]]
    elif m["dr"]:
        # Before a name (St. John, Dr. Kim) the saint or the doctor; before a word that
        # starts a sentence (Elm St. It was), or nothing, the street or the drive.
        nxt = _NAME_NEXT.match(s, b)
        before_name = bool(nxt) and nxt.group(1) not in _SENTENCE_STARTERS
        if m["dr"] == "Dr.":
            spoken, ends = ("Doctor", False) if before_name else ("Drive", True)
        else:
            spoken, ends = ("Saint", False) if before_name else ("Street", True)
    elif m["no"]:
        return "number"
    elif m["wo"]:
        return "without"
    else:
        return "with"
    # "etc. Then": the period was also the sentence's end; keep it.
    if ends and _SENTENCE_NEXT.match(s, b):
        return spoken + "."
    return spoken


MONTH_DATE = re.compile(
    r"(?:(?=[JFMASONDjfmasond])(?<![A-Za-z])|(?=\d))(?:"
    rf"(?P<md>(?<![A-Za-z])(?P<mon>{_MONTH})\.?\s(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
    r"(?:,?\s(?P<yr>\d{4})(?!\d))?)"
    rf"|(?P<dm>(?<!\d)(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\s(?:of\s)?(?P<mon2>{_MONTH})\b\.?"
    r"(?:,?\s(?P<yr2>\d{4})(?!\d))?)"
    rf"|(?P<my>(?<![A-Za-z])(?P<mon3>{_MONTH})\.?,?\s(?P<yr3>\d{{4}})(?!\d))"
    r")"
)


def _month_date(m: re.Match[str]) -> str:
    if m["md"]:
        mon, day, yr = m["mon"], int(m["day"]), m["yr"]
        if not 1 <= day <= 31:
            return m.group(0)
        words = f"{_MONTHS_ANY[mon]} {nw.en_ordinal(day)}"
        return f"{words}, {nw.en_year(int(yr))}" if yr else words
    if m["dm"]:
        mon, day, yr = m["mon2"], int(m["day2"]), m["yr2"]
        if not 1 <= day <= 31:
            return m.group(0)
        before = m.string[max(0, m.start() - 4) : m.start()].lower()
        the = "" if before == "the " else "the "
        words = f"{the}{nw.en_ordinal(day)} of {_MONTHS_ANY[mon]}"
        return f"{words}, {nw.en_year(int(yr))}" if yr else words
    return f"{_MONTHS_ANY[m['mon3']]} {nw.en_year(int(m['yr3']))}"


# -- acronyms and symbols -----------------------------------------------------------------

ACRONYM = re.compile(
    r"(?=[A-Z])(?<![A-Za-z'])(?:(?P<a>[A-Z]{2,})(?P<s>'?s)?(?![A-Za-z])|(?P<dot>(?:[A-Z]\.){2,}))"
)
_ROMAN = re.compile(r"X{0,3}(?:IX|IV|V?I{0,3})")
_CAPITALISED_BEFORE = re.compile(r"[A-Z][a-z]+ $")
_CAPITAL = re.compile("[A-Z]")
_CAPS_WORD = re.compile(r"\b[A-Z]{2,}\b")
_WORD = re.compile(r"\b[A-Za-z]{2,}\b")
_VOWELS = frozenset("AEIOUY")
#: Words written in capitals that are words, not acronyms (PART ONE, NO ENTRY): read as
#: words. Acronyms that are also words (US, IT, AM, PM, OR, ID, WHO) are not here.
_CAPS_WORDS = frozenset("""
A AN THE AND BUT FOR NOR YET SO TO OF IN ON AT BY UP OUT OFF INTO ONTO OVER FROM WITH
NO NOT YES ALL ANY SOME ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE TEN PART BOOK
CHAPTER ACT SCENE STEP PHASE LEVEL ROOM DOOR EXIT ENTRY STOP GO OPEN SHUT CLOSED SALE
NEW NOW HOT COLD FREE BIG TOP END WAY DAY YEAR TIME LIFE LOVE HOME WORK NEWS LIVE HELP
WARNING NOTE ONLY JUST MORE MOST LESS BEST GOOD BAD FULL DONE READ HOW WHY WHAT
WHEN WHERE THIS THAT THESE THOSE HIS HER OUR YOUR THEIR MY WE YOU THEY HE SHE ME HIM
IS ARE WAS WERE BE BEEN HAS HAVE HAD DO DOES DID CAN WILL MAY MUST SHALL SHOULD WOULD
COULD GET GOT MAKE TAKE KEEP LET SEE LOOK CALL ASK TELL SAY SAID BACK DOWN HERE THERE
AGAIN VERY REAL TRUE FALSE OFF ON FIRE WATER AIR LAND SEA SUN MOON STAR KING QUEEN
BOYS GIRLS MEN WOMEN MAN BOY GIRL OLD YOUNG LAST NEXT FIRST HALF ZERO MIX
""".split())
#: Words before a Roman numeral that numbers a part: read as a cardinal (Chapter IV).
_HEADINGS = ("Chapter Part Book Volume Act Scene Section Article Phase Title Appendix "
             "Schedule Canto Psalm Stage Level Round Episode Season Vol Ch Pt Step World War "
             "Super Bowl Apollo Type Class Grade Mark Mk Series Rule").split()
#: Given names of rulers and popes: a Roman numeral after them is a regnal ordinal
#: (Louis XIV -> Louis the fourteenth).
_REGNAL = ("Louis Henry Elizabeth George Edward Charles William James John Richard Benedict "
           "Pius Leo Gregory Innocent Clement Paul Alexander Peter Frederick Philip Ferdinand "
           "Napoleon Ramesses Ramses Constantine Catherine Mary Victoria Anne Nicholas Ivan "
           "Gustav Christian Alfonso Carlos Felipe Otto Wilhelm Friedrich Francis Urban Boniface "
           "Sixtus Adrian Hadrian Eugene Julius Stephen Malcolm David Robert Harold Edmund "
           "Ludwig Karl Rudolf Sancho Juan Pedro Manuel Joao Haakon Olaf Harald Magnus Eric "
           "Erik Sigismund Casimir Amenhotep Thutmose Darius Xerxes Cyrus Antiochus Ptolemy "
           "Seleucus Mithridates Rama Mehmed Murad Selim Suleiman Abdul Pope King Queen Tsar "
           "Czar Emperor Kaiser Sultan Shah Pharaoh").split()
_ROMAN_ANY = r"(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
ROMAN = re.compile(
    r"(?=[A-Z])(?<![A-Za-z'])(?:"
    rf"(?P<head>{trie_alt(_HEADINGS + [h.upper() for h in _HEADINGS])})\.?\s(?P<hr>{_ROMAN_ANY})"
    rf"|(?P<reg>{trie_alt(_REGNAL)})\s(?P<rr>{_ROMAN_ANY})"
    rf"|(?P<cr>{_ROMAN_ANY})(?=\s(?:[Cc]entur(?:y|ies)|CENTURY)\b)"
    r")(?![A-Za-z0-9'])"
)


def _roman_value(s: str) -> int:
    total = 0
    for a, b in zip(s, s[1:] + " "):
        v = _ROMAN_VALUES[a]
        total += -v if b != " " and _ROMAN_VALUES[b] > v else v
    return total


def _roman(m: re.Match[str]) -> str:
    """Chapter IV -> Chapter four; Louis XIV -> Louis the fourteenth; XIX century ->
    nineteenth century. "I" and "MIX" elsewhere are words, not numerals."""
    if m["head"]:
        if len(m["hr"]) == 1 and m["hr"] in "LCDM":
            return m.group(0)  # Appendix C, Part D: a letter
        head = m["head"].lower() if m["head"].isupper() and len(m["head"]) > 1 else m["head"]
        sep = m.group(0)[len(m["head"]) : m.start("hr") - m.start()]
        return head + sep.replace(".", "") + nw.en_cardinal(_roman_value(m["hr"]))
    if m["reg"]:
        return f"{m['reg']} the {nw.en_ordinal(_roman_value(m['rr']))}"
    return nw.en_ordinal(_roman_value(m["cr"]))


def _spell(m: re.Match[str], shouting: bool) -> str:
    if m["dot"]:
        letters = " ".join(m["dot"].replace(".", ""))
        return letters + "." if _SENTENCE_NEXT.match(m.string, m.end()) else letters
    run, suffix = m["a"], m["s"] or ""
    if (_ROMAN.fullmatch(run)
            and _CAPITALISED_BEFORE.search(m.string, max(0, m.start() - 20), m.start())):
        return nw.en_cardinal(_roman_value(run)) + suffix  # World War II, Rocky IV
    if shouting or run in _CAPS_WORDS or (len(run) >= 6 and _VOWELS.intersection(run)):
        return run.lower() + suffix  # a word in capitals, not an acronym
    return " ".join(run) + suffix


def acronyms(text: str, steps: Steps) -> str:
    """Spell capitals letter by letter (API -> A P I), unless the whole text shouts.

    Example:
        >>> acronyms("The API of AWS", None), acronyms("WE ARE OPEN TODAY", None)
        ('The A P I of A W S', 'we are open today')
    """
    if not _CAPITAL.search(text):
        return text
    caps = len(_CAPS_WORD.findall(text))
    shouting = caps >= 3 and caps * 2 > len(_WORD.findall(text))

    def repl(m: re.Match[str]) -> str:
        out = _spell(m, shouting)
        if steps is not None and out != m.group(0):
            steps.append(TraceStep("acronym", m.group(0), out))
        return out

    return ACRONYM.sub(repl, text)


_SYMBOL = re.compile(r"[&+=@%×÷±°–—~#]")
_SYMBOL_WORDS = {
    "&": " and ", "+": " plus ", "=": " equals ", "@": " at ", "%": " percent ",
    "×": " times ", "÷": " divided by ", "±": " plus or minus ", "°": " degrees ",
    "–": ", ", "—": ", ", "~": " ", "#": " ",
}


#: Serial and part numbers: capitals and digits in groups joined by hyphens, with both
#: letters and digits and at least six of them (SN-4471-XK2, AB12-C34): every character
#: said, hyphens as "dash".
SERIAL = re.compile(
    r"(?=[A-Z0-9])(?<![\w-])(?=[A-Z0-9-]*[A-Z])(?=[A-Z0-9-]*\d)"
    r"(?=(?:-?[A-Z0-9]){6})[A-Z0-9]+(?:-[A-Z0-9]+)+(?![\w-])"
)


def _serial(m: re.Match[str]) -> str:
    out = []
    for part in m.group(0).split("-"):
        out.append(" ".join(nw.EN_DIGITS[int(c)] if c.isdigit() else c for c in part))
    return " dash ".join(out)


_WEB_WORDS = g.WebWords(
    {"://": " colon slash slash ", "/": " slash ", ".": " dot ", "@": " at ", "-": " dash ",
     "_": " underscore ", ":": " colon ", "?": " question mark ", "=": " equals ",
     "&": " and ", "#": " hash ", "%": " percent ", "~": " tilde ", "+": " plus "},
    lambda t: " ".join(t.upper()),
    nw.en_digits,
    {k: k for k in ("com", "org", "net", "gov", "info", "app", "dev")},
)


def rules(lexicon: Lexicon) -> list[Step]:
    """The English steps after Unicode preparation, in order.

    Example:
        >>> from tts_kit.text.lexicon import load
        >>> len(rules(load("en"))) >= 6
        True
    """
    return [
        Rule("web", g.WEB, g.web_repl(_WEB_WORDS, lambda t: t.lower() in lexicon.entries),
             by_group=True),
        lexicon.apply,
        Rule("serial", SERIAL, _serial),
        Rule("abbreviation", ABBREVIATION, _abbreviation),
        Rule("date", MONTH_DATE, _month_date),
        Rule("number", NUMERIC, _numeric, by_group=True, aliases=_NAMES),
        Rule("roman", ROMAN, _roman),
        acronyms,
        Rule("symbol", _SYMBOL, lambda m: _SYMBOL_WORDS[m.group(0)]),
        make_cleanup("en"),
    ]
