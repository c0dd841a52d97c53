"""English words, letters and signs: dates written with a month name (December 2, 2026;
2 December 2026; June 2026), day and month abbreviations (Mon-Fri), other abbreviations,
acronyms, Roman numerals, serials, symbols."""

from __future__ import annotations

import functools
import re
import unicodedata

from tts_kit.text import numbers as nw
from tts_kit.text.common import SENTENCE_NEXT, Rule, Steps, roman_value, trie_alt
from tts_kit.text.en_forms import EN_TIME_ZONES
from tts_kit.text.tables import EN_ABBREVIATIONS, EN_SIGNS, EN_WORDS

#: Month names and their abbreviations (Jan, Sept) -> the full name.
MONTH_NAMES = {**{name: name for name in nw.EN_MONTHS[1:]},
               **{name[:3]: name for name in nw.EN_MONTHS[1:]}, "Sept": "September"}
#: Month names as dates are also written: lower case (july 25 2012; not "may" and
#: "march", which are words first) and capitals (JULY, JAN 15 2020).
MONTHS_ANY = {
    **MONTH_NAMES,
    **{k.upper(): v for k, v in MONTH_NAMES.items()},
    **{k.lower(): v for k, v in MONTH_NAMES.items()
       if len(k) > 3 and k not in ("May", "March", "Sept")},
    # Lower-case abbreviations before or after a day (jul 4, 25 sept); not mar and may.
    **{k.lower(): v for k, v in MONTH_NAMES.items() if 3 <= len(k) <= 4 and k not in
       ("May", "Mar", "June", "July")},
}
MONTH = trie_alt(MONTHS_ANY)

_MONTH_DATE = re.compile(
    r"(?:(?=[JFMASONDjfmasond])(?<![A-Za-z])|(?=\d))(?:"
    rf"(?P<md>(?<![A-Za-z])(?P<mon>{MONTH})(?:\.?\s|-)(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
    r"(?![\d:])(?:(?:,?\s|-)(?P<yr>\d{4})(?!\d))?)"
    rf"|(?P<dm>(?<!\d)(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\s(?:of\s)?(?P<mon2>{MONTH}"
    r"|(?:may|march)(?=,?\s\d{4}(?!\d)))\b\.?"
    r"(?:,?\s(?P<yr2>\d{4})(?!\d))?)"
    rf"|(?P<my>(?<![A-Za-z])(?P<mon3>{MONTH})\.?,?\s(?P<yr3>\d{{4}})(?!\d))"
    r")"
)


def _month_date(m: re.Match[str]) -> str:
    if m["my"]:
        return f"{MONTHS_ANY[m['mon3']]} {nw.en_year(int(m['yr3']))}"
    day, yr = int(m["day"] or m["day2"]), m["yr"] or m["yr2"]
    if not 1 <= day <= 31:
        return m.group(0)
    if m["md"]:
        words = f"{MONTHS_ANY[m['mon']]} {nw.en_ordinal(day)}"
    else:
        before = m.string[max(0, m.start() - 4) : m.start()].lower()
        the = "" if before == "the " else "the "
        # A lower-case "may" or "march" is a month only between a day and a year.
        words = f"{the}{nw.en_ordinal(day)} of {MONTHS_ANY.get(m['mon2'], m['mon2'].title())}"
    return f"{words}, {nw.en_year(int(yr))}" if yr else words


#: 2 June 2026 -> the second of June, twenty twenty-six.
MONTH_DATE = Rule("date", _MONTH_DATE, _month_date)


#: Weekday abbreviations and the day they name.
WEEKDAYS = {"Mon": "Monday", "Tue": "Tuesday", "Tues": "Tuesday", "Wed": "Wednesday",
            "Thu": "Thursday", "Thur": "Thursday", "Thurs": "Thursday", "Fri": "Friday",
            "Sat": "Saturday", "Sun": "Sunday"}
#: Abbreviations that are also words (Wed, Sat, Sun, Mar, May) or names (Jan, Jun): read
#: as a day or month only in a date's company (a digit, a comma and a digit, a range).
_AMBIGUOUS = frozenset({"Wed", "Sat", "Sun", "Mar", "May", "Jan", "Jun"})
_NAMES = {**WEEKDAYS, **{k: v for k, v in MONTH_NAMES.items() if k != v}}
_ANY_CASE = {**_NAMES, **{k.upper(): v for k, v in _NAMES.items()},
             **{k.lower(): v for k, v in _NAMES.items()}}
