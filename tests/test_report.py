"""tts_kit.report: sweep specs, the schema, noise and reruns; the library-written report.json;
`tts-kit report` end to end."""

from __future__ import annotations

import base64
import copy
import html
import json
import re

import numpy as np
import pytest

from tts_kit import Bundle, report
from tts_kit.models.supertonic.standin import scale_note
from tts_kit.report import (
    Noise,
    ReportError,
    SweepSpec,
    TuningReport,
    answer,
    compare_reports,
    validate_report,
)
from tts_kit.tuning.workload import Workload

SHA = {s: "0" * 64 for s in ("duration_predictor", "text_encoder", "vector_estimator", "vocoder")}


def _rec(preset: str, p50: float, peak: float, cpus: int = 1, status: str = "ok", **kw) -> dict:
    rec = {"preset": preset, "cpus": cpus, "loading": "resident", "steps": 2, "status": status,
           "load_s": 0.2, "idle_rss_mb": peak - 20, "peak_rss_mb": peak, "first_ms": p50 * 2,
           "p50_ms": p50, "p95_ms": p50 * 1.05, "rtf": p50 / 1000, "cpu_percent": 100.0}
    rec.update(kw)
    return rec


def _report(records: list[dict], recommended: dict | None, budget: float = 500) -> TuningReport:
    return TuningReport(
        spec=SweepSpec(presets=sorted({r["preset"] for r in records}), cpus=[1],
                       loadings=["resident"], workload=Workload(steps=2, repeats=2),
                       mem_budget_mb=budget),
        records=records,
        recommended=recommended,
        reason="lowest p50 within the budget" if recommended else "nothing fits",
        environment=report.environment(),
        model={"path": "/nowhere", "standin": {"scale": "tiny"}, "params": 1, "sha256": SHA},
        presets={r["preset"]: {"name": r["preset"]} for r in records},
        created="2026-01-01T00:00:00+00:00",
    )


def test_sweep_spec_round_trip_and_errors(tmp_path):
    spec = SweepSpec.quick()
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec.to_dict()))
    assert SweepSpec.load(path) == spec
    assert SweepSpec.load(None).presets == SweepSpec().presets
    with pytest.raises(ValueError, match="unknown key.*preset\\b"):
        SweepSpec.from_dict({"preset": ["lean"]})
    with pytest.raises(ValueError, match="'cpus' must be a non-empty list"):
        SweepSpec.from_dict({"cpus": []})
    with pytest.raises(ValueError, match="^sweep spec: texts must be non-empty strings$"):
        SweepSpec.from_dict({"texts": []})
    with pytest.raises(ValueError, match="^sweep spec: repeats must be >= 1, got 0$"):
        SweepSpec.from_dict({"repeats": 0})
    with pytest.raises(ValueError, match="^sweep spec: steps must be an integer >= 1, got 0$"):
        SweepSpec.from_dict({"steps": [2, 0]})
    with pytest.raises(ValueError, match="no such file"):
        SweepSpec.load(tmp_path / "missing.json")
    assert max(SweepSpec(cpus=[1, 4096]).effective().cpus) < 4096


def test_a_spec_holds_a_workload_and_reads_the_flat_form_of_old_reports():
    old = {"presets": ["lean"], "cpus": [1], "loadings": ["resident"], "steps": [2, 3],
           "batch_sizes": [1], "repeats": 2, "mem_budget_mb": 512.0,
           "texts": ["An old report's text."], "lang": "en", "voice": "M1", "seed": 4}
    spec = SweepSpec.from_dict(old)
    assert spec.workload == Workload(texts=["An old report's text."], voice="M1", seed=4,
                                     repeats=2, steps=2)  # the workload keeps the first steps
    # an old report has no rounds: it reads as the default two, written back explicitly
    assert {k: v for k, v in spec.to_dict().items() if k != "speed"} == {**old, "rounds": 2}
    assert SweepSpec.from_dict(spec.to_dict()) == spec
    # The grid defaults to the workload's own steps and batch size.
    assert SweepSpec(workload=Workload(steps=3, batch_size=2)).to_dict()["batch_sizes"] == [2]
    assert SweepSpec().workload.repeats == 3 and SweepSpec().workload.voice is None


def test_environment_fingerprint_fields():
    env = report.environment()
    assert env["cpu_count"] >= 1 and env["cpus_available"] >= 1
    assert "CPUExecutionProvider" in env["providers"]
    assert re.match(r"\d+\.\d+", env["onnxruntime"]) and re.match(r"\d+\.\d+", env["numpy"])


def test_schema_accepts_a_report_and_rejects_damage():
    rep = _report([_rec("a", 10, 100)], None)
    data = rep.to_dict()
    validate_report(data)
    assert TuningReport.from_dict(data).records == rep.records
    bad = copy.deepcopy(data)
    del bad["environment"]["cpu_model"]
    with pytest.raises(ReportError, match="environment: 'cpu_model' is a required property"):
        validate_report(bad)
    bad = copy.deepcopy(data)
    bad["records"][0]["status"] = "fine"
    with pytest.raises(ReportError, match="records/0/status"):
        validate_report(bad)
    bad = copy.deepcopy(data)
    bad["model"]["sha256"]["vocoder"] = "xyz"
    with pytest.raises(ReportError, match="model/sha256/vocoder"):
        validate_report(bad)


def test_nan_becomes_null_and_timelines_stay_out_of_records():
    rec = _rec("a", 10, 100, first_ms=float("nan"), timeline=[[0, 1]])
    data = _report([rec], None).to_dict()
    assert data["records"][0]["first_ms"] is None and "timeline" not in data["records"][0]
    json.dumps(data, allow_nan=False)


