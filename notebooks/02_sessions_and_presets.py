# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Sessions and presets: what an ONNX Runtime session option does, measured
#
# ONNX Runtime's session options decide threads, allocator behaviour and graph fusion, and
# with them latency and memory. A *preset* is a named set of them. This notebook shows what
# each preset sets and measures one configuration at a time with the tuner; comparing all
# of them on this machine (and on others) is `03_sweeps_and_machines`. Every number comes
# from an isolated trial: a fresh process pinned to N vCPUs (emulating an N-vCPU instance)
# and killed past the memory budget (emulating a small instance).

# %% tags=["parameters"]
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
quick = False  # True: the smallest settings (CI runs every notebook this way)

# %%
from IPython.display import display

from tts_kit import Bundle, resolve_model_dir
from tts_kit.notebook.widgets import banner, lesson

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
display(banner(bundle, source))
lesson(bundle, "What a session preset costs in latency and memory, one trial at a time.",
       quick=quick)

# %% [markdown]
# ## The presets at a glance
#
# One column per preset: where it comes from, then each option it sets (blank: ONNX
# Runtime's default). What each option does is the table below it;
# `PRESETS[name].explain()` gives one preset's reasons in full.

# %%
from textwrap import shorten

import pandas as pd

from tts_kit.runtime.sessions import OPTION_DOCS, PRESETS

pd.DataFrame({name: {"from": shorten(p.source.split(":")[0], 40),
                     **{k: str(v) for k, v in p.set_options().items()}}
              for name, p in PRESETS.items()}).fillna("")

# %%

used = sorted({k for p in PRESETS.values() for k in p.set_options()})
with pd.option_context("display.max_colwidth", None):  # each doc whole, not cut mid-phrase
    display(pd.DataFrame({"what it does": [
        OPTION_DOCS.get(k, "a session config entry") for k in used]}, index=used))

# %% [markdown]
# ## The tuner
#
# Pick a preset, a thread count (0: as the preset says), the vCPUs and a memory budget,
# then **Run**: one isolated trial, graphed live, added to the table.

# %%
from tts_kit.core import contract
from tts_kit.notebook.widgets import SessionTuner
from tts_kit.tuning.workload import Workload

# What every trial below synthesises: the default measurement texts, language and voice.
workload = Workload(steps=2 if quick else contract.DEFAULT_STEPS, repeats=2 if quick else 5)
tuner = SessionTuner(bundle, workload)
tuner

# %%
record = tuner.run()  # the same as pressing Run once

# %%
tuner.graph.figure()  # the trial's memory over time, with its stages

# %% [markdown]
# ## What the work costs, and how far each stage is from the floor
#
# The cost model per stage: parameters and GFLOP per second of audio at the workload's
# flow steps, counted from the graphs; then one chunk measured in a fresh process against
# this machine's matrix-multiply peak (an ONNX Runtime MatMul at the same threads). A
# stage's time above its floor is what thread and session tuning can still win; the floor
# moves only with fewer steps or lower precision. The sentence under the table is computed
# from its figures.

# %%
from tts_kit.core import procfacts
from tts_kit.notebook.tuning_plots import roofline_figure
from tts_kit.tuning.roofline import measure_roofline

costs = measure_roofline(bundle, threads=min(2, procfacts.usable_cores()),
                         steps=workload.steps, repeats=1 if quick else 3)
display(costs.dataframe().round(3))
print(costs.sentence())
roofline_figure(costs)

# %% [markdown]
# ## What we measured, what to conclude

# %%
from tts_kit.notebook.widgets import model_summary, trust_line

if note := trust_line(tuner.records):  # first: the machine was too busy to trust the trials
    print(note)
print(f"{record['preset']} @ {record['cpus']} vCPU, {record['status']}: p50 "
      f"{record['p50_ms'] or 0:,.0f} ms, peak RSS {record['peak_rss_mb'] or 0:,.0f} MB.")
if len(tuner.records) > 1:  # the report's own rule: a tie set, then a fixed order
    from tts_kit.tuning.verdict import pick

    chosen = pick(tuner.records)
    if chosen.record:
        print(f"Of the {len(tuner.records)} trials, {chosen.reason}: "
              f"{chosen.record['preset']} @ {chosen.record['cpus']} vCPU.")
print(f"Measured on {model_summary(bundle)}. To compare every preset at 1, 2 and 4 vCPU and "
      "get a recommendation, open 03_sweeps_and_machines.")
