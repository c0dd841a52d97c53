"""Clear errors instead of tracebacks (issue 11, items 13 and 16).

Each repro of the issue, through ``tts-kit``: a user error exits 2 with one line naming the
problem and the fix (the bundle's root for a bundle problem), an error nobody anticipated
is a bug and exits 70 with one line and a log; never a traceback unless ``--debug``
(issue 21: one error policy). Most run ``cli.main`` in-process (fast);
the ones about the process itself (a file-size limit, the console script) run it for real.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tts_kit import Bundle, BundleError, Engine, cli
from tts_kit.report import SweepSpec, TuningReport
from tts_kit.tuning.workload import Workload

DEEP = "[" * 200_000 + "]" * 200_000


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``cli.main(argv)``: (exit code, stdout, the stderr lines that are not the stand-in note)."""
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.splitlines() if not ln.startswith("note:")]
    return rc, out, "\n".join(lines)


def assert_user_error(capsys, argv: list[str], *wanted: str) -> str:
    rc, _, err = run_main(capsys, *argv)
    assert rc == 2, err
    assert len(err.splitlines()) == 1, err
    for w in wanted:
        assert w in err, err
    return err


@pytest.fixture
def bundle_copy(tiny_bundle_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, out)
    return out


def _edit_json(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    data = fn(data)
    path.write_text(json.dumps(data))


def _never(*args, **kwargs):
    raise AssertionError("the work started before the arguments were checked")


# -- 13: a graph ORT cannot load --------------------------------------------------------


def add_unknown_op(bundle: Path) -> Path:
    """The vocoder's last output passed through an operator ONNX Runtime does not know
    (``FrobnicateX``); the graph file changed in place, returned."""
    import onnx

    path = bundle / "onnx/vocoder.onnx"
    model = onnx.load(str(path))
    out = model.graph.output[0].name
    last = next(n for n in model.graph.node if out in n.output)
    last.output[list(last.output).index(out)] = out + "_pre"
    model.graph.node.append(onnx.helper.make_node("FrobnicateX", [out + "_pre"], [out]))
    onnx.save(model, str(path))
    return path


def test_info_loads_the_graphs_so_an_op_ort_lacks_fails_there_not_in_synth(
        bundle_copy: Path, tmp_path: Path, capsys):
    path = add_unknown_op(bundle_copy)

    # The file checks pass (inputs and outputs are as the contract says) ...
    rc, out_text, _ = run_main(capsys, "info", "--model", str(bundle_copy), "--no-load")
    assert rc == 0 and "not checked" in out_text
    # ... so info loads each graph: it said OK here, and synth then crashed in ORT.
    assert_user_error(capsys, ["info", "--model", str(bundle_copy)],
                      f"{path}: ONNX Runtime", "FrobnicateX")
    assert_user_error(capsys, ["synth", "Hello.", "-o", str(tmp_path / "x.wav"),
                               "--model", str(bundle_copy)], "vocoder.onnx", "FrobnicateX")


def test_info_says_the_graphs_load(tiny_bundle_dir: Path, capsys):
    rc, out, _ = run_main(capsys, "info", "--model", str(tiny_bundle_dir))
    assert rc == 0 and "loads all four graphs" in out
    rc, out, _ = run_main(capsys, "info", "--model", str(tiny_bundle_dir), "--json")
    assert rc == 0 and json.loads(out)["runtime"]["graphs_load"] is True


# -- 13: crafted bundle files -----------------------------------------------------------


def _config_list(b: Path) -> None:
    (b / "onnx/tts.json").write_text("[1, 2]")


def _config_deep(b: Path) -> None:
    (b / "onnx/tts.json").write_text(DEEP)


def _voice_deep(b: Path) -> None:
    (b / "voice_styles/M1.json").write_text(DEEP)


def _indexer_huge(b: Path) -> None:
    _edit_json(b / "onnx/unicode_indexer.json", lambda x: x[:500] + [2**70] + x[501:])


def _dims_int(b: Path) -> None:
    def change(v):
        v["style_ttl"]["dims"] = 5
        return v
    _edit_json(b / "voice_styles/M1.json", change)


@pytest.mark.parametrize(("damage", "wanted"), [
    (_config_list, "onnx/tts.json: expected a JSON object, found list"),       # AttributeError
    (_config_deep, "onnx/tts.json: JSON nested too deeply"),                   # RecursionError
    (_voice_deep, "voice_styles/M1.json: JSON nested too deeply"),             # RecursionError
    (_indexer_huge, "onnx/unicode_indexer.json: expected a JSON list of token ids"),  # Overflow
    (_dims_int, "voice_styles/M1.json: style_ttl dims are 5, expected [1, 50, 256]"),  # TypeError
])
def test_a_crafted_bundle_file_is_a_bundle_error_naming_the_root(bundle_copy: Path, capsys,
                                                                 damage, wanted):
    damage(bundle_copy)
    assert_user_error(capsys, ["info", "--model", str(bundle_copy)],
                      f"bundle {bundle_copy}: {wanted}")


def test_a_symlink_loop_as_the_bundle_is_one_line(tmp_path: Path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)  # RuntimeError("Symlink loop") from Path.resolve on 3.11
    assert_user_error(capsys, ["info", "--model", str(loop)], f"{loop}: cannot be opened",
                      "ymlink loop")


# -- 13: outputs that cannot be written ---------------------------------------------------


def test_convert_to_a_dangling_symlink_is_refused_before_converting(tiny_bundle_dir: Path,
                                                                    tmp_path: Path, capsys):
    dst = tmp_path / "dst"
    dst.symlink_to(tmp_path / "nowhere" / "x")
    assert_user_error(capsys, ["convert", str(tiny_bundle_dir), str(dst), "--to", "fp16",
                               "--no-measure"], f"{dst}: is a symbolic link")
    assert dst.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == ["dst"]


def test_tune_json_that_is_a_directory_fails_before_the_sweep(tiny_bundle_dir: Path,
                                                              tmp_path: Path, capsys,
                                                              monkeypatch):
    monkeypatch.setattr("tts_kit.tuning.tune.sweep", _never)
    assert_user_error(capsys, ["tune", "--model", str(tiny_bundle_dir), "--json", str(tmp_path)],
                      f"--json {tmp_path}: is a directory")
    assert_user_error(capsys, ["tune", "--model", str(tiny_bundle_dir), "--json",
                               str(tmp_path / "no" / "t.json")], "does not exist")


def test_report_out_that_is_a_file_fails_before_the_sweep(tiny_bundle_dir: Path, tmp_path: Path,
                                                          capsys, monkeypatch):
    monkeypatch.setattr("tts_kit.report.make.run_tuning", _never)
    existing = tmp_path / "existing"
    existing.write_text("the user's file")
    assert_user_error(capsys, ["report", "--model", str(tiny_bundle_dir), "--out", str(existing)],
                      f"{existing}: exists and is not a directory")
    assert existing.read_text() == "the user's file"


def test_a_deeply_nested_report_json_is_one_line(tmp_path: Path, capsys):
    bad = tmp_path / "report.json"
    bad.write_text(DEEP)
    assert_user_error(capsys, ["report", "--rerun", str(bad)], f"{bad}: JSON nested too deeply")
    assert_user_error(capsys, ["report", "--out", str(tmp_path / "r"), "--sweep", str(bad)],
                      "JSON nested too deeply")


@pytest.mark.slow  # the CLI in a subprocess
def test_a_full_disk_during_conversion_is_one_line_and_leaves_nothing(tiny_bundle_dir: Path,
                                                                      tmp_path: Path):
    """A real write failure: a file-size limit makes the kernel refuse the graph's write."""
    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, 400_000))

    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tts_kit.cli", "convert", str(tiny_bundle_dir),
         str(out / "fp16"), "--to", "fp16", "--no-measure"],
        capture_output=True, text=True, timeout=300, preexec_fn=small_files)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert f"{out / 'fp16'}: File too large while converting; nothing was written" in proc.stderr
    assert list(out.iterdir()) == []  # no output, no hidden temporary


