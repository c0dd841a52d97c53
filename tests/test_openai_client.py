"""`tts-kit serve` as a drop-in for OpenAI's clients (issue 37 item 3, issue 39's error
shape): the official ``openai`` package against a real server on 127.0.0.1, tiny stand-in."""

from __future__ import annotations

import base64
import contextlib
import io
import time

import httpx
import numpy as np
import pytest

from tts_kit.serve.launch import start_server

openai = pytest.importorskip("openai")
av = pytest.importorskip("av")
pytest.importorskip("fastapi")

TEXT = "Hello there. This is a short test of the server."
#: ``steps`` and ``seed`` are tts_kit's own fields: the client sends them as extra body.
FAST = {"steps": 2, "seed": 0}


@pytest.fixture(scope="module")
def server(tiny_bundle_dir, tmp_path_factory):
    from tts_kit.serve.config import ServeConfig

    cfg = ServeConfig(model=str(tiny_bundle_dir), workers=1, voice_map="narrator=M1,nova=M1")
    with start_server(config=cfg, log_dir=tmp_path_factory.mktemp("openai")) as handle:
        yield handle


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def _decoded(data: bytes) -> tuple[int, float]:
    """Sample rate and seconds of an encoded answer, decoded by FFmpeg (PyAV)."""
    with av.open(io.BytesIO(data)) as f:
        stream = f.streams.audio[0]
        samples = sum(frame.samples for frame in f.decode(stream))
        return stream.codec_context.sample_rate, samples / stream.codec_context.sample_rate


def _pcm(client, **kw) -> np.ndarray:
    kw = {"model": "tts-1", "voice": "alloy", "input": TEXT, "response_format": "pcm", **kw}
    extra = {**FAST, **kw.pop("extra_body", {})}
    return np.frombuffer(client.audio.speech.create(**kw, extra_body=extra).content, "<i2")


@pytest.mark.parametrize(("fmt", "rate"), [("mp3", 44100), ("opus", 48000), ("aac", 44100),
                                           ("flac", 44100), ("wav", 44100)])
def test_every_format_decodes_to_the_same_speech(client, fmt, rate):
    seconds = len(_pcm(client)) / 24000
    got = client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT,
                                     response_format=fmt, extra_body=FAST)
    sr, length = _decoded(got.content)
    assert seconds > 0.5 and sr == rate
    assert abs(length - seconds) < 0.1, (fmt, length, seconds)  # encoder padding at most


def test_pcm_is_24_khz_resampled_as_one_signal_across_chunk_joins(client):
    """OpenAI's pcm is 24 kHz: the model's 44.1 kHz, resampled by one stateful resampler,
    so the streamed answer equals the whole answer resampled at once (no click at a join)."""
    from tts_kit.serve.streaming import Encoder

    text = TEXT * 3  # six sentences: several chunks, each streamed as it is made
    with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input=text, response_format="pcm",
            extra_body=FAST) as r:
        assert r.headers["x-sample-rate"] == "24000"
        pcm = np.frombuffer(b"".join(r.iter_bytes()), "<i2")
    wav = client.audio.speech.create(model="tts-1", voice="alloy", input=text,
                                     response_format="wav", extra_body=FAST).content[44:]
    enc = Encoder("pcm", 44100)
    assert np.array_equal(pcm, np.frombuffer(enc.feed(wav) + enc.close(), "<i2"))
    assert len(pcm) == round(len(wav) / 2 * 24000 / 44100) and len(pcm) > 24000
    # An independent resampler agrees below 8 kHz (the stand-in's noise fills the band
    # above, where the two filters' roll-offs differ): both taken on to 16 kHz.
    signal = pytest.importorskip("scipy.signal")
    ref = signal.resample_poly(np.frombuffer(wav, "<i2").astype(float), 80, 147)[:len(pcm)]
    got, want = (signal.resample_poly(x.astype(float), 2, 3)[50:-50] for x in (pcm, ref))
    assert np.abs(got - want).max() < 0.01 * np.abs(want).max()


