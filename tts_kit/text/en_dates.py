"""English dates written with a month name (December 2, 2026; 2 December 2026; June 2026)
and weekday or month abbreviations (Mon-Fri)."""

from __future__ import annotations

import re

from tts_kit.text import numbers as nw
from tts_kit.text.common import SENTENCE_NEXT, Rule, trie_alt

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
_ABBR = trie_alt(_ANY_CASE)
#: One abbreviation (``a``), or two joined by a dash (``a``-``b``: Mon-Fri, Jan-Mar).
_DAY_MONTH = re.compile(
    r"(?=[A-Za-z])(?<![A-Za-z'])"
    rf"(?P<a>{_ABBR})(?P<dot>\.)?(?:\s?[-–~]\s?(?P<b>{_ABBR})(?P<dot2>\.)?)?(?![A-Za-z'])"
)
#: Words after which a capitalised Wed, Sat or Sun is a day (on Sat., every Sun).
_DAY_BEFORE = re.compile(r"(?<![A-Za-z])(?:[Oo]n|every|next|last|this|each|until|by|till) $")
#: What makes an ambiguous abbreviation a date: a digit, a month or day name next (also
#: as `MONTH_DATE` wrote it: "the third of March").
_DATE_NEXT = re.compile(
    r"[.,]?\s?(?:\d|(?:" + _ABBR + "|" + trie_alt([*MONTHS_ANY, *WEEKDAYS.values()])
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