def test_environment_oserrors_are_one_line_and_exit_2(capsys, monkeypatch):
    def full(args):
        raise OSError(errno.ENOSPC, "No space left on device", "/data/out.wav")

    monkeypatch.setattr(cli, "_parser", _parser_with("normalize", full))
    err = assert_user_error(capsys, ["normalize", "x"], "/data/out.wav: No space left on device;",
                            "free some space")
    assert err.startswith("tts-kit normalize: error: ")


# -- 13: the last resort --------------------------------------------------------------------


def _parser_with(command: str, fn):
    make = cli._parser

    def parser():
        p = make()
        sub = next(a for a in p._actions if a.dest == "command")
        sub.choices[command].set_defaults(func=fn)
        return p
    return parser


@pytest.mark.parametrize("exc", [AttributeError("'list' object has no attribute 'get'"),
                                 RecursionError("maximum recursion depth exceeded"),
                                 OSError(errno.EIO, "Input/output error"),
                                 ValueError("operands could not be broadcast together"),
                                 TypeError("bad \x1b]0;owned\x07 title\nsecond line")])
def test_an_unanticipated_error_is_one_escaped_line_a_log_and_exit_70(capsys, monkeypatch, exc):
    def boom(args):
        raise exc

    monkeypatch.setattr(cli, "_parser", _parser_with("normalize", boom))
    rc, _, err = run_main(capsys, "normalize", "x")
    assert rc == cli.EXIT_BUG == 70 and len(err.splitlines()) == 1, err
    assert err.startswith(f"tts-kit normalize: internal error: {type(exc).__name__}: ")
    assert "this is a bug in tts_kit" in err and "tts-kit --debug normalize" in err
    assert "\x1b" not in err and "\x07" not in err and "second line" not in err
    log = Path(err.split("full log: ")[1].split(")")[0])
    try:
        assert "Traceback" in log.read_text() and type(exc).__name__ in log.read_text()
    finally:
        log.unlink()


