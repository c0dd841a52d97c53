"""Sweeps on Dask distributed: a real LocalCluster (processes) on 127.0.0.1, the tiny stand-in.

The cluster has two workers with two threads each and one ``trial`` resource each: two
threads, so that a worker *could* run two trials at once and the resource is what stops
it. The model-lookup tests need no cluster.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from tts_kit.cli import main
from tts_kit.core import contract
from tts_kit.tuning import cluster
from tts_kit.tuning.tune import sweep
from tts_kit.tuning.workload import Workload

TEXTS = ["The quick brown fox."]
WORK = Workload(TEXTS, steps=2, repeats=2)


# -- the model on the worker (no cluster) -------------------------------------------------


@pytest.fixture(scope="module")
def real_copy(tiny_bundle_dir, tmp_path_factory) -> Path:
    """The tiny stand-in without its stand-in marker: a "real" model for the lookup."""
    out = tmp_path_factory.mktemp("real") / "model"
    shutil.copytree(tiny_bundle_dir, out)
    cfg = out / contract.CONFIG_FILE
    data = json.loads(cfg.read_text(encoding="utf-8"))
    data.pop(contract.STANDIN_KEY)
    cfg.write_text(json.dumps(data), encoding="utf-8")
    return out


def test_a_real_model_is_found_at_the_same_path_or_the_env_dir(real_copy, tmp_path, monkeypatch):
    ref = cluster.ModelRef.of(real_copy)
    assert ref.standin is None
    assert cluster.locate_on_worker(ref) == real_copy
    moved = dataclasses.replace(ref, path=str(tmp_path / "elsewhere"))
    monkeypatch.setenv("TTS_KIT_MODEL_DIR", str(real_copy))
    assert cluster.locate_on_worker(moved) == real_copy


def test_a_model_with_another_fingerprint_is_refused_naming_the_worker(real_copy, monkeypatch):
    ref = cluster.ModelRef.of(real_copy)
    other = dataclasses.replace(ref, fingerprint={**ref.fingerprint, "vocoder": "0" * 64})
    monkeypatch.delenv("TTS_KIT_MODEL_DIR", raising=False)
    with pytest.raises(cluster.ModelNotFound) as err:
        cluster.locate_on_worker(other, "tcp://10.0.0.6:1234")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("worker tcp://10.0.0.6:1234 has no copy")
    assert "different SHA-256 of vocoder" in msg and "$TTS_KIT_MODEL_DIR unset" in msg


def test_the_standin_is_rebuilt_on_the_worker_from_its_scale_and_seed(tiny_bundle_dir, tmp_path):
    ref = cluster.ModelRef.of(tiny_bundle_dir)
    assert ref.standin["scale"] == "tiny"
    away = dataclasses.replace(ref, path=str(tmp_path / "not-on-this-worker"))
    path = cluster.locate_on_worker(away)
    assert path != tiny_bundle_dir and cluster.locate_on_worker(away) == path  # cached
    from tts_kit.models.supertonic.bundle import Bundle

    assert Bundle(path).fingerprint() == ref.fingerprint  # seeded: the same graphs


def test_no_dask_is_one_line_and_exit_2(monkeypatch, capsys, tiny_bundle_dir):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if absent
    code = main(["tune", "--model", str(tiny_bundle_dir), "--presets", "lean", "--cpus", "1",
                 "--scheduler", "tcp://127.0.0.1:1", "--quiet"])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # after the stand-in note
    assert code == 2 and "Traceback" not in err and last.startswith("tts-kit tune: error:"), err
    assert "pip install 'tts_kit[dask]'" in last


# -- a real LocalCluster ----------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    with cluster.local_cluster(2, threads_per_worker=2) as c:
        yield c


def test_an_unreachable_scheduler_is_one_line_and_exit_2(monkeypatch, capsys, tiny_bundle_dir):
    pytest.importorskip("distributed")
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    code = main(["report", "--model", str(tiny_bundle_dir), "--out", "x",
                 "--scheduler", "tcp://127.0.0.1:1"])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err and last.startswith("tts-kit report: error:"), err
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in last


@pytest.mark.slow  # a local Dask cluster (5-15 s): out of the quick loop
def test_a_cluster_sweep_matches_the_local_one_one_trial_per_worker(client, tiny_bundle_dir):
    presets, steps = ["supertonic-default", "lean"], (1, 2)
    local = sweep(tiny_bundle_dir, presets, WORK, cpus=(1,), steps=steps, progress=False,
                  warmup=False, rounds=1)
    t0 = time.time()
    remote = sweep(tiny_bundle_dir, presets, WORK, cpus=(1,), steps=steps, progress=False,
                   executor=cluster.TrialExecutor(client), rounds=1)
    assert [r["status"] for r in remote.records] == [r["status"] for r in local.records]
    assert all(r["status"] == "ok" for r in remote.records), [r["error"] for r in remote.records]
    assert set(remote.records[0]) - set(local.records[0]) == {"machine", "worker"}
    assert set(local.records[0]) <= set(remote.records[0])
    assert [(r["preset"], r["steps"]) for r in remote.records] == \
        [(r["preset"], r["steps"]) for r in local.records]
    # The resource: a worker's trials never overlap, though each worker has two threads.
    spans: dict[str, list[tuple[float, float]]] = {}
    for r in remote.records:
        w = r["worker"]
        assert t0 <= w["start"] < w["end"]
        spans.setdefault(w["address"], []).append((w["start"], w["end"]))
    for address, ss in spans.items():
        ss.sort()
        assert all(a[1] <= b[0] for a, b in zip(ss, ss[1:])), (address, ss)
    # One machine here: both workers group under one label, with its own pick.
    (label, part), = remote.by_machine().items()
    assert label.startswith(remote.records[0]["machine"]["cpu_model"])
    assert part.recommend(None)[0] is not None


@pytest.mark.slow  # a local Dask cluster (5-15 s): out of the quick loop
def test_the_local_cluster_leaves_port_8787_alone(client):
    # Notebook 02 in the browser walk printed "UserWarning: Port 8787 is already in use"
    # under "no dashboard": the scheduler's HTTP server took the dashboard's default port.
    server = client.cluster.scheduler.http_server
    [(host, port)] = {s.getsockname()[:2] for s in server._sockets.values()}
    assert host == "127.0.0.1" and port != 8787


@pytest.mark.slow  # a local Dask cluster (5-15 s): out of the quick loop
def test_a_worker_with_another_fingerprint_refuses_the_trial(client, real_copy, monkeypatch):
    ex = cluster.TrialExecutor(client)
    ref = ex.ref(real_copy)
    # The client's copy differs from every worker's: as if the client had another model.
    ex._refs[str(real_copy)] = dataclasses.replace(
        ref, fingerprint={**ref.fingerprint, "text_encoder": "f" * 64})
    result = sweep(real_copy, ["lean"], WORK, cpus=(1,), progress=False, executor=ex, rounds=1)
    (rec,) = result.records
    assert rec["status"] == "error" and rec["preset"] == "lean" and rec["cpus"] == 1
    assert rec["error"].startswith("worker tcp://127.0.0.1:"), rec["error"]
    assert "different SHA-256 of text_encoder" in rec["error"] and "\n" not in rec["error"]
    assert rec["machine"]["cpu_model"] and rec["worker"]["address"] in rec["error"]


@pytest.mark.slow  # a local Dask cluster (5-15 s): out of the quick loop
def test_the_cli_tunes_on_the_cluster(client, tiny_bundle_dir, tmp_path, capsys):
    out = tmp_path / "tune.json"
    code = main(["tune", "--model", str(tiny_bundle_dir), "--presets", "lean", "--cpus", "1",
                 "--steps", "2", "--repeats", "1", "--quiet", "--json", str(out),
                 "--scheduler", client.scheduler.address])
    assert code == 0, capsys.readouterr()
    (rec,) = json.loads(out.read_text())["records"]
    assert rec["status"] == "ok" and rec["worker"]["address"].startswith("tcp://127.0.0.1:")


@pytest.mark.notebook  # renders 06_tuning_report in a fresh kernel
def test_a_report_on_the_cluster_compares_its_machines(client, tiny_bundle_dir, tmp_path,
                                                       capsys):
    pytest.importorskip("papermill")
    from tts_kit.report import SweepSpec, TuningReport

    spec = tmp_path / "sweep.json"
    spec.write_text(json.dumps(SweepSpec.quick().to_dict()), encoding="utf-8")
    out = tmp_path / "report"
    code = main(["report", "--model", str(tiny_bundle_dir), "--out", str(out), "--sweep",
                 str(spec), "--scheduler", client.scheduler.address])
    assert code == 0, capsys.readouterr().err
    rep = TuningReport.load(out / "report.json")  # schema-valid, with the new keys
    assert all(r["worker"]["address"].startswith("tcp://127.0.0.1:") for r in rep.records)
    (entry,) = rep.extras["machines"]
    parts = rep.machines()
    assert list(parts) == [entry["label"]]
    assert entry["recommendation"]["reason"] == parts[entry["label"]].reason
    assert rep.machines_dataframe()["machine"].tolist() == [entry["label"]]
    assert "worker" in rep.extras["recommended_trial"]  # measured again on a worker too
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Per machine" in html and entry["label"] in html


def _trial_running(pid: int) -> bool:
    """Whether the worker ``pid`` has a trial's spawned child (not the resource tracker)."""
    import psutil

    try:
        kids = psutil.Process(pid).children()
        return any("resource_tracker" not in " ".join(k.cmdline()) for k in kids)
    except psutil.Error:
        return False


