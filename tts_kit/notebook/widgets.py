"""Notebook widgets (ipywidgets): player, A/B player, normalisation playground, tuner, live graph.

The widgets are thin: synthesis is `tts_kit.models.supertonic.engine.Engine`, normalisation
`tts_kit.text`, measurement `tts_kit.experiments.tune.trial` (an isolated process, via
`tts_kit.runtime.measure`), drawing `tts_kit.notebook.plots`. Figures are shown as PNG in an
``ipywidgets.Image``, which JupyterLab, classic Notebook and VS Code all render
without a matplotlib widget backend, and which can be updated from a worker thread.

Example:
    >>> from tts_kit import Engine
    >>> from tts_kit.notebook.widgets import Player
    >>> Player(Engine(), text="Hello there.")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import html
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as W
import psutil
from IPython.display import HTML

from tts_kit.core import contract, procfacts
from tts_kit.core.textsafe import display_path
from tts_kit.experiments.records import (
    PEAK_RSS_MB,
    SUMMARY_KEYS,
    Record,
    format_timings,
    format_value,
    heading,
    select,
    to_number,
)
from tts_kit.experiments.workload import Workload
from tts_kit.models.supertonic.bundle import Bundle
from tts_kit.notebook import plots


def banner(bundle: Bundle, source: str | None = None) -> HTML:
    """An HTML banner naming the model; a loud one when it is a stand-in.

    Plain HTML (not a widget), so it also shows in exported reports.

    Example:
        >>> banner(Bundle.discover()).data.count("synthetic weights")  # doctest: +SKIP
        1
    """
    from tts_kit.models.supertonic.standin import scale_note

    # The banner ends up in shared pages (report.html): no home directory, no raw markup
    # from the bundle (its voice names are file names anyone could have chosen).
    where = html.escape(display_path(bundle.path))
    src = f" ({html.escape(source)})" if source else ""
    if getattr(bundle, "family", "supertonic") == "piper":
        # A real voice from another family (`tts_kit.models.family`): say which one speaks.
        body = (
            f"<b>{html.escape(bundle.label)}</b> (Piper voice, real weights, "
            f"{bundle.params / 1e6:.1f} M parameters, {bundle.sample_rate} Hz) at "
            f"<code>{where}</code>{src}: voices "
            f"{html.escape(', '.join(bundle.voices))}."
        )
        style = "background:#e8f0fa;border:1px solid #58a;color:#1d3350"
    elif bundle.is_standin:
        info = bundle.standin_info or {}
        scale = html.escape(str(info.get("scale", "?")))
        # The scale decides whether the figures below mean anything for the real model.
        body = (
            f"<b>Supertonic stand-in model</b> (scale <code>{scale}</code>, "
            f"{bundle.params / 1e6:.1f} M parameters) at <code>{where}</code>{src}: "
            f"<b>{html.escape(scale_note(str(info.get('scale', '?'))))}</b>. Set "
            "<code>TTS_KIT_MODEL_DIR</code> or the <code>model_dir</code> parameter to use "
            "the real model."
        )
        style = "background:#fff3cd;border:2px solid #d39e00;color:#5c4400"
    else:
        body = (
            f"<b>Supertonic model</b> at <code>{where}</code>{src}: {bundle.params / 1e6:.1f} M "
            f"parameters, voices {html.escape(', '.join(bundle.voices))}."
        )
        style = "background:#e8f4ea;border:1px solid #5a9;color:#1d4d2b"
    return HTML(f'<div class="tts-kit-banner" style="{style};padding:8px 12px;'
                f'border-radius:6px;margin:4px 0">{body}</div>')


def _png(fig: Any) -> bytes:
    return plots.figure_png(fig, dpi=90)


def _audio_html(wav: bytes) -> str:
    b64 = base64.b64encode(wav).decode("ascii")
    return f'<audio controls src="data:audio/wav;base64,{b64}"></audio>'


class _StaticFallback:
    """Adds a static rendering to a widget's display data.

    JupyterLab renders the widget view (its renderer outranks these); a page without
    the widget manager (nbconvert HTML, a notebook viewer, an untrusted notebook) shows
    the fallback: what the widget showed when it was displayed.
    """

    def _static(self) -> dict[str, Any]:
        return {}

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if isinstance(bundle, dict):
            bundle.update(self._static())
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
    """Synthesise and listen: text, language, voice, steps, speed and seed controls.

    The audio widget gets the WAV bytes from memory (`SynthesisResult.wav_bytes`); no
    file is written. Bad input (empty text, characters the model cannot read) is shown
    in the widget as one line, not raised.

    Args:
        engine: the `Engine` to use (default: one on the discovered bundle).
        text, lang, voice, steps, speed, seed: the initial control values.
        run: synthesise once right away, so the player opens with audio.

    Example:
        >>> p = Player(text="Hello.", run=False)  # doctest: +SKIP
        >>> p.synthesize().duration_s > 0  # doctest: +SKIP
        True
    """

    def __init__(
        self,
        engine: Any = None,
        # Not the measurement texts (tts_kit.experiments.workload.DEFAULT_TEXTS): a time and a room
        # number show what normalisation reads out loud ("read: ..." below the audio).
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
        voices = engine.bundle.voices
        self.text = W.Textarea(value=text, layout=W.Layout(width="100%", height="60px"))
        self.lang = W.Dropdown(options=list(contract.LANGUAGES), value=lang, description="lang",
                               layout=W.Layout(width="150px"))
        self.voice = W.Dropdown(options=voices, value=voice or engine.bundle.default_voice,
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
        super().__init__([
            self.text,
            W.HBox([self.lang, self.voice, self.seed]),
            W.HBox([self.steps, self.speed, self.button]),
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
        """The current controls as a `Workload` (one text), plus ``changes``: measure what
        was just heard in an isolated trial. A new-noise seed (-1) becomes 0, since a
        measurement repeats the same noise.

        Example:
            >>> p = Player(text="Hello.", run=False)  # doctest: +SKIP
            >>> p.workload(repeats=2).texts, p.workload().voice  # doctest: +SKIP
            (('Hello.',), 'M1')
        """
        return Workload(texts=(self.text.value,), lang=self.lang.value, voice=self.voice.value,
                        steps=int(self.steps.value), speed=float(self.speed.value),
                        seed=max(0, int(self.seed.value))).replace(**changes)

    def synthesize(self) -> Any:
        """Synthesise with the current controls, load the audio, show times; returns the result."""
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

        from tts_kit.models.supertonic.engine import SynthesisResult

        return SynthesisResult(wav=np.asarray(obj[0], np.float32), sample_rate=int(obj[1]),
                               text="")
    return obj


def _panel(result: Any, label: str) -> W.VBox:
    audio = W.Audio(value=result.wav_bytes(), format="wav", autoplay=False, loop=False)
    stats = (_timings_html(result.timings, result.duration_s) if result.timings
             else f"<div>{result.duration_s:.2f} s of audio</div>")
    return W.VBox([W.HTML(f"<b>{html.escape(label)}</b>"), audio, W.HTML(stats)])


class ABPlayer(_StaticFallback, W.VBox):
    """Two results side by side: a player and stage times each, waveforms and spectrograms.

    ``a`` and ``b`` are `SynthesisResult` objects or ``(wav, sample_rate)`` pairs (e.g. the
    waveforms a `tts_kit.precision.ConversionReport` measured).

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
    """Type text, see the normalised text, the rules that fired, unsupported characters, chunks.

    Args:
        text: initial text.
        lang: ``ko`` or ``en``.
        bundle: when given, characters its indexer cannot read are listed.
        max_chars: chunk limit in model (NFKD) characters (default: the chunker's, 300).

    Example:
        >>> pg = NormalizationPlayground("오후 3시 15,000원", lang="ko")  # doctest: +SKIP
        >>> pg.normalized  # doctest: +SKIP
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
        """Re-run the normaliser on the current text (called on every keystroke)."""
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
        # A Piper voice reads phonemes (espeak-ng), not an indexer's characters.
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


def _child_pids() -> set[int]:
    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


def _is_worker(proc: psutil.Process) -> bool:
    """A process `run_isolated` spawned (not the multiprocessing resource tracker)."""
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return False
    return "spawn_main" in cmd and "resource_tracker" not in cmd


class LiveMemoryGraph(W.VBox):
    """RSS of an isolated trial, redrawn while it runs; stage events and budget at the end.

    `watch` calls a function that measures in a child process (`tts_kit.experiments.tune.trial`,
    `tts_kit.runtime.measure.run_isolated`, ...) on a worker thread. Meanwhile the calling
    thread samples the RSS of each new child process (`tts_kit.core.procfacts.rss_mb`) and redraws
    the
    graph every ``interval_s``. When the function returns, the graph is redrawn from
    the harness's own timeline and events (a `Measurement` or a record carrying
    ``timeline``/``events``), which are exact; the live samples are kept in
    `live_samples`. Works in JupyterLab: the figure is a PNG in an ``ipywidgets.Image``.

    Example:
        >>> from tts_kit.runtime.measure import run_isolated
        >>> g = LiveMemoryGraph(budget_mb=500)
        >>> m = g.watch(run_isolated, sum, [1, 2])  # doctest: +SKIP
    """

    def __init__(self, budget_mb: float | None = None, title: str = "memory",
                 interval_s: float = 0.3):
        self.budget_mb = budget_mb
        self.title = title
        self.interval_s = interval_s
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.status = W.HTML()
        self.live_samples: list[tuple[float, float]] = []
        self.fig = plots.memory_timeline([], budget_mb=budget_mb, title=title)
        self.image.value = _png(self.fig)
        super().__init__([self.image, self.status])
        self.add_class("tts-kit-memory-graph")

    def figure(self) -> Any:
        """The figure as last drawn (a plain matplotlib Figure)."""
        return self.fig

    def show(self, measured: Any, events: Sequence[tuple[float, str]] | None = None,
             title: str | None = None) -> None:
        """Draw a `Measurement`, a record with ``timeline``/``events``, or ``[(t, mb)]``."""
        self.fig = plots.memory_timeline(measured, events=events, budget_mb=self.budget_mb,
                                         title=title or self.title, fig=self.fig)
        self.image.value = _png(self.fig)

    def watch(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on a worker thread and graph its child's RSS live.

        Returns what ``fn`` returned; re-raises what it raised.
        """
        before = _child_pids() | {os.getpid()}
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = fn(*args, **kwargs)
            except BaseException as exc:  # re-raised on the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="tts_kit-live-trial", daemon=True)
        self.live_samples = []
        t0 = time.time()
        worker.start()
        current: psutil.Process | None = None
        last_draw = 0.0
        n_children = 0
        while worker.is_alive():
            worker.join(0.05)
            if current is None or not current.is_running():
                current = None
                for pid in sorted(_child_pids() - before):
                    try:
                        proc = psutil.Process(pid)
                    except psutil.Error:
                        continue
                    if _is_worker(proc):
                        current, n_children = proc, n_children + 1
                        before.add(pid)
                        break
            if current is not None:
                rss = procfacts.rss_mb(current.pid)
                if rss is None:  # the child is gone
                    current = None
                else:
                    self.live_samples.append((time.time() - t0, rss))
            now = time.time()
            if now - last_draw >= self.interval_s and self.live_samples:
                last_draw = now
                peak = max(r for _, r in self.live_samples)
                self.status.value = (f"<i>running ({now - t0:.1f} s, process {n_children}); "
                                     f"RSS {self.live_samples[-1][1]:.0f} MB, "
                                     f"max seen {peak:.0f} MB</i>")
                self.show(self.live_samples, events=[], title=f"{self.title} (live)")
        if "error" in box:
            err = box["error"]
            self.status.value = (f"<span style='color:#b00'>{type(err).__name__}: "
                                 f"{html.escape(str(err))}</span>")
            raise box["error"]
        result = box.get("result")
        self._final(result, time.time() - t0)
        return result

    def _final(self, result: Any, wall_s: float) -> None:
        timeline = plots._get(result, "timeline") if result is not None else None
        if timeline:
            self.show(result)
        elif self.live_samples:
            self.show(self.live_samples)
        status = plots._get(result, "status", "ok") if result is not None else "ok"
        peak = plots._get(result, PEAK_RSS_MB) if result is not None else None
        peak_txt = "" if to_number(peak) is None else f", peak RSS {peak:.0f} MB"
        self.status.value = (f"done in {wall_s:.1f} s: status <b>{html.escape(str(status))}</b>"
                             f"{peak_txt}")


