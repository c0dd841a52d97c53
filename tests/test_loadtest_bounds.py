"""loadtest against a real (stub) HTTP server on 127.0.0.1: the duration bounds open-loop
waits, and a run in which the server refused every request exits non-zero with its reason."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from tts_kit.cli import main


class _Handler(http.server.BaseHTTPRequestHandler):
    refuse = False

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # /health and /metrics
        body = b"ok" if self.path == "/health" else b""
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.refuse:
            body = json.dumps({"error": {"message": "unknown voice 'Q7'"}}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
        else:
            body = b"RIFF" + b"\0" * 4000
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(params=[False, True], ids=["answers", "refuses"])
def stub(request):
    handler = type("H", (_Handler,), {"refuse": request.param})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", request.param
    finally:
        server.shutdown()
        server.server_close()


def test_a_tiny_rate_ends_within_the_duration(stub, capsys):
    url, refuses = stub
    if refuses:
        pytest.skip("the duration is about waits, not answers")
    t0 = time.monotonic()
    main(["loadtest", url, "--concurrency", "", "--rate", "1e-9", "--duration", "2",
          "--quiet"])
    assert time.monotonic() - t0 < 15


def test_every_request_refused_exits_1_with_the_servers_reason(stub, capsys):
    url, refuses = stub
    code = main(["loadtest", url, "--concurrency", "1", "--requests", "2", "--quiet"])
    err = capsys.readouterr().err
    if not refuses:
        assert code == 0, err
        return
    last = err.strip().splitlines()[-1]
    assert code == 1 and "Traceback" not in err, err
    assert last.startswith("tts-kit loadtest: error: the server refused every request") \
        and "HTTP 400" in last and "unknown voice 'Q7'" in last, err


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999"])
def test_a_malformed_url_is_one_line(url, capsys):
    code = main(["loadtest", url, "--quiet"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "internal error" not in err, err
    assert lines[0].startswith(f"tts-kit loadtest: error: URL {url!r}"), err
