"""The stand-in beside the seeds' tables (`lab.seed_check`): the tables are
parsed from the seed files, the packaged copy equals the parse, and the ratios say when an
instance cannot be measured here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import seed_check as sc

from tts_kit.core.errors import TtsKitError
from tts_kit.tuning.records import IDLE_RSS_MB, PEAK_RSS_MB, RTF

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
PACKAGED = sc.seed_claims("/nowhere")  # no seed files there: the packaged copy


def test_the_packaged_copy_is_the_seed_files_parsed():
    if not SEEDS.is_dir():
        pytest.skip("../shared/seeds is absent")
    parsed = sc.seed_claims(SEEDS)
    assert parsed.sources["instances"].startswith("parsed from")
    assert parsed.instances == PACKAGED.instances and parsed.split == PACKAGED.split


def test_the_figures_quoted_elsewhere_are_the_seeds():
    from lab.instances import ARTICLE_INSTANCES

    from tts_kit.runtime.loading import ARTICLE_SPLIT_CLAIMED

    for inst, row in zip(ARTICLE_INSTANCES, PACKAGED.instances, strict=True):
        assert (inst.name, inst.cpus, inst.mem_mb) == (row["instance"], row["cpus"],
                                                       row["mem_mb"])
        assert {k: inst.claimed[k] for k in (*sc.COMPARED, "cpu_percent")} == {
            k: row[k] for k in (*sc.COMPARED, "cpu_percent")}
    assert ARTICLE_SPLIT_CLAIMED == PACKAGED.split
    assert "000_" in PACKAGED.sources["instances"] and "004_" in PACKAGED.sources["split"]


def test_parsing_a_seed_like_page():
    page = "\n".join([
        "some prose",
        "| 服务器实例规格 | 空闲状态内存 | 计算峰值内存 | 平均 CPU 占用率 | 实时系数 (RTF) "
        "| 节省 |",
        "|---|---|---|---|---|---|",
        "| 1 vCPU / 1GB RAM | 280 MB | 890 MB（风险） | 98% | 0.85（生成 1 秒） | $130 |",
        "| 8 vCPU / 16GB RAM | 1,5 MB | 2 MB | 9% | 0.05 | $1 |",
        "more prose",
        "| 组件 | 内存占比（估算） | 说明 |", "|---|---|---|", "| 模型权重 | ~40% | x |"])
    rows = sc.parse_instances(page)
    assert rows[0] == {"instance": "1 vCPU / 1 GB", "cpus": 1, "mem_mb": 1024,
                       IDLE_RSS_MB: 280.0, PEAK_RSS_MB: 890.0, "cpu_percent": 98.0, RTF: 0.85}
    assert rows[1]["instance"] == "8 vCPU / 16 GB" and rows[1]["mem_mb"] == 16384
    assert sc.parse_split(page) == {"weights": 40.0}
    with pytest.raises(TtsKitError, match="^seed 000: no table with an RTF column$"):
        sc.parse_instances("| a | b |\n|---|---|\n| 1 | 2 |")
    with pytest.raises(TtsKitError, match="^seed 004: no memory-split table$"):
        sc.parse_split("nothing here")


def test_ratios_and_an_instance_this_machine_cannot_hold():
    rows = [
        {"instance": "1 vCPU / 1 GB", "measured": True, "status": "oom", "error": "killed",
         IDLE_RSS_MB: 70.0, PEAK_RSS_MB: 1100.0, RTF: None},
        {"instance": "2 vCPU / 2 GB", "measured": True, "status": "ok",
         IDLE_RSS_MB: 160.0, PEAK_RSS_MB: 460.0, RTF: 0.56},
        {"instance": "4 vCPU / 4 GB", "measured": False, "status": "not measured",
         "error": "needs 4 cores, this process can use 2"},
    ]
    one, two, four = sc.instance_ratios(rows, PACKAGED)
    assert two[f"{IDLE_RSS_MB} ratio"] == pytest.approx(0.5)
    assert two[f"{PEAK_RSS_MB} ratio"] == pytest.approx(0.5)
    assert two[f"{RTF} ratio"] == pytest.approx(2.0) and two[f"seed {RTF}"] == 0.28
    assert one["status"] == "oom" and one[IDLE_RSS_MB] is None  # a failed trial: no figures
    assert four["status"] == "not measurable here" and "needs 4 cores" in four["note"]
    assert four[RTF] is None and four[f"seed {RTF}"] == 0.15
    split = sc.split_ratios({"weights and sessions (load)": 60.0, "working memory (run)": 33.0,
                             "runtime": 7.0}, PACKAGED)
    assert [r["seed %"] for r in split] == [40.0, 55.0, 5.0]
    assert [round(r["ratio"], 2) for r in split] == [1.5, 0.6, 1.4]
    text = sc.SeedCheck([one, two, four], split, PACKAGED.sources).table()
    assert "not measurable here (needs 4 cores" in text and "2.00" in text
    assert "inference cache + preprocessing + batch buffers" in text


def test_dataframes_are_rounded_as_the_text_table():
    pd = pytest.importorskip("pandas")
    # Notebook 02 showed the measured figures unrounded: 459.90625 MB, ratio 1.642522.
    rows = [{"instance": "1 vCPU / 1 GB", "measured": True, "status": "ok",
             IDLE_RSS_MB: 459.90625, PEAK_RSS_MB: 627.941406, RTF: 0.960888}]
    split = sc.split_ratios({"weights and sessions (load)": 75.059332,
                             "working memory (run)": 11.310389, "runtime": 13.630279},
                            PACKAGED)
    inst, parts = sc.SeedCheck(sc.instance_ratios(rows, PACKAGED), split,
                               PACKAGED.sources).dataframes()
    one = inst.loc["1 vCPU / 1 GB"]
    assert (one[("idle MB", "stand-in")], one[("peak MB", "stand-in")],
            one[("RTF", "stand-in")]) == (460.0, 628.0, 0.96)
    assert one[("idle MB", "ratio")] == 1.64 and one[("RTF", "ratio")] == 1.13
    assert one[("idle MB", "seed")] == 280.0 and one[("", "status")] == "ok"
    # An instance without figures says why in its status, not in a column of its own.
    four = inst.loc["4 vCPU / 4 GB"]
    assert four[("", "status")] == "not measured" and pd.isna(four[("RTF", "stand-in")])
    assert list(parts["stand-in %"]) == [75.1, 11.3, 13.6]
    assert list(parts["ratio"]) == [1.88, 0.21, 2.73]


@pytest.mark.slow
def test_seed_check_measures_the_tiny_standin(tiny_bundle_dir, tmp_path):
    from tts_kit.tuning.workload import Workload

    # Seed files of one instance each (one trial, not three), read from the folder given.
    (tmp_path / "000_a.txt").write_text("| spec | idle | peak | CPU | RTF |\n"
                                        "|---|---|---|---|---|\n"
                                        "| 1 vCPU / 1GB | 280 MB | 890 MB | 98% | 0.85 |\n")
    (tmp_path / "004_b.txt").write_text("| 组件 | 占比 |\n|---|---|\n| 模型权重 | 40% |\n"
                                        "| 推理缓存 | 55% |\n| 运行时开销 | 5% |\n")
    check = sc.seed_check(tiny_bundle_dir, Workload(steps=1, repeats=1), preset="lean",
                          seeds_dir=tmp_path)
    [one] = check.instances
    assert one["status"] == "ok" and one[f"{RTF} ratio"] > 0 and one[f"seed {RTF}"] == 0.85
    assert sum(r["stand-in %"] for r in check.split) == pytest.approx(100.0)
    assert re.fullmatch(r"parsed from .*004_b\.txt", check.sources["split"])
