"""The one version string: pyproject.toml reads it (`[tool.setuptools.dynamic]`), the CLI
prints it, report.json records it; ``tts_kit.__version__`` is the same object.

Example:
    >>> from tts_kit.core.version import __version__
    >>> __version__.count(".") >= 2
    True
"""

__version__ = "0.1.0"