@pytest.mark.slow  # a local Dask cluster (5-15 s): out of the quick loop
def test_a_worker_killed_mid_trial_is_an_error_record_and_the_sweep_goes_on(
        client, tiny_bundle_dir):
    # Last in the module: the killed worker's nanny starts a new one, which takes a while.
    pids = client.run(os.getpid)  # address -> the worker process
    killed: list[str] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for address, pid in pids.items():
                if _trial_running(pid):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(address)
                    return
            time.sleep(0.02)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    result = sweep(tiny_bundle_dir, ["supertonic-default", "lean", "low-memory"],
                   Workload(TEXTS, steps=2, repeats=4), cpus=(1,), progress=False,
                   executor=cluster.TrialExecutor(client), rounds=1)
    thread.join(5)
    assert killed, "no trial was seen running"
    statuses = [r["status"] for r in result.records]
    assert statuses.count("error") == 1 and statuses.count("ok") == 2, result.table()
    (lost,) = [r for r in result.records if r["status"] == "error"]
    assert lost["error"].startswith("executor: KilledWorker:") and "\n" not in lost["error"]
    assert "machine" not in lost  # the worker never said where it ran
    groups = result.by_machine()
    assert len(groups) == 2 and "unknown machine (worker lost)" in groups


def test_submit_never_holds_its_lock_while_asking_the_scheduler():
    """`Client.scheduler_info` is answered by Dask's IO loop, which also runs the done
    callbacks (`_release`, which takes the lock): asking it under the lock deadlocked a
    sweep (seen once in CI: the main thread waiting for the loop, the loop for the lock)."""
    import concurrent.futures as cf
    import threading

    blocked = []

    class Inner:
        def submit(self, fn, *args, **kwargs):
            return cf.Future()

    class LoopClient:
        def get_executor(self, **kwargs):
            return Inner()

        def scheduler_info(self):
            # Meanwhile the IO loop releases a trial that finished.
            t = threading.Thread(target=ex._release, args=(None,), daemon=True)
            t.start()
            t.join(timeout=3)
            blocked.append(t.is_alive())
            return {"workers": {"w1": {"resources": {cluster.RESOURCE: 1}}}}

    ex = cluster.TrialExecutor(LoopClient())
    ex._busy = 1  # one trial in flight, the only slot taken
    ex.submit(print, "x")
    assert blocked and not any(blocked)
    assert ex._busy == 1  # the finished trial's slot went to the new one
