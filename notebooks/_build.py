"""Write the notebooks of this directory from the cell lists below (without outputs).

The notebooks are generated so that they stay thin (every cell calls the library),
consistent (the same parameters and model cell at the top of each) and reviewable as
Python. Edit this file, then run::

    python notebooks/_build.py

``tests/test_notebooks.py`` checks that the committed ``.ipynb`` files match it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

PARAMS = """\
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
quick = False  # True: the smallest settings (CI runs every notebook this way)"""

MODEL = """\
from tts_kit import Bundle, resolve_model_dir
from tts_kit.widgets import banner

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
banner(bundle, source)"""


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(text.strip("\n"))


def code(src: str, params: bool = False) -> nbformat.NotebookNode:
    cell = new_code_cell(src.strip("\n"))
    if params:
        cell.metadata["tags"] = ["parameters"]
    return cell


def head(title: str, intro: str, params: str = PARAMS) -> list[nbformat.NotebookNode]:
    return [md(f"# {title}\n\n{intro.strip()}"), code(params, params=True), code(MODEL)]


QUICKSTART = [
    *head(
        "Quickstart: load, synthesise, listen, measure",
        """
The model cell below picks the bundle: `model_dir`, else `$TTS_KIT_MODEL_DIR`, else the
official package's cache, else the built-in **stand-in** (same files, shapes and costs as
Supertonic, random weights). With the stand-in the audio is noise; every time and memory
figure is still measured here, on this machine.
""",
    ),
    md("""
## Synthesise and listen

The player keeps the audio in memory (`SynthesisResult.wav_bytes()`); change the text,
voice, steps or speed and press **Synthesize**.
"""),
    code("""
from tts_kit import Engine
from tts_kit.widgets import Player

steps = 2 if quick else 5
engine = Engine(bundle)
# A time and a room number: the player shows what normalisation reads out loud.
player = Player(engine, text="The meeting starts at 10:30, in room 4.", lang="en", steps=steps)
player
"""),
    md("## Where the time goes\n\nWall time of each stage of the synthesis above."),
    code("""
from tts_kit import plots

plots.stage_times(player.result, title=f"one synthesis, {steps} steps")
"""),
    md("""
## Memory, measured in a fresh process

`tune.trial` loads the model and synthesises in a new process pinned to one vCPU, so the
numbers are the model's own and not this notebook's. What it synthesises is a `Workload`:
here the player's sentence and settings (`player.workload()`). The graph updates while it runs;
at the end it shows the harness's timeline with the stage events (load, run, release).
"""),
    code("""
from tts_kit import tune
from tts_kit.widgets import LiveMemoryGraph

graph = LiveMemoryGraph(title="one trial in a fresh process (1 vCPU)")
display(graph)
record = graph.watch(
    tune.trial, bundle, "supertonic-default", player.workload(repeats=2 if quick else 5),
    cpus=1,
)
"""),
    code("""
from tts_kit.records import select

select([record])[0]  # the figures at a glance; tts_kit.records.COLUMNS says what each means
"""),
    code("graph.figure()"),
]

