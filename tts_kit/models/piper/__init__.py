"""The Piper family: one VITS graph with its JSON config (a real voice from PyPI)."""
