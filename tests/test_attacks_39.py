"""Issue 39: the attack run's remaining internal errors on ordinary bad input, as a table.

Each case ran into exit 70 (a bug), a traceback, a wrong figure or a leftover before the
fix. The first test walks every command's path options (found in the parser by their
``type``, `in_path`/`out_path`, as `tests/test_cli_properties.py` walks flags) with the
hostile values: empty, ``~nouser``, a newline, non-UTF-8 bytes, a JSON integer of 5,000
digits; each is one line and exit 2 (or a success where the value is fine), never 70.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_clear_errors import add_unknown_op

from tts_kit import TtsKitError, cli
from tts_kit.cli._common import in_path, out_file, out_path

HUGE = "9" * 5000


@pytest.fixture(autouse=True)
def _offline_and_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # fetch must fail fast, never download
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a bug's log would land here


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr without the stand-in note and progress bars)."""
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out and "internal error" not in err, (argv, err)
    lines = [ln for ln in err.splitlines()
             if ln.strip() and not ln.startswith("note:") and not re.search(r"\d%\|", ln)]
    return rc, out, "\n".join(lines)


def user_error(capsys, *argv: str) -> str:
    rc, _, err = run_main(capsys, *argv)
    assert rc == 2 and len(err.splitlines()) == 1, (argv, rc, err)
    return err


# -- a fake server: what loadtest meets on the network --------------------------------


@pytest.fixture
def fake_server():
    """A server answering /health, /metrics (garbage gauges) and speech with the
    ``X-Sample-Rate`` set in ``state["rate"]``."""
    state = {"rate": "44100"}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(200)
            for k, v in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/metrics":
                self._send(b"tts_kit_pool_pss_bytes +Inf\ntts_kit_pool_rss_bytes -5\n"
                           b"tts_kit_pool_cpu_seconds_total NaN\n", {})
            else:
                self._send(b'{"status": "ready"}', {"Content-Type": "application/json"})

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send(b"\0" * 44 + b"\1\0" * 4410, {"X-Sample-Rate": state["rate"],
                                                     "Content-Type": "audio/wav"})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{srv.server_address[1]}"
    yield state
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("rate", ["abc", "0", "44100.5", "-44100", "1" * 5000])
def test_loadtest_refuses_a_garbage_sample_rate_and_prints_no_garbage(fake_server, capsys,
                                                                      rate):
    fake_server["rate"] = rate
    rc, out, err = run_main(capsys, "loadtest", fake_server["url"], "--concurrency", "1",
                            "--requests", "2", "--quiet")
    assert rc == 1 and len(err.splitlines()) == 1 and "X-Sample-Rate" in err, err
    assert not re.search(r"\binf\b|-\d", out.lower()), out  # no inf PSS, no negative rate


def test_loadtest_drops_garbage_gauges(fake_server, capsys):
    rc, out, err = run_main(capsys, "loadtest", fake_server["url"], "--concurrency", "1",
                            "--requests", "2", "--quiet")
    assert rc == 0, err
    assert not re.search(r"\b(inf|nan)\b|-\d", out.lower()), out


# -- files a user gives: one reader, one loader ------------------------------------------


@pytest.fixture
def bundle(tiny_bundle_dir: Path, tmp_path: Path) -> Path:
    b = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, b)
    return b


def _huge_config(b: Path) -> list[str]:
    (b / "onnx/tts.json").write_text('{"x": ' + HUGE + "}")
    return ["info", "--model", str(b)]


def _huge_voice(b: Path) -> list[str]:
    (b / "voice_styles/M1.json").write_text("[" + HUGE + "]")
    return ["synth", "Hi.", "-o", str(b.parent / "x.wav"), "--model", str(b), "--voice", "M1",
            "--steps", "1"]


def _huge_sweep(b: Path) -> list[str]:
    (b.parent / "sweep.json").write_text('{"rounds": ' + HUGE + "}")
    return ["report", "--model", str(b), "--sweep", str(b.parent / "sweep.json"),
            "--out", str(b.parent / "out")]


def _huge_rerun(b: Path) -> list[str]:
    (b.parent / "report.json").write_text('{"schema": ' + HUGE + "}")
    return ["report", "--rerun", str(b.parent / "report.json")]


def _latin1_texts(b: Path) -> list[str]:
    (b.parent / "t.txt").write_bytes("Caf\xe9 au lait.\n".encode("latin-1"))
    return ["serve-sweep", "--model", str(b), "--texts", str(b.parent / "t.txt"),
            "--workers", "1", "--concurrency", "1", "--requests", "1", "--quiet"]


