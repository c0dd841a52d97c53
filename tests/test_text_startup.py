"""What a process pays to start normalising: only its language, and a cheap lexicon regex.

Every isolated trial child, server worker and ``tts-kit synth`` imports the text package
and normalises once; these tests pin what keeps that cheap without changing any output.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from tts_kit.text import lexicon
from tts_kit.text.common import trie_alt
from tts_kit.text.lexicon import Lexicon, builtin

_ENGLISH_ONLY = """
import sys
import tts_kit.text as T
assert T.normalize("The meeting is at 10:30 on 3/4/2025.", "en") == \\
    "The meeting is at ten thirty on March fourth, twenty twenty-five."
print(sorted(m for m in sys.modules if m.startswith("tts_kit.text.")))
"""


def test_english_use_does_not_build_the_korean_rules():
    out = subprocess.run([sys.executable, "-c", _ENGLISH_ONLY], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert "tts_kit.text.en" in out
    assert "tts_kit.text.ko" not in out and "tts_kit.text.ko_words" not in out


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_builtin_lexicon_regex_checks_word_ends_once(lang):
    # The end check after each of hundreds of terms made the regex cost 30-70 ms to compile.
    pattern = Lexicon(builtin(lang)).pattern.pattern
    assert pattern.count(f"[{lexicon._LETTER}]") <= 2
    assert pattern.count(f"[{lexicon._WORDCHAR}]") <= 2


def _per_term(entries: dict[str, str]) -> re.Pattern[str]:
    """The regex with the end check written after each term (the old form)."""
    keys = sorted(k.lower() for k in entries)
    groups = ([k for k in keys if not lexicon._is_hangul(k[0])], lexicon._WORDCHAR), \
        ([k for k in keys if lexicon._is_hangul(k[0])], lexicon._HANGUL)
    parts = []
    for group, before in groups:
        if group:
            parts.append(f"(?<![{before}])" + trie_alt(group, lexicon._end))
    return re.compile("|".join(parts), re.IGNORECASE)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_shared_end_check_matches_like_one_per_term(lang):
    entries = {**builtin(lang), "서버": "server", "k8s": "kubernetes", "C++": "c plus plus"}
    shared, per_term = Lexicon(entries).pattern, _per_term(entries)
    assert shared.pattern != per_term.pattern
    pieces = [*entries, "", " ", "1", "3", "s", "x", "é", "를", "가", "\u212a", "\u017f",
              "#", "+", "/", ".", "-", "_"]
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choice([p, p.upper(), p.swapcase()])
                       for p in rng.choices(pieces, k=rng.randint(1, 5)))
        assert [m.span() for m in shared.finditer(text)] == \
            [m.span() for m in per_term.finditer(text)], text


def test_non_ascii_term_ends_keep_one_check_per_term():
    # "ι" IGNORECASE-matches U+0345, which is no letter: a shared check could be inexact.
    pattern = Lexicon({"café": "cafe", "API": "a p i"}).pattern
    assert pattern.pattern.count(f"(?![{lexicon._LETTER}])") == 2  # one per term
    assert Lexicon({"café": "cafe"}).apply("Café1 café", None) == "cafe 1 cafe"