def test_the_default_is_mp3_streamed(client):
    parts = []
    with client.audio.speech.with_streaming_response.create(
            model="gpt-4o-mini-tts", voice="nova", input=TEXT * 3, extra_body=FAST,
            instructions="Speak cheerfully.") as r:
        assert r.headers["content-type"] == "audio/mpeg"
        assert r.headers["x-tts-ignored"] == "instructions"
        parts = list(r.iter_bytes())
    sr, seconds = _decoded(b"".join(parts))
    assert sr == 44100 and seconds > 3 * 0.5


def test_openai_voice_names_are_the_model_voices_they_map_to(client, server):
    aliases = httpx.get(f"{server.url}/voices", timeout=10).json()["aliases"]
    assert {"alloy", "echo", "fable", "onyx", "nova", "shimmer", "ash", "coral", "sage",
            "verse", "ballad"} <= set(aliases)
    for name in ("alloy", "onyx"):
        assert np.array_equal(_pcm(client, voice=name), _pcm(client, voice=aliases[name]))
    assert aliases["alloy"] != aliases["onyx"]  # F1 and M1 on the stand-in
    # The server's voice_map (--voice-map) adds names and moves OpenAI's.
    assert aliases["narrator"] == aliases["nova"] == "M1" and aliases["shimmer"] == "F1"
    assert np.array_equal(_pcm(client, voice="narrator"), _pcm(client, voice="M1"))


def test_a_voice_map_naming_no_voice_of_the_model_is_one_line_exit_2(tiny_bundle_dir):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "tts_kit.cli", "serve", "--model",
                          str(tiny_bundle_dir), "--voice-map", "alloy=Z9", "--port", "1"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr + run.stdout
    assert "--voice-map 'alloy=Z9': give NAME=VOICE pairs, VOICE one of this model's: F1, M1" \
        in run.stderr + run.stdout


def test_speed_is_the_model_speed_and_is_checked(client):
    assert len(_pcm(client, speed=1.6)) < 0.8 * len(_pcm(client, speed=1.0))
    with pytest.raises(openai.BadRequestError, match="speed must be a number in 0.7..2"):
        _pcm(client, speed=4.0)


@pytest.mark.parametrize(("body", "words"), [
    ({"response_format": "ogg"}, "unknown response_format 'ogg'; use one of mp3"),
    ({"voice": "Nobody"}, "unknown voice 'Nobody'; GET /voices lists them: F1, M1, alloy"),
    ({"voice": {"id": "voice_1234"}}, "unknown voice \"{'id': 'voice_1234'}\"; GET /voices"),
    ({"stream_format": "mp3"}, "unknown stream_format 'mp3'; use audio (the default)"),
    ({"input": " "}, "input is empty; give at least one word"),
])
def test_a_bad_request_is_a_bad_request_error_with_the_reason(client, body, words):
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(**{"model": "tts-1", "voice": "alloy", "input": TEXT,
                                      **body})
    err = caught.value
    assert words in err.message and err.type == "invalid_request_error"
    assert err.code == "bad_request" and err.param == next(iter(body))  # the field at fault


def test_a_voice_object_names_a_voice_as_openai_custom_voices_do(client):
    assert np.array_equal(_pcm(client, voice={"id": "M1"}), _pcm(client, voice="M1"))


def _events(data: bytes) -> list[dict]:
    import json

    assert data.endswith(b"\n\n")
    return [json.loads(e.removeprefix(b"data: ")) for e in data.split(b"\n\n")[:-1]]


