"""English rules: abbreviations, dates, times, money, units, years, acronyms, symbols. As
in `ko`, every rule that reads digits is one alternative of `NUMERIC`, most specific first;
years are said as years where the context says so (in 1999, the 1990s)."""

from __future__ import annotations

import re
from decimal import Decimal

from tts_kit.text import en_forms, en_letters, tables
from tts_kit.text import numbers as nw
from tts_kit.text.charset import make_cleanup
from tts_kit.text.common import Reading, Rule, Step, make_numeric, trie_alt
from tts_kit.text.common import grammar as g
from tts_kit.text.lexicon import Lexicon
from tts_kit.text.tables import CURRENCIES, EN_YEAR_CONTEXT, PER, UNITS, Currency

# Structured forms first, then one number and what it measures (`m.lastgroup`; ``qn``).
NUMERIC = g.numeric(
    g.NUM_START + r"|-?[" + g.SYMS + r"]|[vV]\d|[#~']\d|\(\d|" + g.CODE_START + "|"
    + g.ROOT_START + "|" + g.PREFIX_START,
    g.NUM_FIRST + "vV#~'(√∛" + g.CODE_FIRST + g.PREFIX_FIRST,
    [
        g.DIGITS,
        g.ROOT,
        r"(?P<code>(?<=[A-Za-z])\d{3,16}(?!\d|[.,]\d))",
        r"(?P<quarter>(?<!\w)(?P<qq>[1-4])Q(?P<qy>\d\d|\d{4})(?!\w))",
        r"(?P<feet>(?<![\d'])(?P<ft>\d{1,2})'\s?(?P<inch>\d{1,2})(?:\"|'')(?![\w]))",
        r"(?P<date_iso>(?P<iy>\d{4})(?P<is>[-/.])(?P<im>\d{1,2})(?P=is)(?P<id>\d{1,2})(?!\d))",
        r"(?P<date_us>(?P<ua>\d{1,2})(?P<us>[/.-])(?P<ub>\d{1,2})(?P=us)"
        r"(?P<uy>\d{4}|(?<=/)\d{2})(?![\d/]))",
        rf"(?P<arange>(?P<ah>\d{{1,2}}(?::\d{{2}})?)(?:\s?(?P<aa>{g.AMPM}))?\s?[-–~]\s?"
        rf"(?P<bh>\d{{1,2}}(?::\d{{2}})?)\s?(?P<ab>{g.AMPM}))",
        g.TRANGE,
        rf"(?P<noon>12(?::00)?\s(?P<nw>noon|midnight)\b"
        rf"|(?P<dh>\d{{1,2}})\.(?P<dm>[0-5]\d)\s?(?P<dap>{g.AMPM}))",
        g.TIME_ALT,
        r"(?P<phone>(?:" + g.PHONE_SHARED + "|"
        r"(?:\+\d{1,3}[-.\s]?)?(?:\(\d{3}\)[-\s]?|\d{3}[-.])\d{3}[-.]\d{4}(?:-\d{4})?(?!\d)"
        r"|1-\d{3}-\d{3}-\d{4}(?!\d)|\+\d{1,3}(?:[-.\s]\d{1,4}){2,5}(?!\d)"
        r"|0\d{1,2}-\d{3,4}-\d{4}(?!\d))" + g.PHONE_EXT + ")",
        g.GROUPS,
        g.currency(),
        g.code_first(),
        r"(?P<decade>'(?P<dd2>\d0)'?s|(?P<dd4>\d{3}0)(?:'?s| s(?![\w']))"
        r"(?:[-–](?P<dde>(?:\d\d)?\d0)'?s(?![\w']))?|(?<=[A-Za-z]-)(?P<dd3>[1-9]0)s"
        r"|(?<![\d'])(?P<dd5>[1-9]0)'s)"
        r"(?![A-Za-z])",
        r"(?P<paren_year>\((?P<py>1[1-9]\d\d|20\d\d)\))",
        r"(?P<plan>(?P<pd>\d{3})\((?P<pl>[a-z])\)(?:\((?P<pn>\d{1,2})\))?)",
        r"(?P<mixed>(?<![\d.,/])(?P<mw>\d{1,3})\s(?P<mn>\d{1,2})/(?P<md>\d{1,2})(?![\d/]))",
        rf"(?P<number_sign>\#(?P<hn>{g.NUM}))",
        rf"(?P<approx>~(?P<tn>{g.NUM}))",
        g.MIDDOT,
        g.VERSION,
    ],
    [
        g.CURRENCY_CODE,
        g.currency_post("¢"),
        rf"(?P<range>(?P<rpa>\s?%)?\s?(?P<rsep>{g.RANGE_SIGN})\s?(?P<rb>{g.NUM})"
        rf"(?:(?P<rpct>\s?%)|{g.unit('r')})?)",
        g.MAGNITUDE,
        r"(?P<percent>\s?%)",
        r"(?P<scale>\s(?P<sw>thousand|million|billion|trillion)"
        rf"\s(?P<su>{g.UNITS_SPACED})(?![A-Za-z0-9]){g.per('s')}?)",
        rf"(?P<unit>{g.unit('u')}{g.per('u')}?)",
        g.ORDINAL,
        g.AMPM_TAIL,
        g.TIMES,
        g.RATIO,
        g.FRACTION,
        rf"(?P<bare_per>{g.per('b')})",
    ],
)
_YEAR_BEFORE = re.compile(
    r"(?:(?:(?<![A-Za-z])" + trie_alt(EN_YEAR_CONTEXT) + r"|" + en_letters.MONTH
    + r"\.?,?|Q[1-4])\s|FY)$"
)
#: "the 2024 Olympics": a year before a name; "the 2000 items" stays a number.
_THE_BEFORE = re.compile(r"(?<![A-Za-z])[Tt]he\s$")
_NAME_AFTER = re.compile(r"\s[A-Z][a-z]")
_FORMULA = re.compile(r"[=+×*/^]\s?$")
#: After a glued multiplier, a comparison or a frequency: "times" (3x faster, 2x a day).
_COMPARED = re.compile(r"\s+(?:[A-Za-z]+er|more|less|as|than|the|an?|per|each|every|daily|"
                       r"weekly|monthly|yearly|annually|hourly)(?![A-Za-z])")
