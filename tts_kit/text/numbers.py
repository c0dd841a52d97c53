"""Number words for Korean and English: num2words for cardinals, ordinals and years (English
without its commas); by hand native Korean numerals (한, 두, 스무) and digit-by-digit readings."""

from __future__ import annotations

from functools import lru_cache

from num2words import num2words

#: Longest integer read as a number; longer runs are codes, said digit by digit
#: (English: 12 without thousands commas).
KO_MAX_DIGITS = 16
EN_MAX_DIGITS = 21
EN_PLAIN_DIGITS = 12

KO_DIGITS = "영일이삼사오육칠팔구"
KO_DIGITS_PHONE = "공일이삼사오육칠팔구"
EN_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")

_KO_NATIVE_ONES = ("", "한", "두", "세", "네", "다섯", "여섯", "일곱", "여덟", "아홉")
_KO_NATIVE_TENS = ("", "열", "스물", "서른", "마흔", "쉰", "예순", "일흔", "여든", "아흔")
#: The nominal forms of 1-9 used before 째 (첫째, 둘째, 셋째, 넷째).
KO_NATIVE_NOMINAL = ("", "첫", "둘", "셋", "넷", "다섯", "여섯", "일곱", "여덟", "아홉")
EN_MONTHS = ("", *"January February March April May June July August September October "
             "November December".split())


@lru_cache(maxsize=16384)
def ko_sino(n: int) -> str:
    """Sino-Korean reading of a non-negative integer (num2words, digits past 10^16).

    Example:
        >>> ko_sino(10000), ko_sino(123456), ko_sino(100000000)
        ('만', '십이만 삼천사백오십육', '일억')
    """
    if n < 0:
        return "마이너스 " + ko_sino(-n)
    if len(str(n)) > KO_MAX_DIGITS:
        return ko_digits(str(n), phone=True)
    return num2words(n, lang="ko")


def ko_digits(digits: str, phone: bool = False) -> str:
    """Digit-by-digit Korean reading; ``phone`` says 0 as 공 (phone numbers, codes).

    Example:
        >>> ko_digits("3014"), ko_digits("010", phone=True)
        ('삼영일사', '공일공')
    """
    table = KO_DIGITS_PHONE if phone else KO_DIGITS
    return "".join(table[ord(c) - 48] for c in digits if "0" <= c <= "9")


def ko_native(n: int) -> str | None:
    """Native Korean numeral in its attributive form (before a counter), 1-99; else None.

    Example:
        >>> ko_native(3), ko_native(20), ko_native(21), ko_native(100)
        ('세', '스무', '스물한', None)
    """
    if not 1 <= n <= 99:
        return None
    if n == 20:
        return "스무"
    return _KO_NATIVE_TENS[n // 10] + _KO_NATIVE_ONES[n % 10]


def ko_month(n: int) -> str:
    """Month name: 6 -> 유월, 10 -> 시월 (the two irregular ones); others Sino + 월.

    Example:
        >>> ko_month(6), ko_month(10), ko_month(8)
        ('유월', '시월', '팔월')
    """
    if not 1 <= n <= 12:
        return ko_sino(n) + " 월"
    return {6: "유월", 10: "시월"}.get(n) or ko_sino(n) + "월"


def ko_number(text: str) -> str:
    """Read a written number in Sino-Korean (decimals and a leading 0 digit by digit).

    Example:
        >>> ko_number("1,234"), ko_number("3.14"), ko_number("007")
        ('천이백삼십사', '삼 점 일사', '공공칠')
    """
    text = text.replace(",", "")
    whole, _, frac = text.partition(".")
    if (len(whole) > 1 and whole[0] == "0") or len(whole) > KO_MAX_DIGITS:
        head = ko_digits(whole, phone=True)
    else:
        head = ko_sino(int(whole)) if whole else "영"
    return f"{head} 점 {ko_digits(frac)}" if frac else head


@lru_cache(maxsize=16384)
def en_cardinal(n: int) -> str:
    """English cardinal without the commas num2words puts between groups.

    Example:
        >>> en_cardinal(2026), en_cardinal(-5)
        ('two thousand and twenty-six', 'minus five')
    """
    if len(str(abs(n))) > EN_MAX_DIGITS:
        return ("minus " if n < 0 else "") + en_digits(str(abs(n)))
    return num2words(n, lang="en").replace(",", "")


@lru_cache(maxsize=4096)
def en_ordinal(n: int) -> str:
    """English ordinal: 1 -> first, 21 -> twenty-first.

    Example:
        >>> en_ordinal(1), en_ordinal(21), en_ordinal(112)
        ('first', 'twenty-first', 'one hundred and twelfth')
    """
    if len(str(n)) > EN_MAX_DIGITS:
        return en_digits(str(n))
    return num2words(n, lang="en", to="ordinal").replace(",", "")


@lru_cache(maxsize=4096)
def en_year(n: int) -> str:
    """A year as people say it: 1999 -> nineteen ninety-nine, 2026 -> twenty twenty-six.

    Example:
        >>> en_year(1999), en_year(2026), en_year(2005)
        ('nineteen ninety-nine', 'twenty twenty-six', 'two thousand and five')
    """
    return num2words(n, lang="en", to="year").replace(",", "")


def en_decade(n: int) -> str:
    """The plural of a year, for decades: 1990 -> nineteen nineties.

    Example:
        >>> en_decade(1990), en_decade(2010), en_decade(80)
        ('nineteen nineties', 'twenty tens', 'eighties')
    """
    words = en_year(n) if n >= 1000 else en_cardinal(n)
    head, _, last = words.rpartition(" ")
    last = last[:-1] + "ies" if last.endswith("y") else last + "s"
    return f"{head} {last}" if head else last


def en_count(n: int, one: str, many: str = "") -> str:
    """``n`` things, singular or plural (``many``, by default ``one`` + s).

    Example:
        >>> en_count(1, "hour"), en_count(6, "foot", "feet")
        ('one hour', 'six feet')
    """
    return f"{en_cardinal(n)} {one if n == 1 else many or one + 's'}"


def en_digits(digits: str) -> str:
    """Digit-by-digit English reading: ``"4090"`` -> four zero nine zero.

    Example:
        >>> en_digits("305")
        'three zero five'
    """
    return " ".join(EN_DIGITS[ord(c) - 48] for c in digits if "0" <= c <= "9")


def en_number(text: str) -> str:
    """Read a written number (``1,234``, ``3.14``, ``007``) in English.

    Example:
        >>> en_number("1,234.5"), en_number("007")
        ('one thousand two hundred and thirty-four point five', 'zero zero seven')
    """
    limit = EN_MAX_DIGITS if "," in text else EN_PLAIN_DIGITS
    whole, _, frac = text.replace(",", "").partition(".")
    if (len(whole) > 1 and whole[0] == "0") or len(whole) > limit:
        head = en_digits(whole)
    else:
        head = en_cardinal(int(whole)) if whole else ""
    if not whole and frac:
        return f"point {en_digits(frac)}"  # .5: said as written
    return f"{head} point {en_digits(frac)}" if frac else head or "zero"


def clear_caches() -> None:
    """Forget every cached reading (for a cold-start measurement).

    Example:
        >>> clear_caches()
    """
    for fn in (ko_sino, en_cardinal, en_ordinal, en_year):
        fn.cache_clear()
