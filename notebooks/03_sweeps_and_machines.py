# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Sweeps and machines: every preset at every vCPU count, the Pareto front, a pick
#
# `02_sessions_and_presets` measured one configuration at a time; here a sweep measures
# presets x vCPUs, each in its own fresh process pinned to its cores and killed past the
# memory budget, keeps the configurations no other beats on both latency and peak memory
# (the Pareto front) and recommends one for a budget; then the deployment article's
# instance table on this machine, and the same sweep sent to other machines with Dask.

# %% tags=["parameters"]
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
quick = False  # True: the smallest settings (CI runs every notebook this way)

# %%
from IPython.display import display

from tts_kit import Bundle, resolve_model_dir
from tts_kit.core import contract
from tts_kit.notebook.widgets import banner, lesson
from tts_kit.tuning.workload import Workload

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
display(banner(bundle, source))
display(lesson(bundle, "Which preset and vCPU count is fastest, and which is smallest, for a "
               "memory budget.", quick=quick))  # not the cell's last line: displayed
# What every trial below synthesises: the default measurement texts, language and voice.
workload = Workload(steps=2 if quick else contract.DEFAULT_STEPS, repeats=2 if quick else 5)

# %% [markdown]
# ## A sweep
#
# Presets x vCPUs, each in isolation, with a progress bar. The Pareto front holds the
# configurations that no other beats on both latency and peak memory.

# %%
from tts_kit.runtime.sessions import PRESETS
from tts_kit.tuning import tune
from tts_kit.tuning.records import FRAME_KEYS, frame

presets = ["supertonic-default", "low-memory"] if quick else list(PRESETS)
cpus = (1,) if quick else tune.default_cpus()  # 1, 2, 4 as far as this machine's cores allow
budget_mb = 1024
rounds = 1 if quick else tune.DEFAULT_ROUNDS  # fresh trials per configuration, alternating
result = tune.sweep(bundle, presets, workload, cpus=cpus, mem_budget_mb=budget_mb,
                    rounds=rounds)
frame(result.records, [*FRAME_KEYS, "pareto"])  # every field: result.dataframe()

# %%
from tts_kit.notebook.widgets import trust_line

recommended, reason = result.recommend(budget_mb)
note = trust_line(result.records)  # a busy machine's pick is provisional: said first
print("\n".join(filter(None, [note, reason])))

# %%
from tts_kit.notebook import plots

plots.pareto(result.records, recommended=recommended, budget_mb=budget_mb)

# %% [markdown]
# ## A sweep across machines (Dask)
#
# To tune for the boxes you deploy on, run the trials there: start `dask scheduler` on one
# host and on each machine `dask worker tcp://SCHEDULER:8786 --nworkers 1 --nthreads 1
# --resources trial=1` (`pip install 'tts_kit[dask]'`). `cluster.TrialExecutor` sends each
# trial to a worker, one at a time per worker; each worker rebuilds the stand-in (or finds
# the real model by its SHA-256) and stamps its records with its machine. Here a local
# cluster on this machine stands in for the fleet: its workers share these cores, so it
# shows the mechanics, not a comparison.

# %%
from tts_kit.tuning import cluster

# On real machines: client = cluster.connect("tcp://SCHEDULER:8786")
client = cluster.local_cluster(1 if quick else 2)  # processes on 127.0.0.1, no dashboard
try:
    fleet = tune.sweep(bundle, ["supertonic-default", "low-memory"], workload, cpus=(1,),
                       mem_budget_mb=budget_mb, executor=cluster.TrialExecutor(client),
                       rounds=rounds)
finally:
    client.close()
[(r["preset"], r["status"], r["worker"]["address"], round(r["p50_ms"] or 0, 1))
 for r in fleet.records]

# %% [markdown]
# Each machine (grouped by its fingerprint: CPU model, usable cores, memory, ONNX Runtime)
# gets its own Pareto front and recommendation. `tts-kit tune --scheduler ADDRESS` and
# `tts-kit report --scheduler ADDRESS` do the same from the command line.

# %%
for machine, part in fleet.by_machine().items():
    pick, why = part.recommend(budget_mb)
    print(f"{machine}:\n  " + "\n  ".join(filter(None, [trust_line(part.records), why])))
    display(plots.pareto(part.records, recommended=pick, budget_mb=budget_mb, title=machine))

# %% [markdown]
# ## What we measured, what to conclude

# %%
ok = [r for r in result.records if r["status"] == "ok"]
fast = min(ok, key=lambda r: r["p50_ms"])
small = min(ok, key=lambda r: r["peak_rss_mb"])
print(f"{len(result.records)} configurations, each in its own fresh process; {len(ok)} finished.")
print(f"Fastest: {fast['preset']} @ {fast['cpus']} vCPU, p50 {fast['p50_ms']:,.0f} ms "
      f"(peak {fast['peak_rss_mb']:,.0f} MB). Smallest: {small['preset']} @ {small['cpus']} "
      f"vCPU, peak {small['peak_rss_mb']:,.0f} MB (p50 {small['p50_ms']:,.0f} ms).")
print(f"For a {budget_mb} MB budget: {reason}")
if note:
    print(note)
