"""English forms read before the number rule, each its own traced rule: by `forms`,
timestamps, ZIP+4 and other codes, powers, scientific notation, 24-hour times, ratings,
durations, time zones, dimensions, Windows paths; by `en`, addresses (house and room numbers
in pairs, streets, states, vanity numbers)."""

from __future__ import annotations

import re

from tts_kit.text import numbers as nw
from tts_kit.text.common import SENTENCE_NEXT, Rule, Step, Steps, trie_alt
from tts_kit.text.common import grammar as g
from tts_kit.text.tables import PER, UNITS, read_table

_PLACES = read_table("en_places", 3)
EN_STATES, EN_STREET_WORDS, EN_TIME_ZONES = (
    {written: said for k, written, said in _PLACES if k == kind}
    for kind in ("state", "street", "zone"))
#: Five digits, a hyphen and four: a ZIP+4 code, never a range (60601-4521).
ZIP = re.compile(r"(?<![\w.,$€£¥₩-])\d{5}-\d{4}(?![\w-]|[.,]\d)")
#: Three or more groups of letters or digits joined by hyphens (1-4-te-b): a code.
CHAIN = re.compile(r"(?<![\w-])(?:[A-Za-z]+|\d+)(?:-(?:[A-Za-z]+|\d+)){2,}(?![\w-])")
#: Three or more numbers joined by slashes that are no date (123/2617/88): a reference.
SLASHES = re.compile(r"(?<![\w/.])\d+(?:/\d+){2,}(?![\w/]|[.,]\d)")
#: A number over one letter (1/f, 2/n): a ratio, said "over" (units after it are "per").
OVER = re.compile(r"(?<![\w/.])(?P<n>\d{1,3})/(?P<v>[A-Za-z])(?![\w/])")
#: Digits (3 to 12) and the words before them that name a code (PIN, OTP, zip code,
#: card ending in), with up to three letters glued to the digits (ab9453).
DIGIT_CODE = re.compile(r"\d(?<!\d\d)\d{2,11}(?![\w(]|[.,]\d)")
_CODE_BEFORE = re.compile(
    r"(?:(?<![A-Za-z])(?i:pin|otp|passcode|password|(?:zip|area|postal|verification|security"
    r"|access|confirmation) code|code(?= is | was |: ))(?:\s(?:is|was|number)|:|\s#)?\s"
    r"|(?<![A-Za-z])(?:card|account|number|Visa|Mastercard|Amex)\b[^.\n\d]{0,20}?"
    r"\bend(?:ing|s) (?:in|with) )(?P<lt>[A-Za-z]{0,3})$"
)
_ZONES = "|".join(r"\.?".join(z) for z in sorted(EN_TIME_ZONES, key=len, reverse=True))
#: A time zone after am/pm, dotted, in lower case or glued (p.m.est, a.m. E.S.T.).
ZONE = re.compile(
    r"(?=[AaPp]\.?[Mm])(?P<ap>(?<![A-Za-z])[AaPp]\.[Mm]\.?|(?<=\d)[AaPp][Mm]|(?<=\d )[AaPp][Mm])"
    rf"(?P<sp>\s?)(?P<z>(?i:{_ZONES}))(?P<zd>\.)?(?![A-Za-z])"
)
#: A square or cube after a letter (m/s^2, x^3): "squared", "cubed".
POWER = re.compile(r"(?<=[A-Za-z)])\^(?P<pw>[23])(?![\d.])")
#: Scientific notation (2.5e6, 6.02E23, 1e-9): times ten to the power of.
SCIENTIFIC = re.compile(r"(?<![\w.#])(?P<sm>\d{1,3}(?:\.\d+)?)[eE](?P<se>[-+]?\d{1,3})(?!\w|\.\d)")
#: A 24-hour time of four digits before "hours" (0900 hours, 1430 hrs).
MILITARY = re.compile(r"(?<![\w.,])(?P<hh>[01]\d|2[0-3])(?P<mm>[0-5]\d) ?h(?:ou)?rs\b")
#: A Windows path (C:\Users\ann\notes.txt): each backslash said.
WIN_PATH = re.compile(r"(?<![\w\\])[A-Za-z]:(?:\\[\w .-]*[\w-])+\\?")
#: An ISO 8601 timestamp (2024-03-05T14:30:00Z): the date, the clock, the offset.
STAMP = re.compile(
    r"(?<![\w-])(?P<y>\d{4})-(?P<mo>0[1-9]|1[0-2])-(?P<d>0[1-9]|[12]\d|3[01])T(?P<h>[01]\d|2[0-3])"
    r":(?P<mi>[0-5]\d)(?::(?P<s>[0-5]\d)(?:\.\d+)?)?(?P<z>Z|[+-][01]\d:?[0-5]\d)?(?![\w:])")
