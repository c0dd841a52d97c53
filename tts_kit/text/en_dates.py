"""English dates written with a month name: December 2, 2026; 2 December 2026; June 2026.

The month names (full, three-letter, Sept; in capitals; in lower case except "may" and
"march", which are words first) are shared with `en`'s year context.

Example:
    >>> MONTH_DATE.sub(month_date, "on Dec 2, 2026")
    'on December second, twenty twenty-six'
"""

from __future__ import annotations

import re

from tts_kit.text import numbers as nw
from tts_kit.text.common import trie_alt

MONTH_NAMES = {
    **{name: name for name in nw.EN_MONTHS[1:]},
    **{name[:3]: name for name in nw.EN_MONTHS[1:]},
    "Sept": "September",
}
#: Month names as dates are also written: lower case (july 25 2012; not "may" and
#: "march", which are words first) and capitals (JULY, JAN 15 2020).
MONTHS_ANY = {
    **MONTH_NAMES,
    **{k.upper(): v for k, v in MONTH_NAMES.items()},
    **{k.lower(): v for k, v in MONTH_NAMES.items()
       if len(k) > 3 and k not in ("May", "March", "Sept")},
}
MONTH = trie_alt(MONTHS_ANY)


MONTH_DATE = re.compile(
    r"(?:(?=[JFMASONDjfmasond])(?<![A-Za-z])|(?=\d))(?:"
    rf"(?P<md>(?<![A-Za-z])(?P<mon>{MONTH})\.?\s(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
    r"(?:,?\s(?P<yr>\d{4})(?!\d))?)"
    rf"|(?P<dm>(?<!\d)(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\s(?:of\s)?(?P<mon2>{MONTH})\b\.?"
    r"(?:,?\s(?P<yr2>\d{4})(?!\d))?)"
    rf"|(?P<my>(?<![A-Za-z])(?P<mon3>{MONTH})\.?,?\s(?P<yr3>\d{{4}})(?!\d))"
    r")"
)


def month_date(m: re.Match[str]) -> str:
    """The reading of a `MONTH_DATE` match.

    Example:
        >>> MONTH_DATE.sub(month_date, "2 June 2026")
        'the second of June, twenty twenty-six'
    """
    if m["md"]:
        mon, day, yr = m["mon"], int(m["day"]), m["yr"]
        if not 1 <= day <= 31:
            return m.group(0)
        words = f"{MONTHS_ANY[mon]} {nw.en_ordinal(day)}"
        return f"{words}, {nw.en_year(int(yr))}" if yr else words
    if m["dm"]:
        mon, day, yr = m["mon2"], int(m["day2"]), m["yr2"]
        if not 1 <= day <= 31:
            return m.group(0)
        before = m.string[max(0, m.start() - 4) : m.start()].lower()
        the = "" if before == "the " else "the "
        words = f"{the}{nw.en_ordinal(day)} of {MONTHS_ANY[mon]}"
        return f"{words}, {nw.en_year(int(yr))}" if yr else words
    return f"{MONTHS_ANY[m['mon3']]} {nw.en_year(int(m['yr3']))}"
