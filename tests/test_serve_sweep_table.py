"""serve-sweep's table says why a configuration failed (it showed only ``error``)."""

from __future__ import annotations

from tts_kit.serve.sweep import ServingSweepResult


def test_a_failed_configuration_shows_its_reason_under_the_table():
    ok = {"architecture": "workers", "workers": 1, "threads": 1, "preset": "lean",
          "loading": "resident", "status": "ok", "concurrency": 1, "ok": 4}
    bad = {"architecture": "threads", "workers": 2, "threads": None, "preset": "lean",
           "loading": "paged", "status": "error",
           "error": "the server did not answer /health within 60 s (log: /tmp/x.log)"}
    text = ServingSweepResult([ok, bad]).table()
    assert "threads x2, default thread(s), lean, paged: the server did not answer /health" \
        in text, text