def _numpy_bug(self, text):
    """A defect deep in the library: numpy's own ValueError, not a user's mistake."""
    return np.zeros(2).reshape(3)


def test_a_numpy_value_error_inside_a_command_is_a_bug_not_the_users_error(capsys, monkeypatch,
                                                                           tmp_path):
    """Was: every ValueError printed as the user's error (exit 2), its origin lost."""
    from tts_kit.text import Normalizer

    monkeypatch.setattr(Normalizer, "normalize", _numpy_bug)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the log lands here
    rc, out, err = run_main(capsys, "normalize", "x")
    assert rc == 70 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("tts-kit normalize: internal error: ValueError: cannot reshape"), err
    assert "error: cannot reshape" not in err  # not dressed as the user's error
    (log,) = tmp_path.iterdir()
    assert "_numpy_bug" in log.read_text() and "Traceback" in log.read_text()


def test_a_tts_kit_error_is_one_line_and_exit_2(capsys):
    from tts_kit import TtsKitError
    from tts_kit.text import Normalizer

    with pytest.raises(TtsKitError, match="no normalisation rules for language 'xx'"):
        Normalizer("xx")
    err = assert_user_error(capsys, ["normalize", "x", "--lang", "xx"],
                            "no normalisation rules for language 'xx'")
    assert err.startswith("tts-kit normalize: error: ") and "bug" not in err


