"""The Piper family (the ``voice`` extra): `bundle.PiperBundle` opens a voice and
`engine.PiperEngine` runs it (on `engine.seeded_graph`, its noise made an input)."""