_DAY_MON = trie_alt(_ANY_CASE)
#: One abbreviation (``a``), or two joined by a dash (``a``-``b``: Mon-Fri, Jan-Mar).
_DAY_MONTH = re.compile(
    r"(?=[A-Za-z])(?<![A-Za-z'])"
    rf"(?P<a>{_DAY_MON})(?P<dot>\.)?(?:\s?[-–~]\s?(?P<b>{_DAY_MON})(?P<dot2>\.)?)?(?![A-Za-z'])"
)
#: Words after which a capitalised Wed, Sat or Sun is a day (on Sat., every Sun).
_DAY_BEFORE = re.compile(r"(?<![A-Za-z])(?:[Oo]n|every|next|last|this|each|until|by|till) $")
#: What makes an ambiguous abbreviation a date: a digit, a month or day name next (also
#: as `MONTH_DATE` wrote it: "the third of March").
_DATE_NEXT = re.compile(
    r"[.,]?\s?(?:\d|(?:" + _DAY_MON + "|" + trie_alt([*MONTHS_ANY, *WEEKDAYS.values()])
    + r")(?![A-Za-z])|the [a-z-]+ of [A-Z])")


def _day_month(m: re.Match[str]) -> str:
    """Thu -> Thursday, Mon-Fri -> Monday to Friday; words (Sat down, may) left alone."""
    a, b = m["a"], m["b"]
    if b:
        end = "." if m["dot2"] and SENTENCE_NEXT.match(m.string, m.end()) else ""
        return f"{_ANY_CASE[a]} to {_ANY_CASE[b]}{end}"
    key = a[:1].upper() + a[1:].lower()
    if a.islower() and key in _AMBIGUOUS:
        return m.group(0)  # may, sun, sat, wed, mar in lower case are words
    if a.islower() or key in _AMBIGUOUS or (a.isupper() and len(a) == 3 and key != a):
        # Lower case, capitals, or a word: only where a date goes on (jul 4, SAT, 3).
        day_word = a in WEEKDAYS and _DAY_BEFORE.search(m.string, max(0, m.start() - 7),
                                                        m.start())
        if not (day_word or _DATE_NEXT.match(m.string, m.end())):
            return m.group(0)
    # "on Thu." ends the sentence: the period stays; "Thu. 12 Dec" loses it.
    end = "." if m["dot"] and SENTENCE_NEXT.match(m.string, m.end()) else ""
    return _ANY_CASE[a] + end


DAY_MONTH = Rule("day_month", _DAY_MONTH, _day_month)


_ABBR = {written: (spoken, ends) for written, spoken, ends in EN_ABBREVIATIONS}
_ABBR.update({f"{short}.": (full, False) for short, full in MONTH_NAMES.items()
              if short != full})
_ABBREVIATION = re.compile(
    "(?=[" + "".join(sorted({w[0] for w in _ABBR} | set("DSNnw"))) + "])"
    r"(?<![A-Za-z.])(?:(?P<ab>" + trie_alt(_ABBR) + r")|(?P<dr>Dr\.|St\.)"
    r"|(?P<no>No\.|no\.)(?=\s?\d)|(?P<wo>w/o)(?![A-Za-z])|(?P<w>w/)(?=\s))"
)
_ZONE_NEXT = re.compile(r" (?:" + trie_alt(EN_TIME_ZONES) + r")\b")  # 5 p.m. EST
_NAME_NEXT = re.compile(r" ([A-Z][A-Za-z']*)")
#: Capitalised words that start sentences rather than name people.
_SENTENCE_STARTERS = frozenset(EN_WORDS["sentence_starter"])

#: Abbreviations read otherwise after a number (45 min., 0.25 pp.).
_AFTER_NUMBER = {"pp.": "percentage points", "min.": "minutes"}


