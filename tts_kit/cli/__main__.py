"""``python -m tts_kit.cli``: the same as ``tts-kit``."""

import sys

from tts_kit.cli import main

sys.exit(main())
