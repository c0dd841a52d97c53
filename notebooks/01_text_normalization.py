# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
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
quick = False  # True: the smallest settings (CI runs every notebook this way)

# %%
from tts_kit import Bundle, resolve_model_dir
from tts_kit.widgets import banner

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
banner(bundle, source)

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
pd.DataFrame(rows)

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
from tts_kit.widgets import NormalizationPlayground

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
# character (120 characters per chunk for Korean, 300 otherwise).

# %%
sentences = ["오늘 회의는 오전 10시에 시작합니다.", "자료는 3개의 파일로 나눠 보냈습니다."]
long_ko = text.normalize(" ".join(sentences * (4 if quick else 12)), "ko")
chunks = text.chunk(long_ko, "ko")
print(len(long_ko), "characters ->", len(chunks), "chunks of", [len(c) for c in chunks])
assert "".join(chunks).replace(" ", "") == long_ko.replace(" ", "")

# %%
from tts_kit import Engine, plots

result = Engine(bundle).synthesize(long_ko, lang="ko", steps=2 if quick else 5, seed=0)
print(f"{len(result.chunks)} chunks -> {result.duration_s:.1f} s of audio, RTF {result.rtf:.3f}")
plots.stage_times(result, title="a chunked Korean text")