NORMALIZATION = [
    *head(
        "Text normalisation: lexicons, rules, rule trace, chunking",
        """
Supertonic reads characters, not phonemes: digits, symbols and acronyms must be spelled
out first. `tts_kit.text` does it for Korean and English; the engine calls it before
every synthesis (`Engine(normalize=True)`).
""",
    ),
    md("## The lexicons\n\nTerms read by pronunciation (built-in; extra files override them)."),
    code("""
from tts_kit import text
from tts_kit.text import lexicon

for lang in ("ko", "en"):
    lex = lexicon.load(lang)
    print(f"{lang}: {len(lex)} terms, e.g.", dict(list(lex.entries.items())[:8]))
"""),
    md("## Rules at work\n\nEach row: the input, the output, and the rules that fired."),
    code("""
import pandas as pd

examples = {
    "ko": ["2026년 8월 24일 오후 3시 30분", "FastAPI로 만든 SaaS의 TTS API", "사과 3개와 20명",
           "15,000원, 10:30, 6월", "AWS 비용이 12.5% 늘었다"],
    "en": ["On 12/25/2026 at 3:05 pm", "Dr. Smith paid $12.50 for the 1st SDK",
           "It was 1999, e.g. -3.5 degrees", "Call 555-0123 about the API"],
}
rows = []
for lang, texts in examples.items():
    norm = text.Normalizer(lang)
    for t in texts:
        rules = sorted({step.rule for step in norm.trace(t)})
        rows.append({"lang": lang, "before": t, "after": norm.normalize(t),
                     "rules": ", ".join(rules)})
pd.DataFrame(rows)
"""),
    md("## The rule trace of one sentence"),
    code("""
sentence = "2026년 8월 24일 오전 10:30, FastAPI 서버 비용 15,000원"
pd.DataFrame([{"rule": s.rule, "before": s.before, "after": s.after}
              for s in text.Normalizer("ko").trace(sentence)])
"""),
    md("""
## Playground

Type in the box: the normalised text, the rule trace, the characters this model cannot
read and the chunks update as you type.
"""),
    code("""
from tts_kit.widgets import NormalizationPlayground

playground = NormalizationPlayground("오후 3시에 GPU 2개로 TTS를 돌렸다 🚀", lang="ko",
                                     bundle=bundle)
playground
"""),
    md("""
## Unsupported characters

The engine refuses text with characters the model's indexer does not know, with the
list, instead of producing garbage. Normalisation removes emoji and symbols first.
"""),
    code("""
raw = "Price: 5€ ✓ → ok ☃"
print("raw:       ", text.unsupported_characters(raw, bundle.indexer))
print("normalised:", text.unsupported_characters(text.normalize(raw, "en"), bundle.indexer))
"""),
    md("""
## Chunking long text

`chunk` splits at sentence ends, then clause punctuation, then spaces, and never drops a
character (120 characters per chunk for Korean, 300 otherwise).
"""),
    code("""
sentences = ["오늘 회의는 오전 10시에 시작합니다.", "자료는 3개의 파일로 나눠 보냈습니다."]
long_ko = text.normalize(" ".join(sentences * (4 if quick else 12)), "ko")
chunks = text.chunk(long_ko, "ko")
print(len(long_ko), "characters ->", len(chunks), "chunks of", [len(c) for c in chunks])
assert "".join(chunks).replace(" ", "") == long_ko.replace(" ", "")
"""),
    code("""
from tts_kit import Engine, plots

result = Engine(bundle).synthesize(long_ko, lang="ko", steps=2 if quick else 5, seed=0)
print(f"{len(result.chunks)} chunks -> {result.duration_s:.1f} s of audio, RTF {result.rtf:.3f}")
plots.stage_times(result, title="a chunked Korean text")
"""),
]

