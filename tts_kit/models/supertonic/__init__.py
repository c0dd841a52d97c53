"""The Supertonic family: a bundle of four graphs, its engine and its stand-in."""
