# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Quickstart: load, synthesise, listen, measure
#
# The model cell below picks the bundle: `model_dir`, else `$TTS_KIT_MODEL_DIR`, else the
# official package's cache, else the built-in **stand-in** (same files, shapes and costs as
# Supertonic, random weights). With the stand-in the audio is noise; every time and memory
# figure is still measured here, on this machine.

# %% tags=["parameters"]
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
quick = False  # True: the smallest settings (CI runs every notebook this way)

# %%
from tts_kit import Bundle, resolve_model_dir
from tts_kit.widgets import banner

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
banner(bundle, source)

# %% [markdown]
# ## Synthesise and listen
#
# The player keeps the audio in memory (`SynthesisResult.wav_bytes()`); change the text,
# voice, steps or speed and press **Synthesize**.

# %%
from tts_kit import Engine
from tts_kit.widgets import Player

steps = 2 if quick else 5
engine = Engine(bundle)
# A time and a room number: the player shows what normalisation reads out loud.
player = Player(engine, text="The meeting starts at 10:30, in room 4.", lang="en", steps=steps)
player

# %% [markdown]
# ## Where the time goes
#
# Wall time of each stage of the synthesis above.

# %%
from tts_kit import plots

plots.stage_times(player.result, title=f"one synthesis, {steps} steps")

# %% [markdown]
# ## Memory, measured in a fresh process
#
# `tune.trial` loads the model and synthesises in a new process pinned to one vCPU, so the
# numbers are the model's own and not this notebook's. What it synthesises is a `Workload`:
# here the player's sentence and settings (`player.workload()`). The graph updates while it runs;
# at the end it shows the harness's timeline with the stage events (load, run, release).

# %%
from IPython.display import display

from tts_kit import tune
from tts_kit.widgets import LiveMemoryGraph

graph = LiveMemoryGraph(title="one trial in a fresh process (1 vCPU)")
display(graph)
record = graph.watch(
    tune.trial, bundle, "supertonic-default", player.workload(repeats=2 if quick else 5),
    cpus=1,
)

# %%
from tts_kit.records import select

select([record])[0]  # the figures at a glance; tts_kit.records.COLUMNS says what each means

# %%
graph.figure()