def test_stream_format_sse_is_openai_speech_events(client):
    with client.audio.speech.with_streaming_response.create(
            model="gpt-4o-mini-tts", voice="alloy", input=TEXT * 2, response_format="pcm",
            stream_format="sse", extra_body=FAST) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-sample-rate"] == "24000"
        events = _events(r.read())
    assert [e["type"] for e in events] == ["speech.audio.delta"] * (len(events) - 1) + [
        "speech.audio.done"] and len(events) > 2
    assert set(events[-1]["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert np.array_equal(np.frombuffer(audio, "<i2"), _pcm(client, input=TEXT * 2))


def test_models_are_listed_as_openai_lists_them(client):
    assert {"tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15"} <= {
        m.id for m in client.models.list()}


@pytest.mark.parametrize(("method", "path", "body", "status", "words"), [
    ("GET", "/v2/nothing", None, 404, "no such endpoint /v2/nothing; use POST"),
    ("DELETE", "/v1/audio/speech", None, 405, "DELETE is not allowed on /v1/audio/speech"),
    ("POST", "/v1/models", None, 405, "POST is not allowed on /v1/models"),
    ("POST", "/v1/audio/speech", b'{"input": "Hi.",', 400, "the body is not JSON"),
    ("POST", "/v1/audio/speech", b"", 400, "the body is not JSON"),
    ("POST", "/v1/audio/speech", b'["Hi."]', 400, "must be a JSON object"),
])
def test_every_error_has_openai_shape(server, method, path, body, status, words):
    r = httpx.request(method, f"{server.url}{path}", content=body, timeout=10)
    err = r.json()["error"]
    assert r.status_code == status and err["type"] == "invalid_request_error"
    assert words in err["message"] and set(err) == {"message", "type", "code", "param"}
    assert r.headers.get("allow") == ({"/v1/models": "GET", "/v1/audio/speech": "POST"}[path]
                                      if status == 405 else None)


def test_what_the_client_raises_for_each_error(client):
    with pytest.raises(openai.NotFoundError, match="no such endpoint /v1/nothing"):
        client.get("/nothing", cast_to=object)
    with pytest.raises(openai.APIStatusError, match="DELETE is not allowed") as caught:
        client.delete("/audio/speech", cast_to=object)
    assert caught.value.status_code == 405 and caught.value.type == "invalid_request_error"


@contextlib.contextmanager
def _in_process(app):
    """``app`` served by uvicorn on 127.0.0.1 in a thread of this process (so a test can
    break a route); its URL."""
    import threading

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.02)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


def test_a_server_bug_is_a_500_in_openai_shape_without_its_traceback(tiny_bundle_dir,
                                                                   monkeypatch, lab_backends):
    from tts_kit.serve.app import _Server, create_app
    from tts_kit.serve.config import ServeConfig

    async def broken(self):
        raise RuntimeError("secret /home/user/.env detail")

    monkeypatch.setattr(_Server, "models", broken)
    app = create_app(ServeConfig(model=str(tiny_bundle_dir), architecture="threads"))
    with _in_process(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.InternalServerError) as caught:
            client.models.list()
        raw = httpx.get(f"{url}/v1/models", timeout=10)
    err = caught.value
    assert err.status_code == 500 and err.type == "server_error"
    assert "a bug in tts-kit serve" in err.message and err.code == "internal_server_error"
    assert "secret" not in raw.text and "Traceback" not in raw.text
    assert raw.headers["content-type"] == "application/json"


def test_a_whole_answer_is_encoded_too(tiny_bundle_dir, tmp_path, lab_backends):
    """`lab.backends`' ``threads`` (and ``blocking``, ``article``) send the whole answer at
    the end."""
    from tts_kit.serve.config import ServeConfig

    cfg = ServeConfig(model=str(tiny_bundle_dir), architecture="threads")
    with start_server(config=cfg, log_dir=tmp_path) as srv:
        client = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="unused", max_retries=0)
        seconds = len(_pcm(client)) / 24000
        got = client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT,
                                         response_format="aac", extra_body=FAST)
        events = _events(client.audio.speech.create(
            model="tts-1", voice="alloy", input=TEXT, response_format="pcm",
            stream_format="sse", extra_body=FAST).content)
    assert [e["type"] for e in events] == ["speech.audio.delta", "speech.audio.done"]
    assert len(base64.b64decode(events[0]["audio"])) / 2 / 24000 == seconds
    assert got.response.headers["content-type"] == "audio/aac"
    sr, length = _decoded(got.content)
    assert sr == 44100 and seconds > 0.5 and abs(length - seconds) < 0.1