@pytest.mark.parametrize(("attack", "wanted"), [
    (_huge_config, "onnx/tts.json: holds an integer of more than 4300 digits"),
    (_huge_voice, "voice_styles/M1.json: holds an integer of more than 4300 digits"),
    (_huge_sweep, "holds an integer of more than 4300 digits"),
    (_huge_rerun, "holds an integer of more than 4300 digits"),
    (_latin1_texts, "not UTF-8 text (byte 0xe9 at 3); save it as UTF-8"),
])
def test_a_hostile_file_is_one_line(bundle, capsys, monkeypatch, attack, wanted):
    monkeypatch.setattr("tts_kit.serve.launch.start_server", _no_server)
    assert wanted in user_error(capsys, *attack(bundle))


def test_loadtest_refuses_non_utf8_texts(fake_server, tmp_path, capsys):
    texts = tmp_path / "t.txt"
    texts.write_bytes(b"\xff\xfe hello\n")
    err = user_error(capsys, "loadtest", fake_server["url"], "--texts", str(texts), "--quiet")
    assert "not UTF-8 text" in err


# -- report --rerun: every figure of a report.json checked ------------------------------


def _edit(data: dict, where: str, value: float) -> None:
    if where == "noise":
        data["noise"]["latency_rel"] = value
    elif where == "record":
        data["recommendation"]["record"]["p50_ms"] = value
    else:
        data["extras"]["recommended_trial"]["p50_ms"] = value


@pytest.mark.parametrize(("where", "value"), [
    *((w, v) for w in ("noise", "record", "extras") for v in (math.nan, math.inf)),
    ("noise", -1.0),  # a threshold below 0: every change is "not noise"
])
def test_rerun_refuses_bad_figures_anywhere(lean_report, tmp_path, capsys, where, value):
    data = json.loads(lean_report[0].read_text())
    _edit(data, where, value)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    err = user_error(capsys, "report", "--rerun", str(path), "--model", str(lean_report[1]))
    assert "report.json" in err and ("noise" in err or where in err), err


# -- graphs info refuses: convert, and info --no-load -----------------------------------


def _unknown_op(b: Path) -> None:
    add_unknown_op(b)


def _external(b: Path, location: str, link: bool = False) -> None:
    import onnx
    from onnx import TensorProto, numpy_helper

    path = b / "onnx/vocoder.onnx"
    m = onnx.load(str(path))
    init = max(m.graph.initializer, key=lambda t: len(t.raw_data))
    arr = numpy_helper.to_array(init)
    outside = b.parent / "outside.bin"
    outside.write_bytes(arr.tobytes())
    init.ClearField("raw_data")
    init.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", str(arr.nbytes))):
        e = init.external_data.add()
        e.key, e.value = k, v
    if link:
        (b / "onnx" / location).symlink_to(outside)
    onnx.save(m, str(path))


def _huge_dims(b: Path) -> None:
    import onnx

    path = b / "onnx/vocoder.onnx"
    m = onnx.load(str(path))
    init = max(m.graph.initializer, key=lambda t: len(t.raw_data))
    del init.dims[:]
    init.dims.extend([2**31, 2**31])
    onnx.save(m, str(path))


GRAPHS = {
    "unknown-op": (_unknown_op, "FrobnicateX"),
    "external-outside": (lambda b: _external(b, "../../outside.bin"), "escapes model"),
    "external-symlink": (lambda b: _external(b, "w.bin", link=True), "escapes model"),
    "dims-2^31x2^31": (_huge_dims, "a corrupt file"),
}


@pytest.mark.parametrize("case", GRAPHS)
def test_convert_refuses_what_info_refuses_and_writes_nothing(bundle, tmp_path, capsys, case):
    damage, wanted = GRAPHS[case]
    damage(bundle)
    assert wanted in user_error(capsys, "info", "--model", str(bundle))
    dst = tmp_path / "dst"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert wanted in user_error(capsys, "convert", str(bundle), str(dst), "--to", "fp16",
                                "--no-measure")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no dst, no temporary


def test_info_no_load_says_corrupt_dims_not_quintillions_of_parameters(bundle, capsys):
    _huge_dims(bundle)
    assert "a corrupt file" in user_error(capsys, "info", "--no-load", "--model", str(bundle))


# -- paths and names ---------------------------------------------------------------------


def _no_server(*a, **k):
    raise AssertionError("a server started before every argument was checked")