TUNING = [
    *head(
        "Session tuning: presets, the tuner, sweeps, Pareto front, recommendation",
        """
ONNX Runtime's session options decide threads, allocator behaviour and graph fusion, and
with them latency and memory. Every number here comes from an isolated trial: a fresh
process pinned to N vCPUs (emulating an N-vCPU instance) and killed past the memory
budget (emulating a small instance).
""",
    ),
    md("## The presets, explained\n\nEach line: an option the preset sets, what it does, why."),
    code("""
from tts_kit.sessions import PRESETS

for name, preset in PRESETS.items():
    print(f"{name}  ({preset.source})")
    for line in preset.explain():
        print("   ", line)
"""),
    md("""
## The tuner

Pick a preset, a thread count (0: as the preset says), the vCPUs and a memory budget,
then **Run**: one isolated trial, graphed live, added to the table.
"""),
    code("""
from tts_kit.widgets import SessionTuner
from tts_kit.workload import Workload

# What every trial below synthesises: the default measurement texts, language and voice.
workload = Workload(steps=2 if quick else 5, repeats=2 if quick else 5)
tuner = SessionTuner(bundle, workload)
tuner
"""),
    code("""
tuner.run()  # the same as pressing Run once
"""),
    md("""
## A sweep

Presets x vCPUs, each in isolation, with a progress bar. The Pareto front holds the
configurations that no other beats on both latency and peak memory.
"""),
    code("""
from tts_kit import tune

presets = ["supertonic-default", "low-memory"] if quick else list(PRESETS)
cpus = (1,) if quick else tune.default_cpus()  # 1, 2, 4 as far as this machine's cores allow
budget_mb = 1024
result = tune.sweep(bundle, presets, workload, cpus=cpus, mem_budget_mb=budget_mb)
result.dataframe()
"""),
    code("""
recommended, reason = result.recommend(budget_mb)
print(reason)
"""),
    code("""
from tts_kit import plots

plots.pareto(result.records, recommended=recommended, budget_mb=budget_mb)
"""),
    md("""
## The article's instance table, on this machine

The deployment article reports idle RSS, peak RSS, CPU use and RTF for 1, 2 and 4 vCPU
instances. Here each row is measured with the same emulation (cores pinned, RSS budget);
rows for more vCPUs than this machine has are skipped. The article's figures are for
the real model; with the stand-in, compare the shape (how the rows relate), not the MB.
"""),
    code("""
from tts_kit.instances import format_instance_table, instance_table

presets = ["supertonic-default"] if quick else ["supertonic-default", "seed-2vcpu",
                                                "low-memory", "lean"]
rows = instance_table(bundle, presets, workload.replace(repeats=1 if quick else 3))
print(format_instance_table(rows))
"""),
    md("""
## A sweep across machines (Dask)

To tune for the boxes you deploy on, run the trials there: start `dask scheduler` on one
host and on each machine `dask worker tcp://SCHEDULER:8786 --nworkers 1 --nthreads 1
--resources trial=1` (`pip install 'tts_kit[dask]'`). `cluster.TrialExecutor` sends each
trial to a worker, one at a time per worker; each worker rebuilds the stand-in (or finds
the real model by its SHA-256) and stamps its records with its machine. Here a local
cluster on this machine stands in for the fleet: its workers share these cores, so it
shows the mechanics, not a comparison.
"""),
    code("""
from tts_kit import cluster

# On real machines: client = cluster.connect("tcp://SCHEDULER:8786")
client = cluster.local_cluster(1 if quick else 2)  # processes on 127.0.0.1, no dashboard
try:
    fleet = tune.sweep(bundle, ["supertonic-default", "low-memory"], workload, cpus=(1,),
                       mem_budget_mb=budget_mb, executor=cluster.TrialExecutor(client))
finally:
    client.close()
[(r["preset"], r["status"], r["worker"]["address"], round(r["p50_ms"] or 0, 1))
 for r in fleet.records]
"""),
    md("""
Each machine (grouped by its fingerprint: CPU model, usable cores, memory, ONNX Runtime)
gets its own Pareto front and recommendation. `tts-kit tune --scheduler ADDRESS` and
`tts-kit report --scheduler ADDRESS` do the same from the command line.
"""),
    code("""
from IPython.display import display

for machine, part in fleet.by_machine().items():
    pick, why = part.recommend(budget_mb)
    print(f"{machine}:\\n  {why}")
    display(plots.pareto(part.records, recommended=pick, budget_mb=budget_mb, title=machine))
"""),
]

