"""The Piper family (the ``voice`` extra): `bundle.PiperBundle` opens a voice,
`seeded.seeded_graph` makes its noise an input and `engine.PiperEngine` runs it."""
