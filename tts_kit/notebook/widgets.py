"""Notebook widgets (ipywidgets): player, A/B player, normalisation playground, banners;
the live widgets (`tts_kit.notebook.live_widgets`) import from here too.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as W
from IPython.display import HTML

from tts_kit.core import contract
from tts_kit.core.textsafe import display_path
from tts_kit.models.supertonic.bundle import Bundle
from tts_kit.notebook import plots
from tts_kit.notebook.live_widgets import (  # noqa: F401  (re-exported)
    LiveMemoryGraph,
    SessionTuner,
    _png,
    live_loadtest,
)
from tts_kit.tuning.records import format_timings
from tts_kit.tuning.workload import Workload


def banner(bundle: Bundle, source: str | None = None) -> HTML:
    """An HTML banner naming the model, loud for a stand-in (plain HTML, for exports too).

    Example:
        >>> banner(Bundle.discover()).data.count("synthetic weights")  # doctest: +SKIP
        1
    """
    from tts_kit.models.supertonic.standin import scale_note

    where = f"<code>{html.escape(display_path(bundle.path))}</code>" + (
        f" ({html.escape(source)})" if source else "")
    size = f"{bundle.params / 1e6:.1f} M parameters"
    voices = html.escape(", ".join(bundle.voices))
    if getattr(bundle, "family", "supertonic") == "piper":
        body = (f"<b>{html.escape(bundle.label)}</b> (Piper voice, real weights, {size}, "
                f"{bundle.sample_rate} Hz) at {where}: voices {voices}.")
        style = "background:#e8f0fa;border:1px solid #58a;color:#1d3350"
    elif bundle.is_standin:
        scale = str((bundle.standin_info or {}).get("scale", "?"))
        body = (f"<b>Supertonic stand-in model</b> (scale <code>{html.escape(scale)}</code>, "
                f"{size}) at {where}: <b>{html.escape(scale_note(scale))}</b>. Set "
                "<code>TTS_KIT_MODEL_DIR</code> or the <code>model_dir</code> parameter to use "
                "the real model.")
        style = "background:#fff3cd;border:2px solid #d39e00;color:#5c4400"
    else:
        body = f"<b>Supertonic model</b> at {where}: {size}, voices {voices}."
        style = "background:#e8f4ea;border:1px solid #5a9;color:#1d4d2b"
    return HTML(f'<div class="tts-kit-banner" style="{style};padding:8px 12px;'
                f'border-radius:6px;margin:4px 0">{body}</div>')


def realistic_costs(model: Any) -> bool:
    """Whether ``model``'s costs are a real model's (a real model, or the full stand-in).

    Example:
        >>> realistic_costs(Bundle.discover())  # doctest: +SKIP
        True
    """
    from tts_kit.models.supertonic.standin import REALISTIC_SCALES

    if not getattr(model, "is_standin", False):
        return True
    return str((getattr(model, "standin_info", None) or {}).get("scale")) in REALISTIC_SCALES


def model_summary(model: Any) -> str:
    """One line naming ``model`` for a conclusion: its label, size and weights.

    Example:
        >>> model_summary(Bundle.discover())  # doctest: +SKIP
        'Supertonic stand-in (full): 98.9 M parameters, synthetic weights (costs realistic)'
    """
    size = f"{model.params / 1e6:.1f} M parameters"
    if not getattr(model, "is_standin", False):
        return f"{model.label}: {size}, real weights"
    costs = "costs realistic" if realistic_costs(model) else "costs NOT realistic"
    return f"{model.label}: {size}, synthetic weights ({costs})"


def lesson(model: Any, needs: str, *, costs: bool = True, quick: bool = False) -> HTML:
    """A box under a notebook's banner: what its lesson ``needs`` and whether this run's
    model gives it (``costs=False``: any model does).

    Example:
        >>> "the figures are the lesson" in lesson(Bundle.discover(), "...").data  # doctest: +SKIP
        True
    """
    label = html.escape(model_summary(model))
    mode = " (quick mode: CI's check that the notebook runs)" if quick else ""
    good, warn = "border-left:4px solid #5a9", "border-left:4px solid #d39e00;background:#fffaf0"
    real = "It needs a model with realistic costs (the real model or the full stand-in"
    if not costs:
        verdict, style = f"Any model teaches it; this run{mode} uses {label}.", good
    elif realistic_costs(model) and quick:  # real costs, of a smaller workload
        verdict, style = (
            f"{real}); this run{mode} uses {label}, but quick mode measures fewer settings and "
            "flow steps: the costs are real, the sample is smaller than the lesson's "
            "(<code>quick = False</code> for the whole lesson).", warn)
    elif realistic_costs(model):
        verdict, style = (f"{real}); this run{mode} uses {label}, so the figures are the "
                          "lesson.", good)
    else:
        verdict, style = (
            f"{real}: unset <code>TTS_KIT_STANDIN_SCALE</code> or set <code>model_dir</code>); "
            f"this run{mode} uses {label}, so <b>the figures below are NOT the lesson</b>: they "
            "show that the code runs, not what the lesson concludes.", warn)
    return HTML(f'<div class="tts-kit-lesson" style="{style};padding:6px 10px;margin:4px 0">'
                f"<b>This lesson:</b> {html.escape(needs)} {verdict}</div>")


def trust_line(records: Sequence[Any], *, cores: int | None = None) -> str:
    """One line for a notebook's conclusions when its records ran on a busy machine or
    vary too much (`tts_kit.tuning.contention.assess`), else "".

    Example:
        >>> trust_line([{"status": "ok", "core_share": 45.0, "cpu_wait_percent": 50.0}],
        ...            cores=2)[:37]
        'provisional: the machine was busy (1 '
    """
    from tts_kit.core import procfacts
    from tts_kit.tuning.contention import assess

    found = assess(list(records), cores=cores if cores is not None else
                   procfacts.usable_cores())
    if not found.provisional:
        return ""
    todo = ("run this notebook again on a quiet machine before drawing its conclusions"
            if found.busy else "measure more (more repeats) before trusting a difference")
    return f"provisional: {found.finding()}; {todo}."


def _audio_html(wav: bytes) -> str:
    b64 = base64.b64encode(wav).decode("ascii")
    return f'<audio controls src="data:audio/wav;base64,{b64}"></audio>'


class _StaticFallback:
    """Adds `_static` to a widget's display data, for pages without a widget manager."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if isinstance(bundle, dict):
            bundle.update(self._static())  # type: ignore[attr-defined]
        return bundle


