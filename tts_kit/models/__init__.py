"""What a model is: the Supertonic family (`supertonic/`), the Piper family (`piper/`), and how a
model is opened (`resolve`, the one way in; `family` re-exports it)."""
