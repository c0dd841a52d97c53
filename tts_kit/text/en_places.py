"""English addresses: house and room numbers said in pairs (1428 -> fourteen twenty-eight),
street words, directions and states in full, ZIP codes digit by digit, vanity numbers."""

from __future__ import annotations

import re

from tts_kit.text import numbers as nw
from tts_kit.text.common import Rule, trie_alt
from tts_kit.text.tables import read_table

_PLACES = read_table("en_places", 3)
EN_STATES, EN_STREET_WORDS, EN_TIME_ZONES = (
    {written: said for k, written, said in _PLACES if k == kind}
    for kind in ("state", "street", "zone"))

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