#: "RTX 4090", "ISO 9001": capitals right before a number make it a model number.
_CODE_BEFORE = re.compile(r"(?<![A-Za-z])[A-Z]{2,5} $")
_ON = re.compile(r"(?<![A-Za-z])(?:[Oo]n|[Uu]ntil|[Ss]ince|[Dd]ue) $")
_BETWEEN = re.compile(r"(?<![A-Za-z])[Bb]etween $")
_YEAR_AFTER = re.compile(r"\s?(?:AD|BCE?|CE|A\.D|B\.C(?:\.E)?|C\.E)(?![A-Za-z])")


# -- readings ---------------------------------------------------------------------------


_SIGNS = {"-": "minus ", "+": "plus ", None: ""}


def _is_year(n: int) -> bool:
    return 1000 <= n <= 2099


def _with_unit(num: str, unit: str, sign: str | None = None) -> str:
    u = UNITS[unit]
    word = u.en if num in ("1", "-1", "+1") else u.en_plural
    return f"{_SIGNS[sign]}{nw.en_number(num)} {word}"


def _money(amount: str, cur: Currency, mag: str | None) -> str:
    if mag:
        return f"{nw.en_number(amount)} {tables.MAGNITUDE_WORDS[mag]} {cur.en_plural}"
    whole, _, frac = amount.replace(",", "").partition(".")
    if frac and cur.en_minor and len(frac.rstrip("0")) <= 2:  # $20.500: twenty dollars fifty
        amounts = ((int(whole or 0), cur.en, cur.en_plural),
                   (int(frac[:2].ljust(2, "0")), cur.en_minor, cur.en_minor_plural))
        parts = [nw.en_count(n, one, many) for n, one, many in amounts if n]
        return " and ".join(parts) or f"zero {cur.en_plural}"
    value = Decimal(amount.replace(",", ""))
    return f"{nw.en_number(amount)} {cur.en if value == 1 else cur.en_plural}"