def _records_html(records: Sequence[dict[str, Any]]) -> str:
    rows = select(records, SUMMARY_KEYS)
    cols = list(rows[0]) if rows else []
    head = "".join(f"<th>{html.escape(heading(c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(format_value(c, r[c]))}</td>"
                                    for c in cols) + "</tr>" for r in rows)
    return f"<table style='font-size:11px'><tr>{head}</tr>{body}</table>"


class SessionTuner(W.VBox):
    """Pick a preset, threads, vCPUs, memory budget and load policy; Run measures in isolation.

    Each Run is one `tts_kit.experiments.tune.trial` of ``workload`` (default: `Workload` with 3
    repeats; the steps and repeats sliders start from it and override it) in a fresh
    process pinned to the chosen vCPUs and killed past the budget, graphed live by a
    `LiveMemoryGraph`; the records of all runs so far are tabulated below (and kept in
    `records`).

    Example:
        >>> tuner = SessionTuner(Bundle.discover(), Workload(steps=2))  # doctest: +SKIP
        >>> tuner.run()["status"]  # doctest: +SKIP
        'ok'
    """

    def __init__(self, bundle: Bundle, workload: Workload | None = None,
                 presets: Sequence[str] | None = None):
        from tts_kit.runtime.sessions import PRESETS

        self.bundle = bundle
        # 3 repeats: a Run is a click in a notebook, it should answer in seconds.
        self.workload = Workload(repeats=3) if workload is None else workload
        names = list(presets or PRESETS)
        self.preset = W.Dropdown(options=names, value=names[0], description="preset")
        self.explain = W.HTML()
        # The affinity capped by a container's CPU quota: more would measure throttling.
        cores = procfacts.usable_cores()
        self.threads = W.IntSlider(value=0, min=0, max=max(8, cores),
                                   description="threads", tooltip="0: as the preset says")
        self.cpus = W.Dropdown(options=list(range(1, cores + 1)),
                               value=cores, description="vCPUs")
        self.budget = W.BoundedFloatText(value=0, min=0, max=1e6, step=64,
                                         description="budget MB (0: none)",
                                         style={"description_width": "initial"})
        self.loading = W.Text(value="resident", description="loading",
                              tooltip="resident, paged or budget:MB")
        self.steps = W.IntSlider(value=self.workload.steps, min=1, max=32, description="steps")
        self.repeats = W.IntSlider(value=self.workload.repeats, min=1, max=20,
                                   description="repeats")
        self.button = W.Button(description="Run", button_style="primary", icon="play")
        self.graph = LiveMemoryGraph(title="isolated trial")
        self.table = W.HTML()
        self.records: list[dict[str, Any]] = []
        self.preset.observe(lambda _: self._explain(), names="value")
        self.button.on_click(lambda _: self.run())
        super().__init__([
            W.HBox([self.preset, self.cpus, self.threads]),
            self.explain,
            W.HBox([self.budget, self.loading]),
            W.HBox([self.steps, self.repeats, self.button]),
            self.graph,
            self.table,
        ])
        self.add_class("tts-kit-tuner")
        self._explain()

    def _explain(self) -> None:
        from tts_kit.runtime.sessions import get_preset

        lines = get_preset(self.preset.value).explain()
        self.explain.value = "<ul style='font-size:11px'>" + "".join(
            f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"

    def current_preset(self) -> Any:
        """The chosen preset, with the thread override applied."""
        from tts_kit.runtime.sessions import get_preset

        preset = get_preset(self.preset.value)
        if self.threads.value:
            preset = preset.replace(name=f"{preset.name}+t{self.threads.value}",
                                    intra_op_num_threads=int(self.threads.value))
        return preset

    def run(self) -> dict[str, Any]:
        """Measure the current settings in isolation; returns the record (also tabulated),
        a `tts_kit.experiments.records.Record`: a dict that shows itself as one row, not every
        field."""
        from tts_kit.experiments import tune

        budget = float(self.budget.value) or None
        self.graph.budget_mb = budget
        self.button.disabled = True
        try:
            workload = self.workload.replace(steps=int(self.steps.value),
                                             repeats=int(self.repeats.value))
            record = self.graph.watch(
                tune.trial, self.bundle, self.current_preset(), workload,
                cpus=int(self.cpus.value), mem_budget_mb=budget,
                loading=self.loading.value.strip() or "resident",
            )
        finally:
            self.button.disabled = False
        record = Record(record)
        self.records.append(record)
        self.table.value = _records_html(self.records)
        return record


def live_loadtest(url: str, title: str = "load test", **load: Any) -> Any:
    """Run `tts_kit.serve.loadtest.run_load` on ``url``, redrawing `plots.load_levels`
    (percentiles and pool memory over time) after each level; returns the `LoadResult`.

    Example:
        >>> res = live_loadtest("http://127.0.0.1:8000", concurrency=[1, 2, 4],
        ...                     requests=8)  # doctest: +SKIP
    """
    from IPython.display import display

    from tts_kit.serve.loadtest import run_load

    handle = display(HTML(f"<i>{html.escape(title)}: running the first level ...</i>"),
                     display_id=True)

    def redraw(result: Any) -> None:
        fig = plots.load_levels(result.records, title=title)
        if handle is not None:
            handle.update(fig)

    load.setdefault("progress", False)
    return run_load(url, on_level=redraw, **load)
