"""The record vocabulary: every key named once, shown one way; the one NaN rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tts_kit.tuning import records
from tts_kit.tuning.records import (
    COLUMNS,
    NON_COLUMN_KEYS,
    RECORD_KEYS,
    format_value,
    heading,
    label,
    pareto_front,
    select,
    table,
    to_number,
)


def test_every_record_key_has_a_column_or_is_declared_non_numeric():
    for key in RECORD_KEYS:
        assert (key in COLUMNS) != (key in NON_COLUMN_KEYS), key


def test_every_key_is_documented_in_the_guide():
    hinted = set(RECORD_KEYS) | set(COLUMNS) | set(NON_COLUMN_KEYS)
    # What each key means is written once, in the guide's "Record keys".
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    section = guide.split("## Record keys", 1)[1].split("\n## ", 1)[0]
    for key in hinted:
        assert f"`{key}`" in section, key


def test_the_key_groups_name_only_known_columns():
    for group in (records.CONFIG_KEYS, records.LATENCY_KEYS, records.MEMORY_KEYS,
                  records.TABLE_KEYS, records.SUMMARY_KEYS, records.COST_KEYS):
        assert set(group) <= set(COLUMNS), group
    for key, col in COLUMNS.items():
        assert col.key == key and col.align in "<>"


def test_labels_and_headings_keep_the_names_the_faces_showed():
    assert label("peak_rss_mb") == "peak RSS (MB)" and label("p50_ms") == "p50 latency (ms)"
    assert [heading(k) for k in ("load_s", "idle_rss_mb", "p50_ms", "rtf", "cpu_percent",
                                 "cpu_ms", "batch_size")] == [
        "load s", "idle MB", "p50 ms", "RTF", "CPU %", "CPU ms", "bs"]
    assert label("unknown_key") == heading("unknown_key") == "unknown_key"


@pytest.mark.parametrize("value, expected", [
    (None, None), (math.nan, None), (math.inf, None), (True, None), ("12", None),
    (3, 3.0), (2.5, 2.5), (np.float32(1.5), 1.5), (np.int64(7), 7.0),
])
def test_to_number(value, expected):
    assert to_number(value) == expected


def test_format_value():
    assert format_value("p50_ms", 12.6) == "13"
    assert format_value("rtf", 0.1234) == "0.123"
    assert format_value("p50_ms", None) == format_value("p50_ms", math.nan) == "-"
    assert format_value("cpus", None) == "all" and format_value("cpus", 2) == "2"
    assert format_value("pareto", True) == "*" and format_value("pareto", None) == ""
    assert format_value("status", "oom") == "oom" and format_value("other", 1.23456) == "1.23456"


def test_table_aligns_configuration_left_and_figures_right():
    text = table([{"preset": "lean", "p50_ms": 12.3}, {"preset": "supertonic-default"}],
                 ["preset", "p50_ms"])
    assert text.splitlines() == ["preset              p50 ms",
                                 "lean                    12",
                                 "supertonic-default       -"]


def test_select_keeps_the_present_keys_in_order():
    rows = select([{"p50_ms": 1.0, "preset": "a", "timeline": [1]}, {"preset": "b"}])
    assert rows == [{"preset": "a", "p50_ms": 1.0}, {"preset": "b", "p50_ms": None}]


def test_pareto_front_leaves_out_unfinished_and_missing():
    recs = [{"status": "ok", "peak_rss_mb": 100, "p50_ms": 10},
            {"status": "ok", "peak_rss_mb": 120, "p50_ms": 12},
            {"status": "oom", "peak_rss_mb": 50, "p50_ms": 1},
            {"status": "ok", "peak_rss_mb": None, "p50_ms": 1},
            {"status": "ok", "peak_rss_mb": 150, "p50_ms": 5}]
    assert pareto_front(recs) == [0, 4]


def test_format_timings_in_pipeline_order():
    t = {"total": 0.05, "vocoder": 0.01, "text": 0.002, "duration_predictor": 0.003}
    assert records.format_timings(t) == [("text", 2.0), ("duration_predictor", 3.0),
                                         ("vocoder", 10.0)]


def test_every_key_has_one_named_constant():
    """Each key is bound to an upper-case name equal to its spelling."""
    hinted = set(RECORD_KEYS) | set(COLUMNS) | set(NON_COLUMN_KEYS)
    named = {v for k, v in vars(records).items()
             if k.isupper() and isinstance(v, str) and v in hinted and k == v.upper()}
    assert named == hinted


def test_p50_key_is_spelled_literally_in_at_most_three_files():
    """The vocabulary lives in records.py: other modules use ``records.P50_MS``."""
    from pathlib import Path

    import tts_kit

    root = Path(tts_kit.__file__).parent
    spelled = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                     if p.suffix in (".py", ".json") and '"p50_ms"' in p.read_text())
    assert len(spelled) <= 3, spelled
    assert "tuning/records.py" in spelled