def _abbreviation(m: re.Match[str]) -> str:
    s, b = m.string, m.end()
    if m["ab"]:
        spoken, ends = _ABBR[m["ab"]]
        if m["ab"] in _AFTER_NUMBER and s[: m.start()].rstrip()[-1:].isdigit():
            spoken, ends = _AFTER_NUMBER[m["ab"]], True  # rose 0.25 pp.; pp. 10-12: pages
    elif m["dr"]:
        # Before a name (St. John, Dr. Kim) the saint or the doctor; before a word that
        # starts a sentence (Elm St. It was), or nothing, the street or the drive.
        nxt = _NAME_NEXT.match(s, b)
        before_name = bool(nxt) and nxt.group(1) not in _SENTENCE_STARTERS
        title, place = ("Doctor", "Drive") if m["dr"] == "Dr." else ("Saint", "Street")
        spoken, ends = (title, False) if before_name else (place, True)
    else:  # No. 5, w/o, w/
        return {"w/o": "without", "w/": "with"}.get(m.group(0), "number")
    # "etc. Then": the period was also the sentence's end; keep it ("p.m. EST": not).
    if ends and SENTENCE_NEXT.match(s, b) and not _ZONE_NEXT.match(s, b):
        return spoken + "."
    return spoken


#: Dr. Kim on Elm St. -> Doctor Kim on Elm Street.
ABBREVIATION = Rule("abbreviation", _ABBREVIATION, _abbreviation)
_ACRONYM = re.compile(
    r"(?=[A-Z])(?<![A-Za-z'])(?:(?P<a>[A-Z]{2,})(?P<s>'?s)?(?![A-Za-z])|(?P<dot>(?:[A-Z]\.){2,}))"
)
_SMALL_ROMAN = re.compile(r"X{0,3}(?:IX|IV|V?I{0,3})")
_CAPITALISED_BEFORE = re.compile(r"[A-Z][a-z]+ $")
_CAPITAL = re.compile("[A-Z]")
_CAPS_WORD = re.compile(r"\b[A-Z]{2,}\b")
_WORD = re.compile(r"\b[A-Za-z]{2,}\b")
_VOWELS = frozenset("AEIOUY")
#: Words written in capitals that are words, not acronyms (PART ONE, NO ENTRY).
_CAPS_WORDS = frozenset(EN_WORDS["caps_word"])
#: Words before a Roman numeral that numbers a part: read as a cardinal (Chapter IV).
_HEADINGS = EN_WORDS["heading"]
_ROMAN_ANY = r"(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
_ROMAN_NUMERAL = re.compile(
    r"(?=[A-Z])(?<![A-Za-z'])(?:"
    rf"(?P<head>{trie_alt(_HEADINGS + [h.upper() for h in _HEADINGS])})\.?\s(?P<hr>{_ROMAN_ANY})"
    rf"|(?P<reg>{trie_alt(EN_WORDS['regnal'])})\s(?P<rr>{_ROMAN_ANY})"  # a ruler or pope
    rf"|(?P<gname>[A-Z][a-z]+)\s(?P<gr>{_ROMAN_ANY})"
    rf"|(?P<cr>{_ROMAN_ANY})(?=\s(?:[Cc]entur(?:y|ies)|CENTURY)\b)"
    r")(?![A-Za-z0-9'])"
)


def _roman(m: re.Match[str]) -> str:
    """Chapter IV -> Chapter four; Louis XIV -> Louis the fourteenth; XIX century too."""
    if m["head"]:
        if len(m["hr"]) == 1 and m["hr"] in "LCDM":
            return m.group(0)  # Appendix C, Part D: a letter
        head = m["head"].lower() if m["head"].isupper() and len(m["head"]) > 1 else m["head"]
        sep = m.group(0)[len(m["head"]) : m.start("hr") - m.start()]
        return head + sep.replace(".", "") + nw.en_cardinal(roman_value(m["hr"]))
    if m["reg"]:
        if m["reg"] == "Malcolm" and m["rr"] == "X":
            return m.group(0)  # the activist, not a king
        return f"{m['reg']} the {nw.en_ordinal(roman_value(m['rr']))}"
    if m["gname"]:
        return _any_name(m)
    return nw.en_ordinal(roman_value(m["cr"]))


#: Capitalised words before a Roman numeral that name a title's sequel, not a ruler.
_SEQUELS = frozenset(EN_WORDS["sequel"])
#: Words that start sentences or questions before "I" (Can I, Then I), not names.
_NOT_NAMES = _SENTENCE_STARTERS | frozenset(EN_WORDS["not_name"])
_CAPITALISED_WORD = re.compile(r"(?:^|\s)([A-Z][a-z]+) $")