def _timings_html(timings: dict[str, float], duration_s: float | None = None) -> str:
    rows = []
    total = timings.get("total", 0.0)
    for stage, ms in format_timings(timings):
        pct = 100 * ms / (1000 * total) if total else 0
        color = plots.STAGE_COLORS.get(stage, "#777")
        rows.append(
            f"<tr><td>{html.escape(str(stage))}</td><td style='text-align:right'>{ms:.1f} ms</td>"
            f"<td><div style='background:{color};height:10px;width:{pct * 2:.0f}px'></div>"
            "</td></tr>"
        )
    head = ""
    if duration_s is not None:
        rtf = total / max(duration_s, 1e-9)
        head = (f"<div><b>{duration_s:.2f} s</b> of audio in <b>{total * 1000:.0f} ms</b>"
                f" &middot; RTF <b>{rtf:.3f}</b></div>")
    return head + "<table style='font-size:12px'>" + "".join(rows) + "</table>"


class Player(_StaticFallback, W.VBox):
    """Synthesise and listen, with the controls the model has; bad input shows as one line.
    ``engine``: default, one on the discovered bundle; ``run``: synthesise once right away.

    Example:
        >>> Player(text="Hello.", run=False).synthesize().duration_s > 0  # doctest: +SKIP
        True
    """

    def __init__(
        self,
        engine: Any = None,
        # A time and a room number show what normalisation reads out ("read: ...").
        text: str = "The meeting starts at 10:30, in room 4.",
        lang: str = "en",
        voice: str | None = None,
        steps: int = contract.DEFAULT_STEPS,
        speed: float = contract.DEFAULT_SPEED,
        seed: int | None = 0,
        run: bool = True,
    ):
        if engine is None:
            from tts_kit.models.supertonic.engine import Engine

            engine = Engine()
        self.engine = engine
        model = engine.bundle
        langs = list(getattr(model, "languages", None) or contract.LANGUAGES)
        self.text = W.Textarea(value=text, layout=W.Layout(width="100%", height="60px"))
        self.lang = W.Dropdown(options=langs, value=lang if lang in langs else langs[0],
                               description="lang", layout=W.Layout(width="150px"))
        self.voice = W.Dropdown(options=model.voices, value=voice or model.default_voice,
                                description="voice", layout=W.Layout(width="160px"))
        self.steps = W.IntSlider(value=steps, min=contract.MIN_STEPS, max=32, description="steps")
        self.speed = W.FloatSlider(value=speed, min=contract.MIN_SPEED, max=contract.MAX_SPEED,
                                   step=0.05, description="speed")
        self.seed = W.IntText(value=-1 if seed is None else seed, description="seed (-1: new)",
                              style={"description_width": "initial"},
                              layout=W.Layout(width="170px"))
        self.button = W.Button(description="Synthesize", button_style="primary", icon="play")
        self.audio = W.Audio(format="wav", autoplay=False, loop=False)
        self.info = W.HTML()
        self.result: Any = None
        self.button.on_click(lambda _: self.synthesize())
        self.has_steps = bool(getattr(model.capabilities, "flow_steps", False))  # else not shown
        super().__init__([
            self.text,
            W.HBox([self.lang, self.voice, self.seed]),
            W.HBox([self.steps, self.speed, self.button] if self.has_steps
                   else [self.speed, self.button]),
            self.audio,
            self.info,
        ])
        self.add_class("tts-kit-player")
        if run:
            self.synthesize()

    def _static(self) -> dict[str, Any]:
        head = f"<pre>{html.escape(self.text.value)}</pre>"
        audio = _audio_html(self.audio.value) if self.audio.value else ""
        return {"text/html": head + audio + self.info.value}

    def workload(self, **changes: Any) -> Workload:
        """The current controls as a `Workload` (one text, seed -1 as 0), plus ``changes``.

        Example:
            >>> p = Player(text="Hello.", run=False)  # doctest: +SKIP
            >>> p.workload(repeats=2).texts, p.workload().voice  # doctest: +SKIP
            (('Hello.',), 'M1')
        """
        return Workload(texts=(self.text.value,), lang=self.lang.value, voice=self.voice.value,
                        steps=int(self.steps.value), speed=float(self.speed.value),
                        seed=max(0, int(self.seed.value))).replace(**changes)

    def synthesize(self) -> Any:
        """Synthesise with the current controls, show audio and times; returns the result."""
        self.button.disabled = True
        self.info.value = "<i>synthesising ...</i>"
        try:
            seed = None if self.seed.value < 0 else int(self.seed.value)
            result = self.engine.synthesize(
                self.text.value, lang=self.lang.value, voice=self.voice.value,
                steps=int(self.steps.value), speed=float(self.speed.value), seed=seed,
            )
        except ValueError as exc:
            self.info.value = f"<span style='color:#b00'>{html.escape(str(exc))}</span>"
            return None
        finally:
            self.button.disabled = False
        self.result = result
        self.audio.value = result.wav_bytes()
        read = html.escape(result.text)
        self.info.value = (_timings_html(result.timings, result.duration_s)
                           + f"<div style='color:#555;font-size:12px'>read: {read}</div>")
        return result


