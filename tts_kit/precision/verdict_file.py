"""The listener's verdict of a conversion, kept beside the converted copy (`save_verdict`)
and read back by `read_verdict` (`tts-kit report`, `tts-kit info`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tts_kit.core import atomic

#: The file a converted directory keeps its verdict in.
VERDICT_FILE = "tts_kit_verdict.json"


def verdict_path(copy: str | os.PathLike[str]) -> Path:
    """Where the verdict of the copy at ``copy`` lives (inside a directory, beside a file).

    Example:
        >>> verdict_path("/x/out.onnx").name
        'out.onnx.verdict.json'
    """
    p = Path(copy)
    return p / VERDICT_FILE if p.is_dir() else p.with_name(p.name + ".verdict.json")


def save_verdict(copy: str | os.PathLike[str], quality: Mapping[str, Any], *,
                 recipe: str | None = None, source: str | None = None) -> Path:
    """Write the listener's verdict (`tts_kit.fidelity.listening.judge_quality`) of the
    copy at ``copy``, with the recipe and source it came from; returns the file.

    Example:
        >>> save_verdict("out-fp16", report.quality, recipe="fp16")  # doctest: +SKIP
        PosixPath('out-fp16/tts_kit_verdict.json')
    """
    kept = ("verdict", "decided_by", "reasons", "metrics", "notes")  # not the raw takes
    data = {k: quality[k] for k in kept if k in quality}
    data.update({"recipe": recipe, "source": source})
    dst = verdict_path(copy)
    with atomic.atomic_file(dst) as tmp:
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False)
                       + "\n", encoding="utf-8")
    return dst


def read_verdict(model_path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The verdict saved beside the model at ``model_path`` (a bundle directory or a graph
    file), or None when it has none or the file is not a verdict (never an error: the
    model itself is what is measured).

    Example:
        >>> read_verdict("/nonexistent") is None
        True
    """
    path = verdict_path(model_path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    from tts_kit.fidelity.quality_verdict import VERDICTS

    if not isinstance(data, dict) or data.get("verdict") not in VERDICTS:
        return None
    for key in ("decided_by", "recipe", "source"):  # words, not payloads
        value = data.get(key)
        if value is not None and not (isinstance(value, str) and len(value) <= 80):
            data[key] = None
    return data


def verdict_sentence(data: Mapping[str, Any]) -> str:
    """One sentence naming the conversion and how it was judged.

    Example:
        >>> verdict_sentence({"verdict": "degraded", "decided_by": "stoi", "recipe": "int8"})
        "This model is a converted copy (recipe int8): the listener's verdict when it was made was degraded, decided by stoi."
    """  # noqa: E501
    recipe = data.get("recipe")
    made = f" (recipe {recipe})" if recipe else ""
    by = data.get("decided_by")
    return (f"This model is a converted copy{made}: the listener's verdict when it was made "
            f"was {data.get('verdict')}" + (f", decided by {by}." if by else "."))


__all__ = ["VERDICT_FILE", "read_verdict", "save_verdict", "verdict_path", "verdict_sentence"]
