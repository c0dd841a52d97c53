# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Session tuning: presets, the tuner, sweeps, Pareto front, recommendation
#
# ONNX Runtime's session options decide threads, allocator behaviour and graph fusion, and
# with them latency and memory. Every number here comes from an isolated trial: a fresh
# process pinned to N vCPUs (emulating an N-vCPU instance) and killed past the memory
# budget (emulating a small instance).

# %% tags=["parameters"]
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
quick = False  # True: the smallest settings (CI runs every notebook this way)

# %%
from tts_kit import Bundle, resolve_model_dir
from tts_kit.notebook.widgets import banner

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
banner(bundle, source)

# %% [markdown]
# ## The presets, explained
#
# Each line: an option the preset sets, what it does, why.

# %%
from tts_kit.runtime.sessions import PRESETS

for name, preset in PRESETS.items():
    print(f"{name}  ({preset.source})")
    for line in preset.explain():
        print("   ", line)

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
tuner.run()  # the same as pressing Run once

# %% [markdown]
# ## A sweep
#
# Presets x vCPUs, each in isolation, with a progress bar. The Pareto front holds the
# configurations that no other beats on both latency and peak memory.

# %%
from tts_kit.experiments import tune
from tts_kit.experiments.records import FRAME_KEYS, frame

presets = ["supertonic-default", "low-memory"] if quick else list(PRESETS)
cpus = (1,) if quick else tune.default_cpus()  # 1, 2, 4 as far as this machine's cores allow
budget_mb = 1024
result = tune.sweep(bundle, presets, workload, cpus=cpus, mem_budget_mb=budget_mb)
frame(result.records, [*FRAME_KEYS, "pareto"])  # every field: result.dataframe()

# %%
recommended, reason = result.recommend(budget_mb)
print(reason)

# %%
from tts_kit.notebook import plots

plots.pareto(result.records, recommended=recommended, budget_mb=budget_mb)

# %% [markdown]
# ## The article's instance table, on this machine
#
# The deployment article reports idle RSS, peak RSS, CPU use and RTF for 1, 2 and 4 vCPU
# instances. Here each row is measured with the same emulation (cores pinned, RSS budget);
# rows for more vCPUs than this machine has are skipped. The article's figures are for
# the real model; with the stand-in, compare the shape (how the rows relate), not the MB.

# %%
from tts_kit.experiments.instances import format_instance_table, instance_table

presets = ["supertonic-default"] if quick else ["supertonic-default", "seed-2vcpu",
                                                "low-memory", "lean"]
rows = instance_table(bundle, presets, workload.replace(repeats=1 if quick else 3))
print(format_instance_table(rows))

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
from tts_kit.experiments import cluster

# On real machines: client = cluster.connect("tcp://SCHEDULER:8786")
client = cluster.local_cluster(1 if quick else 2)  # processes on 127.0.0.1, no dashboard
try:
    fleet = tune.sweep(bundle, ["supertonic-default", "low-memory"], workload, cpus=(1,),
                       mem_budget_mb=budget_mb, executor=cluster.TrialExecutor(client))
finally:
    client.close()
[(r["preset"], r["status"], r["worker"]["address"], round(r["p50_ms"] or 0, 1))
 for r in fleet.records]

# %% [markdown]
# Each machine (grouped by its fingerprint: CPU model, usable cores, memory, ONNX Runtime)
# gets its own Pareto front and recommendation. `tts-kit tune --scheduler ADDRESS` and
# `tts-kit report --scheduler ADDRESS` do the same from the command line.

# %%
from IPython.display import display

for machine, part in fleet.by_machine().items():
    pick, why = part.recommend(budget_mb)
    print(f"{machine}:\n  {why}")
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