def _as_result(obj: Any) -> Any:
    """A `SynthesisResult` from itself or from a ``(wav, sample_rate)`` pair."""
    if isinstance(obj, tuple):
        import numpy as np

        from tts_kit.models.synthesis import SynthesisResult

        return SynthesisResult(wav=np.asarray(obj[0], np.float32), sample_rate=int(obj[1]),
                               text="")
    return obj


def _panel(result: Any, label: str) -> W.VBox:
    audio = W.Audio(value=result.wav_bytes(), format="wav", autoplay=False, loop=False)
    stats = (_timings_html(result.timings, result.duration_s) if result.timings
             else f"<div>{result.duration_s:.2f} s of audio</div>")
    return W.VBox([W.HTML(f"<b>{html.escape(label)}</b>"), audio, W.HTML(stats)])


class ABPlayer(_StaticFallback, W.VBox):
    """Two results (`SynthesisResult` or ``(wav, sample_rate)``) side by side: a player and
    stage times each, waveforms and spectrograms.

    Example:
        >>> ABPlayer(fp32_result, fp16_result, labels=("FP32", "FP16"))  # doctest: +SKIP
    """

    def __init__(self, a: Any, b: Any, labels: Sequence[str] = ("A", "B"),
                 title: str | None = None):
        self.a, self.b = a, b = _as_result(a), _as_result(b)
        self.figure = plots.ab_compare(a, b, labels=labels, title=title)
        self.image = W.Image(value=_png(self.figure), format="png",
                             layout=W.Layout(max_width="100%"))
        self.labels = list(labels)
        super().__init__([W.HBox([_panel(a, labels[0]), _panel(b, labels[1])]), self.image])
        self.add_class("tts-kit-abplayer")

    def _static(self) -> dict[str, Any]:
        cells = "".join(
            f"<td><b>{html.escape(label)}</b><br>{_audio_html(r.wav_bytes())}</td>"
            for label, r in zip(self.labels, (self.a, self.b))
        )
        img = base64.b64encode(self.image.value).decode("ascii")
        page = (f"<table><tr>{cells}</tr></table>"
                f'<img alt="waveforms and spectrograms" src="data:image/png;base64,{img}">')
        return {"text/html": page, "image/png": img}  # display data carries base64 text


