"""Property: whatever values a user passes to any ``tts-kit`` subcommand, no traceback.

Hypothesis draws argument values for every subcommand: random strings (control characters,
unicode, empty, NUL), numbers out of range, and paths of every kind (missing, a directory,
a file, a dangling link, a link loop, a name too long). ``cli.main`` runs in-process (fast);
every run must end with exit 0, 1 or 2 and no "Traceback", and none may be an "internal
error" (exit 70, a bug: a check is missing somewhere, or the library raised something
other than a `TtsKitError` for the user's mistake).

Work that would take long is reached only with tiny workloads on the tiny stand-in
(``synth``, ``convert --no-measure``, ``tune`` whose valid grid is one preset, one core,
one step, one repeat) or with arguments that fail validation first (``report``: every
``--out`` run gets a sweep spec that cannot be valid).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tts_kit import cli
from tts_kit.core.validate import SERVE_FIELDS, serve_flag

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

#: Any text a user (or a script gone wrong) may pass: control characters, NUL, unicode.
TEXT = st.text(max_size=24)
NUMBER = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["0", "-1", "1", "2", "101", "1e308", "nan", "inf", "-inf", "0.5", "", "x"]),
)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, tiny_bundle_dir: Path) -> dict[str, Path]:
    """Paths of every kind, and a private copy of the tiny stand-in (convert reads it)."""
    root = tmp_path_factory.mktemp("cli-props")
    bundle = root / "bundle"
    shutil.copytree(tiny_bundle_dir, bundle)
    (root / "file.txt").write_text("a user's file\n")
    (root / "empty-dir").mkdir()
    (root / "full-dir").mkdir()
    (root / "full-dir" / "keep.txt").write_text("keep\n")
    (root / "dangling").symlink_to(root / "nowhere" / "x")
    (root / "loop").symlink_to(root / "loop")
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "list.json").write_text("[1, 2]")
    (root / "bad.json").write_text("{")
    return {"root": root, "bundle": bundle}


def path_values(sandbox: dict[str, Path]) -> st.SearchStrategy[str]:
    root = sandbox["root"]
    fixed = [root / n for n in ("file.txt", "empty-dir", "full-dir", "dangling", "loop",
                                "deep.json", "list.json", "bad.json", "missing",
                                "missing/nested/x.json")]
    return st.one_of(
        st.sampled_from([str(p) for p in fixed] + ["", str(root / ("n" * 300))]),
        # A new name in the sandbox: random characters, '/' and NUL made harmless or kept.
        TEXT.map(lambda t: str(root / "new" / t.replace("/", "_"))),
    )


def new_file(sandbox: dict[str, Path], suffix: str) -> st.SearchStrategy[str]:
    """A new, writable file path in the sandbox (so valid runs are drawn often too)."""
    return TEXT.map(lambda t: str(sandbox["root"] / f"out-{zlib.crc32(t.encode()):08x}{suffix}"))


def opt(flag: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """``[flag, value]`` or nothing; ``--flag=value`` so a value starting with '-' is a value."""
    return st.one_of(st.just([]), values.map(lambda v: [f"{flag}={v}"]))


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    capsys.readouterr()
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse's own errors (usage + one line), and --help
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc in (0, 1, 2), (argv, rc, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if "internal error" in err:
        pytest.fail(f"a check is missing: {argv!r} -> {err}")


@pytest.fixture(autouse=True)
def _offline_and_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # fetch must fail fast, never download
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # last-resort logs land here


def test_synth(sandbox, capsys):
    model = st.one_of(st.just(str(sandbox["bundle"])), path_values(sandbox))

    @SETTINGS
    @given(st.tuples(st.one_of(st.sampled_from(["Hello there.", "Room 4 at 10:30."]), TEXT),
                     st.one_of(new_file(sandbox, ".wav"), path_values(sandbox)),
                     opt("--model", model),
                     opt("--lang", st.one_of(TEXT, st.sampled_from(["en", "ko", "na"]))),
                     opt("--voice", st.one_of(TEXT, st.sampled_from(["M1", "F1"]))),
                     opt("--steps", st.sampled_from(["1", "2", "0", "101", "-3", "x", "1e9"])),
                     opt("--speed", NUMBER), opt("--seed", NUMBER),
                     opt("--loading", st.one_of(TEXT, st.sampled_from(["paged", "budget:1"]))),
                     st.sampled_from([[], ["--no-normalize"]])))
    def prop(a):
        text, out, model_arg, *rest = a
        steps_arg = rest[2]
        # A tiny workload: the stand-in unless --model names another path, 1 step unless
        # --steps is drawn (then at most 2, or invalid).
        argv = ["synth", f"--output={out}", *(model_arg or [f"--model={sandbox['bundle']}"]),
                *(steps_arg or ["--steps=1"]), *sum(rest, []), "--", text]
        run(capsys, argv)

    prop()


def test_info(sandbox, capsys):
    @SETTINGS
    @given(st.one_of(st.just(str(sandbox["bundle"])), path_values(sandbox)),
           st.sampled_from([[], ["--json"], ["--no-load"], ["--json", "--no-load"]]))
    def prop(model, flags):
        run(capsys, ["info", f"--model={model}", *flags])

    prop()


def test_standin(sandbox, capsys):
    # Only tiny builds: a full-scale stand-in is 400 MB.
    scale = st.one_of(TEXT.filter(lambda s: s not in ("full", "medium")), st.just("tiny"))

    @SETTINGS
    @given(st.one_of(new_file(sandbox, ""), path_values(sandbox)), opt("--scale", scale),
           opt("--seed", NUMBER))
    def prop(out, scale_arg, seed):
        run(capsys, ["standin", *(scale_arg or ["--scale=tiny"]), *seed, "--", out])

    prop()


def test_fetch(sandbox, capsys):
    @SETTINGS
    @given(opt("--model", st.one_of(TEXT, st.sampled_from(["supertonic-3", "supertonic-2"]))),
           opt("--dir", path_values(sandbox)))
    def prop(model, where):
        run(capsys, ["fetch", *model, *where])

    prop()


def test_normalize(capsys):
    @SETTINGS
    @given(TEXT, opt("--lang", st.one_of(TEXT, st.sampled_from(["ko", "en"]))),
           st.sampled_from([[], ["--trace"]]))
    def prop(text, lang, trace):
        run(capsys, ["normalize", *lang, *trace, "--", text])

    prop()


def test_tune(sandbox, capsys):
    """Each value is valid (a one-trial grid) or not; a run of all-valid values is rare."""
    @SETTINGS
    @given(st.one_of(st.just("lean"), TEXT),
           st.one_of(st.just("1"), TEXT, NUMBER),
           st.one_of(st.just("resident"), TEXT),
           st.one_of(st.just("1"), NUMBER),
           st.one_of(st.just("1"), NUMBER),
           opt("--mem-budget", NUMBER),
           st.one_of(st.just("estimate"), path_values(sandbox)),
           opt("--json", path_values(sandbox)),
           st.sampled_from([[], ["--timelines"]]))
    def prop(presets, cpus, loading, steps, repeats, budget, costs, json_out, timelines):
        run(capsys, ["tune", f"--model={sandbox['bundle']}", f"--presets={presets}",
                     f"--cpus={cpus}", f"--loading={loading}", f"--steps={steps}",
                     f"--repeats={repeats}", f"--stage-costs={costs}", "--quiet", *budget,
                     *json_out, *timelines])

    prop()


def test_convert(sandbox, capsys):
    src = st.sampled_from([str(sandbox["bundle"]), str(sandbox["bundle"]),
                           str(sandbox["bundle"] / "onnx" / "duration_predictor.onnx")]
                          ) | path_values(sandbox)

    @SETTINGS
    @given(src, st.one_of(new_file(sandbox, ""), path_values(sandbox)),
           st.sampled_from(["fp16", "fp16", "int8", "int8", "fp32", ""]),
           opt("--stages", st.one_of(TEXT, st.sampled_from(["vocoder", "vocoder,text_encoder"]))),
           opt("--report", path_values(sandbox)))
    def prop(source, dst, to, stages, report):
        # --no-measure: the measurements are isolated syntheses (seconds each).
        run(capsys, ["convert", f"--to={to}", "--no-measure", *stages, *report, "--", source,
                     dst])

    prop()


def test_verify(sandbox, capsys):
    """Valid runs compare the tiny stand-in with itself (seconds); the rest fail first."""
    bundle = str(sandbox["bundle"])

    @SETTINGS
    @given(st.one_of(st.just(bundle), path_values(sandbox)),
           st.one_of(st.just("official"), st.just(bundle), TEXT, path_values(sandbox)),
           opt("--threads", st.one_of(st.just("1"), NUMBER)),
           opt("--min-snr", NUMBER), opt("--max-abs-diff", NUMBER),
           opt("--json", st.one_of(new_file(sandbox, ".json"), path_values(sandbox))))
    def prop(model, against, threads, snr, diff, js):
        run(capsys, ["verify", f"--model={model}", f"--against={against}", *threads, *snr,
                     *diff, *js])

    prop()


def _invalid_spec(data: object) -> object:
    """A sweep spec that cannot be valid, so no sweep runs: a dict gets an unknown key."""
    return {**data, "not a sweep key": 1} if isinstance(data, dict) else data


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
                    lambda kids: st.lists(kids, max_size=3)
                    | st.dictionaries(TEXT, kids, max_size=3), max_leaves=8)


def test_report(sandbox, capsys):
    root = sandbox["root"]

    @SETTINGS
    @given(st.integers(0, 2), path_values(sandbox), JSON.map(_invalid_spec),
           st.one_of(st.just(None), path_values(sandbox)),
           opt("--confirm-rounds", NUMBER), opt("--model", path_values(sandbox)))
    def prop(mode, out, spec, spec_path, rounds, model):
        written = root / "spec.json"
        written.write_text(json.dumps(spec))
        sweep = str(written) if spec_path is None else spec_path
        if mode == 0:  # no --out: one line asking for it
            argv = ["report", *rounds, *model]
        elif mode == 1:  # --out with a spec that fails validation (or an unusable --out)
            argv = ["report", f"--out={out}", f"--sweep={sweep}", *rounds, *model]
        else:  # --rerun of something that is not a report.json
            argv = ["report", f"--rerun={sweep}", *rounds, *model]
        run(capsys, argv)

    prop()


#: Values no numeric flag accepts: not finite, negative, absurd, not a number.
BAD_NUMBER = st.sampled_from(["nan", "inf", "-inf", "-1", "-5", "1e400", "x", "", "-99999999999"])

#: The serving commands' numeric flags (``serve``'s own, and those of loadtest/serve-sweep).
SERVE_FLAGS = ["--workers", "--threads", "--max-queue", "--timeout", "--max-requests",
               "--max-rss-mb", "--port", "--max-chars", "--max-chunk-chars", "--header-timeout",
               "--body-timeout", "--limit-concurrency"]
LOAD_FLAGS = ["--requests", "--duration", "--timeout", "--seed"]
SWEEP_FLAGS = LOAD_FLAGS + ["--p95-target-ms", "--mem-budget"]


@pytest.mark.parametrize(("command", "flags"), [("serve", SERVE_FLAGS),
                                                ("loadtest", LOAD_FLAGS),
                                                ("serve-sweep", SWEEP_FLAGS)])
def test_serving_numbers(command, flags, capsys):
    """One bad numeric flag among valid or bad others: exit 2, one line naming a flag, and
    nothing started (no server, no load)."""
    head = {"serve": ["serve"], "loadtest": ["loadtest", "http://127.0.0.1:1"],
            "serve-sweep": ["serve-sweep"]}[command]

    @SETTINGS
    @given(st.sampled_from(flags), BAD_NUMBER,
           st.lists(st.tuples(st.sampled_from(flags), st.one_of(NUMBER, BAD_NUMBER)),
                    max_size=3))
    def prop(flag, bad, others):
        argv = [*head, *(f"{f}={v}" for f, v in others), f"{flag}={bad}"]
        capsys.readouterr()
        try:
            rc = cli.main(argv)
        except SystemExit as exc:  # argparse: not a number at all
            rc = exc.code
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err and "internal error" not in err, (argv, err)
        last = err.strip().splitlines()[-1]
        assert "error:" in last and any(f in last for f in flags), (argv, err)

    prop()


#: Numeric flags the library checks itself, with its own one-line message (not in the table).
LIBRARY_CHECKED = {"steps", "speed", "repeats"}
#: serve's numeric flags: `ServeConfig.check` checks them against `SERVE_FIELDS`.
SERVE_CHECKED = {serve_flag(f) for f in SERVE_FIELDS if serve_flag(f)}


def test_every_numeric_flag_is_in_the_one_table():
    """A new ``type=int``/``type=float`` flag must get a range in `NUMERIC_FLAGS` (or be one
    the library checks): otherwise ``nan``, ``-5`` or ``1e400`` reach the command."""
    from tts_kit.cli._common import NUMERIC_FLAGS

    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"{name} {'/'.join(a.option_strings)}"
               for name, sp in sub.choices.items() for a in sp._actions
               if a.type in (int, float) and a.dest not in LIBRARY_CHECKED
               and a.dest not in NUMERIC_FLAGS.get(name, {})
               and not (name == "serve" and a.dest in SERVE_CHECKED)]
    assert not missing, missing


#: synth's and standin's numeric flags in the table, and what each command needs besides.
MODEL_FLAGS = {"synth": ["--seed", "--noise-scale", "--noise-w"], "standin": ["--seed"]}


@pytest.mark.parametrize("command", sorted(MODEL_FLAGS))
def test_model_numbers(command, tmp_path, capsys):
    """A bad seed or noise scale: exit 2, one line naming the flag, before the model loads
    or anything is built (a seed past 32 bits, a negative or NaN noise included)."""
    flags = MODEL_FLAGS[command]
    head = {"synth": ["synth", "-o", str(tmp_path / "x.wav"), "--model", "piper:joe-us",
                      "Hi."],
            "standin": ["standin", str(tmp_path / "new"), "--scale", "tiny"]}[command]

    @SETTINGS
    @given(st.sampled_from(flags), st.one_of(BAD_NUMBER, st.sampled_from(
        ["4294967296", "99999999999999999999", "2.5", "1e9"])),
           st.lists(st.tuples(st.sampled_from(flags), st.one_of(NUMBER, BAD_NUMBER)),
                    max_size=2))
    def prop(flag, bad, others):
        argv = [*head[:1], *(f"{f}={v}" for f, v in others), f"{flag}={bad}", *head[1:]]
        capsys.readouterr()
        try:
            rc = cli.main(argv)
        except SystemExit as exc:  # argparse: not a number at all
            rc = exc.code
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err and "internal error" not in err, (argv, err)
        last = err.strip().splitlines()[-1]
        assert "error:" in last and any(f in last for f in flags), (argv, err)
        assert not (tmp_path / "x.wav").exists() and not (tmp_path / "new").exists()

    prop()


#: JSON values no setting of its kind accepts (raw JSON text: NaN, 1e400 and a lone
#: surrogate cannot be written by json.dumps). Numbers: not finite, negative, past every
#: range, not numbers at all; a whole-number setting gets a fraction too.
HOSTILE_NUMBERS = ["NaN", "Infinity", "-Infinity", "-1", "1e400", "1e13", '"abc"', "true",
                   "[]", "{}", '"nan"']
HOSTILE_TEXT = ["1", "2.5", "true", "[]", '{"a": 1}', '"a\\u0000b"', '"\\udcff"']
#: Text settings whose value must also be one of a few (an unknown one is hostile too).
HOSTILE_WORDS = {"preset": ['"bogus"', '""'], "architecture": ['"bogus"'],
                 "scheduling": ['"bogus"'], "order": ['"bogus"'], "lang": ['"not a lang"', '""'],
                 "loading": ['"bogus"', '"budget:-1"'], "fallback_wav": ['"/nowhere.wav"'],
                 "host": ['"256.0.0.1"', '"not a host"', '""', '"10.255.255.1"']}


def _hostile(field: str) -> list[str]:
    """Every hostile JSON value for ServeConfig ``field``, by its kind; a field of no known
    kind fails the walk (a new setting must be classified, hence checked)."""
    from tts_kit.core.validate import SERVE_FIELDS
    from tts_kit.serve.config import ServeConfig

    kind = ServeConfig.__dataclass_fields__[field].type
    if field in SERVE_FIELDS:
        optional = type(None) in getattr(kind, "__args__", ())
        whole = ['"1.5"', "1.5"] if SERVE_FIELDS[field].integer else []
        return HOSTILE_NUMBERS + whole + ([] if optional else ["null"])
    if kind is bool:
        return ["1", '"yes"', "null", "[]"]
    assert kind in (str, str | None), f"ServeConfig.{field}: {kind} is of no known kind"
    return HOSTILE_TEXT + HOSTILE_WORDS.get(field, [])


def test_every_config_json_setting_refuses_hostile_values(tmp_path, tiny_bundle_dir, capsys,
                                                          monkeypatch):
    """``serve --config-json``: each setting of `ServeConfig` walked with every hostile value
    of its kind (the flags' walk is `test_serving_numbers`): exit 2, one line naming the
    setting, and no server started (nothing past the check runs)."""
    from tts_kit.serve import app
    from tts_kit.serve.config import ServeConfig

    def started(cfg):
        raise AssertionError(f"a server started with {cfg}")

    monkeypatch.setattr(app, "run_server", started)
    path = tmp_path / "serve.json"
    walked = 0
    for field in ServeConfig.__dataclass_fields__:
        for value in _hostile(field):
            model = "" if field == "model" else f'"model": {json.dumps(str(tiny_bundle_dir))}, '
            path.write_text("{" + model + f'"{field}": {value}' + "}", encoding="utf-8")
            capsys.readouterr()
            rc = cli.main(["serve", "--config-json", str(path)])
            err = capsys.readouterr().err
            assert rc == 2 and len(err.splitlines()) == 1, (field, value, rc, err)
            assert f'"{field}"' in err, (field, value, err)
            walked += 1
    assert walked > 10 * len(ServeConfig.__dataclass_fields__)


def test_the_flags_and_the_config_share_one_table():
    """``serve``'s numeric flags are checked by `ServeConfig.check` against `SERVE_FIELDS`
    alone (no copy in `NUMERIC_FLAGS` to drift); every number in `ServeConfig` has a rule."""
    from tts_kit.cli._common import NUMERIC_FLAGS
    from tts_kit.serve.config import ServeConfig

    assert "serve" not in NUMERIC_FLAGS
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {a.dest for a in sub.choices["serve"]._actions if a.type in (int, float)}
    assert flags <= SERVE_CHECKED
    numbers = [f for f, d in ServeConfig.__dataclass_fields__.items()
               if {int, float} & set(getattr(d.type, "__args__", (d.type,)))]
    assert sorted(numbers) == sorted(SERVE_FIELDS)
    assert not {"batch", "batch_wait_ms"} & flags