@pytest.mark.parametrize("argv", [
    ["info", "--model="],
    ["synth", "Hi.", "-o", "x.wav", "--model="],
    ["tune", "--scheduler="],
    ["report", "--out", "o", "--scheduler="],
])
def test_empty_names_are_refused(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.chdir(tmp_path)  # before the fix, report made its --out here
    assert "''" in user_error(capsys, *argv)


@pytest.mark.parametrize("bad", [["--presets", "bogus"], ["--loading", "bogus"],
                                 ["--model", "/nonexistent/model"]])
def test_serve_sweep_checks_everything_before_starting_a_server(tiny_bundle_dir, capsys,
                                                                monkeypatch, bad):
    monkeypatch.setattr("tts_kit.serve.launch.start_server", _no_server)
    user_error(capsys, "serve-sweep", "--model", str(tiny_bundle_dir), "--workers", "1",
               "--presets", "lean,supertonic-default", "--concurrency", "1", "--requests", "1",
               "--quiet", *bad)


def test_a_path_with_a_newline_keeps_the_reason(tmp_path, capsys):
    err = user_error(capsys, "info", "--model", str(tmp_path / "a\nb"))
    assert "a\\x0ab" in err and "not a directory" in err, err


# -- every path option of every command, with every hostile value -----------------------


def _path_options() -> list[tuple[str, argparse.Action]]:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(name, a) for name, sp in sub.choices.items() for a in sp._actions
            if a.type in (in_path, out_path, out_file)]


#: Just enough of each command for it to run at once (a tiny model, one request).
BASE = {
    "synth": ["Hi.", "-o", "{out}.wav", "--steps", "1"], "info": ["--no-load"],
    "standin": ["{out}", "--scale", "tiny"], "fetch": [], "tune": [],
    "convert": ["{bundle}", "{out}", "--to", "fp16", "--no-measure"],
    "verify": ["--threads", "1"], "serve": [],
    "report": ["--out", "{out}", "--sweep", "{spec}"],  # a spec that cannot run: no sweep
    "loadtest": ["{url}", "--concurrency", "1", "--requests", "1", "--quiet"],
    "serve-sweep": ["--workers", "1", "--concurrency", "1", "--requests", "1", "--quiet"],
    "doctor": [],
}


def test_the_walk_covers_every_path_option():
    found = {(name, a.dest) for name, a in _path_options()}
    assert {("info", "model"), ("synth", "output"), ("standin", "dir"), ("report", "out"),
            ("tune", "json"), ("loadtest", "texts"), ("serve-sweep", "texts"),
            ("report", "rerun"), ("report", "sweep"), ("convert", "src")} <= found
    assert {name for name, _ in found} == set(BASE) - {"normalize"}


def test_every_path_option_refuses_hostile_values_in_one_line(tiny_bundle_dir, tmp_path,
                                                              capsys, monkeypatch,
                                                              fake_server):
    def reached(*a, **k):  # every check passed: the value was fine (a text file is text)
        raise TtsKitError("reached the server")

    monkeypatch.setattr("tts_kit.serve.launch.start_server", reached)
    monkeypatch.setattr("tts_kit.serve.app.run_server", reached)
    (tmp_path / "huge.json").write_text("[" + HUGE + "]")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9\n")
    (tmp_path / "spec.json").write_text('{"presets": ["no-such-preset"]}')
    contents = [str(tmp_path / "huge.json"), str(tmp_path / "latin1.txt")]
    options = _path_options()
    for i, (command, action) in enumerate(options):
        # New names each time: a command may rightly create one (standin builds a model).
        names = ["", "~nouser-39/x", str(tmp_path / f"new\nline{i}" / "x"),
                 str(tmp_path / f"bad-\udcff{i}" / "x")]
        flag = action.option_strings[-1] if action.option_strings else None
        for j, value in enumerate(names + (contents if action.type is in_path else [])):
            fill = {"out": str(tmp_path / f"o{i}-{j}"), "bundle": str(tiny_bundle_dir),
                    "url": fake_server["url"], "spec": str(tmp_path / "spec.json")}
            base = [b.format(**fill) for b in BASE[command]]
            if flag is None:  # a positional: the value in its place
                base[[a.dest for a in cli._parser()._subparsers._group_actions[0]
                      .choices[command]._get_positional_actions()].index(action.dest)] = value
                argv = [command, *base]
            else:
                model = ["--model", str(tiny_bundle_dir)] if flag != "--model" and \
                    command in {n for n, a in options if a.dest == "model"} else []
                argv = [command, *model, *base, f"{flag}={value}"]
            rc, _, err = run_main(capsys, *argv)
            assert rc in (0, 1, 2) and len(err.splitlines()) <= 1, (argv, rc, err)
            if value in names[:2]:
                assert rc == 2 and ("''" in err or "no user 'nouser-39'" in err), (argv, err)
            if value == names[2] and f"{tmp_path}/new" in err:  # named, then whole
                assert f"new\\x0aline{i}/x" in err, (argv, err)


# -- the server: its port, a half-closed client ----------------------------------------