def test_noise_thresholds():
    n = Noise()
    old = _rec("a", 100, 400)
    assert n.threshold("peak_rss_mb", old, old) == pytest.approx(40)
    assert n.threshold("idle_rss_mb", _rec("a", 1, 30), {}) == pytest.approx(8)
    assert n.threshold("p50_ms", old, old) == pytest.approx(25)
    # A trial whose repeats spread widely has a wider noise band.
    wide = _rec("a", 100, 400, p95_ms=180)
    assert n.threshold("p50_ms", old, wide) == pytest.approx(80)
    assert n.threshold("p50_ms", _rec("a", 1.0, 50), {}) == pytest.approx(2.0)
    # A trial that got a third of a core could have run three times faster alone.
    starved = _rec("a", 100, 400, cpu_percent=100 / 3)
    assert n.starvation(starved) == pytest.approx(2.0)
    assert n.threshold("p50_ms", old, starved) == pytest.approx(100 * (0.05 + 2.0))
    assert n.threshold("peak_rss_mb", old, starved) == pytest.approx(40)  # memory: no


def test_contention_is_noted_and_widens_what_counts_as_a_move():
    old = _report([_rec("a", 10.0, 100), _rec("b", 12.0, 100)], _rec("a", 10.0, 100))
    busy = _report([_rec("a", 30.0, 100, cpu_percent=30), _rec("b", 20.0, 100, cpu_percent=30)],
                   _rec("b", 20.0, 100, cpu_percent=30))
    v = compare_reports(old, busy)
    assert not any(m.metric == "p50_ms" for m in v.moved)
    # The pick is judged by the verdicts (1.5x apart, one figure each: beyond the band);
    # the note says why this run's latencies may be the neighbours'.
    assert not v.holds and "slower beyond the 5 % band" in v.verdict
    assert any("got only 30-30 % of a core" in c for c in v.contention)
    assert "note: in this run" in v.summary()


def test_compare_flags_moves_beyond_noise_only():
    old = _report([_rec("a", 10, 100), _rec("b", 20, 90)], _rec("a", 10, 100))
    new = _report([_rec("a", 11, 104), _rec("b", 40, 140)], _rec("a", 11, 104))
    v = compare_reports(old, new)
    moved = {(m.key[0], m.metric) for m in v.moved}
    assert ("b", "p50_ms") in moved and ("b", "peak_rss_mb") in moved
    assert not any(k == "a" for k, _ in moved)
    assert v.holds and "same configuration" in v.verdict
    assert "recommendation holds" in v.summary()
    # The verdict comes first, in one line, then what noise means, then the list.
    first, noise = v.summary().splitlines()[:2]
    assert first == f"holds: same pick; {len(v.moved)} of {v.compared} figures moved beyond noise"
    assert noise.startswith("noise: a latency moves when it changes by more than 25%")


def test_recommendation_holds_within_noise_and_fails_beyond():
    old = _report([_rec("a", 10.0, 100), _rec("b", 10.5, 100)], _rec("a", 10.0, 100))
    near = _report([_rec("a", 10.4, 100), _rec("b", 10.1, 100)], _rec("b", 10.1, 100))
    v = compare_reports(old, near)
    assert v.holds and "is in its tie set (the same speed within 5 %)" in v.verdict
    assert v.summary().startswith("holds: the report's pick is in this run's tie set "
                                  "(b @ 1 vCPU, resident, 2 steps); ")
    far = _report([_rec("a", 30.0, 100), _rec("b", 10.1, 100)], _rec("b", 10.1, 100))
    v = compare_reports(old, far)
    assert not v.holds and "slower" in v.verdict
    assert "recommendation does NOT hold" in v.summary()
    assert v.summary().startswith("does NOT hold: pick was a @ 1 vCPU, resident, 2 steps, now "
                                  "b @ 1 vCPU, resident, 2 steps; ")
    oom = _report([_rec("a", 10.0, 100, status="oom"), _rec("b", 10.1, 100)],
                  _rec("b", 10.1, 100))
    v = compare_reports(old, oom)
    assert not v.holds and any(m.metric == "status" for m in v.moved)


def test_a_contested_verdict_is_settled_head_to_head():
    old = _report([_rec("a", 10.0, 100), _rec("b", 10.5, 100)], _rec("a", 10.0, 100))
    far = _report([_rec("a", 30.0, 100), _rec("b", 10.1, 100)], _rec("b", 10.1, 100))
    v = compare_reports(old, far)
    ka, kb = report.record_key(_rec("a", 0, 0)), report.record_key(_rec("b", 0, 0))
    assert not v.holds and v.contested == (ka, kb) and v.head_to_head is None
    # Alternating rounds that show the two alike: the single trials' gap was noise.
    v = compare_reports(old, far, head_to_head={ka: [10.2, 10.0, 10.4], kb: [10.1, 9.9, 10.3]})
    assert v.holds and "head to head over 3 alternating round(s)" in v.verdict
    assert v.head_to_head[ka] == [10.2, 10.0, 10.4]
    # Rounds that confirm the gap: it does not hold, and says why.
    v = compare_reports(old, far, head_to_head={ka: [30.0, 29.0, 31.0], kb: [10.0, 10.2, 9.8]})
    assert not v.holds and "in rounds that alternate" in v.verdict
    # A pick that no longer fits is not a latency question: nothing to settle.
    oom = _report([_rec("a", 10.0, 100, status="oom"), _rec("b", 10.1, 100)],
                  _rec("b", 10.1, 100))
    assert compare_reports(old, oom).contested is None


# -- the library writes the document ------------------------------------------------


