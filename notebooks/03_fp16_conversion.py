# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # FP16 and INT8: size, memory, latency and fidelity, measured
#
# "FP16 saves about 40 % memory with no audible loss" is a GPU claim. On the CPU provider
# FP16 graphs gain casts and INT8 trades accuracy for size. `tts_kit.precision.convert`
# converts a bundle (the source is never modified) and measures what is true here: each
# precision loads and synthesises in a fresh process, on the same texts, seeds and noise.

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
# ## Convert to FP16 and measure

# %%
import tempfile
from pathlib import Path

from tts_kit import precision

work = Path(tempfile.mkdtemp(prefix="tts-kit-precision-"))
kw = dict(steps=2 if quick else 5, repeats=1 if quick else 3)  # texts: precision's default
fp16 = precision.convert(bundle.path, work / "fp16", to="fp16", **kw)
print(fp16.table())

# %% [markdown]
# ## FP16 with the duration predictor kept FP32, and INT8
#
# The public FP16 bundle keeps the duration predictor in FP32: a small graph whose output
# (the length of the audio) must not move.

# %%
fp16_dp32 = precision.convert(bundle.path, work / "fp16-dp32", to="fp16",
                              stages=["text_encoder", "vector_estimator", "vocoder"],
                              measure=not quick, **kw)
int8 = precision.convert(bundle.path, work / "int8", to="int8", **kw)
print(int8.table())

# %% [markdown]
# ## Size, memory and latency side by side (each row one fresh process)

# %%
import pandas as pd

rows = []
for label, rep in {"fp16": fp16, "fp16 (DP fp32)": fp16_dp32, "int8": int8}.items():
    for run in rep.runs:
        rows.append({"conversion": label, **run.to_dict()})
    for fid in rep.fidelity.values():
        rows[-1].update(snr_db=fid.waveform_snr_db, log_mel_db=fid.log_mel_distance_db,
                        fidelity="passed" if fid.passed else "FAILED")
cols = ["conversion", "precision", "provider", "status", "size_mb", "load_rss_mb",
        "peak_rss_mb", "load_s", "p50_s", "rtf", "snr_db", "log_mel_db", "fidelity"]
pd.DataFrame(rows).reindex(columns=cols)

# %% [markdown]
# ## Listen: FP32 against FP16 and INT8
#
# Synthesised here with the text, seed and steps the measurements used: any difference is
# the conversion's. The titles carry the fidelity the conversion report measured.

# %%
from tts_kit import Bundle, Engine
from tts_kit.widgets import ABPlayer

kw = dict(lang="en", steps=fp16.steps, seed=fp16.seed)
ref = Engine(bundle).synthesize(fp16.texts[0], **kw)
half = Engine(Bundle(work / "fp16")).synthesize(fp16.texts[0], **kw)
fid = fp16.fidelity["CPUExecutionProvider"]
ABPlayer(ref, half, labels=("FP32", "FP16"),
         title=f"FP16: SNR {fid.waveform_snr_db:.1f} dB, log-mel {fid.log_mel_distance_db:.2f} dB")

# %%
quant = Engine(Bundle(work / "int8")).synthesize(int8.texts[0], **kw)
fid = int8.fidelity["CPUExecutionProvider"]
ABPlayer(ref, quant, labels=("FP32", "INT8"),
         title=f"INT8: SNR {fid.waveform_snr_db:.1f} dB, log-mel {fid.log_mel_distance_db:.2f} dB")

# %%
import shutil

shutil.rmtree(work, ignore_errors=True)  # converted bundles can be large; keep nothing
