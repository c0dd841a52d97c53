"""`lab.instances`: the article's instance table, measured with emulated
instances."""

from __future__ import annotations

from lab.instances import (
    ARTICLE_INSTANCES,
    Instance,
    format_instance_table,
    instance_table,
)

from tts_kit.core.procfacts import usable_cores
from tts_kit.tuning.workload import Workload


def test_each_instance_is_measured_pinned_and_within_its_memory(tiny_bundle_dir):
    cores = usable_cores()  # the affinity capped by a CPU quota
    small = Instance("1 vCPU / 1 GB", 1, 1024, {"peak_rss_mb": 890})
    starved = Instance("1 vCPU / 40 MB", 1, 40, {})
    huge = Instance("64 vCPU", 64, 65536, {"rtf": 0.01})
    rows = instance_table(tiny_bundle_dir, ["lean"], Workload(steps=1, repeats=1),
                          instances=[small, starved, huge], progress=False)
    assert [r["instance"] for r in rows] == ["1 vCPU / 1 GB", "1 vCPU / 40 MB", "64 vCPU"]
    ok, oom, skipped = rows
    assert ok["status"] == "ok" and ok["threads"] == 1
    assert ok["peak_rss_mb"] < 1024 and ok["rtf"] > 0
    assert ok["cpu_share_percent"] == ok["cpu_percent"] / 1
    assert ok["claimed"] == {"peak_rss_mb": 890}  # quoted, and kept apart from the figures
    assert oom["status"] == "oom"  # the budget really applies
    assert cores < 64 and skipped["measured"] is False and skipped["status"] == "not measured"
    assert skipped["peak_rss_mb"] is None and f"can use {cores}" in skipped["error"]
    table = format_instance_table(rows)
    assert "not measured" not in table.splitlines()[0]
    assert "needs 64 cores" in table and " oom " in table


def test_the_article_instances_carry_its_claims():
    assert [(i.cpus, i.mem_mb) for i in ARTICLE_INSTANCES] == [(1, 1024), (2, 2048), (4, 4096)]
    assert ARTICLE_INSTANCES[0].claimed["outcome"] == "OOM-killed"