FP16 = [
    *head(
        "FP16 and INT8: size, memory, latency and fidelity, measured",
        """
"FP16 saves about 40 % memory with no audible loss" is a GPU claim. On the CPU provider
FP16 graphs gain casts and INT8 trades accuracy for size. `tts_kit.precision.convert`
converts a bundle (the source is never modified) and measures what is true here: each
precision loads and synthesises in a fresh process, on the same texts, seeds and noise.
""",
    ),
    md("## Convert to FP16 and measure"),
    code("""
import tempfile
from pathlib import Path

from tts_kit import precision

work = Path(tempfile.mkdtemp(prefix="tts-kit-precision-"))
kw = dict(steps=2 if quick else 5, repeats=1 if quick else 3)  # texts: precision's default
fp16 = precision.convert(bundle.path, work / "fp16", to="fp16", **kw)
print(fp16.table())
"""),
    md("""
## FP16 with the duration predictor kept FP32, and INT8

The public FP16 bundle keeps the duration predictor in FP32: a small graph whose output
(the length of the audio) must not move.
"""),
    code("""
fp16_dp32 = precision.convert(bundle.path, work / "fp16-dp32", to="fp16",
                              stages=["text_encoder", "vector_estimator", "vocoder"],
                              measure=not quick, **kw)
int8 = precision.convert(bundle.path, work / "int8", to="int8", **kw)
print(int8.table())
"""),
    md("## Size, memory and latency side by side (each row one fresh process)"),
    code("""
import pandas as pd

rows = []
for label, rep in {"fp16": fp16, "fp16 (DP fp32)": fp16_dp32, "int8": int8}.items():
    for run in rep.runs:
        rows.append({"conversion": label, **run.to_dict()})
    for prov, fid in rep.fidelity.items():
        rows[-1].update(snr_db=fid.waveform_snr_db, log_mel_db=fid.log_mel_distance_db,
                        fidelity="passed" if fid.passed else "FAILED")
cols = ["conversion", "precision", "provider", "status", "size_mb", "load_rss_mb",
        "peak_rss_mb", "load_s", "p50_s", "rtf", "snr_db", "log_mel_db", "fidelity"]
pd.DataFrame(rows).reindex(columns=cols)
"""),
    md("""
## Listen: FP32 against FP16 and INT8

Synthesised here with the text, seed and steps the measurements used: any difference is
the conversion's. The titles carry the fidelity the conversion report measured.
"""),
    code("""
from tts_kit import Bundle, Engine
from tts_kit.widgets import ABPlayer

kw = dict(lang="en", steps=fp16.steps, seed=fp16.seed)
ref = Engine(bundle).synthesize(fp16.texts[0], **kw)
half = Engine(Bundle(work / "fp16")).synthesize(fp16.texts[0], **kw)
fid = fp16.fidelity["CPUExecutionProvider"]
ABPlayer(ref, half, labels=("FP32", "FP16"),
         title=f"FP16: SNR {fid.waveform_snr_db:.1f} dB, log-mel {fid.log_mel_distance_db:.2f} dB")
"""),
    code("""
quant = Engine(Bundle(work / "int8")).synthesize(int8.texts[0], **kw)
fid = int8.fidelity["CPUExecutionProvider"]
ABPlayer(ref, quant, labels=("FP32", "INT8"),
         title=f"INT8: SNR {fid.waveform_snr_db:.1f} dB, log-mel {fid.log_mel_distance_db:.2f} dB")
"""),
    code("""
import shutil

shutil.rmtree(work, ignore_errors=True)  # converted bundles can be large; keep nothing
"""),
]

PAGED = [
    *head(
        "Paged loading: memory that really goes back",
        """
On a box with little RAM the four graphs need not all stay loaded. `resident` keeps them;
`paged` loads each stage just before it runs and releases it after (collect, then
`malloc_trim`, so the pages really leave the process: `del session; gc.collect()` alone
leaves them with the C allocator); `budget:MB` keeps what fits, least recently used out.
""",
    ),
    md("""
## What each stage costs

RSS added by loading and by running each stage, measured in one fresh process, next to
the memory article's estimated split (a claim, not a measurement).
"""),
    code("""
from tts_kit import plots
from tts_kit.stage_costs import stage_costs
from tts_kit.workload import Workload

# What every measurement below synthesises (the default measurement texts and voice).
workload = Workload(steps=2 if quick else 5, repeats=2 if quick else 3)
costs = stage_costs(bundle, "supertonic-default", workload)
print(costs.table())
costs.dataframe()
"""),
    code("""
print({k: round(v, 1) for k, v in costs.split().items()}, "(percent, measured)")
plots.stage_costs(costs)
"""),
    md("""
## Resident, paged and budget, each in a fresh process

The budget leaves room for the largest stage and a bit more, well under all four, in
the per-stage costs the trial's engine goes by (`resident_costs_mb`: estimated from
the file sizes unless measured costs are handed to `Engine(stage_costs_mb=...)`). In the
timelines, hatched spans are loads, solid spans runs, dotted lines releases.
"""),
    code("""
from tts_kit import tune
from tts_kit.loading import resident_costs_mb

resident_mb = resident_costs_mb(None, bundle)
budget = f"budget:{max(max(resident_mb.values()) * 1.2, 0.6 * sum(resident_mb.values())):.0f}"
print("costs the budget policy uses (MB):", resident_mb, "->", budget)
loadings = ["resident", "paged", budget] + ([] if quick else ["paged+notrim"])
records = {}
for loading in loadings:
    rec = tune.trial(bundle, "supertonic-default", workload, cpus=1, loading=loading)
    records[loading] = rec
    display(plots.memory_timeline(rec, title=f"{loading}: peak {rec['peak_rss_mb']:.0f} MB"))
"""),
    code("""
import pandas as pd

from tts_kit.records import select

pd.DataFrame(select(records.values()))
"""),
    md("""
## Live: a paged trial

The same measurement with the live graph: RSS rises for each stage and falls after its
release.
"""),
    code("""
from tts_kit.widgets import LiveMemoryGraph

graph = LiveMemoryGraph(title="paged, live")
display(graph)
live = graph.watch(tune.trial, bundle, "supertonic-default", workload, cpus=1,
                   loading="paged")
"""),
]