def _clock(h: int, mi: int, s: int | None, ap: str | None) -> str:
    if s is not None and not ap:  # 1:01:01: one hour one minute and one second
        parts = [nw.en_count(v, name) for v, name in ((h, "hour"), (mi, "minute"), (s, "second"))
                 if v]
        if not parts:
            return "zero seconds"
        return parts[0] if len(parts) == 1 else " ".join(parts[:-1]) + " and " + parts[-1]
    words = nw.en_cardinal(h)
    if mi:
        words += " " + (f"oh {nw.en_cardinal(mi)}" if mi < 10 else nw.en_cardinal(mi))
    elif not ap:
        words += " hundred" if h > 12 or h == 0 else " o'clock"  # 17:00: seventeen hundred
    if s:
        words += " and " + nw.en_count(s, "second")
    if ap:
        words += " A M" if ap[0] in "Aa" else " P M"
    return words


def _per(words: str, key: str) -> str:
    return f"{words} per {PER[key][0]}"


def _date_words(y: int | None, mo: int, d: int) -> str:
    words = f"{nw.EN_MONTHS[mo]} {nw.en_ordinal(d)}"
    return f"{words}, {nw.en_year(y)}" if y is not None else words


# -- handlers -----------------------------------------------------------------------------


def _date_iso(m: re.Match[str]) -> str:
    y, mo, d = int(m["iy"]), int(m["im"]), int(m["id"])
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        if m["is"] == ".":
            return " point ".join(nw.en_number(p) for p in m.group(0).split("."))
        return _plain(m.group(0)).replace(m["is"], " ")
    return _date_words(y, mo, d)


def _date_us(m: re.Match[str]) -> str:
    a, b, yy = int(m["ua"]), int(m["ub"]), m["uy"]
    if len(yy) == 4:
        year = nw.en_year(int(yy))
    else:  # '98: ninety-eight, '05: oh five
        year = ("oh " if yy[0] == "0" else "") + nw.en_cardinal(int(yy))
    if 1 <= a <= 12 and 1 <= b <= 31:
        return f"{nw.EN_MONTHS[a]} {nw.en_ordinal(b)}, {year}"
    if 1 <= b <= 12 and 1 <= a <= 31:
        return f"the {nw.en_ordinal(a)} of {nw.EN_MONTHS[b]}, {year}"  # 25/12/2026: day first
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


def _plan(m: re.Match[str]) -> str:
    """401(k), 501(c)(3): four oh one k; sections of a code, named by their numbers."""
    digits = " ".join("oh" if c == "0" else nw.EN_DIGITS[int(c)] for c in m["pd"])
    return f"{digits} {m['pl']}" + (f" {nw.en_cardinal(int(m['pn']))}" if m["pn"] else "")


def _mixed(m: re.Match[str]) -> str:
    """2 1/2 -> two and a half; 3 5/2 -> three and five halves (never a date)."""
    a, b = int(m["mn"]), int(m["md"])
    if a == 0 or b < 2:
        return _plain(m.group(0)).replace("/", " over ")
    return en_forms.mixed_words(m["mw"], a, b)


def _phone(m: re.Match[str]) -> str:
    s = m.group(0)
    if sum(c.isdigit() for c in s) < 7:
        return _plain(s)
    head = "plus " if s.startswith("+") else ""
    groups, ext = g.phone_parts(m)
    words = head + ", ".join(nw.en_digits(p) for p in groups)
    return f"{words}, extension {nw.en_digits(ext)}" if ext else words


def _currency_post(m: re.Match[str]) -> str:
    if m["csym2"] == "¢":
        return _signed(m) + (" cent" if m["qn"] == "1" else " cents")
    kept, sign = g.lead(m)
    return kept + _SIGNS[sign] + _money(m["qn"], CURRENCIES[m["csym2"]], None)