def test_port_0_says_the_port_it_bound(tiny_bundle_dir):
    proc = subprocess.Popen([sys.executable, "-m", "tts_kit.cli", "serve", "--model",
                             str(tiny_bundle_dir), "--workers", "1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + 120
        for line in proc.stdout:  # type: ignore[union-attr]
            assert time.monotonic() < end, line
            if "ready on" in line:
                port = int(line.split("ready on http://127.0.0.1:")[1].split()[0])
                break
        else:
            pytest.fail("the server never said it was ready")
        assert port != 0
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def test_a_half_closed_client_still_gets_its_answer(tiny_bundle_dir):
    from tts_kit.serve.launch import start_server

    body = b'{"input": "Hi.", "steps": 1}'
    with start_server(["--model", str(tiny_bundle_dir), "--workers", "1"]) as srv:
        host, port = srv.url.removeprefix("http://").split(":")
        for request in (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
                        *(b"POST /v1/audio/speech HTTP/" + v + b"\r\nHost: x\r\nContent-Type: "
                          b"application/json\r\nContent-Length: " + str(len(body)).encode()
                          + b"\r\n\r\n" + body for v in (b"1.1", b"1.0"))):
            with socket.create_connection((host, int(port)), timeout=30) as s:
                s.sendall(request)
                s.shutdown(socket.SHUT_WR)  # done sending; still reading
                answer = b""
                while b"HTTP/1.1 200" not in answer and len(answer) < 10_000:
                    part = s.recv(100)
                    assert part, answer  # closed without an answer
                    answer += part
            # A 100 (Continue) may come first (how the server tells it from a client gone).
            assert answer.removeprefix(b"HTTP/1.1 100 Continue\r\n\r\n").startswith(
                b"HTTP/1.1 200"), answer
            if b" HTTP/1.0\r\n" in request:  # no 1xx to an HTTP/1.0 client (RFC 9110 15.2)
                assert answer.startswith(b"HTTP/1.1 200"), answer


# -- Ctrl-C while report starts its notebook kernel -------------------------------------


_RENDERING_REPORT = """
import shutil, sys
from pathlib import Path
from tts_kit import TtsKitError, cli
from tts_kit.report import make

def copied(out, *a, **k):  # the sweep is not what this is about: a real report, copied
    path = Path(out) / "report.json"
    shutil.copy(sys.argv[4], path)
    Path(sys.argv[3]).write_text(str(path))
    return path

make.write_report = copied
sys.exit(cli.main(["report", "--model", sys.argv[1], "--out", sys.argv[2]]))
"""


def _default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.slow  # a report render per delay
@pytest.mark.parametrize("delay", [0.0, 0.3, 0.6, 1.0, 1.2, 1.5, 2.0, 3.0])
def test_ctrl_c_while_report_renders_is_one_line_and_keeps_the_old_report(lean_report,
                                                                          tmp_path, delay):
    out, marker = tmp_path / "out", tmp_path / "started"
    out.mkdir()
    (out / "report.json").write_text("the old report")
    proc = subprocess.Popen([sys.executable, "-c", _RENDERING_REPORT, str(lean_report[1]),
                             str(out), str(marker), str(lean_report[0])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)
    try:
        end = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < end, proc.communicate()
            time.sleep(0.02)
        time.sleep(delay)
        finished = proc.poll() is not None  # a quiet machine renders it in ~3 s
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    lines = [ln for ln in err.splitlines()
             if ln.strip() and not ln.startswith("note:") and "Executing" not in ln]
    if finished:  # done before the signal: the new report, whole
        assert proc.returncode == 0 and json.loads((out / "report.json").read_text())
        return
    if (out / "report.json").read_text() != "the old report":  # after it was put in place
        assert json.loads((out / "report.json").read_text())  # the new one, whole
        if proc.returncode == 0:  # the signal came as the interpreter ended: nothing to stop
            assert lines == [], err
            return
        assert lines == [f"tts-kit report: interrupted after writing {out}"], err
        return
    assert proc.returncode == 130 and lines == ["tts-kit report: interrupted"], err
    assert (out / "report.json").read_text() == "the old report"
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]


def test_a_ctrl_c_a_callback_swallowed_is_still_one_line(monkeypatch, capsys):
    """Regression (CI, 2026-12-05): a Ctrl-C that landed in a weakref callback during
    garbage collection printed CPython's "Exception ignored in: <function WeakSet...>" and
    its traceback, and the command went on as if nothing was pressed. It is kept and said
    in one line once the command's work returns."""
    import gc
    import weakref

    from tts_kit import cli

    class Thing:
        pass

    def work(args):
        thing = Thing()
        weakref.finalize(thing, _raise_interrupt)
        del thing
        gc.collect()
        return 0

    real = cli._parser

    def parser():
        p = real()
        sub = next(a for a in p._actions if a.dest == "command")
        sub.choices["normalize"].set_defaults(func=work)
        return p
    monkeypatch.setattr(cli, "_parser", parser)
    assert cli.main(["normalize", "3", "--lang", "en"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "tts-kit normalize: interrupted" and "Exception ignored" not in err


def _raise_interrupt() -> None:
    raise KeyboardInterrupt
