"""The one version string: pyproject.toml reads it, the CLI prints it, report.json records
it; ``tts_kit.__version__`` is the same object."""

__version__ = "0.1.0"
