"""Each memory-relevant ONNX Runtime option on its own, against ``supertonic-default``.

The presets bundle several options; this changes one at a time from the official
package's settings, so each option's own effect shows: CPU arena and memory pattern
off, pre-packing off (``session.disable_prepacking``), thread spinning off, the graph
optimisation levels below ``all``, ``session.use_ort_model_bytes_directly`` (documented
to matter only for ORT-format models held in memory; the engine loads ``.onnx`` files),
``session.dynamic_block_base``, and glibc's mmap threshold. Every variant is an
isolated trial (`tts_kit.tuning.tune.sweep`) on the same bundle (the ``full`` stand-in by
default), cores and workload, in one run; the table prints ratios to the reference.

    python bench/options.py [--model DIR] [--scale full] [--cpus 2] [--repeats 5]
                            [--steps 8] [--rounds 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from _common import add_model_args, add_rounds_arg, model_dir, sweep_against

REFERENCE = "supertonic-default"


def variants() -> list:
    """supertonic-default, then one copy of it per option changed (named after the change)."""
    from tts_kit.runtime.sessions import get_preset

    base = get_preset(REFERENCE)

    def with_(label: str, **change):
        entries = {**base.config_entries, **change.pop("config_entries", {})}
        return dataclasses.replace(base, name=f"+{label}", config_entries=entries,
                                   notes={}, source=f"{REFERENCE} with {label}", **change)

    return [
        base,
        with_("arena off", enable_cpu_mem_arena=False),
        with_("mem pattern off", enable_mem_pattern=False),
        with_("prepacking off", config_entries={"session.disable_prepacking": "1"}),
        with_("spinning off", config_entries={"session.intra_op.allow_spinning": "0"}),
        with_("opt extended", graph_optimization_level="extended"),
        with_("opt basic", graph_optimization_level="basic"),
        with_("opt disabled", graph_optimization_level="disable"),
        with_("model bytes directly",
              config_entries={"session.use_ort_model_bytes_directly": "1"}),
        with_("dynamic block base 4", config_entries={"session.dynamic_block_base": "4"}),
        with_("mmap threshold 1 MB", malloc_mmap_threshold_kb=1024),
    ]


def main(argv: list[str] | None = None) -> int:
    from tts_kit.core import contract

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--cpus", type=int, default=None, help="pin every trial to N cores")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    add_rounds_arg(ap)
    ap.add_argument("--json", help="also write the records here")
    args = ap.parse_args(argv)

    return sweep_against(model_dir(args), variants(), args, REFERENCE,
                         label="option (one change)")


if __name__ == "__main__":
    sys.exit(main())