REPORT_PARAMS = PARAMS + """
model_source = None  # where the model came from (set by `tts-kit report`)
report_json = None  # the report.json to render (set by `tts-kit report`); None: measure here
sweep = None  # without report_json: a SweepSpec dict or JSON path; None: the default (or quick)
out_dir = "."  # without report_json: where the library writes report.json"""

REPORT = [
    *head(
        "Tuning report",
        """
A reproducible sweep: every record measured in an isolated process, the recommendation
for the memory budget, and the fingerprint of the machine and model. The library measures
and writes `report.json`; this notebook loads and draws it. `tts-kit report` writes the
file, then runs this notebook headless on it and exports it; opened on its own, the
notebook asks the library for the file first. `tts-kit report --rerun report.json`
repeats the sweep and says what moved.
""",
        params=REPORT_PARAMS,
    ),
    code("""
from tts_kit import report

if report_json is None:  # opened on its own: the same library call as `tts-kit report`
    report_json = report.write_report(out_dir, bundle, sweep=sweep, quick=quick)
tuning = report.TuningReport.load(report_json)
spec = tuning.spec
spec.to_dict()
"""),
    md("## The machine"),
    code("tuning.environment"),
    md("## The sweep"),
    code("tuning.dataframe()"),
    md("## Recommendation"),
    code("""
from IPython.display import HTML

HTML(tuning.recommendation_html())  # escaped: the reason quotes the report's names
"""),
    code("tuning.pareto_figure()"),
    code("""
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
"""),
    md("## The recommended configuration, measured again with its memory timeline"),
    code("""
from tts_kit import plots

pick = tuning.recommended or tuning.records[0]
again = tuning.extras["recommended_trial"]  # with its timeline and stage events
plots.memory_timeline(again, title=f"{pick['preset']} @ {pick['cpus']} vCPU, {pick['loading']}")
"""),
    md("## Listen and see the stage times (this kernel, the recommended settings)"),
    code("""
from IPython.display import Audio, display

from tts_kit import Engine

engine = Engine(bundle, preset=tuning.preset_of(pick), loading=pick["loading"])
work = spec.workload.replace(steps=pick["steps"])  # what the sweep synthesised
sample = engine.synthesize(work.texts[0], lang=work.lang, voice=work.voice_for(bundle),
                           steps=work.steps, speed=work.speed, seed=work.seed)
display(Audio(data=sample.wav_bytes()))
plots.stage_times(sample, title=f"{sample.duration_s:.2f} s of audio, RTF {sample.rtf:.3f}")
"""),
]


def notebooks() -> dict[str, nbformat.NotebookNode]:
    """Every notebook, by file stem, ready to write."""
    out = {}
    for name, cells in (
        ("00_quickstart", QUICKSTART),
        ("01_text_normalization", NORMALIZATION),
        ("02_session_tuning", TUNING),
        ("03_fp16_conversion", FP16),
        ("04_paged_loading", PAGED),
        ("05_tuning_report", REPORT),
    ):
        nb = new_notebook(cells=[nbformat.from_dict(c) for c in cells])
        nb.metadata = {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        }
        # Stable cell ids, so regenerating gives byte-identical files.
        for i, cell in enumerate(nb.cells):
            cell["id"] = f"{name[:2]}-{i:02d}"
        nbformat.validate(nb)
        out[name] = nb
    return out


def main() -> int:
    """Write every notebook next to this file."""
    for name, nb in notebooks().items():
        path = HERE / f"{name}.ipynb"
        path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
        print(f"wrote {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
