"""Pass rate of the English normaliser on a held-out suite of ``input~expected`` files.

The suite is not in this repository (its cases stay private so that no rule is written
for one of them): point the script at a folder of ``test_cases_<class>.txt`` files, one
case a line, the written form and its reading joined by ``~`` (the layout of the field's
reference normaliser's English test data). Prints, per class and overall, how many cases
read as the reference reads them, and how many of the cases whose input holds a digit.

A reading matches when the two agree word for word after both are put in one spelling:
lower case, hyphens and punctuation as spaces, "and" left out (the reference writes
"one hundred twenty" and "one hundred and twenty" in different files), and a run of single
letters joined into one word ("A M" and "AM", "W W W" and "WWW" are said alike by the
voice); failing that, they are compared again with each word of two to five capitals
spelled out first ("PM EST" and "P M E S T" are the same letters, while "GO U HAUL" and
"go u haul" match as words). Nothing else is forgiven: "oh" is not "zero", "per" is not "slash".

Usage:
    python bench/heldout.py DIR [--show-failures] [--lang en]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tts_kit.text import normalize  # noqa: E402

_SPLIT = re.compile(r"[^\w']+")
_CAPS = re.compile(r"\b[A-Z]{2,5}\b")
AND = ("", "and", "'")


def key(text: str, caps: bool = False) -> tuple[str, ...]:
    """The words of ``text`` in one spelling (see the module docstring); with ``caps``,
    words of two to five capitals are spelled out first."""
    if caps:
        text = _CAPS.sub(lambda m: " ".join(m.group(0)), text)
    words = [w for w in _SPLIT.split(text.lower().replace("'s", " 's")) if w not in AND]
    out: list[str] = []
    for i, w in enumerate(words):
        if len(w) == 1 and w.isalpha() and i and len(words[i - 1]) == 1 and out:
            out[-1] += w
        else:
            out.append(w)
    return tuple(out)


def load(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """``class -> [(written, reading)]`` from every ``test_cases_*.txt`` under ``folder``."""
    out: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(folder.glob("test_cases_*.txt")):
        cls = path.stem.removeprefix("test_cases_")
        for line in path.read_text(encoding="utf-8").splitlines():
            if "~" in line and line.split("~", 1)[0].strip():
                written, reading = line.split("~", 1)
                out.setdefault(cls, []).append((written, reading))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="folder of test_cases_<class>.txt files")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--show-failures", action="store_true")
    args = ap.parse_args(argv)
    suite = load(args.folder)
    if not suite:
        print(f"no test_cases_*.txt with input~reading lines in {args.folder}", file=sys.stderr)
        return 2
    total = [0, 0]
    digits = [0, 0]
    print(f"{'class':<14}{'pass':>6}{'cases':>7}{'rate':>8}")
    for cls, cases in suite.items():
        ok = 0
        for written, reading in cases:
            got = normalize(written, args.lang)
            hit = key(got) == key(reading) or key(got, True) == key(reading, True)
            ok += hit
            if any(c.isdigit() for c in written):
                digits[0] += hit
                digits[1] += 1
            if not hit and args.show_failures:
                print(f"  FAIL {cls}: {written!r}\n    got  {got!r}\n    want {reading!r}")
        total[0] += ok
        total[1] += len(cases)
        print(f"{cls:<14}{ok:>6}{len(cases):>7}{ok / len(cases):>8.1%}")
    print(f"{'all':<14}{total[0]:>6}{total[1]:>7}{total[0] / total[1]:>8.1%}")
    print(f"{'with a digit':<14}{digits[0]:>6}{digits[1]:>7}{digits[0] / max(1, digits[1]):>8.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