class NormalizationPlayground(_StaticFallback, W.VBox):
    """Type text, see the normalised text, the rules that fired, the chunks, and (given a
    ``bundle``) the characters its indexer cannot read.

    Example:
        >>> NormalizationPlayground("오후 3시 15,000원", lang="ko").normalized  # doctest: +SKIP
        '오후 세 시 만 오천 원'
    """

    def __init__(self, text: str = "", lang: str = "ko", bundle: Bundle | None = None,
                 max_chars: int | None = None):
        self.bundle = bundle
        self.input = W.Textarea(value=text, continuous_update=True,
                                layout=W.Layout(width="100%", height="70px"))
        self.lang = W.ToggleButtons(options=["ko", "en"], value=lang)
        self.max_chars = W.IntText(value=max_chars or 0, description="chunk limit (0: default)",
                                   style={"description_width": "initial"})
        self.output = W.HTML()
        self.normalized = ""
        self.steps: list[Any] = []
        self.chunks: list[str] = []
        self.unsupported: list[str] = []
        for w in (self.input, self.lang, self.max_chars):
            w.observe(lambda _: self.update(), names="value")
        super().__init__([self.input, W.HBox([self.lang, self.max_chars]), self.output])
        self.add_class("tts-kit-playground")
        self.update()

    def _static(self) -> dict[str, Any]:
        return {"text/html": self.output.value}

    def update(self) -> None:
        """Re-run the normaliser on the current text (on every keystroke)."""
        from tts_kit.text import Normalizer, chunk

        text, lang = self.input.value, self.lang.value
        if not text.strip():
            self.output.value = "<i>type some text</i>"
            return
        norm = Normalizer(lang)
        try:
            self.normalized = norm.normalize(text)
            self.steps = list(norm.trace(text))
            self.chunks = chunk(self.normalized, lang, self.max_chars.value or None)
        except ValueError as exc:
            self.output.value = f"<span style='color:#b00'>{html.escape(str(exc))}</span>"
            return
        # A Piper voice reads phonemes, not an indexer's characters.
        if self.bundle is not None and hasattr(self.bundle, "indexer"):
            from tts_kit.text import unsupported_characters

            self.unsupported = unsupported_characters(self.normalized, self.bundle.indexer,
                                                      model_cleanup=True)
        rows = "".join(
            f"<tr><td><code>{html.escape(str(s.rule))}</code></td>"
            f"<td style='color:#a33'>{html.escape(str(s.before))}</td>"
            f"<td style='color:#262'>{html.escape(str(s.after))}</td></tr>"
            for s in self.steps
        ) or "<tr><td colspan=3><i>no rule changed the text</i></td></tr>"
        bad = ""
        if self.bundle is not None:
            bad = ("<div>all characters are readable by the model</div>" if not self.unsupported
                   else "<div style='color:#b00'>the model cannot read: "
                   + html.escape(" ".join(repr(c) for c in self.unsupported)) + "</div>")
        chunks = "".join(f"<li>[{len(c)}] {html.escape(c)}</li>" for c in self.chunks)
        self.output.value = (
            f"<div><b>before</b>: {html.escape(text)}</div>"
            f"<div><b>after</b>: <span style='background:#eef'>"
            f"{html.escape(self.normalized)}</span></div>"
            "<table style='font-size:12px'><tr><th>rule</th><th>before</th><th>after</th></tr>"
            f"{rows}</table>{bad}<div><b>{len(self.chunks)} chunk(s)</b><ol>{chunks}</ol></div>"
        )