#: Feet and inches in words (6 ft 2 in): "in" after feet is inches, not the word.
FEET = re.compile(
    r"(?<![\w.])(?P<ft>\d{1,2}) ?(?:ft|feet|foot) (?P<inch>\d{1,2}) ?in(?:ch(?:es)?)?\b")
#: Hours and minutes (1h 30m, 2 hr 5 min): a duration, "m" is minutes here.
HOURS = re.compile(r"(?<![\w.])(?P<hh>\d{1,3}) ?hr?s? (?P<hm>\d{1,2}) ?m(?:ins?)?\b")
#: A phone number of groups that starts with 0 (07700 900123, 020 7946 0958).
PHONE0 = re.compile(r"(?<![\w.,+])0\d{2,4} \d{3,6}(?: \d{3,4})?(?![\w,]|\.\d)")
#: A rating (4.5/5 stars, rated 9/10): "out of".
RATING = re.compile(
    r"(?<![\w./])(?P<ra>\d{1,3}(?:\.\d)?)/(?P<rb>5|10|100)(?![\w/])(?P<st> stars?\b)?")
_N = r"\d{1,6}(?:\.\d+)?"
#: Dimensions (4x6 ft, 3 x 5 m2) and mixed numbers (2 1/2 kgs) before a unit.
DIMENSION = re.compile(
    rf"(?<![\w.,/])(?:(?P<a>{_N})\s?[x×]\s?(?P<b>{_N})(?:\s?[x×]\s?(?P<c>{_N}))?"
    r"|(?P<mw>\d{1,3})\s(?P<mn>\d{1,2})/(?P<md>\d{1,2}))" + g.unit("d") + g.per("d") + "?"
)
#: "a" or "an" right before a measure, and a lower-case word right after it (a 5 kg bag).
A_BEFORE = re.compile(r"(?<![A-Za-z])[Aa]n? $")
WORD_NEXT = re.compile(r" [a-z]")
_RATED = re.compile(r"(?<![A-Za-z])(?:[Rr]ated|[Ss]cored|[Rr]ating:?|[Ss]core:?)(?: it)? $")
_AT = re.compile(r"(?<![A-Za-z])(?:[Aa]t|by|until|till|from|before|after|since|to) $")
_HALF_QUARTER = {2: ("half", "halves"), 4: ("quarter", "quarters")}


def fraction_words(a: int, b: int) -> str:
    """a/b said as a fraction.

    Example:
        >>> fraction_words(3, 4), fraction_words(5, 8)
        ('three quarters', 'five eighths')
    """
    one, many = _HALF_QUARTER.get(b) or (nw.en_ordinal(b), nw.en_ordinal(b) + "s")
    return nw.en_count(a, one, many)


def mixed_words(whole: str, a: int, b: int) -> str:
    """A mixed number: 2 1/2 -> two and a half; 3 5/2 -> three and five halves.

    Example:
        >>> mixed_words("4", 3, 8)
        'four and three eighths'
    """
    if a == 1 and b in (2, 4):
        return f"{nw.en_cardinal(int(whole))} and a {'half' if b == 2 else 'quarter'}"
    return f"{nw.en_cardinal(int(whole))} and {fraction_words(a, b)}"


def _zip(m: re.Match[str]) -> str:
    a, b = m.group(0).split("-")
    return f"{nw.en_digits(a)} dash {nw.en_digits(b)}"


def _chain(m: re.Match[str]) -> str:
    """1-4-te-b -> one-four-te-b: inside a code a hyphen between numbers is no range."""
    parts = m.group(0).split("-")
    digits = [p.isdigit() for p in parts]
    lower = any(p.isalpha() and p.islower() for p in parts)
    if not lower or not any(a and b for a, b in zip(digits, digits[1:])):
        return m.group(0)
    return "-".join(nw.en_number(p) if d else p for p, d in zip(parts, digits))


_DATE_SHAPES = {(a, b, c) for a in (1, 2) for b in (1, 2) for c in (2, 4)} | {
    (4, b, c) for b in (1, 2) for c in (1, 2)}


