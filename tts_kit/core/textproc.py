"""Turn text into the graphs' ``text_ids`` and ``text_mask`` exactly as the official
package's ``UnicodeProcessor`` does (a test checks).

Example:
    >>> preprocess("Hello   world", "en")
    '<en>Hello world.</en>'
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

from tts_kit.core.errors import TtsKitError

_EMOJI = re.compile(
    "[\U0001f600-\U0001f64f\U0001f300-\U0001f5ff\U0001f680-\U0001f6ff\U0001f700-\U0001f77f"
    "\U0001f780-\U0001f7ff\U0001f800-\U0001f8ff\U0001f900-\U0001f9ff\U0001fa00-\U0001fa6f"
    "\U0001fa70-\U0001faff\u2600-\u26ff\u2700-\u27bf\U0001f1e6-\U0001f1ff]+")
_SYMBOLS = str.maketrans({
    "\u2013": "-", "\u2011": "-", "\u2014": "-", "\u00af": " ", "_": " ",
    "\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u00b4": "'",
    "`": "'", "[": " ", "]": " ", "|": " ", "/": " ", "#": " ", "→": " ", "←": " ",
})
_SPECIAL = re.compile(r"[♥☆♡©\\]")
_ABBREVIATIONS = (("@", " at "), ("e.g.,", "for example, "), ("i.e.,", "that is, "))
_SPACE_BEFORE_PUNCT = re.compile(r" ([,.!?;:'])")
_DUP_QUOTES = re.compile(r'(["\'`])\1+')
_WS = re.compile(r"\s+")
_ENDS_WITH_PUNCT = re.compile(r"[.!?;:,'\"')\]}…。」』】〉》›»]$")


def clean(text: str) -> str:
    """The official clean-up alone: NFKD, emoji and symbols out, spaces tidied (`preprocess`
    adds the final period and the language tags).

    Example:
        >>> clean("“Hi” — there 😀")
        '"Hi" - there'
    """
    text = unicodedata.normalize("NFKD", text)
    text = _EMOJI.sub("", text)
    text = text.translate(_SYMBOLS)
    text = _SPECIAL.sub("", text)
    for old, new in _ABBREVIATIONS:
        text = text.replace(old, new)
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    text = _DUP_QUOTES.sub(r"\1", text)
    return _WS.sub(" ", text).strip()


def preprocess(text: str, lang: str) -> str:
    """Clean ``text`` the way the model was trained to read it, and wrap it in language tags."""
    text = clean(text)
    if not _ENDS_WITH_PUNCT.search(text):
        text += "."
    return f"<{lang}>{text}</{lang}>"


def encode(texts: list[str], lang: str, indexer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``text_ids`` int64 [B, T] and ``text_mask`` float32 [B, 1, T] for a batch of texts;
    a `TtsKitError` when a character has no token.

    Example:
        >>> ids, mask = encode(["Hi"], "en", np.arange(128))
        >>> ids.shape, mask.shape
        ((1, 12), (1, 1, 12))
    """
    processed = [preprocess(t, lang) for t in texts]
    lengths = np.array([len(p) for p in processed], dtype=np.int64)
    ids = np.zeros((len(processed), int(lengths.max())), dtype=np.int64)
    for i, p in enumerate(processed):
        cps = np.frombuffer(p.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        if (cps >= len(indexer)).any():
            raise TtsKitError("text has characters beyond the indexer's range")
        row = indexer[cps]
        if (row < 0).any():
            bad = sorted({p[j] for j in np.flatnonzero(row < 0)})
            raise TtsKitError(f"characters the model cannot read: {bad}")
        ids[i, : len(row)] = row
    mask = (np.arange(ids.shape[1])[None, :] < lengths[:, None]).astype(np.float32)
    return ids, mask[:, None, :]
