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
# of them on this machine (and on others) is `02_sweeps_and_machines`. Every number comes
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
with pd.option_context("display.max_colwidth", None):  # each line whole, not cut at 50
    display(pd.DataFrame({"what it does": [
        shorten(OPTION_DOCS.get(k, "a session config entry"), 160) for k in used]}, index=used))

# %% [markdown]
# ## The tuner
#
# Pick a preset, a thread count (0: as the preset says), the vCPUs and a memory budget,
# then **Run**: one isolated trial, graphed live, added to the table.

# %%
from tts_kit.core import contract
from tts_kit.experiments.workload import Workload
from tts_kit.notebook.widgets import SessionTuner

# What every trial below synthesises: the default measurement texts, language and voice.
workload = Workload(steps=2 if quick else contract.DEFAULT_STEPS, repeats=2 if quick else 5)
tuner = SessionTuner(bundle, workload)
tuner

# %%
record = tuner.run()  # the same as pressing Run once

# %%
tuner.graph.figure()  # the trial's memory over time, with its stages

# %% [markdown]
# ## What we measured, what to conclude

# %%
from tts_kit.notebook.widgets import model_summary

print(f"{record['preset']} @ {record['cpus']} vCPU, {record['status']}: p50 "
      f"{record['p50_ms'] or 0:,.0f} ms, peak RSS {record['peak_rss_mb'] or 0:,.0f} MB.")
print(f"Measured on {model_summary(bundle)}. To compare every preset at 1, 2 and 4 vCPU and "
      "get a recommendation, open 02_sweeps_and_machines.")