@pytest.fixture(scope="session")
def library_report(tiny_bundle_dir, build_once, fixture_env):
    """(out, what `make_report(render=False)` returned, out's files before) of one real
    report (low-memory, 1 vCPU, loaded within a 100 MB budget, 2 steps, 1 repeat) made by
    the library into a directory that held a previous report and a file of the user's,
    once per run: read by the three tests below (the document, the budget pick's second
    measurement, and what happened to the previous files)."""
    spec = SweepSpec(rounds=1, presets=["low-memory"], cpus=[1], loadings=["budget:100"],
                     workload=Workload(steps=2, repeats=1))

    def build(d):
        out = d / "work" / "report"
        out.parent.mkdir()
        (d / "before.json").write_text(json.dumps(_previous_report(out)))
        with fixture_env():
            paths = report.make_report(out, model=tiny_bundle_dir, sweep=spec,
                                       progress=False, render=False)
        (d / "paths.json").write_text(json.dumps([str(p) for p in paths]))

    d = build_once("library_report", build)
    paths = [type(d)(p) for p in json.loads((d / "paths.json").read_text())]
    return d / "work" / "report", paths, json.loads((d / "before.json").read_text())


@pytest.mark.slow  # a report: trials in fresh processes
def test_the_library_writes_a_complete_report_without_the_notebook(tiny_bundle_dir,
                                                                   library_report):
    """Every field of report.json, the recommended trial's timeline included, comes from
    the library: no kernel, no notebook, no HTML (the previous report's renders are gone
    and no new ones came; the user's notes.txt stays)."""
    out, paths, _ = library_report
    assert paths == [out / "report.json"]
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report.json"]
    data = json.loads(paths[0].read_text())
    validate_report(data)
    assert data["model"]["sha256"]["vocoder"] == Bundle(tiny_bundle_dir).sha256("vocoder")
    assert [r["status"] for r in data["records"]] == ["ok"]
    assert data["recommendation"]["record"]["preset"] == "low-memory"
    again = data["extras"]["recommended_trial"]
    assert again["status"] == "ok" and again["timeline"] and again["events"]
    assert TuningReport.load(paths[0]).recommended_preset().name == "low-memory"
    # The cost section, measured at the pick's threads while the report was made.
    costs = data["extras"]["costs"]
    assert [s["stage"] for s in costs["roofline"]["stages"]] == list(SHA)
    assert costs["roofline"]["steps"] == 2 and costs["roofline"]["peak_gflops"] > 0


# -- end to end: the CLI on the tiny stand-in ----------------------------------------


def _b64_payloads(html: str, mime: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(rf"data:{mime};base64,([A-Za-z0-9+/=]+)", html)]



#: `tts-kit report --rerun REPORT` through the CLI's entry point, the verdict object kept
#: (a spy on `tts_kit.report.rerun_report`); prints one JSON line last.
_RERUN = """
import contextlib, io, json, sys
import tts_kit.report as R
from tts_kit.cli import main
verdicts, real = [], R.rerun_report
def spy(*args, **kwargs):
    verdicts.append(real(*args, **kwargs))
    return verdicts[-1]
R.rerun_report = spy
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = main(["report", "--rerun", sys.argv[1]])
(v,) = verdicts
print(json.dumps({"rc": rc, "printed": buf.getvalue(), "path": v.new.model["path"],
                  "model_changed": v.model_changed}))
"""


@pytest.fixture(scope="session")
def home_report(tiny_bundle_dir, build_once, fixture_env):
    """One `tts-kit report` (`SweepSpec.quick`'s sweep) run as a user runs it, in a
    subprocess (its stdout and stderr: the kernel's included), with the model and the
    output under the home directory (``$HOME`` a temporary one), once per run: read by
    the end-to-end test and by the test that no file names the home directory.

    Returns (returncode, stdout, stderr, home, model, out)."""
    pytest.importorskip("papermill")
    import os
    import shutil
    import subprocess
    import sys

    def build(d):
        home = d / "home"
        shutil.copytree(tiny_bundle_dir, home / "models" / "tiny")
        spec = d / "quick.json"
        spec.write_text(json.dumps(SweepSpec.quick().to_dict()))
        with fixture_env():
            env = dict(os.environ, HOME=str(home))
        proc = subprocess.run([sys.executable, "-m", "tts_kit.cli", "report", "--model",
                               str(home / "models" / "tiny"), "--sweep", str(spec), "--out",
                               str(home / "short")],
                              capture_output=True, text=True, timeout=900, env=env)
        (d / "proc.json").write_text(json.dumps([proc.returncode, proc.stdout, proc.stderr]))
        # The rerun straight after, on the same machine, as a user checks a fresh report (a
        # rerun minutes later, beside other tests, may rightly find the figures moved).
        rerun = subprocess.run([sys.executable, "-c", _RERUN, str(home / "short" / "report.json")],
                               capture_output=True, text=True, timeout=900, env=env)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        (d / "rerun.json").write_text(rerun.stdout.strip().splitlines()[-1])

    d = build_once("home_report", build)
    home = d / "home"
    return (*json.loads((d / "proc.json").read_text()), home, home / "models" / "tiny",
            home / "short")


