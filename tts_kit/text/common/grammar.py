"""The numeric grammar both languages share (numbers, times, ranges, phones, money,
addresses), with the same group names in both, and the `handlers` that read them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tts_kit.text import tables
from tts_kit.text.common import trie_alt
from tts_kit.text.tables import CURRENCIES, CURRENCY_CODES, MAGNITUDES, PER, UNITS, Currency

#: A number: thousands groups, or at most 16 digits (longer runs are codes: ``DIGITS``),
#: or a decimal point first (.5, $.01) with no digit or word before it.
NUM = (r"\d{1,3}(?:,\d{3}){1,6}(?!,?\d)(?:\.\d+)?|\d{1,16}(?!\d)(?:\.\d+)?"
       r"|(?<![\w.,])\.\d{1,16}(?![\d.])")
#: What a number may start with (the lookahead of `numeric`).
NUM_START = r"(?<![A-Za-z])[-+]?\d|\d|(?<![\w.,])[-+]?\.\d"
#: am/pm, and "A M" as the abbreviation rule writes a.m.
AMPM = r"(?:[AaPp]\.?[Mm](?:\.(?=\S))?|[AP] M)(?![A-Za-z])"
TIME = r"\d{1,2}:\d{2}(?::\d{2})?"
#: Range signs: hyphen, en dash, tilde (Korean writes 9시~18시).
RANGE_SIGN = r"[~\-–]"
UNITS_ALL = trie_alt(UNITS)
UNITS_SPACED = trie_alt(k for k, u in UNITS.items() if u.spaced)
MAGS = trie_alt(MAGNITUDES)
CODES = trie_alt(CURRENCY_CODES)
SYMS = "".join(CURRENCIES)
PREFIXES = trie_alt(tables.PREFIXED_DOLLARS)
#: What a prefixed dollar sign (HK$ 80) starts with, for a language's lookahead.
PREFIX_START = rf"(?<![A-Za-z]){PREFIXES}\$"
PREFIX_FIRST = "".join(sorted({k[0] for k in tables.PREFIXED_DOLLARS}))
PERS = trie_alt(PER)
#: One-syllable Korean particles that may follow a "per" unit (5kg/m의, 25km/L로).
_PER_PARTICLES = "의를을로에은는이가와과도"


def per(p: str) -> str:
    """``/word`` after an amount or a unit, group ``<p>per`` (``$20/mo``, ``5 kg/day``)."""
    return (rf"(?:/(?P<{p}per>{PERS})(?![A-Za-z0-9])"
            rf"(?:(?=[{_PER_PARTICLES}](?![가-힣]))|(?![가-힣])))")


def unit(p: str) -> str:
    """A unit after a number, glued (``5kg``) or spaced (``5 kg``), groups ``<p>u1``/``<p>u2``.

    Example:
        >>> bool(re.fullmatch(unit("x"), " kg"))
        True
    """
    return rf"(?:(?P<{p}u1>{UNITS_ALL})|\s(?P<{p}u2>{UNITS_SPACED}))(?![A-Za-z0-9])"


# -- alternatives both languages use (same group names, so the same handlers) -----------

DIGITS = r"(?P<digits>\d{17,})"
TRANGE = rf"(?P<trange>(?P<ta>{TIME})\s?{RANGE_SIGN}\s?(?P<tb>{TIME})(?![\d:]))"
#: Every number of a text, with the groups of a language's number alternative.
PLAIN = re.compile(rf"{DIGITS}|(?P<kje>(?!))?(?P<qsg>[-+])?(?P<qn>{NUM})")


def plain_reader(digits: Callable[[str], str], number: Callable[[re.Match[str]], str]
                 ) -> Callable[[str], str]:
    """Reads every number of a text: 17 digits or more with ``digits``, others with
    ``number`` (a handler of the number alternative).

    Example:
        >>> plain_reader(lambda d: "D", lambda m: "N")("1, 2 and " + "9" * 17)
        'N, N and D'
    """
    def read(m: re.Match[str]) -> str:
        return digits(m.group(0)) if m.lastgroup == "digits" else number(m)

    return lambda text: PLAIN.sub(read, text)


TIME_ALT = (rf"(?P<time>(?P<th>\d{{1,2}}):(?P<tm>\d{{2}})(?::(?P<ts>\d{{2}}))?(?![\d:])"
            rf"(?:\s?(?P<tap>{AMPM}))?)")


def currency(big: str = "") -> str:
    """A currency sign before the amount: ``$5``, ``-$5.00``, ``$1.5M``, ``$5-$10``,
    ``$20/mo``; ``big`` adds magnitudes a language writes after digits (Korean 억)."""
    mags = f"(?:{MAGS})(?![A-Za-z])" + (f"|{big}" if big else "")
    return (
        rf"(?P<currency>(?:(?<![\w-])(?P<csg>-))?"
        rf"(?:(?<![A-Za-z])(?P<cpre>{PREFIXES})(?=\$))?(?P<csym>[{SYMS}])\s?(?P<cn>{NUM})"
        rf"(?:\s?(?P<cmag>{mags}))?"
        rf"(?:\s?{RANGE_SIGN}\s?(?P=csym)?(?P<cn2>{NUM})(?:\s?(?P<cmag2>{mags}))?)?"
        rf"{per('c')}?)"
    )


def code_first(big: str = "") -> str:
    """An ISO code before the amount: ``USD 100``, ``KRW 5,000``, ``EUR 2.5M``."""
    mags = f"(?:{MAGS})(?![A-Za-z])" + (f"|{big}" if big else "")
    return (rf"(?P<code_first>(?<![A-Za-z])(?P<fcode>{CODES})\s?(?P<fn>{NUM})"
            rf"(?:\s?(?P<fmag>{mags}))?)")


#: What `code_first` can start with, for the lookahead, and its first letters.
CODE_START = "(?:" + "|".join(sorted(CURRENCY_CODES)) + r")\s?\d"
CODE_FIRST = "".join(sorted({c[0] for c in CURRENCY_CODES}))
#: First characters of a number (`NUM_START`) or an amount with its currency sign.
NUM_FIRST = r"0-9+\-." + SYMS
#: 6·25, 3·1절: dates of events written with a middle dot.
MIDDOT = r"(?P<middot>(?P<mda>\d{1,2})·(?P<mdb>\d{1,2})(?!\d))"
VERSION = (r"(?P<version>(?:(?<![A-Za-z])(?P<vv>[vV]))?(?P<vn>\d+(?:\.\d+){2,7})"
           r"|(?<![A-Za-z])(?P<vv2>[vV])(?P<vn2>\d+(?:\.\d+)?))")

# Tails after the number (group ``qn``).
CURRENCY_CODE = rf"(?P<currency_code>\s?(?P<ccode>{CODES})(?![A-Za-z]))"
MAGNITUDE = r"(?P<magnitude>(?P<mg>[KkMB]|bn|mn)(?![A-Za-z0-9]))"
ORDINAL = r"(?P<ordinal>(?:st|nd|rd|th)(?![A-Za-z]))"
AMPM_TAIL = rf"(?P<ampm>\s?(?P<aap>{AMPM}))"
TIMES = rf"(?P<times>\s?(?P<xo>[x×*])(?:\s?(?P<xb>{NUM}))?(?![A-Za-z0-9]))"
RATIO = r"(?P<ratio>:(?P<qb>\d{1,16})(?!\d))"
#: A fraction's slash, glued (1/2) or spaced (1 / 2: group ``fsp``, never a date).
FRACTION = (r"(?P<fraction>(?:/|(?P<fsp>\s/\s))(?P<fb>\d{1,16})(?!\d)"
            r"(?P<fo>(?:st|nd|rd|th|ST|ND|RD|TH)s?(?![A-Za-z]))?)")
#: Three or more digit groups joined by hyphens (22-95-81): each said on its own.
GROUPS = r"(?P<groups>(?<![\d.,-])\d{1,4}(?:-\d{1,4}){2,6}(?![\d-]))"
#: A square or cube root, with a coefficient (2√3) and a denominator (√3/2).
ROOT = (r"(?P<root>(?P<rc>\d{1,3})?(?P<rsym>[√∛])\s?(?P<rn>\d{1,16}(?:\.\d+)?)(?![\d.])"
        r"(?:/(?P<rd>\d{1,16})(?!\d))?)")
ROOT_START = r"\d{1,3}[√∛]|[√∛]\s?\d"


def currency_post(extra: str = "") -> str:
    """A currency sign after the amount (``5$``, ``50¢`` with ``extra="¢"``)."""
    return rf"(?P<currency_post>\s?(?P<csym2>[{SYMS}{extra}]))"


def numeric(starts: str, first: str, heads: Sequence[str], tails: Sequence[str],
            prefix: str = "") -> re.Pattern[str]:
    """A language's numeric pattern: ``first`` (a character class body) and ``starts``
    (a lookahead) say what a match starts with, ``heads`` are the structured forms in
    order, ``tails`` what may follow a plain number (``qn``, sign ``qsg``), ``prefix`` what
    may come before it (Korean 제).

    Example:
        >>> p = numeric(r"\\d", "0-9", [DIGITS], [ORDINAL])
        >>> p.match("21st").lastgroup
        'ordinal'
    """
    number = rf"{prefix}(?P<qsg>[-+])?(?P<qn>{NUM})(?:" + "|".join(tails) + ")?"
    return re.compile(rf"(?=[{first}])(?={starts})(?:" + "|".join([*heads, number]) + ")")


# -- readings both languages share --------------------------------------------------------


def to_int(s: str) -> int:
    """The integer of a numeral with thousands commas (``15,000`` -> 15000)."""
    return int(s.replace(",", ""))


def is_int(s: str) -> bool:
    """Whether a numeral has no decimal part."""
    return "." not in s


def parse_time(t: str) -> tuple[int, int, int | None] | None:
    """(hours, minutes, seconds or None) of ``h:mm[:ss]``, None when it is no clock time.

    Example:
        >>> parse_time("10:30"), parse_time("25:00")
        ((10, 30, None), None)
    """
    h, mi, *rest = (int(x) for x in t.split(":"))
    s = rest[0] if rest else None
    if h > 24 or mi > 59 or (s is not None and s > 59):
        return None
    return h, mi, s


def lead(m: re.Match[str]) -> tuple[str, str | None]:
    """(text kept before the reading, the sign) of the number alternative: a ``-`` or
    ``+`` glued after a word or digit ("A-5", "3+4") is kept, as is Korean 제."""
    kept = (m["kje"] or "") if "kje" in m.re.groupindex else ""
    sign = m["qsg"]
    if sign:
        i = m.start("qsg")
        if i > 0 and m.string[i - 1].isalnum():
            return kept + sign, None
    return kept, sign


def local_phone(m: re.Match[str]) -> bool:
    """123-4567 is a local phone number; 100-1000 and 300-5000 read as ranges."""
    a, b = m["qn"], m["rb"]
    return (m["rsep"] == "-" and not m["qsg"] and m.group(0) == f"{a}-{b}" and len(a) == 3
            and len(b) == 4 and (a + b).isdigit() and (int(b) % 100 != 0 or b[0] == "0"))


#: An extension after a phone number (ext. 12, x12, 내선 123), group ``pext``.
PHONE_EXT = r"(?:\s?,?\s?(?:ext\.?|[Ee]xt\.?|x|extension|내선)\s?(?P<pext>\d{1,5})(?!\d))?"

#: Phone shapes both languages read: +CC (0)area, and 555-1234 with an extension (a bare
#: 555-1234 is the range rule's, which tells it from 300-5000).
PHONE_SHARED = (r"\+\d{1,3}\s?\(0\)\s?\d{1,4}(?:[-.\s]\d{2,4}){1,3}(?!\d)"
                r"|\d{3}-\d{4}(?=\s?,?\s?(?:ext\.?|[Ee]xt\.?|x|extension|내선)\s?\d)")


def phone_parts(m: re.Match[str]) -> tuple[list[str], str | None]:
    """(the digit groups, the extension or None) of a `phone` match."""
    body = m.string[m.start() : m.start("pext") if m["pext"] else m.end()]
    body = re.sub(r"\s?,?\s?(?:ext\.?|[Ee]xt\.?|x|extension|내선)\s?$", "", body)
    body = body.replace("(0)", " ")  # +44 (0)20: the trunk zero is not dialled
    return [g for g in re.split(r"[-.\s()]+", body.lstrip("+")) if g], m["pext"]


@dataclass(frozen=True)
class Words:
    """What a language says where the shared grammar needs a word.

    Example:
        >>> Words(str, lambda *a: "", lambda *a: "", {"-": "minus "}, " to ", " to ",
        ...       lambda r, p: r, str, " point ", "version ").signs["-"]
        'minus '
    """

    plain: Callable[[str], str]  #: every number of a string, plainly (a malformed form)
    clock: Callable[[int, int, int | None, str | None], str]  #: hours, minutes, s, am/pm
    money: Callable[[str, Currency, str | None], str]  #: amount, currency, magnitude (M)
    signs: dict[str | None, str]  #: words for ``-``, ``+`` and None, trailing space included
    to: str  #: between the ends of a range (" to ", "에서 ")
    ratio: str  #: between the sides of a ratio (" to ", " 대 ")
    per: Callable[[str, str], str]  #: (reading, key of `tables.PER`) -> words
    number: Callable[[str], str]  #: one number as written
    point: str  #: between the parts of a version (" point ")
    version: str  #: a ``v`` before a version ("version ")


def handlers(w: Words) -> dict[str, Callable[[re.Match[str]], str]]:
    """The handlers of the shared alternatives, in ``w``'s words.

    Example:
        >>> hs = handlers(Words(str, lambda h, mi, s, ap: f"{h}h{mi}", lambda *a: "",
        ...                     {}, " to ", " to ", lambda r, p: r, str, ".", "v"))
        >>> hs["trange"](re.match(TRANGE, "9:00-17:30"))
        '9h0 to 17h30'
    """

    def trange(m: re.Match[str]) -> str:
        a, b = parse_time(m["ta"]), parse_time(m["tb"])
        if a is None or b is None:
            return w.plain(m.group(0))
        return f"{w.clock(*a, None)}{w.to}{w.clock(*b, None)}"

    def time(m: re.Match[str]) -> str:
        t = parse_time(m["th"] + ":" + m["tm"] + (":" + m["ts"] if m["ts"] else ""))
        if t is None:
            return w.plain(m.group(0)).replace(":", w.ratio)
        return w.clock(*t, m["tap"])

    def currency(m: re.Match[str]) -> str:
        cur = tables.PREFIXED_DOLLARS[m["cpre"]] if m["cpre"] else CURRENCIES[m["csym"]]
        words = w.signs[m["csg"]] + w.money(m["cn"], cur, m["cmag"])
        if m["cn2"]:
            words += w.to + w.money(m["cn2"], cur, m["cmag2"])  # $5-$10
        # After an amount "/m" is a month ($20/m), after a unit a meter (5 kg/m).
        return w.per(words, "mo" if m["cper"] == "m" else m["cper"]) if m["cper"] else words

    def currency_code(m: re.Match[str]) -> str:
        kept, sign = lead(m)
        return kept + w.signs[sign] + w.money(m["qn"], CURRENCY_CODES[m["ccode"]], None)

    def code_first(m: re.Match[str]) -> str:
        return w.money(m["fn"], CURRENCY_CODES[m["fcode"]], m["fmag"])

    def ampm(m: re.Match[str]) -> str:
        kept, sign = lead(m)
        n = m["qn"]
        if sign or not n.isdigit() or int(n) > 24:
            return kept + w.signs[sign] + w.number(n) + " " + m["aap"]
        return kept + w.clock(int(n), 0, None, m["aap"])

    def groups(m: re.Match[str]) -> str:
        """22-95-81: each group a number of its own (a leading zero: digit by digit)."""
        return " ".join(w.number(p) for p in m.group(0).split("-"))

    def ratio(m: re.Match[str]) -> str:
        kept, sign = lead(m)
        return f"{kept}{w.signs[sign]}{w.number(m['qn'])}{w.ratio}{w.number(m['qb'])}"

    def version(m: re.Match[str]) -> str:
        v = m["vv"] or m["vv2"]
        words = w.point.join(w.number(p) for p in (m["vn"] or m["vn2"]).split("."))
        if v:
            if m.start() > 0 and m.string[m.start() - 1].isalpha():
                return v + " " + words  # "dev1.2.3": the v belongs to a word
            return w.version + words
        return words

    return {"trange": trange, "time": time, "currency": currency,
            "currency_code": currency_code, "code_first": code_first, "ampm": ampm,
            "groups": groups, "ratio": ratio, "version": version}


# -- addresses: URLs, e-mail, IP addresses, domains, file names ----------------------------

_EXTS = ("pdf txt csv tsv json py js ts exe zip gz tar mp3 mp4 wav flac jpg jpeg png gif svg "
         "html htm md docx doc xlsx xls pptx ppt onnx yaml yml xml log ini cfg toml ipynb sh "
         "bat dll so bin iso apk dmg hwp").split()
_TLDS = "com org net edu gov io ai dev app kr jp uk de fr cn co info me tv us ca au".split()
#: Hangul ends an address: what follows it is a particle (naver.com에서, 주소.com으로).
_END = r"[^\s<>\"'.,;:!?)\]가-힣]"
WEB = re.compile(
    r"(?<![\w.@/+%&-])(?=[\w%+&-]*(?:[.@][A-Za-z0-9]|://)|~?/[a-z])(?:"
    rf"(?P<url>(?:(?:https?|ftp|file)://|www\.)[^\s<>\"'가-힣]*{_END})"
    r"|(?P<email>[A-Za-z0-9][A-Za-z0-9._%+&-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
    rf"(?:/[^\s<>\"'가-힣]*{_END})?)"
    r"|(?P<ip>(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d))"
    # Any lower-case top-level label after a lower-case name of 3+ letters (news.abc).
    rf"|(?P<domain>(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9-]+)*\.{trie_alt(_TLDS)}"
    rf"|[a-z][a-z0-9_-]{{2,}}(?:\.[a-z0-9-]+)*\.(?!(?:{trie_alt(_EXTS)})\b)[a-z]{{2,6}})"
    rf"(?:/[^\s<>\"'가-힣]*{_END})?(?![A-Za-z0-9_-]))"
    r"|(?P<path>~?(?:/[\w.-]+){2,}/?)"  # /usr/local/bin
    # A file name may be Korean (사진.JPG) and take a particle (보고서.pdf를): the name's
    # words are kept by `WebWords.say`, only the extension must end the Latin run.
    rf"|(?P<file>[\w-]+(?:\.[\w-]+)*\.{trie_alt(_EXTS + [e.upper() for e in _EXTS])}"
    r"(?![A-Za-z0-9_-]))"
    r")"
)
#: Latin runs, digit runs, runs of other letters (Hangul: kept as written), separators.
_WEB_TOKEN = re.compile(r"://|[A-Za-z]+|\d+|[^\W\d_A-Za-z]+|.")
_SPELLED = frozenset({"http", "https", "ftp", "www", "exe", "api", "edu"})
_VOWEL = re.compile("[aeiouAEIOU]")


@dataclass(frozen=True)
class WebWords:
    """How a language says the parts of an address.

    Example:
        >>> WebWords({".": " dot "}, lambda t: " ".join(t.upper()), str, {}).say("ab.io", "domain")
        'A B dot I O'
    """

    seps: dict[str, str]  #: words for separators (``.``, ``/``, ``://`` ...)
    spell: Callable[[str], str]  #: letter by letter (``www``, ``io``, no vowel: ``pdf``)
    digits: Callable[[str], str]
    readable: dict[str, str]  #: short labels said as words (``com``), and how
    ip_dot: str = ""  #: the dots of an IP address, when not ``seps["."]``
    ip_number: Callable[[str], str] | None = None  #: IP numbers, when not digit by digit
    word: Callable[[str], str] | None = None  #: a label said as a word; None: as written

    def say(self, text: str, kind: str) -> str:
        out = []
        seps = dict(self.seps, **({".": self.ip_dot} if kind == "ip" and self.ip_dot else {}))
        for tok in _WEB_TOKEN.findall(text):
            if tok.isdigit():
                read = self.ip_number if kind == "ip" and self.ip_number else self.digits
                out.append(read(tok))
            elif tok.isascii() and tok.isalpha():
                low = tok.lower()
                if low in self.readable:
                    out.append(self.readable[low])
                elif low in _SPELLED or len(tok) <= 2 or not _VOWEL.search(tok):
                    out.append(self.spell(tok))
                else:
                    out.append(self.word(tok) if self.word else tok)
            elif tok.isalpha():
                out.append(tok)  # a word of another script: 사진 of 사진.JPG
            else:
                out.append(seps.get(tok, " "))
        return " ".join("".join(f" {o} " for o in out).split())


def web_repl(words: WebWords, known: Callable[[str], bool]) -> Callable[[re.Match[str]], str]:
    """The replacement of `WEB` in ``words``; what ``known`` says is a term is kept."""

    def repl(m: re.Match[str]) -> str:
        if known(m.group(0)):
            return m.group(0)
        return words.say(m.group(0), m.lastgroup or "url")

    return repl