def test_debug_prints_the_traceback(capsys, monkeypatch, tmp_path):
    from tts_kit.text import Normalizer

    monkeypatch.setattr(Normalizer, "normalize", _numpy_bug)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert cli.main(["--debug", "normalize", "x"]) == 70
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "_numpy_bug" in err, err
    last = err.splitlines()[-1]
    assert last.startswith("tts-kit normalize: internal error: ValueError: cannot reshape")
    assert "traceback is above" in last and list(tmp_path.iterdir()) == []  # no log needed
    # A user's error too: the traceback, then the same one line, still exit 2.
    assert cli.main(["--debug", "normalize", "x", "--lang", "xx"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1] == (
        "tts-kit normalize: error: no normalisation rules for language 'xx'; use one of: ko, en")


def test_warnings_are_one_line_and_the_handler_is_restored(capsys, monkeypatch):
    """Library warnings print as one line while a command runs; the process's handler is
    not replaced for good (a notebook or pytest calling main keeps its own)."""
    import warnings

    from tts_kit.text import Normalizer

    def warn(self, text):
        warnings.warn("dropped 1 character", UserWarning, stacklevel=1)
        return text

    monkeypatch.setattr(Normalizer, "normalize", warn)
    before = warnings.showwarning
    rc, out, err = run_main(capsys, "normalize", "x")
    assert rc == 0 and err == "tts-kit: warning: dropped 1 character", err
    assert warnings.showwarning is before


@pytest.mark.parametrize("argv", [
    ["standin", "{nul}", "--scale", "tiny"],
    ["convert", "{bundle}", "{nul}", "--to", "fp16", "--no-measure"],
    ["verify", "--model", "{bundle}", "--json", "{nul}"],
    ["tune", "--model", "{bundle}", "--json", "{nul}"],
    ["report", "--out", "{nul}", "--model", "{bundle}"],
    ["serve-sweep", "--texts", "{nul}", "--model", "{bundle}"],
])
def test_a_nul_in_a_path_is_the_users_error_not_a_bug(tiny_bundle_dir: Path, tmp_path: Path,
                                                      capsys, monkeypatch, argv):
    """os refuses such a path with a bare ValueError, which the policy would call a bug."""
    monkeypatch.setattr("tts_kit.tuning.tune.sweep", _never)
    monkeypatch.setattr("tts_kit.report.make.run_tuning", _never)
    nul = str(tmp_path / "a\x00b")
    argv = [a.format(nul=nul, bundle=tiny_bundle_dir) for a in argv]
    assert_user_error(capsys, argv, "contains a NUL character")


def test_a_nul_in_the_text_is_still_dropped(capsys):
    rc, out, _ = run_main(capsys, "normalize", "hello \x00world")
    assert rc == 0 and out == "hello world\n"


def test_serve_refuses_a_port_out_of_range_or_a_bad_loading_before_starting(capsys):
    assert_user_error(capsys, ["serve", "--port", "-1"],
                      "--port -1: give a whole number from 0 to 65535")
    assert_user_error(capsys, ["serve", "--loading", "bogus", "--port", "1"],
                      "unknown loading 'bogus'")


def test_the_console_script_never_prints_a_traceback(tmp_path: Path):
    """The real process: the entry point, its exit code, its stderr."""
    code = ("import sys, tts_kit.cli as c\n"
            "def boom(args): raise AttributeError('x')\n"
            "c.cmd_normalize = boom\n"
            "make = c._parser\n"
            "def parser():\n"
            "    p = make(); sub = next(a for a in p._actions if a.dest == 'command')\n"
            "    sub.choices['normalize'].set_defaults(func=boom); return p\n"
            "c._parser = parser\n"
            "sys.exit(c.main(['normalize', 'x']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert proc.returncode == 70 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "internal error: AttributeError: x" in proc.stderr
    assert [p.name.startswith("tts-kit-error-") for p in tmp_path.iterdir()] == [True]


# -- 16: tune's arguments and its exit status -------------------------------------------------


@pytest.mark.parametrize(("extra", "wanted"), [
    (["--loading", ""], "--loading '' names no load policy"),
    (["--loading", " , "], "names no load policy"),
    (["--steps", "101"], "steps must be an integer <= 100, got 101"),
    (["--repeats", "0"], "--repeats must be >= 1"),
    (["--repeats", "1001"], "repeats must be an integer <= 1000"),
])
def test_tune_rejects_bad_arguments_before_measuring(tiny_bundle_dir: Path, capsys, monkeypatch,
                                                     extra, wanted):
    monkeypatch.setattr("tts_kit.tuning.tune.sweep", _never)
    assert_user_error(capsys, ["tune", "--model", str(tiny_bundle_dir), *extra], wanted)


def test_tune_exits_1_when_no_trial_finished(tiny_bundle_dir: Path, capsys):
    rc, out, err = run_main(capsys, "tune", "--model", str(tiny_bundle_dir), "--presets", "lean",
                            "--cpus", "1", "--steps", "1", "--repeats", "1", "--stage-costs",
                            "estimate", "--mem-budget", "0.001", "--quiet")
    assert rc == 1, (out, err)
    assert "oom" in out and "no trial finished" in out  # the reasons
    assert "no trial finished" in err


# -- 16: a rerun of a report whose workload is invalid is bad input --------------------------


def _saved_report(tmp_path: Path) -> Path:
    sha = {s: "0" * 64 for s in ("duration_predictor", "text_encoder", "vector_estimator",
                                 "vocoder")}
    rec = {"preset": "lean", "cpus": 1, "loading": "resident", "steps": 1, "status": "ok",
           "load_s": 0.2, "idle_rss_mb": 70.0, "peak_rss_mb": 90.0, "first_ms": 20.0,
           "p50_ms": 10.0, "p95_ms": 11.0, "rtf": 0.01, "cpu_percent": 100.0}
    from tts_kit.report import environment

    rep = TuningReport(
        spec=SweepSpec(rounds=1, presets=["lean"], cpus=[1], loadings=["resident"],
                       workload=Workload(steps=1, repeats=1)),
        records=[rec], recommended=rec, reason="fastest", environment=environment(),
        model={"path": "/nowhere", "standin": None, "params": 1, "sha256": sha},
        presets={"lean": {"name": "lean"}}, created="2026-01-01T00:00:00+00:00")
    return rep.save(tmp_path / "report.json")


@pytest.mark.parametrize(("key", "value", "wanted"), [
    ("seed", -1, "seed must be an integer >= 0, got -1"),
    ("steps", [101], "steps must be an integer <= 100, got 101"),
    ("lang", "xx", "lang must be a language code"),
    ("batch_sizes", [100_000], "batch_size must be an integer <= 256"),
    ("repeats", 10**12, "repeats must be an integer <= 1000"),
])
def test_rerun_of_a_report_with_an_invalid_workload_is_bad_input(tiny_bundle_dir, tmp_path,
                                                                 capsys, monkeypatch, key, value,
                                                                 wanted):
    monkeypatch.setattr("tts_kit.report.rerun.run_tuning", _never)
    path = _saved_report(tmp_path)
    data = json.loads(path.read_text())
    data["sweep"][key] = value
    path.write_text(json.dumps(data))
    # Was: every trial an error (or measuring for ever), then "does NOT hold", exit 1.
    assert_user_error(capsys, ["report", "--rerun", str(path), "--model", str(tiny_bundle_dir)],
                      wanted)


# -- 16: seeds, text, bundle roots ---------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tiny_bundle_dir: Path) -> Engine:
    return Engine(tiny_bundle_dir, normalize=False)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3", [0, -2]])
def test_a_bad_seed_is_said_in_the_engines_words(engine: Engine, seed):
    texts = ["Hi there.", "Bye now."]
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0 or None") as err:
        engine.synthesize_batch(texts, voices="M1", steps=1, seed=seed)
    assert "\n" not in str(err.value)


def test_good_seeds_still_work(engine: Engine):
    a = engine.synthesize("Hi there.", steps=1, seed=np.int64(3))
    b = engine.synthesize_batch(["Hi there.", "Bye."], voices="M1", steps=1,
                                seed=np.array([3, 4]))[0]
    assert a.seed == 3 and type(b.seed) is int and np.allclose(a.wav, b.wav, atol=1e-5)


def test_text_none_is_not_called_empty(engine: Engine):
    with pytest.raises(ValueError, match=r"^text must be a string, got NoneType$"):
        engine.synthesize(None)  # type: ignore[arg-type]


def test_bundle_errors_name_the_bundle_root(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("TTS_KIT_MODEL_DIR", str(tmp_path))
    with pytest.raises(BundleError, match=f"^bundle {tmp_path}: onnx/tts.json: missing"):
        Bundle(tmp_path)
    assert_user_error(capsys, ["info"], f"bundle {tmp_path}: onnx/tts.json: missing")


# -- 16: standin and fetch respect the umask ------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_standin_output_has_the_umasks_mode(tmp_path: Path, mask: int):
    from tts_kit.models.supertonic.standin import build_standin

    old = os.umask(mask)
    try:
        build_standin(tmp_path / "s", scale="tiny")
    finally:
        os.umask(old)
    assert (tmp_path / "s").stat().st_mode & 0o777 == 0o777 & ~mask


def test_fetch_output_has_the_umasks_mode(tiny_bundle_dir: Path, tmp_path: Path, monkeypatch):
    import huggingface_hub

    from tts_kit.models.supertonic import bundle

    def download(repo_id, revision, local_dir):
        shutil.copytree(tiny_bundle_dir, local_dir, dirs_exist_ok=True)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    monkeypatch.setattr(bundle, "_hub_reachable", lambda: True)
    old = os.umask(0o022)
    try:
        path = bundle.fetch_model("supertonic-3", tmp_path / "m")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o755


# -- JSON outputs: checked before the work, written whole or not at all ---------------------


def test_loadtest_checks_its_json_path_before_loading(tmp_path: Path, capsys):
    """A --json into a missing directory is said before any request (no server needed)."""
    missing = tmp_path / "nope" / "load.json"
    assert_user_error(capsys, ["loadtest", "http://127.0.0.1:9", "--json", str(missing)],
                      "--json", "does not exist")


def test_a_failed_json_write_leaves_the_old_file(tmp_path: Path, monkeypatch):
    """_write_json builds the file beside and renames it: a failure mid-write keeps the old."""
    from tts_kit import cli

    out = tmp_path / "records.json"
    out.write_text('{"old": true}\n')

    def boom(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", boom)
    with pytest.raises(OSError):
        cli._write_json(str(out), {"new": True})
    monkeypatch.undo()
    assert out.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["records.json"]  # no temporary left


def test_serve_refuses_an_unknown_preset_before_starting(capsys):
    """One line and exit 2, not a server that starts and then loses its workers."""
    assert_user_error(capsys, ["serve", "--preset", "bogus", "--port", "1"],
                      "--preset 'bogus'", "supertonic-default")


#: Issue 38's attacks on ``serve --config-json``, as a table: the file's bytes, and what
#: the one line must say. Each ended in exit 70, or in a server that served with the limit
#: off, or in a failure after warm-up.
CONFIG_ATTACKS = [
    (b'{"workers": "abc"}', '"workers" abc: give a whole number from 1 to 1024'),
    (b'{"port": "abc"}', '"port" abc: give a whole number from 0 to 65535'),
    (b'{"api_key": 1}', '"api_key" 1: give text'),
    (b'{"model": 1}', '"model" 1: give text'),
    (bytes(range(256)) * 4, "not UTF-8 text"),
    (b'{"timeout_s": NaN}', '"timeout_s" nan: give a finite number > 0 s'),
    (b'{"timeout_s": Infinity}', '"timeout_s" inf: give a finite number'),
    (b'{"timeout_s": -5}', '"timeout_s" -5: give a finite number > 0 s'),
    (b'{"max_chars": 2.5}', '"max_chars" 2.5: give a whole number'),
    (b'{"max_chars": -1}', '"max_chars" -1: give a whole number'),
    (b'{"limit_concurrency": -1}', '"limit_concurrency" -1'),
    (b'{"limit_concurrency": 1e400}', '"limit_concurrency" inf'),
    (b'{"header_timeout_s": 0}', '"header_timeout_s" 0: give a finite number > 0 s'),
    (b'{"header_timeout_s": NaN}', '"header_timeout_s" nan'),
    (b'{"max_queue": -3}', '"max_queue" -3: give a whole number from 0'),
    (b'{"max_queue": 0.5}', '"max_queue" 0.5'),
    (b'{"max_requests": 0}', '"max_requests" 0: give a whole number from 1'),
    (b'{"max_requests": -Infinity}', '"max_requests" -inf'),
    (b'{"max_rss_mb": -1}', '"max_rss_mb" -1: give a finite number > 0 MB'),
    (b'{"max_rss_mb": NaN}', '"max_rss_mb" nan'),
    (b'{"host": 1}', '"host" 1: give text'),
    (b'{"host": ["0.0.0.0"]}', '"host" [\'0.0.0.0\']: give text'),
    (b'{"host": "256.0.0.1"}', '"host" \'256.0.0.1\': not a host name or IP address'),
    (b'{"order": 1}', '"order" 1: give text'),
    (b'{"order": "sideways"}', "\"order\" 'sideways': unknown order; use one of: chunk, stage"),
    (b'{"lang": ["en"]}', '"lang" [\'en\']: give text'),
    (b'{"lang": "not a language"}', '"lang" \'not a language\': give a language code'),
    (b'{"workers": 1.5}', '"workers" 1.5: give a whole number from 1 to 1024'),
    (b'{"workers": true}', '"workers" True: give a whole number'),
    (b'{"threads": 99999999}', '"threads" 99999999: give a whole number from 1 to 1024'),
    (b'{"spinning": "yes"}', '"spinning" \'yes\': give true or false'),
    (b'{"batch": 2}', "unknown setting(s) 'batch'; the settings are: model"),
    (b'{"batch_wait_ms": 1}', "unknown setting(s) 'batch_wait_ms'"),
    (b'{"nest": true}', "unknown setting(s) 'nest'"),
    (b'[1, 2]', "expected a JSON object of settings"),
    (b'[' * 100_000 + b']' * 100_000, "JSON nested too deeply"),
]


@pytest.mark.parametrize(("data", "wanted"), CONFIG_ATTACKS,
                         ids=[d[:24].decode("latin-1") for d, _ in CONFIG_ATTACKS])
def test_serve_config_json_attacks_are_one_line_errors_before_anything_starts(
        data, wanted, tmp_path, tiny_bundle_dir, capsys, monkeypatch):
    """Checked by the flags' own table (`tts_kit.core.validate.SERVE_FIELDS`) before the
    model loads: exit 2, one line naming the setting; no server, no model."""
    from tts_kit.models import resolve
    from tts_kit.serve import app

    def started(*_a, **_k):
        raise AssertionError("it went on past the check")

    monkeypatch.setattr(app, "run_server", started)
    monkeypatch.setattr(resolve, "resolve_model", started)
    path = tmp_path / "serve.json"
    path.write_bytes(data)
    err = assert_user_error(capsys, ["serve", "--config-json", str(path)], wanted)
    assert err.startswith("tts-kit serve: error: ") and "Traceback" not in err


@pytest.mark.parametrize(("host", "wanted"), [
    ("256.0.0.1", "not a host name or IP address"),
    ("not a host", "not a host name or IP address"),
    ("", "not a host name or IP address"),
    ("192.0.2.1", "this machine cannot listen on it"),  # TEST-NET-1: on no machine
])
def test_serve_refuses_a_host_it_cannot_bind_before_the_model_loads(
        host, wanted, capsys, monkeypatch):
    """``--host 256.0.0.1``: one line and exit 2 before loading, not exit 3 after it."""
    from tts_kit.models import resolve
    from tts_kit.serve import app

    def started(*_a, **_k):
        raise AssertionError("it went on past the check")

    monkeypatch.setattr(app, "run_server", started)
    monkeypatch.setattr(resolve, "resolve_model", started)
    assert_user_error(capsys, ["serve", "--host", host, "--port", "1"], "--host ", wanted,
                      "give one such as 127.0.0.1")