def _slashes(m: re.Match[str]) -> str:
    parts = m.group(0).split("/")
    shape = tuple(len(p) for p in parts)
    if shape in _DATE_SHAPES:
        return m.group(0)  # 12/25/2026, 2026/12/25: a date, for the date rules
    return " slash ".join(nw.en_number(p) if len(p) <= 4 else nw.en_digits(p) for p in parts)


def _over(m: re.Match[str]) -> str:
    if m["v"] in PER:
        return m.group(0)
    return f"{nw.en_number(m['n'])} over {m['v']}"


_CODE_WORDS = ("pin", "otp", "pass", "code", "end")


def _digit_code(m: re.Match[str]) -> str:
    a = max(0, m.start() - 48)
    near = m.string[a : m.start()].lower()
    ctx = any(w in near for w in _CODE_WORDS) and _CODE_BEFORE.search(m.string, a, m.start())
    if not ctx:
        return m.group(0)
    return (" " if ctx["lt"] else "") + nw.en_digits(m.group(0))


def _zone(m: re.Match[str]) -> str:
    z = m["z"].replace(".", "")
    if z.isupper() and m["sp"] and not m["zd"]:
        return m.group(0)  # 5 p.m. EST: already as the clock rule reads it
    end = m["zd"] if m["zd"] and SENTENCE_NEXT.match(m.string, m.end()) else ""
    return f"{m['ap']} {z.upper()}{end}"


def _dimension(m: re.Match[str]) -> str:
    u = UNITS[m["du1"] or m["du2"]]
    # "a 4x6 ft sheet": a measure before its noun is singular, as is one unit.
    one = (A_BEFORE.search(m.string, max(0, m.start() - 4), m.start())
           and WORD_NEXT.match(m.string, m.end()) and not m["dper"])
    if m["mw"]:
        a, b = int(m["mn"]), int(m["md"])
        if a == 0 or b < 2:
            return m.group(0)
        words = mixed_words(m["mw"], a, b)
    else:
        nums = [n for n in (m["a"], m["b"], m["c"]) if n]
        one = one or nums[-1] == "1"
        words = " by ".join(nw.en_number(n) for n in nums)
    words += " " + (u.en if one else u.en_plural)
    return f"{words} per {PER[m['dper']][0]}" if m["dper"] else words


def _scientific(m: re.Match[str]) -> str:
    exp = m["se"].lstrip("+")
    sign = "minus " if exp.startswith("-") else ""
    return (f"{nw.en_number(m['sm'])} times ten to the power of {sign}"
            f"{nw.en_cardinal(int(exp.lstrip('-')))}")


def _military(m: re.Match[str]) -> str:
    """0900 hours -> oh nine hundred hours; 1430 hours -> fourteen thirty hours."""
    h, mi = int(m["hh"]), int(m["mm"])
    if m["hh"][0] != "0" and not _AT.search(m.string, max(0, m.start() - 7), m.start()):
        return m.group(0)  # 1430 hours of footage: a duration
    words = ("oh " if m["hh"][0] == "0" and h else "") + nw.en_cardinal(h)
    return words + (" hundred" if not mi else f" oh {nw.en_cardinal(mi)}" if mi < 10
                    else f" {nw.en_cardinal(mi)}") + " hours"


def _win_path(m: re.Match[str]) -> str:
    drive, _, rest = m.group(0).partition(":")
    return f"{drive.upper()} colon " + " backslash ".join(rest.split("\\")).strip()


def _stamp(m: re.Match[str]) -> str:
    h, mi, sec = int(m["h"]), int(m["mi"]), int(m["s"] or 0)
    clock = nw.en_cardinal(h) + (f" oh {nw.en_cardinal(mi)}" if 0 < mi < 10 else
                                 f" {nw.en_cardinal(mi)}" if mi else " hundred")
    if sec:
        clock += " and " + nw.en_count(sec, "second")
    z = m["z"] or ""
    if z:
        off = int(z[1:3]) if z != "Z" else 0
        clock += " U T C" + (f" {'plus' if z[0] == '+' else 'minus'} "
                             f"{nw.en_cardinal(off)}" if off else "")
    return (f"{nw.EN_MONTHS[int(m['mo'])]} {nw.en_ordinal(int(m['d']))}, "
            f"{nw.en_year(int(m['y']))}, {clock}")


def feet(m: re.Match[str]) -> str:
    """Feet and inches (groups ``ft``, ``inch``), here and in `en`'s 5'11".

    Example:
        >>> FEET.sub(feet, "6 ft 1 in")
        'six feet one inch'
    """
    ft, inch = int(m["ft"]), int(m["inch"])
    return f"{nw.en_count(ft, 'foot', 'feet')} {nw.en_count(inch, 'inch', 'inches')}"


