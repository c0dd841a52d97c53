# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
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
model_dir = None  # a bundle directory, or a Piper voice ("piper:joe-us"); None: discovery
quick = False  # True: the smallest settings (CI runs every notebook this way)
model_source = None  # where the model came from (set by `tts-kit report`)
report_json = None  # the report.json to render (set by `tts-kit report`); None: measure here
sweep = None  # without report_json: a SweepSpec dict or JSON path; None: the default (or quick)
out_dir = "reports/notebook"  # without report_json: where report.json goes (git-ignored)

# %%
from IPython.display import display

from tts_kit import resolve_model
from tts_kit.notebook.widgets import banner, lesson

bundle, source = resolve_model(model_dir)  # the one place the model is chosen (either family)
display(banner(bundle, source))
lesson(bundle, "Which session settings and load policy to use on this machine, what they "
       "save against ONNX Runtime's defaults, and whether the figures can be trusted.",
       quick=quick)

# %%
import time
from math import prod

from IPython.display import HTML, display

from tts_kit.report.spec import SweepSpec
from tts_kit.tuning import tune

if report_json is None:  # opened on its own: say how long the sweep will take, first
    spec = SweepSpec.load(sweep, quick=quick).effective()
    n_trials = prod(len(axis or [None]) for axis in (
        spec.presets, spec.cpus, spec.loadings, spec.steps, spec.batch_sizes)) + 1  # +1: the pick
    t0 = time.perf_counter()  # one trial of the grid's first configuration, timed
    tune.trial(bundle, spec.presets[0], spec.workload, cpus=min(spec.cpus))
    one_s = time.perf_counter() - t0
    display(HTML(
        f"<div style='border-left:4px solid #d39e00;background:#fffaf0;padding:6px 10px'>"
        f"<b>A long sweep starts now:</b> {n_trials} isolated trials ({len(spec.presets)} "
        f"presets x vCPUs {spec.cpus} x loadings {', '.join(spec.loadings)}, then the pick "
        f"measured again). One trial took {one_s:.0f} s just now, so expect about "
        f"{n_trials * one_s / 60:.0f} min. To render a report already made instead, set the "
        "<code>report_json</code> parameter; for a smaller sweep, <code>quick = True</code> "
        "or a <code>sweep</code> spec.</div>"))

# %%
from IPython.display import HTML

from tts_kit import report
from tts_kit.report import answer

if report_json is None:  # opened on its own: the same library call as `tts-kit report`
    report_json = report.write_report(out_dir, bundle, sweep=sweep, quick=quick)
tuning = report.TuningReport.load(report_json)
# The answer first: the pick, why, against the default, and how to apply it.
HTML(answer.answer_html(tuning))  # escaped: the reason quotes the report's names

# %% [markdown]
# ## What was measured, and where

# %%
from IPython.display import display

display(HTML("<h3>The sweep</h3>" + answer.rows_html(answer.spec_rows(tuning))))
HTML("<h3>The machine and the model</h3>" + answer.rows_html(answer.machine_rows(tuning)))

# %% [markdown]
# ## Every configuration
#
# The figures that decide, rounded; every field of every trial is in `report.json`.
# `cores %`: the share of its pinned cores a trial got; far below 100 the machine was busy
# and the answer above says it is provisional. `*`: on the Pareto front (no other
# configuration is both faster and smaller).

# %%
answer.sweep_table(tuning.records, pick=tuning.recommended)

# %%
from tts_kit.notebook import plots

plots.pareto(tuning.records, recommended=tuning.recommended, budget_mb=tuning.spec.mem_budget_mb,
             default=answer.default_record(tuning))

# %%
import html

# A sweep on a cluster (`--scheduler`): each machine's table, front and pick side by side.
# Machine labels come from the workers: escaped like every string of the report.
machines = tuning.machines()  # {} for a sweep on one machine: nothing is shown
if machines:
    display(HTML("<h2>Per machine</h2>"), tuning.machines_dataframe())
for machine, part in machines.items():
    display(HTML(f"<h3>{html.escape(machine)}</h3>{part.recommendation_html()}"),
            answer.sweep_table(part.records, pick=part.recommended), part.pareto_figure())

# %% [markdown]
# ## Latency: one configuration, three processes
#
# The recommended configuration's session creation, first call and steady p50, from the
# sweep's trial, from a second fresh process that measured it again (below, with its
# memory timeline), and from this notebook's kernel (not isolated, not pinned to the
# pick's vCPUs). They are different processes, so the figures differ by that much.

# %%
sample, kernel = answer.replay(tuning, bundle)  # the pick's settings, in this kernel
plots.latency_story(answer.latency_rows(tuning, kernel))

# %% [markdown]
# ## The recommended configuration, measured again with its memory timeline

# %%
pick = tuning.recommended or tuning.records[0]
again = tuning.extras["recommended_trial"]  # with its timeline and stage events
plots.memory_timeline(again, title=f"{pick['preset']} @ {pick['cpus']} vCPU, {pick['loading']}")

# %% [markdown]
# ## What the work costs, and how far each stage is from the floor
#
# Measured while the report was made: the pick's stages on one chunk against this
# machine's MatMul peak. The light part of a bar is what thread and session tuning can
# still win; the dark part (the floor) moves only with fewer steps or lower precision.

# %%
from tts_kit.report import cost_section

display(HTML(cost_section.costs_html(tuning.extras.get("costs"))))
cost_section.costs_figure(tuning.extras.get("costs"))

# %% [markdown]
# ## Listen, and where the time went (this kernel)

# %%
from IPython.display import Audio

display(Audio(data=sample.wav_bytes()))
plots.stage_times(sample, title=f"{sample.duration_s:.2f} s of audio, this kernel's call")

# %% [markdown]
# ## What we measured, what to conclude

# %%
HTML("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in answer.conclusions(tuning))
     + "</ul>")
