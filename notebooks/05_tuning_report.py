# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Tuning report
#
# A reproducible sweep: every record measured in an isolated process, the recommendation
# for the memory budget, and the fingerprint of the machine and model. The library measures
# and writes `report.json`; this notebook loads and draws it. `tts-kit report` writes the
# file, then runs this notebook headless on it and exports it; opened on its own, the
# notebook asks the library for the file first. `tts-kit report --rerun report.json`
# repeats the sweep and says what moved.

# %% tags=["parameters"]
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
quick = False  # True: the smallest settings (CI runs every notebook this way)
model_source = None  # where the model came from (set by `tts-kit report`)
report_json = None  # the report.json to render (set by `tts-kit report`); None: measure here
sweep = None  # without report_json: a SweepSpec dict or JSON path; None: the default (or quick)
out_dir = "."  # without report_json: where the library writes report.json

# %%
from tts_kit import Bundle, resolve_model_dir
from tts_kit.widgets import banner

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
banner(bundle, source)

# %%
from tts_kit import report

if report_json is None:  # opened on its own: the same library call as `tts-kit report`
    report_json = report.write_report(out_dir, bundle, sweep=sweep, quick=quick)
tuning = report.TuningReport.load(report_json)
spec = tuning.spec
spec.to_dict()

# %% [markdown]
# ## The machine

# %%
tuning.environment

# %% [markdown]
# ## The sweep

# %%
tuning.dataframe()

# %% [markdown]
# ## Recommendation

# %%
from IPython.display import HTML

HTML(tuning.recommendation_html())  # escaped: the reason quotes the report's names

# %%
tuning.pareto_figure()

# %%
import html

from IPython.display import display

# A sweep on a cluster (`--scheduler`): each machine's table, front and pick side by side.
# Machine labels come from the workers: escaped like every string of the report.
machines = tuning.machines()  # {} for a sweep on one machine: nothing is shown
if machines:
    display(HTML("<h2>Per machine</h2>"), tuning.machines_dataframe())
for machine, part in machines.items():
    display(HTML(f"<h3>{html.escape(machine)}</h3>{part.recommendation_html()}"),
            part.dataframe(), part.pareto_figure())

# %% [markdown]
# ## The recommended configuration, measured again with its memory timeline

# %%
from tts_kit import plots

pick = tuning.recommended or tuning.records[0]
again = tuning.extras["recommended_trial"]  # with its timeline and stage events
plots.memory_timeline(again, title=f"{pick['preset']} @ {pick['cpus']} vCPU, {pick['loading']}")

# %% [markdown]
# ## Listen and see the stage times (this kernel, the recommended settings)

# %%
from IPython.display import Audio, display

from tts_kit import Engine

engine = Engine(bundle, preset=tuning.preset_of(pick), loading=pick["loading"])
work = spec.workload.replace(steps=pick["steps"])  # what the sweep synthesised
sample = engine.synthesize(work.texts[0], lang=work.lang, voice=work.voice_for(bundle),
                           steps=work.steps, speed=work.speed, seed=work.seed)
display(Audio(data=sample.wav_bytes()))
plots.stage_times(sample, title=f"{sample.duration_s:.2f} s of audio, RTF {sample.rtf:.3f}")