def _noon(m: re.Match[str]) -> str:
    """12:00 noon -> twelve noon; 1.59 p.m. -> one fifty-nine P M."""
    if m["nw"]:
        return "twelve " + m["nw"]
    return _clock(int(m["dh"]), int(m["dm"]), None, m["dap"])


def _quarter(m: re.Match[str]) -> str:
    """2Q22 -> the second quarter of twenty twenty-two."""
    yy = m["qy"]
    year = nw.en_year(int(yy) if len(yy) == 4 else 2000 + int(yy))
    return f"the {nw.en_ordinal(int(m['qq']))} quarter of {year}"


def _decade(m: re.Match[str]) -> str:
    words = nw.en_decade(int(m["dd2"] or m["dd4"] or m["dd3"] or m["dd5"]))  # mid-90s
    return f"{words} to {nw.en_decade(int(m['dde']))}" if m["dde"] else words  # 1960s-80s


def _range(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    a, b = m["qn"], m["rb"]
    tail = m["rpct"] or m["ru1"] or m["ru2"]
    if g.local_phone(m):
        return f"{nw.en_digits(a)}, {nw.en_digits(b)}"
    if not sign and not tail and len(a) == 4 and a.isdigit() and _is_year(int(a)):
        if len(b) == 4 and b.isdigit() and _is_year(int(b)):
            return f"{kept}{nw.en_year(int(a))} to {nw.en_year(int(b))}"
        if len(b) == 2 and b.isdigit() and int(b) > int(a[2:]):  # 1960-80
            return f"{kept}{nw.en_year(int(a))} to {nw.en_cardinal(int(b))}"
    first = kept + _SIGNS[sign] + nw.en_number(a)
    if m["rpa"]:
        first += " percent"  # 2%-10%
    elif m["rsep"] == "-" and not tail and "=" in m.string[m.end() : m.end() + 24]:
        return Reading(f"{first} minus {nw.en_number(b)}", "math")  # 5 - 3 = 2, 3-1=2
    if a == b and m["rsep"] == "-" and not tail:
        return f"{first}-{nw.en_number(b)}"  # fifty-fifty
    # between 10-20 people: ten and twenty
    to = " and " if _BETWEEN.search(m.string, max(0, m.start() - 8), m.start()) else " to "
    if m["rpct"] is not None:
        return f"{first}{to}{nw.en_number(b)} percent"
    unit = m["ru1"] or m["ru2"]
    return f"{first}{to}{_with_unit(b, unit) if unit else nw.en_number(b)}"


def _signed(m: re.Match[str]) -> str:
    """The number ``qn`` with what was kept before it and its sign (-5: minus five)."""
    kept, sign = g.lead(m)
    return kept + _SIGNS[sign] + nw.en_number(m["qn"])


#: Words before "80s" that make it a decade or an age, not eighty seconds.
_DECADE_BEFORE = re.compile(
    r"(?<![A-Za-z])(?:[Tt]he|late|early|mid|his|her|their|my|your|our|its) $")
#: A hyphen and a letter glued after a fraction, or a letter and a hyphen before it: a code.
_CODE_GLUE = re.compile(r"-[A-Za-z]")
_CODE_GLUE_BEFORE = re.compile(r"[A-Za-z]-$")


def _unit_h(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    num, unit = m["qn"], m["uu1"] or m["uu2"]
    if unit == "s" and not sign and num in ("20", "30", "40", "50", "60", "70", "80", "90"):
        if _DECADE_BEFORE.search(m.string, max(0, m.start() - 8), m.start()):
            return nw.en_decade(int(num))  # the 80s, the late 80s, in his 30s
    if en_forms.A_BEFORE.search(m.string, max(0, m.start() - 4), m.start()) and \
            en_forms.WORD_NEXT.match(m.string, m.end()) and not m["uper"]:
        # "a 3 m2 room", "a 5 kg bag": the measure describes the noun, singular.
        return kept + _SIGNS[sign] + nw.en_number(num) + " " + UNITS[unit].en
    words = kept + _with_unit(num, unit, sign)
    return _per(words, m["uper"]) if m["uper"] else words


def _scale(m: re.Match[str]) -> str:
    """100 million kg -> one hundred million kilograms."""
    words = f"{_signed(m)} {m['sw']} {UNITS[m['su']].en_plural}"
    return _per(words, m["sper"]) if m["sper"] else words


def _ordinal(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    n = m["qn"].replace(",", "")  # 1,000,000th: one millionth
    if not (n.isdigit() and len(n) <= nw.EN_MAX_DIGITS):
        return kept + _SIGNS[sign] + nw.en_number(m["qn"]) + " " + m.group(0)[-2:]
    return kept + _SIGNS[sign] + nw.en_ordinal(int(n))


def _times(m: re.Match[str]) -> str:
    a = _signed(m)
    formula = _FORMULA.search(m.string, 0, m.start()) or "=" in m.string[m.end() : m.end() + 9]
    if m["xb"]:
        op = "times" if m["xo"] == "*" or formula else "by"  # 3 × 4 = 12; a 2 x 4 board
        return f"{a} {op} {nw.en_number(m['xb'])}"
    if formula and m["xo"] == "x":
        return a + " x"  # y = 2x: the unknown
    if m["times"] == "x" and not _COMPARED.match(m.string, m.end()):
        return Reading(a + " x", "multiplier")  # a 10x return, 1.5x speed, 3x zoom
    return a + (" time" if m["qn"] == "1" else " times")  # 3x faster, 2x a day


def _root(m: re.Match[str]) -> str:
    """√3 -> the square root of three; 2√3/2 -> two times ... over two."""
    kind = "square" if m["rsym"] == "√" else "cube"
    words = f"the {kind} root of {nw.en_number(m['rn'])}"
    if m["rc"]:
        words = f"{nw.en_number(m['rc'])} times {words}"
    return f"{words} over {nw.en_number(m['rd'])}" if m["rd"] else words


def _fraction(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    kept += _SIGNS[sign]
    num, den = m["qn"], m["fb"]
    if not g.is_int(num) or int(den) == 0:
        return f"{kept}{nw.en_number(num)} over {nw.en_number(den)}"
    a, b = g.to_int(num), int(den)
    dated = _ON.search(m.string, max(0, m.start() - 6), m.start()) and not m["fsp"]
    if (1 <= a < b <= 10 and not dated) or (m["fo"] and b > 1):  # 3/4, 1/32nd; on 3/5
        return kept + en_forms.fraction_words(a, b)
    if len(num) == 4 and _is_year(a) and b == (a + 1) % 100:  # 2019/20: a season
        return f"{kept}{nw.en_year(a)}-{nw.en_cardinal(b)}"
    if a == b and not m["fsp"]:
        return f"{kept}{nw.en_number(num)}-{nw.en_number(den)}"  # 50/50: fifty-fifty
    attributive = en_forms.A_BEFORE.search(m.string, max(0, m.start() - 4), m.start())
    if not sign and not m["fsp"] and 1 <= a <= 12 and 1 <= b <= 31 and not attributive:
        return Reading(kept + _date_words(None, a, b), "date")
    if len(num) == 2 and 1 <= a <= 12 and len(den) == 4 and _is_year(b) and not sign:
        return Reading(f"{kept}{nw.EN_MONTHS[a]} {nw.en_year(b)}", "date")  # exp 01/2027
    if _CODE_GLUE.match(m.string, m.end()) or _CODE_GLUE_BEFORE.search(
            m.string, max(0, m.start() - 2), m.start()):  # MIG-25/235212-x: inside a code
        parts = (nw.en_number(p) if len(p) <= 4 else nw.en_digits(p) for p in (num, den))
        return Reading(kept + " slash ".join(parts), "code")
    if a + b == 100 and a % 5 == 0 and not m["fsp"]:
        return Reading(f"{kept}{nw.en_cardinal(a)}-{nw.en_cardinal(b)}", "split")  # 80/20
    if 1 <= a < b or (2 <= b <= 10 and a > b and not m["fsp"]):  # 31/32, 1/2007, 22/3
        return kept + en_forms.fraction_words(a, b)
    return f"{kept}{nw.en_number(num)} over {nw.en_number(den)}"


def _number(m: re.Match[str]) -> str:
    kept, sign = g.lead(m)
    num = m["qn"]
    if not sign and len(num) == 4 and num.isdigit() and _is_year(int(num)):
        s, a, b = m.string, m.start(), m.end()
        alone = not s[:a].strip() and not s[b:].strip()  # "1994" as a heading
        if (alone or _YEAR_BEFORE.search(s, max(0, a - 20), a) or _YEAR_AFTER.match(s, b)
                or (_THE_BEFORE.search(s, max(0, a - 5), a) and _NAME_AFTER.match(s, b))):
            return Reading(nw.en_year(int(num)), "year")
    if not sign and num.isdigit() and len(num) < 4 and _YEAR_AFTER.match(m.string, m.end()):
        return Reading(nw.en_year(int(num)), "year")  # 340 AD: three forty
    if num == "911" and not sign:
        return "nine one one"  # the emergency number, said digit by digit
    if not sign and len(num) in (3, 4) and num.isdigit() and _CODE_BEFORE.search(
            m.string, max(0, m.start() - 7), m.start()):
        return Reading(en_forms.house_number(num), "code")  # RTX 4090: a model number, in pairs
    return kept + _SIGNS[sign] + nw.en_number(num)


_plain = g.plain_reader(nw.en_digits, _number)
_HANDLERS = {
    **g.handlers(g.Words(_plain, _clock, _money, _SIGNS, " to ", " to ", _per,
                         nw.en_number, " point ", "version ")),
    "digits": lambda m: nw.en_digits(m.group(0)),
    "date_iso": _date_iso, "date_us": _date_us, "arange": _arange, "plan": _plan,
    "paren_year": lambda m: f"({nw.en_year(int(m['py']))})", "mixed": _mixed,
    "middot": lambda m: f"{nw.en_number(m['mda'])} {nw.en_number(m['mdb'])}",
    "scale": _scale, "phone": _phone, "decade": _decade, "quarter": _quarter, "noon": _noon,
    # Digits glued to letters, as model numbers are said: A320 -> A three twenty.
    "code": lambda m: en_forms.house_number(m.group(0)),
    "feet": en_forms.feet,
    "number_sign": lambda m: "number " + nw.en_number(m["hn"]),
    "approx": lambda m: "about " + nw.en_number(m["tn"]),
    "currency_post": _currency_post,
    "range": _range, "percent": lambda m: _signed(m) + " percent", "unit": _unit_h,
    "magnitude": lambda m: _signed(m) + " " + tables.MAGNITUDE_WORDS[m["mg"]],
    "ordinal": _ordinal, "times": _times,
    "fraction": _fraction, "root": _root, "qn": _number,
    "bare_per": lambda m: g.lead(m)[0] + _per(nw.en_number(m["qn"]), m["bper"]),
}

_numeric = make_numeric(_HANDLERS, _plain)

_WEB_WORDS = g.WebWords(tables.EN_WEB_SIGNS, lambda t: " ".join(t.upper()), nw.en_digits,
                        {k: k for k in ("com", "org", "net", "gov", "info", "app", "dev")})


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
        en_forms.STATE,
        lexicon.apply,
        en_forms.VANITY,
        en_forms.TIMESTAMP,
        en_letters.SERIAL,
        en_forms.forms,
        en_letters.ABBREVIATION,
        en_letters.MONTH_DATE,
        en_letters.DAY_MONTH,
        en_forms.STREET,
        en_forms.UNIT_NO,
        en_letters.SLASH,
        Rule("number", NUMERIC, _numeric, by_group=True, aliases={"qn": "number"}),
        en_letters.ROMAN,
        en_letters.acronyms,
        en_letters.SYMBOL,
        make_cleanup("en"),
    ]
