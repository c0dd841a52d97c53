"""A sweep whose Dask scheduler dies, and ``--scheduler`` peers that are no scheduler.

The cluster runs in a process group of its own (a `LocalCluster` with processes, the tiny
stand-in), which the test kills mid-sweep; the peers are plain sockets on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tts_kit.cli import main
from tts_kit.tuning import cluster, tune

pytest.importorskip("distributed")

CLUSTER = (
    "import time\n"
    "from tts_kit.tuning.cluster import local_cluster\n"
    "c = local_cluster(2)\n"
    "print(c.scheduler.address, flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def doomed_cluster():
    """(scheduler address, the cluster's process) in a session of its own; killed after."""
    proc = subprocess.Popen([sys.executable, "-c", CLUSTER], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        address = proc.stdout.readline().strip()
        assert address.startswith("tcp://"), address
        yield address, proc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


@pytest.mark.slow  # its own Dask cluster, killed mid-sweep
def test_a_lost_scheduler_keeps_the_finished_trials_and_marks_the_rest_lost(
        doomed_cluster, tiny_bundle_dir, tmp_path, capsys, monkeypatch):
    address, proc = doomed_cluster
    first_ok = threading.Event()
    as_completed = tune.cf.as_completed

    def spy(futures, *args, **kwargs):  # the sweep's wait: kill once one trial is in
        for fut in as_completed(futures, *args, **kwargs):
            if fut.exception() is None and fut.result().get("status") == "ok":
                first_ok.set()
            yield fut

    monkeypatch.setattr(tune.cf, "as_completed", spy)

    def kill_after_first() -> None:
        if first_ok.wait(120):
            os.killpg(proc.pid, signal.SIGKILL)

    threading.Thread(target=kill_after_first, daemon=True).start()
    out = tmp_path / "x.json"
    t0 = time.monotonic()
    code = main(["tune", "--model", str(tiny_bundle_dir), "--presets",
                 "lean,low-memory,supertonic-default", "--cpus", "1", "--loading",
                 "resident", "--repeats", "1", "--steps", "2", "--scheduler", address,
                 "--json", str(out), "--quiet", "--stage-costs", "estimate"])
    took = time.monotonic() - t0
    captured = capsys.readouterr()
    last = captured.err.strip().splitlines()[-1]
    assert code == 1 and last.startswith("tts-kit tune: error: lost the Dask scheduler at "
                                         f"{address}"), captured.err
    assert "Traceback" not in captured.err and took < 90, took
    records = json.loads(out.read_text())["records"]
    assert len(records) == 3
    statuses = [r["status"] for r in records]
    assert "ok" in statuses, records
    lost = [r for r in records if r["status"] != "ok"]
    assert lost and all(r["error"].startswith("lost the Dask scheduler") for r in lost), lost
    assert all(r["preset"] and r["loading"] for r in lost)
    assert "lost the Dask scheduler" in captured.out  # the table shows why


@pytest.fixture
def silent_peer():
    """A TCP listener on 127.0.0.1 that accepts (the kernel does) and never speaks."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        yield f"tcp://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def http_peer():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _refused(args, capsys) -> str:
    t0 = time.monotonic()
    code = main(args)
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err and time.monotonic() - t0 < 15, err
    assert last.startswith("tts-kit tune: error:") and "internal" not in last, err
    return last


@pytest.mark.parametrize("peer", ["silent_peer", "http_peer"])
def test_a_peer_that_is_no_scheduler_is_refused_in_one_line(
        peer, request, monkeypatch, capsys, tiny_bundle_dir):
    address = request.getfixturevalue(peer)
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    last = _refused(["tune", "--model", str(tiny_bundle_dir), "--presets", "lean", "--cpus",
                     "1", "--quiet", "--scheduler", address], capsys)
    assert f"--scheduler {address}: the peer accepted the connection but" in last, last


@pytest.mark.parametrize("address", ["ucx://127.0.0.1:8786", "tls://127.0.0.1:8786",
                                     "tcp://[::1", "tcp://127.0.0.1:99999"])
def test_an_address_tts_kit_cannot_speak_to_is_one_line(address, capsys, tiny_bundle_dir):
    last = _refused(["tune", "--model", str(tiny_bundle_dir), "--presets", "lean", "--cpus",
                     "1", "--quiet", "--scheduler", address], capsys)
    assert f"--scheduler {address}:" in last, last


@pytest.mark.slow
@pytest.mark.notebook
def test_report_says_the_lost_scheduler_in_the_same_line_as_tune(
        doomed_cluster, tiny_bundle_dir, tmp_path, capsys, monkeypatch):
    """Regression: `tts-kit report --scheduler` whose scheduler died wrote its report and
    exited 0 without a word; it ends with tune's line (one helper) and exit 1, the
    finished trial kept in report.json and the others marked lost."""
    from tts_kit.report.spec import SweepSpec
    from tts_kit.tuning.workload import Workload

    address, proc = doomed_cluster
    first_ok = threading.Event()
    as_completed = tune.cf.as_completed

    def spy(futures, *args, **kwargs):  # the sweep's wait: kill once one trial is in
        for fut in as_completed(futures, *args, **kwargs):
            if fut.exception() is None and fut.result().get("status") == "ok":
                first_ok.set()
                os.killpg(proc.pid, signal.SIGKILL)
            yield fut

    monkeypatch.setattr(tune.cf, "as_completed", spy)
    spec = tmp_path / "sweep.json"
    spec.write_text(json.dumps(SweepSpec(
        presets=["lean", "low-memory", "supertonic-default"], cpus=[1], loadings=["resident"],
        workload=Workload(steps=2, repeats=1)).to_dict()))
    out = tmp_path / "report"
    code = main(["report", "--model", str(tiny_bundle_dir), "--sweep", str(spec), "--out",
                 str(out), "--scheduler", address])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 1 and last.startswith("tts-kit report: error: lost the Dask scheduler at "
                                         f"{address}"), err
    assert "Traceback" not in err and first_ok.is_set()
    statuses = [r["status"] for r in json.loads((out / "report.json").read_text())["records"]]
    assert "ok" in statuses and len(statuses) == 3, statuses
