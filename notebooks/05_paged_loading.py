# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Paged loading: memory that really goes back
#
# On a box with little RAM the four graphs need not all stay loaded. `resident` keeps them;
# `paged` loads each stage just before it runs and releases it after (the session dropped,
# collected only if something still holds it, then `malloc_trim`, so the pages really leave
# the process: `del session; gc.collect()` alone leaves them with the C allocator);
# `budget:MB` keeps what fits, least recently used out.
#
# **The lesson needs the full stand-in (or the real model).** What paging gives back is the
# weights' share of the process's memory. On the tiny stand-in the weights are a few MB and
# ONNX Runtime itself is most of the memory, so paged and resident look alike; the
# conclusion below says which case this run is.

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
lesson(bundle, "Paged loading gives the weights' memory back between stages, at a price in "
       "load time per call; it shows only where the weights are most of the memory.",
       quick=quick)

# %% [markdown]
# ## What each stage costs
#
# RSS added by loading and by running each stage, measured in one fresh process, next to
# the memory article's estimated split (a claim, not a measurement).

# %%
from tts_kit.core import contract
from tts_kit.notebook import plots
from tts_kit.tuning.stage_costs import stage_costs
from tts_kit.tuning.workload import Workload

# What every measurement below synthesises (the default measurement texts and voice).
workload = Workload(steps=2 if quick else contract.DEFAULT_STEPS, repeats=2 if quick else 3)
costs = stage_costs(bundle, "supertonic-default", workload)
costs.dataframe().round(1)  # MB and seconds; costs.table() is the same as text

# %%
print({k: round(v, 1) for k, v in costs.split().items()}, "(percent, measured)")
plots.stage_cost_bars(costs)

# %% [markdown]
# ## Resident, paged and budget, each in a fresh process
#
# The budget leaves room for the largest stage and a bit more, well under all four, in
# the per-stage costs the trial's engine goes by (`resident_costs_mb`: estimated from
# the file sizes unless measured costs are handed to `Engine(stage_costs_mb=...)`). In the
# timelines, hatched spans are loads, solid spans runs, dotted lines releases.

# %%
from tts_kit.runtime.loading import resident_costs_mb, suggest_budget
from tts_kit.tuning import tune

resident_mb = resident_costs_mb(None, bundle)
budget = suggest_budget(resident_mb)  # room for the largest stage, under all four
print("costs the budget policy uses (MB):", resident_mb, "->", budget)
loadings = ["resident", "paged", budget] + ([] if quick else ["paged+notrim"])
records = {}
for loading in loadings:
    rec = tune.trial(bundle, "supertonic-default", workload, cpus=1, loading=loading)
    records[loading] = rec
    display(plots.memory_timeline(rec, title=f"{loading}: peak {rec['peak_rss_mb']:.0f} MB"))

# %%
from tts_kit.tuning.records import frame

frame(records.values())

# %% [markdown]
# ## Live: a paged trial
#
# The same measurement with the live graph: RSS rises for each stage and falls after its
# release.

# %%
from tts_kit.notebook.widgets import LiveMemoryGraph

graph = LiveMemoryGraph(title="paged, live")
display(graph)
live = graph.watch(tune.trial, bundle, "supertonic-default", workload, cpus=1,
                   loading="paged")

# %% [markdown]
# ## What we measured, what to conclude

# %%
res, paged = records["resident"], records["paged"]
print(f"Resident: peak {res['peak_rss_mb']:,.0f} MB, idle {res['idle_rss_mb']:,.0f} MB, "
      f"p50 {res['p50_ms']:,.0f} ms. Paged: peak {paged['peak_rss_mb']:,.0f} MB "
      f"({paged['peak_rss_mb'] / res['peak_rss_mb']:.0%} of resident), idle "
      f"{paged['idle_rss_mb']:,.0f} MB, p50 {paged['p50_ms']:,.0f} ms "
      f"({paged['p50_ms'] / res['p50_ms']:.1f}x): memory bought with load time per call.")
from tts_kit.tuning.verdict import compare  # the report's rule: worse, better or tied

lat, peak = compare(paged, res, "p50_ms"), compare(paged, res, "peak_rss_mb")
if lat and peak:
    print(f"Paged against resident, by the interval of the ratio (its calls resampled): "
          f"latency {lat.text()}, peak {peak.text()}.")
b = records[budget]
print(f"{budget}: peak {b['peak_rss_mb']:,.0f} MB ({b['peak_rss_mb'] / res['peak_rss_mb']:.0%} "
      f"of resident), p50 {b['p50_ms']:,.0f} ms ({b['p50_ms'] / res['p50_ms']:.1f}x resident, "
      f"{b['p50_ms'] / paged['p50_ms']:.1f}x paged).")
from tts_kit.notebook.widgets import model_summary, realistic_costs

split = costs.split()
print("Of the resident memory, measured: " + ", ".join(f"{k} {v:.0f} %" for k, v in split.items()))
runtime = split.get("runtime", 0.0)
if realistic_costs(bundle):
    # The stages' share is their weights and sessions plus their working memory (the split
    # above); paging releases both, so that, not the weights alone, is what it can give back.
    print(f"Measured on {model_summary(bundle)}: the stages (weights, sessions and working "
          f"memory) are {100 - runtime:.0f} % of the resident memory, which is what paging can "
          f"give back; paged gave back {1 - paged['peak_rss_mb'] / res['peak_rss_mb']:.0%} of "
          "the peak, since the stage that runs stays loaded while it runs.")
else:
    print(f"Measured on {model_summary(bundle)}: ONNX Runtime is {runtime:.0f} % of the memory "
          "and the weights little, so paging has little to give back here; the lesson shows "
          "on the full stand-in (the users' default) or the real model.")
