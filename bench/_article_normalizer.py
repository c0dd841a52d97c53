"""The source article's Korean text normaliser, transcribed as published (seed 000).

Kept only to run side by side with `tts_kit.text` in ``bench/normalize_speed.py`` and in
the tests that show its bugs fixed. Do not use it. Two things differ from the printed
code, both markdown damage rather than the author's intent: the constructor is printed
as ``def init(self)`` (the underscores of ``__init__`` were eaten), and the code lost its
indentation. Everything else is as printed, bugs included:

- the time rule rewrites ``10:30`` as ``10시 30분``: the digits stay digits;
- ``currency_pattern`` is compiled but never applied, so ``5000 원`` is left alone;
- the date rule only re-spaces ``2026년 8월 24일``, digits again untouched;
- ``\\b`` around lexicon terms never matches before a Korean particle (``API를``);
- the special-character filter deletes ``%``, ``$`` and ``:``, so ``50%`` becomes ``50``.

Example:
    >>> SupertonicTextNormalizer().normalize("회의는 10:30에 시작합니다")
    '회의는 10시 30분에 시작합니다'
"""

import re
from typing import Dict  # noqa: UP035 (as printed)


class SupertonicTextNormalizer:
    def __init__(self):
        self.lexicon_map: Dict[str, str] = {  # noqa: UP006
            "FastAPI": "패스트 에이피아이",
            "SaaS": "새스",
            "TTS": "티티에스",
            "ONNX": "온닉스",
            "Python": "파이썬",
            "SDK": "에스디케이",
            "API": "에이피아이",
        }
        self.currency_pattern = re.compile(r'(\d+)\s원')
        self.date_pattern = re.compile(r'(\d{4})년\s(\d{1,2})월\s*(\d{1,2})일')
        self.time_pattern = re.compile(r'(\d{1,2}):(\d{2})')
        self.special_char_pattern = re.compile(r'[^\w\s.,!?~<>]')

    def normalize(self, text: str) -> str:
        if not text or not text.strip():
            raise ValueError("입력 텍스트가 비어 있습니다.")
        for word, pronunciation in self.lexicon_map.items():
            text = re.sub(rf'\b{re.escape(word)}\b', pronunciation, text, flags=re.IGNORECASE)
        text = self.date_pattern.sub(r'\1년 \2월 \3일', text)
        text = self.time_pattern.sub(r'\1시 \2분', text)
        tags = re.findall(r'<[^>]+>', text)
        text_placeholder = re.sub(r'<[^>]+>', ' ___TAG___ ', text)
        text_cleaned = self.special_char_pattern.sub('', text_placeholder)
        for tag in tags:
            text_cleaned = text_cleaned.replace('___TAG___', tag, 1)
        return re.sub(r'\s+', ' ', text_cleaned).strip()
