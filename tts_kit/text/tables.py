"""Word tables the rules read: units, currencies, Korean counters, letter names.

Data only; the rules that use it are in `ko` and `en`.

Example:
    >>> from tts_kit.text.tables import UNITS, KO_COUNTERS
    >>> UNITS["kg"].ko, UNITS["kg"].en_plural, KO_COUNTERS["개"]
    ('킬로그램', 'kilograms', 'native')
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """How to say a unit after a number, in both languages.

    Example:
        >>> UNITS["°C"].ko_prefix, UNITS["°C"].en_plural
        ('섭씨', 'degrees Celsius')
    """

    ko: str  #: after the number (킬로그램); empty when ``ko_prefix`` says it all
    en: str
    en_plural: str
    ko_prefix: str = ""  #: before the number (섭씨 25 도, 시속 60 킬로미터)
    ko_native: bool = False  #: Korean reads the number natively (2h -> 두 시간)
    spaced: bool = True  #: may follow "5 " (not m, s, g: "5 m..." is rarely meters)


def _u(ko: str, en: str, plural: str | None = None, **kw) -> Unit:
    return Unit(ko, en, plural if plural is not None else en + "s", **kw)


UNITS: dict[str, Unit] = {
    # mass
    "mg": _u("밀리그램", "milligram"),
    "g": _u("그램", "gram", spaced=False),
    "kg": _u("킬로그램", "kilogram"),
    "lb": _u("파운드", "pound"),
    "lbs": _u("파운드", "pound"),
    "kgs": _u("킬로그램", "kilogram"),
    "oz": _u("온스", "ounce"),
    # length, area, volume
    "nm": _u("나노미터", "nanometer"),
    "μm": _u("마이크로미터", "micrometer"),
    "mm": _u("밀리미터", "millimeter"),
    "cm": _u("센티미터", "centimeter"),
    "m": _u("미터", "meter", spaced=False),
    "km": _u("킬로미터", "kilometer"),
    "ft": _u("피트", "foot", "feet"),
    "cm2": _u("제곱센티미터", "square centimeter"),
    "m2": _u("제곱미터", "square meter"),
    "km2": _u("제곱킬로미터", "square kilometer"),
    "m3": _u("세제곱미터", "cubic meter"),
    "ml": _u("밀리리터", "milliliter"),
    "mL": _u("밀리리터", "milliliter"),
    "L": _u("리터", "liter"),
    "l": _u("리터", "liter", spaced=False),
    "cm3": _u("세제곱센티미터", "cubic centimeter"),
    "mm2": _u("제곱밀리미터", "square millimeter"),
    "km3": _u("세제곱킬로미터", "cubic kilometer"),
    "ft2": _u("제곱피트", "square foot", "square feet"),
    "sq ft": _u("제곱피트", "square foot", "square feet"),
    "sq m": _u("제곱미터", "square meter"),
    "sq km": _u("제곱킬로미터", "square kilometer"),
    "sq mi": _u("제곱마일", "square mile"),
    "mi": _u("마일", "mile"),
    "cc": _u("시시", "cubic centimeter"),
    "dL": _u("데시리터", "deciliter"),
    "m/s2": _u("미터 매 제곱초", "meter per second squared", "meters per second squared"),
    # capitals as written in shouted specs and labels (12KG, 5KM)
    "KG": _u("킬로그램", "kilogram"),
    "KM": _u("킬로미터", "kilometer"),
    "CM": _u("센티미터", "centimeter"),
    "MM": _u("밀리미터", "millimeter"),
    "MG": _u("밀리그램", "milligram"),
    "ML": _u("밀리리터", "milliliter"),
    "LBS": _u("파운드", "pound"),
    # data
    "KB": _u("킬로바이트", "kilobyte"),
    "kB": _u("킬로바이트", "kilobyte"),
    "MB": _u("메가바이트", "megabyte"),
    "GB": _u("기가바이트", "gigabyte"),
    "TB": _u("테라바이트", "terabyte"),
    "PB": _u("페타바이트", "petabyte"),
    "KiB": _u("키비바이트", "kibibyte"),
    "MiB": _u("메비바이트", "mebibyte"),
    "GiB": _u("기비바이트", "gibibyte"),
    "kb": _u("킬로바이트", "kilobyte"),
    "mb": _u("메가바이트", "megabyte"),
    "gb": _u("기가바이트", "gigabyte"),
    "tb": _u("테라바이트", "terabyte"),
    "bps": _u("비피에스", "bit per second", "bits per second"),
    "kbps": _u("킬로비피에스", "kilobit per second", "kilobits per second"),
    "Kbps": _u("킬로비피에스", "kilobit per second", "kilobits per second"),
    "Mbps": _u("메가비피에스", "megabit per second", "megabits per second"),
    "Gbps": _u("기가비피에스", "gigabit per second", "gigabits per second"),
    "mbps": _u("메가비피에스", "megabit per second", "megabits per second"),
    "Mbit/s": _u("메가비트", "megabit per second", "megabits per second", ko_prefix="초당"),
    "Gbit/s": _u("기가비트", "gigabit per second", "gigabits per second", ko_prefix="초당"),
    "MB/s": _u("메가바이트", "megabyte per second", "megabytes per second", ko_prefix="초당"),
    "GB/s": _u("기가바이트", "gigabyte per second", "gigabytes per second", ko_prefix="초당"),
    # time
    "ns": _u("나노초", "nanosecond"),
    "μs": _u("마이크로초", "microsecond"),
    "ms": _u("밀리초", "millisecond"),
    "s": _u("초", "second", spaced=False),
    "sec": _u("초", "second"),
    "secs": _u("초", "second"),
    "min": _u("분", "minute"),
    "mins": _u("분", "minute"),
    "h": _u("시간", "hour", ko_native=True, spaced=False),
    "hr": _u("시간", "hour", ko_native=True),
    "hrs": _u("시간", "hour", ko_native=True),
    "wk": _u("주", "week"),
    "wks": _u("주", "week"),
    "mo": _u("개월", "month"),
    "mos": _u("개월", "month"),
    "yr": _u("년", "year"),
    "yrs": _u("년", "year"),
    # frequency, power
    "Hz": _u("헤르츠", "hertz", "hertz"),
    "kHz": _u("킬로헤르츠", "kilohertz", "kilohertz"),
    "MHz": _u("메가헤르츠", "megahertz", "megahertz"),
    "GHz": _u("기가헤르츠", "gigahertz", "gigahertz"),
    "W": _u("와트", "watt", spaced=False),
    "kW": _u("킬로와트", "kilowatt"),
    "kWh": _u("킬로와트시", "kilowatt hour"),
    "V": _u("볼트", "volt", spaced=False),
    "N": _u("뉴턴", "newton", spaced=False),
    "kN": _u("킬로뉴턴", "kilonewton"),
    "mA": _u("밀리암페어", "milliamp"),
    "mAh": _u("밀리암페어시", "milliamp hour"),
    "kcal": _u("킬로칼로리", "kilocalorie"),
    "dB": _u("데시벨", "decibel"),
    "px": _u("픽셀", "pixel"),
    "fps": _u("프레임", "frame per second", "frames per second", ko_prefix="초당"),
    "ppm": _u("피피엠", "part per million", "parts per million"),
    "rpm": _u("알피엠", "revolution per minute", "revolutions per minute"),
    # temperature and speed: Korean puts a word before the number
    "°C": _u("도", "degree Celsius", "degrees Celsius", ko_prefix="섭씨"),
    "°F": _u("도", "degree Fahrenheit", "degrees Fahrenheit", ko_prefix="화씨"),
    "°": _u("도", "degree"),
    "km/h": _u("킬로미터", "kilometer per hour", "kilometers per hour", ko_prefix="시속"),
    "kph": _u("킬로미터", "kilometer per hour", "kilometers per hour", ko_prefix="시속"),
    "mph": _u("마일", "mile per hour", "miles per hour", ko_prefix="시속"),
    "mpg": _u("마일", "mile per gallon", "miles per gallon", ko_prefix="갤런당"),
    "tbsp": _u("큰술", "tablespoon"), "tsp": _u("작은술", "teaspoon"),
    "fl oz": _u("액량 온스", "fluid ounce"),
    "m/s": _u("미터", "meter per second", "meters per second", ko_prefix="초속"),
    "g/L": _u("그램", "gram per liter", "grams per liter", ko_prefix="리터당"),
    "mg/L": _u("밀리그램", "milligram per liter", "milligrams per liter", ko_prefix="리터당"),
    "mg/dL": _u("밀리그램", "milligram per deciliter", "milligrams per deciliter",
                ko_prefix="데시리터당"),
}


@dataclass(frozen=True)
class Currency:
    """A currency's words, major and minor unit.

    Example:
        >>> CURRENCIES["$"].ko, CURRENCIES["£"].en_minor_plural
        ('달러', 'pence')
    """

    ko: str
    ko_minor: str  #: 센트; empty when amounts have no minor unit
    en: str
    en_plural: str
    en_minor: str = ""
    en_minor_plural: str = ""


CURRENCIES: dict[str, Currency] = {
    "$": Currency("달러", "센트", "dollar", "dollars", "cent", "cents"),
    "€": Currency("유로", "센트", "euro", "euros", "cent", "cents"),
    "£": Currency("파운드", "펜스", "pound", "pounds", "penny", "pence"),
    "¥": Currency("엔", "", "yen", "yen"),
    "₩": Currency("원", "", "won", "won"),
    "₹": Currency("루피", "", "rupee", "rupees"),
}
#: ISO codes written after (or before) an amount.
CURRENCY_CODES: dict[str, Currency] = {
    "USD": Currency("달러", "센트", "US dollar", "US dollars", "cent", "cents"),
    "EUR": CURRENCIES["€"],
    "GBP": CURRENCIES["£"],
    "JPY": CURRENCIES["¥"],
    "KRW": CURRENCIES["₩"],
    "CNY": Currency("위안", "", "yuan", "yuan"),
    "AUD": Currency("호주 달러", "센트", "Australian dollar", "Australian dollars", "cent",
                    "cents"),
    "CAD": Currency("캐나다 달러", "센트", "Canadian dollar", "Canadian dollars", "cent",
                    "cents"),
    "CHF": Currency("스위스 프랑", "", "Swiss franc", "Swiss francs"),
    "HKD": Currency("홍콩 달러", "센트", "Hong Kong dollar", "Hong Kong dollars", "cent",
                    "cents"),
    "INR": CURRENCIES["₹"],
    "NZD": Currency("뉴질랜드 달러", "센트", "New Zealand dollar", "New Zealand dollars", "cent",
                    "cents"),
    "SGD": Currency("싱가포르 달러", "센트", "Singapore dollar", "Singapore dollars", "cent",
                    "cents"),
    "TWD": Currency("대만 달러", "", "New Taiwan dollar", "New Taiwan dollars"),
    "AED": Currency("디르함", "", "dirham", "dirhams"),
    "SAR": Currency("리얄", "", "riyal", "riyals"),
    "THB": Currency("바트", "", "baht", "baht"),
    "VND": Currency("동", "", "dong", "dong"),
    "IDR": Currency("루피아", "", "rupiah", "rupiahs"),
    "MYR": Currency("링깃", "", "ringgit", "ringgits"),
    "MXN": Currency("멕시코 페소", "", "Mexican peso", "Mexican pesos"),
    "BRL": Currency("헤알", "", "real", "reais"),
    "RUB": Currency("루블", "", "ruble", "rubles"),
    "SEK": Currency("스웨덴 크로나", "", "Swedish krona", "Swedish kronor"),
    "NOK": Currency("노르웨이 크로네", "", "Norwegian krone", "Norwegian kroner"),
    "DKK": Currency("덴마크 크로네", "", "Danish krone", "Danish kroner"),
    "ZAR": Currency("랜드", "", "rand", "rand"),
}
#: Dollar signs with a country prefix (HK$ 80, US$5, A$20): the currency they name.
PREFIXED_DOLLARS: dict[str, Currency] = {
    "US": CURRENCY_CODES["USD"], "HK": CURRENCY_CODES["HKD"], "NZ": CURRENCY_CODES["NZD"],
    "A": CURRENCY_CODES["AUD"], "AU": CURRENCY_CODES["AUD"], "C": CURRENCY_CODES["CAD"],
    "CA": CURRENCY_CODES["CAD"], "S": CURRENCY_CODES["SGD"], "NT": CURRENCY_CODES["TWD"],
    "R": CURRENCY_CODES["BRL"],
}
#: What "/" before a word means after an amount or a unit ($20/mo, 5 kg/day): the
#: English word after "per", and the Korean phrase put before the amount (월 이십 달러,
#: 시간당 십 달러).
PER: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("mo", "month", "mth"), ("month", "월")),
    **dict.fromkeys(("yr", "year"), ("year", "연")),
    **dict.fromkeys(("wk", "week"), ("week", "주당")),
    "day": ("day", "하루"),
    **dict.fromkeys(("h", "hr", "hour"), ("hour", "시간당")),
    **dict.fromkeys(("min", "minute"), ("minute", "분당")),
    **dict.fromkeys(("s", "sec", "second"), ("second", "초당")),
    "kg": ("kilogram", "킬로그램당"),
    **dict.fromkeys(("lb", "pound"), ("pound", "파운드당")),
    "GB": ("gigabyte", "기가바이트당"),
    # Lengths, areas and volumes after a unit (5 kg/m, 30 L/m2, 2 t/m3).
    "m": ("meter", "미터당"),
    "km": ("kilometer", "킬로미터당"),
    "cm": ("centimeter", "센티미터당"),
    **dict.fromkeys(("L", "l"), ("liter", "리터당")),
    **dict.fromkeys(("m2", "m²"), ("square meter", "제곱미터당")),
    **dict.fromkeys(("m3", "m³"), ("cubic meter", "세제곱미터당")),
    "g": ("gram", "그램당"),
    **dict.fromkeys(("person", "人", "명", "인"), ("person", "일 인당")),
    "night": ("night", "일 박에"),
    "unit": ("unit", "개당"),
    "개": ("item", "개당"),
    "월": ("month", "월"),
    "일": ("day", "하루"),
    "시간": ("hour", "시간당"),
    "년": ("year", "연"),
}
#: Magnitude suffixes after an amount ($5M, $1.5 billion) and what they multiply by.
MAGNITUDES: dict[str, int] = {
    "K": 10**3, "k": 10**3, "thousand": 10**3,
    "M": 10**6, "million": 10**6, "mn": 10**6,
    "B": 10**9, "bn": 10**9, "billion": 10**9,
    "trillion": 10**12, "tn": 10**12,
    # Lower-case scale letters, read as magnitudes only after an amount (¥20m, $3b).
    "m": 10**6, "b": 10**9,
}

#: Korean counters and the numerals before them: ``native`` (한, 두, 세 ... up to 99,
#: Sino-Korean from 100), ``sino`` (일, 이, 삼), ``month`` (유월, 시월), ``ordinal``
#: (첫 번째), ``nominal`` (첫째, 둘째). Longest match wins, so 개월 is not 개 + 월.
KO_COUNTERS: dict[str, str] = {
    **dict.fromkeys(
        "시 시간 개 명 살 마리 번 배 잔 권 대 그루 송이 장 벌 켤레 채 척 통 병 봉지 그릇 "
        "접시 군데 곳 가지 사람 자루 쌍 줄 판 바퀴 걸음 모금 방울 달 알 발 포기 다발 개비 "
        "조각 칸 끼 차례 골 편 자리 마디 곡".split(),
        "native",
    ),
    **dict.fromkeys(
        "분 초 원 년 일 층 위 도 박 회 차 등 호 번지 번길 개월 개국 개년 개소 개사 주 주년 "
        "주일 주차 세 세대 인 인분 인용 점 쪽 페이지 학년 교시 기 분기 퍼센트 프로 달러 "
        "유로 엔 위안 파운드 센트 킬로 킬로그램 그램 미터 킬로미터 센티미터 센티 밀리 리터 "
        "바이트 메가 기가 메가바이트 기가바이트 헤르츠 와트 볼트 배속 시즌 시리즈 단계 부 "
        "화 절 년대 년생 일째 일간 년간 종 건 평 톤 칼로리 표 석 승 패 무 가구 "
        "연승 연패 시간대".split(),
        "sino",
    ),
    "월": "month",
    "번째": "ordinal",
    "째": "nominal",
}
#: Particles and words that may follow a counter written after a space ("3 개를"):
#: anything else Hangul after "3 개" means it was a word (3 개발), not a counter.
KO_PARTICLES: tuple[str, ...] = tuple(
    "으로 에서 까지 부터 마다 이나 이상 이하 미만 초과 정도 가량 동안 "
    "이 가 은 는 을 를 의 에 도 만 과 와 로 씩 째 간 당 나 쯤 전 후".split()
)
#: Big Korean units written after digits (5만, 3억, 2천만).
KO_BIG_UNITS: tuple[str, ...] = (
    "천만", "백만", "십만", "천억", "백억", "십억", "천조", "백조", "십조",
    "만", "억", "조", "경", "천", "백",
)

KO_LETTERS: dict[str, str] = dict(zip(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "에이 비 씨 디 이 에프 지 에이치 아이 제이 케이 엘 엠 엔 오 피 큐 알 에스 티 유 브이 "
    "더블유 엑스 와이 제트".split(),
))

#: English abbreviations: (written form, spoken form, may end a sentence).
EN_ABBREVIATIONS: tuple[tuple[str, str, bool], ...] = (
    ("Mr.", "Mister", False), ("Mrs.", "Missus", False), ("Ms.", "Miz", False),
    ("Prof.", "Professor", False), ("Jr.", "Junior", True), ("Sr.", "Senior", True),
    ("vs.", "versus", False), ("etc.", "et cetera", True), ("e.g.", "for example", False),
    ("i.e.", "that is", False), ("approx.", "approximately", False),
    ("a.k.a.", "also known as", False), ("Inc.", "Incorporated", True),
    ("Ltd.", "Limited", True), ("Corp.", "Corporation", True), ("Co.", "Company", True),
    ("Mt.", "Mount", False), ("Ave.", "Avenue", True), ("Blvd.", "Boulevard", True),
    ("Rd.", "Road", True), ("Dept.", "Department", True), ("Gov.", "Governor", False),
    ("Sen.", "Senator", False), ("Gen.", "General", False), ("Capt.", "Captain", False),
    ("Sgt.", "Sergeant", False), ("Lt.", "Lieutenant", False), ("Fig.", "Figure", False),
    ("fig.", "figure", False), ("vol.", "volume", False), ("Vol.", "Volume", False),
    ("ch.", "chapter", False), ("pp.", "pages", False), ("est.", "estimated", False),
    ("avg.", "average", False), ("max.", "maximum", False), ("min.", "minimum", False),
    ("ext.", "extension", False),
    ("a.m.", "A M", True), ("p.m.", "P M", True), ("U.S.", "U S", True),
    ("U.K.", "U K", True), ("Ph.D.", "P H D", True),
)
#: Words after which a 4-digit number is a year ("in 1999", "since 2020").
EN_YEAR_CONTEXT: tuple[str, ...] = tuple(
    "in In since Since by By from From of until Until till before Before after After "
    "during During around circa year Year early late mid through to and between Between "
    "spring summer fall autumn winter Spring Summer Fall Autumn Winter born Born founded "
    "Founded established Established".split()
)

#: Nouns a number + 번 names (3번 출구: the exit numbered three, 삼 번), where 번 is a
#: label, read in Sino-Korean; elsewhere 번 counts times (세 번 했다), read natively
#: (National Institute of Korean Language: 번 as 번호 vs as 횟수).
KO_LABEL_NOUNS = (
    "출구 입구 버스 문제 문항 선수 타자 게이트 홀 트랙 채널 방 칸 국도 도로 고속도로 선 "
    "라인 승강장 플랫폼 좌석 자리 테이블 창구 항목 사진 파일 슬라이드 카드 번호 마을버스 "
    "환자 손님 고객 테이블 주차장 열람실 강의실 교실 부스 레인 코스 핀 포트 슬롯 사물함 "
    "케이블 노선 정류장 출입문 타석 트랙 곡 그림 예시 보기 답 후보 참가자 팀 조"
).split()
