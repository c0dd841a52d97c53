"""`Engine.stream`: chunks as they are synthesised, memory bounded by one chunk, the
first chunk cut at a clause, and the stage-major order for paged loading."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tts_kit import Engine
from tts_kit.core import events

TEXT = ("The meeting moved to the large room, and everyone came early. "
        "Nobody knew why the lights were off. It was a quiet morning.")


def test_stream_yields_chunks_that_join_to_synthesize(tiny_bundle_dir: Path):
    engine = Engine(tiny_bundle_dir)
    parts = engine.stream(TEXT, steps=2, seed=4, max_chunk_chars=40)
    assert len(parts.chunks) == 4
    got = list(parts)
    assert [c.index for c in got] == [0, 1, 2, 3] and [c.last for c in got] == [False] * 3 + [True]
    assert [c.text for c in got] == parts.chunks
    assert all(c.sample_rate == 44100 and c.samples.dtype == np.float32 for c in got)
    assert all({"vocoder", "total"} <= set(c.timings) for c in got)
    whole = engine.synthesize(TEXT, steps=2, seed=4, max_chunk_chars=40)
    assert np.array_equal(np.concatenate([c.samples for c in got]), whole.wav)


def test_stream_checks_the_request_before_any_audio(tiny_bundle_dir: Path):
    engine = Engine(tiny_bundle_dir)
    with pytest.raises(ValueError, match="unknown language"):
        engine.stream("Hello.", lang="xx")  # at the call, not at the first next()
    with pytest.raises(ValueError, match="text is empty"):
        engine.stream("   ")
    with pytest.raises(ValueError, match="order must be"):
        engine.stream("Hello.", order="random")


def test_first_chunk_is_cut_at_a_clause(tiny_bundle_dir: Path):
    engine = Engine(tiny_bundle_dir)
    parts = engine.stream(TEXT, steps=1, seed=0, first_chunk_chars=40)
    assert parts.chunks[0] == "The meeting moved to the large room,"
    assert " ".join(parts.chunks) == " ".join(engine.stream(TEXT, steps=1).chunks)
    first = next(parts)
    assert first.text == parts.chunks[0] and first.duration_s < 4.0


def test_stage_major_gives_the_same_audio_and_loads_each_graph_once(tiny_bundle_dir: Path):
    engine = Engine(tiny_bundle_dir, loading="paged")
    loads = {}
    for order in ("chunk", "stage"):
        with events.recording() as log:
            wav = np.concatenate([c.samples for c in engine.stream(
                TEXT, steps=2, seed=1, max_chunk_chars=40, order=order)])
        loads[order] = sum(1 for _, name in log if name.startswith("load "))
        if order == "chunk":
            ref = wav
    np.testing.assert_allclose(wav, ref, atol=1e-5)
    assert loads == {"chunk": 4 * 4, "stage": 4}


def test_abandoning_a_stream_releases_its_session(tiny_bundle_dir: Path):
    engine = Engine(tiny_bundle_dir, loading="paged")
    parts = engine.stream(TEXT, steps=1, seed=0, max_chunk_chars=40, order="stage")
    next(parts)
    assert engine.loaded_stages == ["vocoder"]  # held while the stream is open
    parts.close()
    assert engine.loaded_stages == []


_PROBE = textwrap.dedent("""
    import sys
    from tts_kit import Engine
    from tts_kit.core.procfacts import peak_rss_mb
    engine = Engine(sys.argv[1])
    n = int(sys.argv[2])
    text = ("The meeting moved to the large room, and everyone came early. " * (n // 60 + 1))[:n]
    engine.synthesize("Warm up, please.", steps=1, seed=0)
    base = peak_rss_mb()
    seconds = sum(c.duration_s for c in engine.stream(text, steps=1, seed=0))
    print(base, peak_rss_mb(), seconds)
""")


def _peak(bundle: Path, chars: int) -> tuple[float, float, float]:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(bundle), str(chars)],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    base, peak, seconds = map(float, out.split())
    return base, peak, seconds


@pytest.mark.slow  # two subprocesses streaming 20 minutes of audio
def test_stream_peak_rss_does_not_grow_with_the_text(tiny_bundle_dir: Path):
    base_s, peak_s, sec_s = _peak(tiny_bundle_dir, 1_500)
    base_l, peak_l, sec_l = _peak(tiny_bundle_dir, 15_000)
    assert sec_l > 9 * sec_s  # ten times the audio (~18 min: 195 MB as float32) ...
    # ... in the same memory: one chunk's audio is ~2 MB; a whole waveform would be 195 MB,
    # three times the growth allowed.
    assert peak_l - base_l < 60, (base_l, peak_l)
    assert peak_l < peak_s + 25, (peak_s, peak_l)