@pytest.mark.notebook
def test_cli_report_and_rerun_on_the_tiny_standin(home_report):
    rc, printed, err, home, model, out = home_report
    assert "[IPKernelApp]" not in err, err  # no kernel log noise
    assert rc == 0, printed + err
    for name in ("report.html", "report.json", "report.ipynb"):
        assert (out / name).is_file() and f"wrote {out / name}" in printed
    html = (out / "report.html").read_text()
    pngs = _b64_payloads(html, "image/png")
    wavs = _b64_payloads(html, "audio/wav")
    assert pngs and all(p[:4] == b"\x89PNG" for p in pngs)
    assert wavs and wavs[0][:4] == b"RIFF"
    assert scale_note("tiny") in html
    assert "Error displaying widget" not in html and "Traceback" not in html
    assert not re.search(r"<script[^>]+src=\"https?://", html), "the page must stand alone"
    # The page starts with the answer (right after the banner), whose snippet, executed
    # as pasted, builds the recommended SessionOptions.
    import html as htmllib

    answer_at = html.index('<div class="tts-kit-answer"><h2>The answer</h2>')
    assert answer_at < html.index("The sweep</h3>") < html.index("Every configuration")
    # The cost section shows the figures report.json saved, its sentence among them.
    sentence = json.loads((out / "report.json").read_text())["extras"]["costs"]["roofline"]
    assert "What the work costs</h3>" in html and sentence["sentence"] in htmllib.unescape(html)
    snippet = htmllib.unescape(re.search(r'<pre class="tts-kit-snippet"[^>]*><code>(.*?)'
                                         r"</code></pre>", html, re.S).group(1))
    ns: dict = {}
    exec(snippet, ns)  # noqa: S102 - what a reader pastes
    pick_rec = json.loads((out / "report.json").read_text())["recommendation"]["record"]
    assert ns["so"].intra_op_num_threads == pick_rec["threads"]
    data = json.loads((out / "report.json").read_text())
    # Busy or quiet, the page and report.json say the same (a test machine may be either).
    busy = data["extras"]["contention"]["provisional"]
    use = "Provisionally, use" if busy else "Use"
    assert f"{use} {pick_rec['preset']} @ {pick_rec['cpus']} vCPU" in html
    assert ("tts-kit-provisional" in html) is busy
    cause = data["extras"]["contention"]["cause"]  # busy, or figures that did not repeat
    assert ("provisional: the machine was busy" in printed) is (cause == "busy")
    assert ("provisional: " in printed) is busy
    validate_report(data)
    assert data["model"]["sha256"]["vocoder"] == Bundle(model).sha256("vocoder")
    assert {r["preset"] for r in data["records"]} == {"ort-default", "low-memory"}
    assert all(r["status"] == "ok" for r in data["records"])
    assert data["recommendation"]["record"] is not None
    assert data["extras"]["recommended_trial"]["status"] == "ok"

    # On the same machine the rerun confirms the pick: ties within 10 % go to the lower
    # peak, and a gap beyond the noise is re-measured head to head before it counts.
    # The report says ``~/models/tiny`` (the home test below): the rerun still finds it.
    rerun = json.loads((home.parent / "rerun.json").read_text())  # made right after it
    rc, printed = rerun["rc"], rerun["printed"]
    assert f"{len(data['records'])} trials, " in printed and "figures compared" in printed
    holds = rc == 0 and "\nrecommendation holds: " in printed
    # The tiny graphs' presets can differ by about the tie band: a pick the report found
    # tied may be overturned, but only by a head-to-head gap beyond the band, said so.
    h2h = re.search(r"recommendation does NOT hold: head to head .*, (worse|better), in rounds",
                    printed)
    assert holds or (rc == 1 and h2h), printed
    assert printed.startswith("holds: " if holds else "does NOT hold: "), printed  # verdict first
    assert rerun["path"] == "~/models/tiny" and not rerun["model_changed"]


def test_bad_inputs_fail_in_one_line_before_any_kernel(tmp_path):
    from tts_kit import BundleError

    with pytest.raises(BundleError, match="not a directory"):
        report.make_report(tmp_path / "out", model=tmp_path / "no-model")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ReportError, match="no such report"):
        TuningReport.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ReportError, match="not valid JSON"):
        report.rerun_report(tmp_path / "bad.json")
    assert report.report_notebook().name == "06_tuning_report.py"


@pytest.mark.slow  # a report: trials in fresh processes
def test_a_budget_pick_is_measured_again_with_the_sweeps_stage_costs(library_report):
    """The re-measured pick is the same configuration: a budget:MB pick gets the stage costs
    the sweep measured for it, not the file-size estimate (`library_report`'s budget:100)."""
    _, paths, _ = library_report
    data = json.loads(paths[0].read_text())
    pick = data["recommendation"]["record"]
    assert pick["loading"] == "budget:100" and pick["stage_costs_mb"]
    assert data["extras"]["recommended_trial"]["stage_costs_mb"] == pick["stage_costs_mb"]


# -- a previous report survives a run that fails or is interrupted (issue 11: 2) ---------


def _previous_report(out):
    out.mkdir()
    old = {name: f"previous {name}" for name in ("report.json", "report.ipynb", "report.html")}
    for name, text in old.items():
        (out / name).write_text(text)
    (out / "notes.txt").write_text("the user's own file")
    return {**old, "notes.txt": "the user's own file"}


def _contents(d):
    return {p.name: p.read_text() for p in d.iterdir()}


def test_a_failing_report_run_leaves_the_previous_report(tiny_bundle_dir, tmp_path):
    from tts_kit.cli import main

    out = tmp_path / "report"
    before = _previous_report(out)
    spec = tmp_path / "typo.json"
    spec.write_text(json.dumps({**SweepSpec.quick().to_dict(), "presets": ["lean", "leen"]}))
    rc = main(["report", "--model", str(tiny_bundle_dir), "--sweep", str(spec),
               "--out", str(out)])
    assert rc == 2
    assert _contents(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report", "typo.json"]


@pytest.mark.slow  # reports: trials in fresh processes
def test_a_report_replaces_only_its_own_files(library_report):
    """The report made into a directory holding a previous one (`library_report`)."""
    out, _, before = library_report
    after = _contents(out)
    assert sorted(after) == ["notes.txt", "report.json"]  # stale renders of the old json go
    assert after["notes.txt"] == before["notes.txt"]
    assert json.loads(after["report.json"])["records"][0]["preset"] == "low-memory"
    assert sorted(p.name for p in out.parent.iterdir()) == ["report"]


_PAUSED_REPORT = """
import shutil, sys, time
from pathlib import Path
from tts_kit.report import SweepSpec, make
from tts_kit.tuning.workload import Workload

def paused(out, *a, **k):
    # The new report.json exists, in the temporary directory: a copy of a real one (the
    # sweep is not what this is about; conftest's `lean_report`, written once per run).
    path = Path(out) / "report.json"
    shutil.copy(sys.argv[4], path)
    Path(sys.argv[3]).write_text(str(path))
    time.sleep(60)
    return path

make.write_report = paused
spec = SweepSpec(rounds=1, presets=["low-memory"], cpus=[1], loadings=["resident"],
                 workload=Workload(steps=1, repeats=1))
make.make_report(sys.argv[2], model=sys.argv[1], sweep=spec, progress=False, render=False)
"""


def _default_signal_handlers() -> None:
    """In the child: the signals' default dispositions. A suite started under ``nohup``
    (or in a background job) hands its children an ignored SIGHUP (or SIGINT), which
    tts_kit rightly leaves ignored; the test is about the default case."""
    import signal

    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.slow  # a report in a subprocess, signalled
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_an_interrupted_report_leaves_the_previous_report(tiny_bundle_dir, tmp_path, sig,
                                                          lean_report):
    import signal
    import subprocess
    import sys
    import time

    work = tmp_path / "work"
    work.mkdir()
    out = work / "report"
    before = _previous_report(out)
    marker = tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-c", _PAUSED_REPORT, str(tiny_bundle_dir),
                             str(out), str(marker), str(lean_report[0])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_signal_handlers)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == -getattr(signal, sig), err
    assert _contents(out) == before
    assert sorted(p.name for p in work.iterdir()) == ["report"]  # no temporary left