def _hours(m: re.Match[str]) -> str:
    h, mi = int(m["hh"]), int(m["hm"])
    return f"{nw.en_count(h, 'hour')} {nw.en_count(mi, 'minute')}"


def _phone0(m: re.Match[str]) -> str:
    digits = m.group(0).replace(" ", "")
    if not 10 <= len(digits) <= 11:
        return m.group(0)
    return ", ".join(nw.en_digits(p) for p in m.group(0).split())


def _rating(m: re.Match[str]) -> str:
    s, a = m.string, m.start()
    if not m["st"] and not _RATED.search(s, max(0, a - 11), a):
        return m.group(0)
    return f"{nw.en_number(m['ra'])} out of {nw.en_number(m['rb'])}{m['st'] or ''}"


def _gated(gate: str, rule: Rule) -> Step:
    """``rule`` run only on a text where ``gate`` is found (a cheap scan first)."""
    found = re.compile(gate).search
    return lambda text, steps: rule(text, steps) if found(text) else text


_RULES: list[Step] = [
    _gated(r"\d-\d", Rule("zip", ZIP, _zip)),
    _gated(r"[\d-](?<=\d-|-\d)", Rule("chain", CHAIN, _chain)),
    Rule("slashes", SLASHES, _slashes, needs="/"),
    Rule("over", OVER, _over, needs="/"),
    _gated("(?i)" + "|".join(_CODE_WORDS), Rule("digit_code", DIGIT_CODE, _digit_code)),
    Rule("power", POWER, lambda m: " squared" if m["pw"] == "2" else " cubed", needs="^"),
    _gated(r"\d[eE]", Rule("scientific", SCIENTIFIC, _scientific)),
    _gated(r"\d ?h(?:ou)?rs", Rule("military", MILITARY, _military)),
    _gated(r"\d ?f(?:ee|oo)?t \d", Rule("feet", FEET, feet)),
    Rule("rating", RATING, _rating, needs="/"),
    _gated(r"\dh|\d hr?s? \d", Rule("hours", HOURS, _hours)),
    _gated(r"(?<![\d.])0\d+ \d", Rule("phone", PHONE0, _phone0)),
    _gated(r"\d ?[AaPp]\.?[Mm]", Rule("zone", ZONE, _zone)),
    _gated(r"\d ?[x×] ?\d|\d \d{1,2}/\d", Rule("dimension", DIMENSION, _dimension)),
]
_DIGIT = re.compile(r"\d")
_PATH_RULE = Rule("win_path", WIN_PATH, _win_path)
#: Runs before the serial rule, which would spell a timestamp's capitals and digits.
TIMESTAMP: Step = _gated(r"\dT\d", Rule("timestamp", STAMP, _stamp))


def forms(text: str, steps: Steps) -> str:
    """The rules of this module, in order, on a text with a digit (one scan for none).

    Example:
        >>> forms("Your PIN is 0417", None)
        'Your PIN is zero four one seven'
    """
    if "\\" in text:
        text = _PATH_RULE(text, steps)
    if not _DIGIT.search(text):
        return text
    for rule in _RULES:
        text = rule(text, steps)
    return text


# -- addresses -------------------------------------------------------------------------

_SUFFIX = {k.lower(): v for k, v in EN_STREET_WORDS.items()}
_DIRECTIONS = {"N": "North", "S": "South", "E": "East", "W": "West", "NE": "Northeast",
               "NW": "Northwest", "SE": "Southeast", "SW": "Southwest"}
