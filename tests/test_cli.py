"""The tts-kit command: real subprocesses, exit codes and one-line errors, no tracebacks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf


def run(*args: str, env_model: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tts_kit.cli", *args], capture_output=True, text=True, timeout=300
    )


def assert_user_error(proc: subprocess.CompletedProcess, pattern: str):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("note:")]
    assert len(lines) == 1, proc.stderr
    assert pattern in lines[0], lines[0]


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_synth_writes_wav_and_prints_times(tiny_bundle_dir: Path, tmp_path: Path):
    out = tmp_path / "hello.wav"
    proc = run("synth", "Hello there.", "-o", str(out), "--model", str(tiny_bundle_dir),
               "--steps", "2", "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    info = sf.info(str(out))
    assert info.samplerate == 44100 and info.channels == 1 and info.frames > 0
    assert "RTF" in proc.stdout and "vector_estimator" in proc.stdout
    assert "stand-in" in proc.stderr  # labelled as synthetic
    assert "read:" not in proc.stdout  # nothing to spell out


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_synth_says_what_normalisation_made_of_the_text(tiny_bundle_dir: Path, tmp_path: Path):
    proc = run("synth", "Room 4 at 10:30 漢", "-o", str(tmp_path / "a.wav"), "--model",
               str(tiny_bundle_dir), "--steps", "1")
    assert proc.returncode == 0, proc.stderr
    assert "read: Room four at ten thirty\n" in proc.stdout  # the unsayable character dropped
    # ... and said so, in one line (issue 15); mostly unsayable text is refused.
    assert "tts-kit: warning: normalisation for 'en' dropped 1 character(s) the model cannot " \
           "say: '漢'" in proc.stderr and "Traceback" not in proc.stderr
    assert "UserWarning" not in proc.stderr
    assert_user_error(run("synth", "Hello 你好 مرحبا", "-o", str(tmp_path / "b.wav"), "--model",
                          str(tiny_bundle_dir)), "normalisation for 'en' dropped 7 of 12 letters")
    assert not (tmp_path / "b.wav").exists()


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_info_json(tiny_bundle_dir: Path):
    proc = run("info", "--model", str(tiny_bundle_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["standin"]["scale"] == "tiny" and len(info["stages"]) == 4


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
@pytest.mark.parametrize(
    ("extra", "pattern"),
    [
        (["--lang", "xx"], "unknown language 'xx'"),
        (["--steps", "0"], "steps must be an integer in 1..100"),
        (["--speed", "3"], "speed must be a number in 0.7..2"),
        (["--voice", "Q7"], "unknown voice 'Q7'; available voices: F1, M1"),
    ],
)
def test_synth_user_errors(tiny_bundle_dir: Path, tmp_path: Path, extra, pattern):
    proc = run("synth", "Hello.", "-o", str(tmp_path / "x.wav"), "--model",
               str(tiny_bundle_dir), *extra)
    assert_user_error(proc, pattern)


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
@pytest.mark.parametrize(("text", "pattern"), [("", "text is empty"), ("  ", "text is empty"),
                                               ("Hi \u0e01", "cannot read: '\u0e01'")])
def test_synth_bad_text(tiny_bundle_dir: Path, tmp_path: Path, text, pattern):
    proc = run("synth", text, "-o", str(tmp_path / "x.wav"), "--model", str(tiny_bundle_dir),
               "--lang", "na")
    assert_user_error(proc, pattern)


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_broken_model(tiny_bundle_dir: Path, tmp_path: Path):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_bundle_dir, broken)
    (broken / "onnx/vocoder.onnx").write_bytes(b"not onnx")
    assert_user_error(run("info", "--model", str(broken)), "vocoder.onnx: not a readable ONNX")
    assert_user_error(run("info", "--model", str(tmp_path / "none")), "not a directory")


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_output_directory_missing(tiny_bundle_dir: Path, tmp_path: Path):
    proc = run("synth", "Hello.", "-o", str(tmp_path / "no" / "x.wav"), "--model",
               str(tiny_bundle_dir))
    assert_user_error(proc, "directory does not exist")


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_standin_refuses_non_empty_dir(tmp_path: Path):
    (tmp_path / "keep.txt").write_text("user data")
    assert_user_error(run("standin", str(tmp_path), "--scale", "tiny"), str(tmp_path))
    assert (tmp_path / "keep.txt").read_text() == "user data"


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_fetch_offline_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    proc = run("fetch", "--dir", str(tmp_path / "model"))
    assert_user_error(proc, "not reachable")
    assert "stand-in" in proc.stderr
    assert not (tmp_path / "model").exists()


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_normalize_cli():
    proc = run("normalize", "API 3개", "--lang", "ko", "--trace")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "세 개" in first and "3" not in first


# -- synth -o: checked before synthesis, written atomically (issue 11: 3) ---------------


def _no_synthesis(monkeypatch: pytest.MonkeyPatch) -> None:
    from tts_kit.models.supertonic.engine import Engine

    def refuse(*a, **k):
        raise AssertionError("synthesised before -o was checked")

    monkeypatch.setattr(Engine, "synthesize", refuse)
    monkeypatch.setattr(Engine, "__init__", refuse)


@pytest.mark.parametrize(("where", "pattern"), [
    ("dir", "is a directory"),
    ("noext", "unknown audio file type (no extension)"),
    ("badext", "unknown audio file type (.mp5)"),
    ("missing", "directory does not exist"),
    ("parent-is-file", "not a directory"),
    ("proc", "cannot create a file there"),
])
def test_synth_checks_the_output_before_synthesising(tiny_bundle_dir: Path, tmp_path: Path,
                                                     monkeypatch, capsys, where, pattern):
    from tts_kit.cli import main

    (tmp_path / "afile").write_text("x")
    out = {"dir": tmp_path, "noext": tmp_path / "hello", "badext": tmp_path / "hello.mp5",
           "missing": tmp_path / "no" / "x.wav", "parent-is-file": tmp_path / "afile" / "x.wav",
           "proc": Path("/proc/tts_kit_test.wav")}[where]
    _no_synthesis(monkeypatch)
    rc = main(["synth", "Hello.", "-o", str(out), "--model", str(tiny_bundle_dir)])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if not ln.startswith("note:")]
    assert len(lines) == 1 and pattern in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_synth_keeps_an_existing_wav_when_the_write_fails(tiny_bundle_dir: Path,
                                                          tmp_path: Path, monkeypatch, capsys):
    import errno

    import soundfile

    from tts_kit.cli import main

    out = tmp_path / "hello.wav"
    assert main(["synth", "Hello.", "-o", str(out), "--model", str(tiny_bundle_dir),
                 "--steps", "1"]) == 0
    before = out.read_bytes()
    capsys.readouterr()

    def disk_full(self, data):  # the header landed, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    # synth writes chunk by chunk into an open SoundFile (a temporary beside the output)
    monkeypatch.setattr(soundfile.SoundFile, "write", disk_full)
    rc = main(["synth", "Something else.", "-o", str(out), "--model", str(tiny_bundle_dir),
               "--steps", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "No space left on device" in err and "Traceback" not in err, err
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hello.wav"]  # no temporary


# -- strings from bundles and reports reach the terminal escaped --------------------------

ESC_NAME = "X\x1b[2J\x1b]0;owned\x07"  # clear the screen, set the terminal's title


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_voice_names_print_without_raw_escape_sequences(tiny_bundle_dir: Path, tmp_path: Path):
    bundle = tmp_path / "b"
    shutil.copytree(tiny_bundle_dir, bundle)
    shutil.copy(bundle / "voice_styles" / "M1.json", bundle / "voice_styles" / f"{ESC_NAME}.json")
    proc = run("info", "--model", str(bundle))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "X\\x1b[2J\\x1b]0;owned\\x07" in proc.stdout
    # An error that quotes them (an unknown voice lists the bundle's voices).
    proc = run("synth", "Hi.", "-o", str(tmp_path / "a.wav"), "--model", str(bundle),
               "--voice", "Q\x1b[31m")
    assert proc.returncode == 2 and "unknown voice" in proc.stderr
    assert "\x1b" not in proc.stderr and "Q\\x1b[31m" in proc.stderr


@pytest.mark.slow  # a report: trials in fresh processes
def test_a_rerun_prints_a_crafted_report_without_raw_escape_sequences(
        tiny_bundle_dir: Path, tmp_path: Path, lean_report: tuple[Path, Path]):
    # A copy of a real one-trial lean report (conftest's `lean_report`, written once per run).
    # Rename the preset everywhere the report names it: a report.json is a file anyone
    # can hand over, and the rerun prints its preset names.
    path = tmp_path / "report.json"
    text = lean_report[0].read_text().replace('"lean"', json.dumps(ESC_NAME))
    path.write_text(text)
    assert json.loads(text)["sweep"]["presets"] == [ESC_NAME]
    proc = run("report", "--rerun", str(path), "--model", str(tiny_bundle_dir),
               "--confirm-rounds", "0")
    assert proc.returncode in (0, 1), proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout + proc.stderr
    assert "X\\x1b[2J" in proc.stdout


# -- issue 13, section 4: help, tables, pipes, shared defaults ----------------------------


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_a_closed_pipe_ends_quietly(tiny_bundle_dir: Path):
    """`tts-kit ... | head` used to end with "internal error: BrokenPipeError" or Python's
    "Exception ignored ... BrokenPipeError": now nothing on stderr, status 141 (SIGPIPE)."""
    for args in (["normalize", "3개", "--lang", "ko"], ["--help"],
                 ["info", "--no-load", "--model", str(tiny_bundle_dir)]):
        proc = subprocess.Popen([sys.executable, "-m", "tts_kit.cli", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()  # the reader is gone before the first line
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) in (0, 141), (args, err)  # 141: SIGPIPE's status
        assert "BrokenPipe" not in err and "internal error" not in err, (args, err)


def test_every_option_has_help_with_its_default_and_choices():
    import argparse

    from tts_kit.cli import DESCRIPTION, _parser
    from tts_kit.report import SweepSpec
    from tts_kit.runtime.sessions import PRESETS

    parser = _parser()
    assert "`" not in DESCRIPTION and DESCRIPTION in " ".join(parser.format_help().split())
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sp in subs.choices.items():
        formatter = sp._get_formatter()
        for action in sp._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            shown = action.default not in (None, False)
            text = formatter._get_help_string(action)
            # The default is named once: appended, or already in the help's own words.
            assert not shown or "(default: %(default)s)" in text or "(default" in action.help, (
                name, action.option_strings[0])
            shown_text = formatter._expand_help(action)
            assert shown_text.count("(default") <= 1, (name, action.option_strings[0], shown_text)
    tune = " ".join(subs.choices["tune"].format_help().split())
    assert all(p in tune for p in PRESETS)  # the preset names are listed
    synth = " ".join(subs.choices["synth"].format_help().split())
    assert "resident" in synth and "paged" in synth and "budget:MB" in synth
    assert "ko, en" in synth or "en, ko" in synth or ("ko" in synth and "en" in synth)
    assert "{tiny,medium,full}" in subs.choices["standin"].format_help()
    # `tune` and `report` measure the same presets by default.
    assert parser.parse_args(["tune"]).presets.split(",") == SweepSpec().presets
    # The help's preset names are the shipped ones (named in contract, defined in sessions).
    from tts_kit.core import contract

    assert contract.PRESET_NAMES == tuple(PRESETS)
    assert set(contract.SWEEP_PRESETS) <= set(PRESETS)
    # The --recipe choices are the precision package's recipes (named in contract too).
    from tts_kit.precision.recipes import RECIPES

    assert set(contract.RECIPE_DESCRIPTIONS) == set(RECIPES)


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_info_prints_tables_that_agree_with_standin(tmp_path: Path):
    built = run("standin", str(tmp_path / "b"), "--scale", "tiny")
    info = run("info", "--no-load", "--model", str(tmp_path / "b"))
    assert built.returncode == 0 and info.returncode == 0, info.stderr
    assert "{" not in info.stdout and "kind     stand-in, tiny scale, seed 0" in info.stdout
    rows = {line.split()[0]: line.split()[1:3] for line in built.stdout.splitlines()[1:6]}
    for line in info.stdout.splitlines():
        if line.split() and line.split()[0] in rows:
            assert line.split()[1:3] == rows[line.split()[0]], line  # params, MB


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_cpus_above_the_cpu_quota_warn(tiny_bundle_dir: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch):
    """A container with 1.5 CPUs of quota on 2 cores: --cpus 2 pins two cores the quota
    then throttles, so the figures are not 2-core ones: it runs, and says so."""
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 cores in this process's affinity")
    cg = tmp_path / "cg"
    cg.mkdir()
    (cg / "cpu.max").write_text("150000 100000\n")  # 1.5 CPUs: 1 usable core
    monkeypatch.setenv("TTS_KIT_CGROUP_ROOT", str(cg))
    proc = run("tune", "--model", str(tiny_bundle_dir), "--cpus", "2", "--presets", "lean",
               "--steps", "2", "--repeats", "1", "--rounds", "1", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert ("tts-kit tune: warning: --cpus 2: this process can use only 1 core(s) (its "
            "cgroup CPU quota)" in proc.stderr), proc.stderr
    ok = run("tune", "--model", str(tiny_bundle_dir), "--cpus", "1", "--presets", "lean",
             "--steps", "2", "--repeats", "1", "--rounds", "1", "--quiet")
    assert "warning: --cpus" not in ok.stderr


# -- one default language; a warning for text in the other (issue 14) --------------------


def test_synth_and_normalize_share_one_default_language():
    from tts_kit.cli import _parser
    from tts_kit.core import contract

    parser = _parser()
    synth = parser.parse_args(["synth", "x", "-o", "x.wav"])
    norm = parser.parse_args(["normalize", "x"])
    assert synth.lang == norm.lang == contract.DEFAULT_LANG == "en"


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_text_clearly_in_the_other_language_gets_a_one_line_warning(tiny_bundle_dir: Path,
                                                                       tmp_path: Path, capsys):
    from tts_kit.cli import main

    proc = run("normalize", "회의는 10:30에 시작합니다")  # on a real stderr, once
    assert proc.returncode == 0, proc.stderr
    warn = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert len(warn) == 1 and "looks Korean" in warn[0] and "--lang ko" in warn[0], proc.stderr
    # The other cases in this process (the same `main`, the same stderr lines).
    assert main(["normalize", "Call me at 10:30", "--lang", "ko"]) == 0
    err = capsys.readouterr().err
    assert "looks English" in err and "--lang en" in err
    # Mixed text (Korean with English terms) and text in its own language: no warning.
    for args in (("API 3개", "--lang", "ko"), ("It costs $5",), ("OK, 3개 주세요", "--lang", "ko")):
        rc = main(["normalize", *args])
        err = capsys.readouterr().err
        assert rc == 0 and "warning" not in err, (args, err)
    out = tmp_path / "ko.wav"
    proc = run("synth", "안녕하세요 반갑습니다", "-o", str(out), "--model", str(tiny_bundle_dir),
               "--steps", "1")
    assert "looks Korean" in proc.stderr and "--lang ko" in proc.stderr, proc.stderr


# -- one error policy (issue 21): --debug shows the traceback ------------------------------


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_debug_is_a_global_flag_that_shows_the_traceback(tmp_path: Path):
    missing = tmp_path / "missing"
    plain = run("info", "--model", str(missing))
    assert_user_error(plain, f"{missing}: not a directory")
    debug = run("--debug", "info", "--model", str(missing))
    assert debug.returncode == 2 and "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1]  # the same line last
    assert "--debug" in run("--help").stdout


def test_tune_says_first_when_the_machine_was_busy():
    """Moved from `recommendation_lines`' docstring: the provisional line names the rerun."""
    from tts_kit.cli import _parser
    from tts_kit.cli.tuning import recommendation_lines
    from tts_kit.tuning.tune import SweepResult

    rec = {"preset": "lean", "cpus": 1, "status": "ok", "p50_ms": 90.0,
           "peak_rss_mb": 300.0, "core_share": 45.0, "cpu_wait_percent": 50.0}
    lines = recommendation_lines(SweepResult([rec]), _parser().parse_args(["tune"]))
    assert lines[0] == ("provisional: the machine was busy (1 of 1 trials got 45 % of their "
                        "cores, waiting 50 % of the time for one); run `tts-kit tune` on a "
                        "quiet machine.")
    assert lines[-1].startswith("recommendation (provisional): lean on 1 ")