def _any_name(m: re.Match[str]) -> str:
    """Adolphus II -> the second, not Rocky IV, Can I; I, V, X after two names (Mansa Musa I)."""
    name, num = m["gname"], m["gr"]
    if name in _SEQUELS or name in _NOT_NAMES:
        return m.group(0)
    if len(num) == 1:
        before = _CAPITALISED_WORD.search(m.string, max(0, m.start() - 20), m.start())
        if num not in "IVX" or not before or before.group(1) in _NOT_NAMES:
            return m.group(0)
    return f"{name} the {nw.en_ordinal(roman_value(num))}"


ROMAN = Rule("roman", _ROMAN_NUMERAL, _roman)


def _spell(m: re.Match[str], shouting: bool) -> str:
    if m["dot"]:
        letters = " ".join(m["dot"].replace(".", ""))
        return letters + "." if SENTENCE_NEXT.match(m.string, m.end()) else letters
    run, suffix = m["a"], m["s"] or ""
    if (_SMALL_ROMAN.fullmatch(run)
            and _CAPITALISED_BEFORE.search(m.string, max(0, m.start() - 20), m.start())):
        return nw.en_cardinal(roman_value(run)) + suffix  # World War II, Rocky IV
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
    return Rule("acronym", _ACRONYM, functools.partial(_spell, shouting=shouting))(text, steps)


_SYMBOL = re.compile(r"[&+=@%×÷±°–—~#$€£¥₩^/\u2200-\u22ff\u27d5-\u27d7]")
#: Dashes are a pause (a comma), a tilde left between words nothing.
_SYMBOL_WORDS = {**EN_SIGNS, "–": ", ", "—": ", ", "~": " "}

#: A slash between two words (and/or, TCP/IP); not a unit's (5 km/h).
_SLASH = re.compile(r"(?<![\w/.-])[A-Za-z]+(?:/[A-Za-z]+)+(?![\w/])")
_NUMBER_BEFORE = re.compile(r"\d\s?$")


def _slash(m: re.Match[str]) -> str:
    """on/off -> on or off, TCP/IP -> TCP slash IP; a unit (5 km/h) is left alone."""
    if _NUMBER_BEFORE.search(m.string[max(0, m.start() - 2) : m.start()]):
        return m.group(0)
    words = m.group(0).split("/")
    if m.group(0) == "and/or" or not all(w.islower() for w in words):
        return (" " if words[0] == "and" else " slash ").join(words)
    return " or ".join(words)


SLASH = Rule("slash", _SLASH, _slash, needs="/")


_CLOSED = re.compile(r"\w+#")


def _symbol(m: re.Match[str]) -> str:
    """A sign no earlier rule read: $HOME -> dollar HOME, #tag -> hashtag tag."""
    ch, s, i = m.group(0), m.string, m.start()
    if ch == "#" and s[i + 1 : i + 2].isalpha():
        tag = not (i and s[i - 1].isalnum()) and _CLOSED.match(s, i + 1) is None
        return " hashtag " if tag else " hash "  # #tag; a#b and #word# are no tags
    if ch == "#" and not s[:i].strip("# \n") and s[i + 1 : i + 2] in (" ", "#"):
        return " "  # "## Heading": a Markdown heading's marks are not read
    if ch == "/" and i and ((s[i - 1] + s[i + 1 : i + 2]).isalnum()
                            or s[i - 1] + s[i + 1 : i + 2] == "  "):
        return " "  # 2 vCPU/2 GB, 1 vCPU / 1 GB (the numbers read by now): a pause
    # Any other mathematical operator (U+2200-U+22FF) by its Unicode name: never dropped.
    return _SYMBOL_WORDS.get(ch) or f" {unicodedata.name(ch, '').lower()} "


SYMBOL = Rule("symbol", _SYMBOL, _symbol)


#: Serial and part numbers: capitals and digits in groups joined by hyphens, with both
#: letters and digits and at least six of them (SN-4471-XK2, AB12-C34): every character
#: said, hyphens as "dash".
_SERIAL = re.compile(
    r"(?=[A-Z0-9])(?<![\w-])(?=[A-Z0-9-]*[A-Z])(?=[A-Z0-9-]*\d)"
    r"(?=(?:-?[A-Z0-9]){6})[A-Z0-9]+(?:-[A-Z0-9]+)+(?![\w-])"
)


def _serial(m: re.Match[str]) -> str:
    return " dash ".join(" ".join(nw.EN_DIGITS[int(c)] if c.isdigit() else c for c in part)
                         for part in m.group(0).split("-"))


SERIAL = Rule("serial", _SERIAL, _serial)