#: A house number, a direction, one to three name words (capitalised, or 1st ... 99th)
#: and a street word (St, Ave, hwy ...; any case).
_STREET = re.compile(
    r"(?=[1-9])(?<![\w,.$])(?P<n>[1-9]\d{0,4})(?P<l>[A-Z])?\s(?:(?P<d>[NS][EW]|[NSEW])\.?\s)?"
    r"(?P<name>(?:(?:[A-Z][a-z]+|\d{1,3}(?:st|nd|rd|th))\s){1,3})"
    r"(?P<s>(?i:" + trie_alt(EN_STREET_WORDS) + r"))(?![A-Za-z])"
    r"(?:\.?\s(?P<d2>[NS][EW])\b)?"  # 1600 Pennsylvania Ave NW
)
#: A state code after "Town, " (with its ZIP or ZIP+4 code); codes that are also words
#: (OK, IN, OR ...) only with a ZIP code.
_STATE = re.compile(
    r", (?<=[a-z], )(?P<st>" + trie_alt(EN_STATES) + r")(?![A-Za-z])"
    r"(?:(?P<sep>,?\s)(?P<zip>\d{5}(?:-\d{4})?)(?![\d-]))?"
)
_STATE_WORDS = frozenset("OK IN OR ME HI OH ID AL LA MA PA DE CO MO".split())
#: Apt 4B, Suite 210, Room 1204: a unit of a building, its number said in pairs.
_UNIT_NO = re.compile(  # Box: PO Box 1234 -> Box twelve thirty-four
    r"(?=[ABFRSU])(?<![\w-])(?P<w>Apt|Apartment|Suite|Ste|Unit|Room|Rm|Bldg|Building|Flat|Box)\.?"
    r"\s(?P<n>\d{1,5})(?P<l>[A-Z])?(?![\w,.]\w)"
)
_UNIT_WORDS = {"Apt": "Apartment", "Ste": "Suite", "Rm": "Room", "Bldg": "Building"}


def house_number(n: str) -> str:
    """A house or room number as it is said: 1428 -> fourteen twenty-eight, 708 ->
    seven oh eight, 12345 -> one two three four five, 1000 -> one thousand.

    Example:
        >>> house_number("1428"), house_number("210"), house_number("12")
        ('fourteen twenty-eight', 'two ten', 'twelve')
    """
    if len(n) <= 2 or n.endswith("000"):
        return nw.en_cardinal(int(n))
    if len(n) == 3:
        return f"{nw.en_cardinal(int(n[0]))} {_pair(n[1:])}"
    if len(n) == 4:
        return f"{_pair(n[:2])} {_pair(n[2:])}"
    return nw.en_digits(n)


def _pair(two: str) -> str:
    """Two digits of a house number: 28 -> twenty-eight, 05 -> oh five, 00 -> hundred."""
    if two == "00":
        return "hundred"
    if two[0] == "0":
        return f"oh {nw.en_cardinal(int(two[1]))}"
    return nw.en_cardinal(int(two))


def _street(m: re.Match[str]) -> str:
    name = [nw.en_ordinal(int(w[:-2])) if w[0].isdigit() else w for w in m["name"].split()]
    words = [house_number(m["n"]), m["l"], _DIRECTIONS.get(m["d"]), *name,
             _SUFFIX[m["s"].lower()], _DIRECTIONS.get(m["d2"])]
    return " ".join(w for w in words if w)


#: 2450 N Oak Ave -> twenty-four fifty North Oak Avenue.
STREET = Rule("street", _STREET, _street)


def _state(m: re.Match[str]) -> str:
    """Left as written when the code may be a word."""
    if not m["zip"]:
        nxt = m.string[m.end() : m.end() + 2]
        if m["st"] in _STATE_WORDS or (nxt[:1].isalnum() or nxt[1:].isupper()):
            return m.group(0)
        return ", " + EN_STATES[m["st"]]
    zip_code = " dash ".join(nw.en_digits(p) for p in m["zip"].split("-"))
    return f", {EN_STATES[m['st']]}{m['sep']}{zip_code}"


#: Austin, TX 78701 -> Austin, Texas seven eight seven zero one.
STATE = Rule("state", _STATE, _state, needs=", ")


def _unit_no(m: re.Match[str]) -> str:
    words = f"{_UNIT_WORDS.get(m['w'], m['w'])} {house_number(m['n'])}"
    return f"{words} {m['l']}" if m["l"] else words


#: Apt 4B -> Apartment four B.
UNIT_NO = Rule("unit_no", _UNIT_NO, _unit_no)
#: Toll-free numbers spelled with letters: 1-800-FLOWERS.
_VANITY = re.compile(r"(?=1)(?<![\w-])1-8(?P<toll>\d\d)-(?P<w>[A-Z]{2,}(?:-[A-Z]+)*)(?![\w-])")


def _vanity(m: re.Match[str]) -> str:
    """1-800-FLOWERS -> one eight hundred flowers; 1-888-GO-FEDEX -> ... go fedex."""
    toll = "eight hundred" if m["toll"] == "00" else nw.en_digits("8" + m["toll"])
    return f"one {toll} {m['w'].replace('-', ' ').lower()}"


VANITY = Rule("vanity", _VANITY, _vanity, needs="1-8")
