"""What a model is: the interface (`base`: `SpeechModel`, `SpeechEngine`, `Capabilities`;
`synthesis`: `SynthesisConfig`, `AudioChunk`, `SynthesisStream`; `engine_base`: the one
engine base class), the Supertonic family (`supertonic/`), the Piper family (`piper/`), and
how a model is opened (`resolve`, the one way in; `family` re-exports it)."""