# -- what a report shows and records ---------------------------------------------------


def test_the_recommendation_html_escapes_the_reports_strings():
    evil = "<img src=x onerror=alert(1)>"
    rep = _report([_rec(evil, 10, 100)], _rec(evil, 10, 100))
    rep.reason = f"lowest p50 within the budget: {evil} @ 1 vCPU"
    page = rep.recommendation_html()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def _small_spec(preset: str = "lean") -> SweepSpec:
    return SweepSpec(rounds=1, presets=[preset], cpus=[1], loadings=["resident"],
                     workload=Workload(steps=1, repeats=1))


@pytest.mark.slow  # a report and its rerun: trials in fresh processes
def test_a_rerun_measures_the_presets_the_report_saved(tiny_bundle_dir, tmp_path, monkeypatch,
                                                       lean_report):
    """Editing a shipped preset after the report must not change what its rerun measures;
    the rerun says which preset changed and how. (The report: a copy of conftest's
    `lean_report`, `_small_spec()`'s sweep, written once per run.)"""
    import shutil

    from tts_kit.runtime import sessions

    path = tmp_path / "r" / "report.json"
    path.parent.mkdir()
    shutil.copy(lean_report[0], path)
    saved = json.loads(path.read_text())
    monkeypatch.setitem(sessions.PRESETS, "lean",
                        sessions.PRESETS["lean"].replace(intra_op_num_threads=3,
                                                         enable_cpu_mem_arena=True))
    verdict = report.rerun_report(path, model=tiny_bundle_dir, progress=False,
                                  confirm_rounds=0)
    assert verdict.new.presets["lean"] == saved["presets"]["lean"]
    assert [r["threads"] for r in verdict.new.records] == [r["threads"] for r in saved["records"]]
    assert list(verdict.preset_changes) == ["lean"]
    changed = " ".join(verdict.preset_changes["lean"])
    assert "intra_op_num_threads" in changed and "enable_cpu_mem_arena False -> True" in changed
    assert "preset 'lean' changed since the report" in verdict.summary()


@pytest.mark.notebook
def test_no_report_file_names_the_home_directory_unless_asked(home_report, tmp_path,
                                                              monkeypatch, capsys):
    """report.json, report.ipynb (its parameters and papermill's metadata) and report.html
    of a model and output under the home directory: ``~/...`` unless --full-paths (which
    keeps the recorded paths; the page's banner is a display and always shows ``~``).
    Without the flag: `home_report`'s, shared with the end-to-end test, whose rerun
    checks that a report that says ``~/...`` still finds its model."""
    from tts_kit.cli import main

    rc, printed, err, home, model, short = home_report
    assert rc == 0, printed + err
    monkeypatch.setenv("HOME", str(home))
    spec = tmp_path / "quick.json"
    spec.write_text(json.dumps(_small_spec("low-memory").to_dict()))
    full = home / "full"
    rc = main(["report", "--model", str(model), "--sweep", str(spec), "--out", str(full),
               "--full-paths"])
    assert rc == 0, capsys.readouterr()
    for flag, out in ((False, short), (True, full)):
        for name in ("report.json", "report.ipynb", "report.html"):
            text = (out / name).read_text()
            if flag:
                assert name == "report.html" or str(model) in text, name
            else:
                assert str(home) not in text, name
                assert "~/models/tiny" in text, name
        recorded = json.loads((out / "report.json").read_text())["model"]["path"]
        assert recorded == (str(model) if flag else "~/models/tiny")


# -- the main job: the users' default, on the full stand-in (issue 13) --------------------


