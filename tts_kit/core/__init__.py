"""Facts and formats: the bundle contract, events, atomic writes, process facts, safe text.

The bottom layer: nothing here imports another tts_kit layer."""
