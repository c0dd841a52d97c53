"""``tts-kit normalize``: what the text front end makes of a text."""

from __future__ import annotations

import argparse

from tts_kit.cli._common import AddCommand, _check_language, _say
from tts_kit.core import contract


def cmd_normalize(args: argparse.Namespace) -> int:
    from tts_kit.text import Normalizer

    _check_language(args.text, args.lang)
    norm = Normalizer(args.lang)
    _say(norm.normalize(args.text))
    if args.trace:
        for step in norm.trace(args.text):
            _say(f"  {step.rule:<18} {step.before!r} -> {step.after!r}")
    return 0


def register(add: AddCommand) -> None:
    """Register normalize.

    Example:
        >>> from tts_kit.cli import _parser
        >>> _parser().parse_args(["normalize", "3개", "--lang", "ko"]).trace
        False
    """
    from tts_kit.text import LANGS

    sp = add("normalize", cmd_normalize, "spell out numbers, dates, acronyms in TEXT",
             model=False)
    sp.add_argument("text", help="the text to normalise")
    sp.add_argument("--lang", default=contract.DEFAULT_LANG, metavar="LANG",
                    help=f"language, {' or '.join(LANGS)} (as for synth)")
    sp.add_argument("--trace", action="store_true", help="list the rules that changed the text")