def _main_job_bench():
    """bench/main_job.py as a module: the README's main job, run and timed."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "main_job.py"
    spec = importlib.util.spec_from_file_location("main_job", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.notebook
def test_the_main_job_runs_on_the_full_standin(tmp_path):
    """`tts-kit report --out DIR` as README gives it, on a fresh cache: the default (full)
    stand-in built, its trials in fresh process trees with progress per trial, the stand-in
    announced, the report written and the answer printed. The sweep is the smallest
    (`bench/main_job.py --quick`: 2 trials, one short text); the default 20-trial sweep and
    its CPU budget are `bench/main_job.py`'s (docs/benchmarks.md), and the default sweep's
    size is checked without running it (test_the_report_command_defaults_to_the_full_sweep).

    Wall and CPU time are printed, not asserted beyond the full job's budget (a neighbour's
    load would fail a tighter bound, not the job)."""
    bench = _main_job_bench()
    job = bench.run_main_job(tmp_path, bench.QUICK_SWEEP)
    print(f"main job (--quick): {job.wall_s:.0f} s wall, {job.cpu_s:.0f} s CPU")
    assert job.returncode == 0, job.stderr[-2000:]
    assert bench.problems(job) == []
    assert "note: using a stand-in model (stand-in (full)" in job.stderr
    assert scale_note("full") in job.stderr
    trials = job.trials
    assert trials == 2
    assert f"/{trials} [" in job.stderr  # tqdm, one step per trial
    assert "trial/s" in job.stderr or "s/trial" in job.stderr
    data = job.report
    assert data["model"]["standin"]["scale"] == "full" and len(data["records"]) == trials
    assert all(r["status"] == "ok" for r in data["records"]), data["records"]
    assert (tmp_path / "reports" / "standin" / "report.html").is_file()
    # The answer on the terminal too: the conclusions and the serve line for the pick.
    assert "the answer (report.html starts with it):" in job.stdout
    assert f"Measured {trials} configuration(s)" in job.stdout
    assert "serve it: tts-kit serve --preset" in job.stdout or "Nothing fitted" in job.stdout
    assert job.cpu_s < bench.BUDGET_S, f"{job.cpu_s:.0f} s of CPU for the quick main job"


def test_the_report_command_defaults_to_the_full_sweep(monkeypatch, tmp_path):
    """README's main command (`tts-kit report --out DIR`, no --sweep) measures the default
    sweep: 20 trials on two cores (5 presets x 2 vCPU counts x 2 loadings), one per
    progress step. What bench/main_job.py times, checked here without running it."""
    from tts_kit.cli import main

    seen = {}

    def fake_make_report(**kwargs):
        seen.update(kwargs)
        raise report.ReportError("stop here")

    monkeypatch.setattr("tts_kit.report.make_report", fake_make_report)
    rc = main(["report", "--out", str(tmp_path / "r")])
    assert rc == 2 and seen["sweep"] is None and seen["model"] is None
    spec = SweepSpec.load(seen["sweep"])
    assert len(spec.presets) * len(spec.cpus) * len(spec.loadings) == 20


# -- the answer the report starts with (issue 13, section 2) ------------------------------


def _answer_report(pick_preset: str, loading: str = "resident") -> TuningReport:
    from tts_kit.runtime.sessions import PRESETS

    base = _rec("ort-default", 20.0, 500, threads=1)
    pick = _rec(pick_preset, 10.0, 400, loading=loading, threads=1)
    rep = _report([base, pick], pick)
    rep.presets = {p.name: p.to_dict() for p in PRESETS.values()}
    return rep


@pytest.mark.parametrize("name", ["supertonic-default", "seed-2vcpu", "low-memory", "lean"])
def test_the_snippet_builds_the_recommended_session_options(name):
    """Executed as pasted, the snippet builds the SessionOptions the pick was measured with
    (the thread count it got included); the preset JSON reads back as the same preset."""
    from tts_kit.runtime.sessions import SessionPreset, get_preset

    rep = _answer_report(name)
    ns: dict = {}
    exec(answer.session_snippet(rep), ns)  # noqa: S102 - the point of the test
    so, want = ns["so"], get_preset(name).session_options()
    assert so.intra_op_num_threads == 1
    for field in ("inter_op_num_threads", "execution_mode", "graph_optimization_level",
                  "enable_cpu_mem_arena", "enable_mem_pattern"):
        assert getattr(so, field) == getattr(want, field), field
    for key, value in get_preset(name).config_entries.items():
        assert so.get_session_config_entry(key) == value, key
    assert ns["providers"] == get_preset(name).provider_list()
    back = SessionPreset.from_dict(json.loads(answer.preset_json(rep)))
    assert back.session_options().enable_cpu_mem_arena == want.enable_cpu_mem_arena
    assert back.name == name


@pytest.mark.parametrize(("name", "loading"), [("lean", "paged"), ("low-memory", "resident")])
def test_the_serve_line_is_a_tts_kit_serve_command_with_the_pick(name, loading):
    """The report's serve line parses with the real CLI and serves the pick's preset, load
    policy and thread count; the HTML shows it."""
    import shlex

    from tts_kit.cli import _parser, cmd_serve

    rep = _answer_report(name, loading=loading)
    line = answer.serve_command(rep)
    argv = shlex.split(line)
    assert argv[:2] == ["tts-kit", "serve"]
    args = _parser().parse_args(argv[1:])
    assert args.func is cmd_serve
    assert (args.preset, args.loading, args.threads, args.workers) == (name, loading, 1, 1)
    assert html.escape(line) in answer.answer_html(rep)


def test_the_answer_puts_the_pick_next_to_the_default_as_ratios():
    rep = _answer_report("lean", loading="paged")
    rows = {r["key"]: r for r in answer.comparison(rep)}
    assert rows["p50_ms"]["ratio"] == pytest.approx(0.5)
    assert rows["peak_rss_mb"]["ratio"] == pytest.approx(0.8)
    page = answer.answer_html(rep)
    assert page.startswith('<div class="tts-kit-answer"><h2>The answer</h2><p><b>Use lean @ 1 '
                           "vCPU, paged, 2 steps</b> within the budget of 500 MB.")
    assert "0.50&times;" in page and "ort-default @ 1 vCPU, resident" in page
    assert "loading=&#x27;paged&#x27;" in page  # the load policy is said, escaped
    # The pick is the default: said so, no table of 1.00 ratios.
    same = _report([_rec("ort-default", 20.0, 500)], _rec("ort-default", 20.0, 500))
    assert "That is the default" in answer.answer_html(same)
    assert "&times;" not in answer.answer_html(same)
    assert dict(answer.spec_rows(rep))["memory budget"] == "500 MB"


def test_the_conclusions_say_what_matters_with_its_size_and_the_tie_set():
    from tts_kit.report.answer import conclusions
    from tts_kit.tuning.verdict import summary

    close = [_rec("lean", 100, 300), _rec("low-memory", 102, 305)]
    far = [_rec("lean", 100, 300), _rec("low-memory", 180, 310)]
    for recs, wants in ((close, ["What matters: preset: no difference beyond 5 % (lean against "
                                 "low-memory).", "These 2 are the same speed within 5 %"]),
                        (far, ["What matters: preset lean against low-memory: latency -44 % "])):
        rep = _report(recs, recs[0])
        rep.verdicts = summary(recs, None)
        said = conclusions(rep)
        assert all(any(line.startswith(w) for line in said) for w in wants), said
        assert TuningReport.from_dict(rep.to_dict()).verdicts == json.loads(
            json.dumps(rep.verdicts))  # kept in report.json under recommendation


_ENV_NOTEBOOK = """# %%
import os
import tts_kit
print(os.environ["MPLBACKEND"])
assert FAIL is False, "asked to fail"
"""


@pytest.mark.notebook
@pytest.mark.parametrize("fail", [False, True])
def test_a_kernel_gets_its_environment_without_changing_ours(tmp_path, fail):
    import os
    import threading

    from tts_kit.report.render import execute_notebook

    nb = tmp_path / "env_check.py"
    nb.write_text(_ENV_NOTEBOOK.replace("FAIL", repr(fail)))
    before = dict(os.environ)
    seen: set[str | None] = set()
    done = threading.Event()

    def watch() -> None:  # another thread of this process, while the kernel runs
        while not done.is_set():
            seen.add(os.environ.get("MPLBACKEND"))
            done.wait(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        if fail:
            with pytest.raises(ReportError, match="asked to fail"):
                execute_notebook(nb, tmp_path / "out.ipynb")
        else:
            execute_notebook(nb, tmp_path / "out.ipynb")
    finally:
        done.set()
        watcher.join()
    assert dict(os.environ) == before
    assert seen == {before.get("MPLBACKEND")}
    text = (tmp_path / "out.ipynb").read_text()
    assert "matplotlib_inline" in text  # the kernel had it


# -- a provisional answer, code to copy (issue 25) ---------------------------------------


def _busy_report(tmp_path) -> TuningReport:
    """The issue's busy sweep: trials got 40-79 % of their cores, and the pick measured
    again came out 1.7x its sweep figure; saved and loaded, as the CLI and notebook do."""
    base = _rec("ort-default", 5834.0, 500, threads=1, core_share=40.0, cpu_wait_percent=58.0,
                loadavg_before=3.2, loadavg_after=4.1)
    pick = _rec("lean", 1837.0, 400, threads=1, core_share=79.0, cpu_wait_percent=21.0,
                loadavg_before=3.9, loadavg_after=3.6)
    rep = _report([base, pick], pick)
    rep.extras["recommended_trial"] = dict(pick, p50_ms=3145.0)
    return TuningReport.load(rep.save(tmp_path / "report.json"))


def test_a_busy_machines_answer_says_provisional_first(tmp_path):
    rep = _busy_report(tmp_path)
    line = answer.provisional_line(rep)
    # The busy machine decides, and explains the re-measure that did not repeat.
    assert line.startswith("provisional: the machine was busy (2 of 2 trials got 40-79 % of "
                           "their cores, waiting 21-58 % of the time for one; load average "
                           "3.2-4.1 on 2 cores), so the figures did not repeat (the pick "
                           "measured again took 3,145 ms against 1,837 ms in the sweep: 1.7x, "
                           "outside the "
                           "5 % band that decides ties)")
    assert line.endswith(f"run `tts-kit report --rerun {tmp_path / 'report.json'}` on a quiet "
                         "machine")
    page = answer.answer_html(rep)
    first = page.split("<p", 2)[1]  # the page's first paragraph, before any pick
    assert "tts-kit-provisional" in first and "Provisional." in first
    assert "2 of 2 trials got 40-79 % of their cores" in first
    assert f"<code>tts-kit report --rerun {tmp_path / 'report.json'}</code>" in first
    assert "<b>Provisionally, use lean @ 1 vCPU" in page and "<b>Use " not in page
    # The terminal prints the conclusions: they open with the same line.
    assert answer.conclusions(rep)[0] == line + "."


def test_a_quiet_machines_remeasure_that_did_not_repeat_is_not_called_busy(tmp_path):
    """The quiet CI box (load 0.5-1.8 on 2 cores): trials at 87-99 % of their cores, the
    pick re-measured 1.3x its sweep figure. Provisional, for the figures, not the load."""
    pick = _rec("low-memory", 1775.0, 612, threads=2, core_share=98.0, cpu_wait_percent=1.0,
                loadavg_before=0.5, loadavg_after=1.0)
    base = _rec("ort-default", 2275.0, 700, threads=2, core_share=88.0, cpu_wait_percent=19.0,
                loadavg_before=1.2, loadavg_after=1.8)
    rep = _report([base, pick], pick)
    rep.extras["recommended_trial"] = dict(pick, p50_ms=2332.0)
    rep = TuningReport.load(rep.save(tmp_path / "report.json"))
    line = answer.provisional_line(rep)
    assert line.startswith("provisional: the figures did not repeat (the pick measured again "
                           "took 2,332 ms against 1,775 ms in the sweep: 1.3x")
    assert "busy" not in line and "measure more: `tts-kit report --rerun" in line
    assert answer.conclusions(rep)[0] == line + "."
    assert "Provisionally, use low-memory" in answer.answer_html(rep)
    note = compare_reports(rep, rep).contention[0]
    assert note.startswith("in the report, the figures did not repeat") and "busy" not in note
    rep.extras["contention"] = answer.contention(rep).to_dict()  # as report.json holds it
    assert rep.extras["contention"]["cause"] == "did not repeat"
    validate_report(rep.to_dict())


def test_a_quiet_machines_answer_is_a_plain_pick(tmp_path):
    pick = _rec("lean", 1837.0, 400, core_share=99.0, cpu_wait_percent=0.4,
                loadavg_before=0.1, loadavg_after=1.0)
    rep = _report([_rec("ort-default", 3000.0, 500, core_share=98.0), pick], pick)
    rep.extras["recommended_trial"] = dict(pick, p50_ms=1870.0)
    assert answer.provisional_line(rep) == ""
    assert "provisional" not in answer.answer_html(rep).lower()
    assert answer.conclusions(rep)[0].startswith("Measured 2 configuration(s)")


def test_the_pick_against_the_default_is_said_with_the_picks_own_verdict():
    """Regression: a pick tied with the fastest was shown as "1.25x the latency" of the
    default (two point figures), beside "the same speed within 7 %"."""
    rounds = {"ort-default": [[1500.0, 1510.0], [1880.0, 1890.0]],
              "lean": [[1870.0, 1880.0], [1890.0, 1900.0]]}
    recs = [_rec(p, float(np.mean(r)), peak, round_latencies_ms=r)
            for (p, r), peak in zip(rounds.items(), (600, 340))]
    rep = _report(recs, recs[1], budget=1000)
    line = next(x for x in answer.conclusions(rep) if x.startswith("Against the untuned"))
    assert line.startswith("Against the untuned default on the same vCPUs: latency +")
    assert "tied; peak -43 %" in line and "x the latency" not in line, line


def test_the_terminal_answer_of_tts_kit_report_says_provisional(tmp_path, capsys):
    from tts_kit.cli.tuning import _say_answer

    rep = _busy_report(tmp_path)
    _say_answer([tmp_path / "report.json"])
    out = capsys.readouterr().out
    assert out.splitlines()[2].strip().startswith("provisional: the machine was busy (")
    assert rep.extras["recommended_trial"]["p50_ms"] == 3145.0


def test_code_is_shown_in_boxes_with_a_copy_button():
    rep = _answer_report("lean", loading="paged")
    page = answer.answer_html(rep)
    blocks = re.findall(r'<div class="tts-kit-code"[^>]*><button[^>]*>copy</button>'
                        r'<pre class="tts-kit-(\w+)" style="([^"]*)"><code>(.*?)</code></pre>',
                        page, flags=re.S)
    assert [b[0] for b in blocks] == ["snippet", "serve", "preset"]
    assert all("monospace" in style for _, style, _ in blocks)
    # What the box holds is exactly what a reader copies: it still builds the options.
    ns: dict = {}
    exec(html.unescape(blocks[0][2]), ns)  # noqa: S102 - the point of the test
    assert ns["so"].intra_op_num_threads == 1
    assert html.unescape(blocks[1][2]) == answer.serve_command(rep)
    assert json.loads(html.unescape(blocks[2][2]))["name"] == "lean"


def test_a_rerun_on_a_busy_machine_says_so(tmp_path):
    old = _busy_report(tmp_path)
    quiet = _report([_rec("ort-default", 3000.0, 500, core_share=99.0, cpu_wait_percent=1.0),
                     _rec("lean", 1850.0, 400, core_share=98.0, cpu_wait_percent=0.5)],
                    _rec("lean", 1850.0, 400))
    notes = compare_reports(old, quiet).contention
    assert len(notes) == 1 and notes[0].startswith("in the report, the machine was busy (2 of 2 "
                                                   "trials got 40-79 % of their cores")
    assert compare_reports(quiet, old).contention[0].startswith("in this run, the machine was")


def _two_vcpu_sweep(lat_paged: float, seed: int) -> TuningReport:
    """A report of 2 presets x 1, 2 vCPUs x resident, paged, each in 3 rounds of 3 calls with
    5 % noise: 2 vCPUs 1.6x faster, paged half the peak at ``lat_paged`` the latency."""
    import numpy as np

    rng = np.random.default_rng(seed)
    recs = []
    for preset in ("lean", "ort-default"):
        for cpus in (1, 2):
            for loading, peak in (("resident", 620.0), ("paged", 330.0)):
                p50 = 1600.0 / (1.6 if cpus == 2 else 1) * (lat_paged if loading == "paged" else 1)
                rounds = [list(p50 * (1 + 0.05 * rng.standard_normal(3))) for _ in range(3)]
                recs.append(_rec(preset, p50, peak, cpus=cpus, loading=loading,
                                 round_latencies_ms=rounds, round_peak_rss_mb=[peak] * 3))
    from tts_kit.tuning.tune import SweepResult
    from tts_kit.tuning.verdict import summary

    pick, why = SweepResult(recs).recommend(1024)
    rep = _report(recs, pick, budget=1024)
    rep.reason, rep.verdicts = why, summary(recs, 1024)
    return rep


def test_compare_says_whether_two_reports_give_the_same_answer(tmp_path, capsys):
    from tts_kit.cli import main

    a, b = _two_vcpu_sweep(1.0, 1), _two_vcpu_sweep(1.0, 2)
    # Two runs of the same machine: the same pick (paged, by the fixed order: its cost is
    # shown inside the band), the same verdict on every dimension.
    assert a.recommended["loading"] == b.recommended["loading"] == "paged"
    assert a.recommended["cpus"] == 2 and "same speed within" in a.reason
    a.save(tmp_path / "a.json")
    b.save(tmp_path / "b.json")
    assert main(["report", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("holds: same pick;")
    assert "vCPUs 2 against 1: holds (latency -37 %" in out
    # A machine where paged costs 40 %: another pick, and the loading verdict differs.
    c = _two_vcpu_sweep(1.40, 3)
    assert c.recommended["loading"] == "resident"
    c.save(tmp_path / "c.json")
    assert main(["report", "--compare", str(tmp_path / "a.json"), str(tmp_path / "c.json")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("does NOT hold:") and "loading paged against resident: differs" in out
