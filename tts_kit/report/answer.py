"""The answer a report starts with: the pick, why, against the default, how to apply it."""

from __future__ import annotations

import html
import json
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tts_kit.core.textsafe import display_path
from tts_kit.report.document import TuningReport, key_text, record_key
from tts_kit.report.spec import SweepSpec  # noqa: F401 (the examples build reports with it)
from tts_kit.report.tables import TABLE_KEYS, rows_html, sweep_table  # noqa: F401 (answer.*)
from tts_kit.tuning import records as rk

if TYPE_CHECKING:
    from tts_kit.tuning.contention import Contention

#: The preset an untuned deployment runs with: ONNX Runtime's own defaults.
DEFAULT_PRESET = "ort-default"
#: The figures of the answer's comparison, lower is better for each.
ANSWER_KEYS: tuple[str, ...] = (rk.P50_MS, rk.P95_MS, rk.FIRST_MS, rk.LOAD_S, rk.PEAK_RSS_MB,
                                rk.IDLE_RSS_MB, rk.RTF)

# ORT's enum names for the preset's words.
_EXECUTION_MODE = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
_OPT_LEVEL = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC",
              "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}


#: Copies the code block's text; the clipboard API where the page may use it, else a
#: selected textarea (a page opened from a file, an older browser).
_COPY_JS = (
    "var b=this,t=b.parentNode.querySelector('pre').innerText;"
    "function ok(){b.textContent='copied';setTimeout(function(){b.textContent='copy'},1500)}"
    "function old(){var a=document.createElement('textarea');a.value=t;"
    "document.body.appendChild(a);a.select();document.execCommand('copy');a.remove();ok()}"
    "if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t)"
    ".then(ok,old)}else{old()}"
)
_CODE_STYLE = (
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',"
    "'Liberation Mono',monospace;font-size:12.5px;line-height:1.45;background:#f6f8fa;"
    "color:#1f2328;border:1px solid #d0d7de;border-radius:6px;padding:10px 72px 10px 12px;"
    "margin:0;overflow-x:auto;white-space:pre;text-align:left"
)
_BUTTON_STYLE = (
    "position:absolute;top:6px;right:6px;font:12px sans-serif;padding:2px 10px;"
    "border:1px solid #d0d7de;border-radius:4px;background:#fff;color:#1f2328;cursor:pointer"
)


def code_block(text: str, kind: str = "snippet") -> str:
    """``text`` (escaped) in a code box of class ``tts-kit-{kind}`` with a "copy" button,
    styled inline so report.html and JupyterLab show the same box.

    Example:
        >>> block = code_block("tts-kit serve --preset <x>", "serve")
        >>> '<pre class="tts-kit-serve"' in block, "&lt;x&gt;" in block, ">copy</button>" in block
        (True, True, True)
    """
    return (f'<div class="tts-kit-code" style="position:relative;margin:0.3em 0 1em">'
            f'<button type="button" class="tts-kit-copy" title="copy to the clipboard" '
            f'style="{_BUTTON_STYLE}" onclick="{_COPY_JS}">copy</button>'
            f'<pre class="tts-kit-{html.escape(kind)}" style="{_CODE_STYLE}"><code>'
            f"{html.escape(text.rstrip())}</code></pre></div>")


def _ok(rec: Mapping[str, Any] | None) -> bool:
    return bool(rec) and rec.get("status", "ok") == "ok"


def default_record(rep: TuningReport) -> dict[str, Any] | None:
    """The untuned deployment's record (``ort-default``, resident) at the pick's vCPUs,
    steps and batch, or None.

    Example:
        >>> d = {"preset": "ort-default", "cpus": 1, "loading": "resident", rk.P50_MS: 20.0}
        >>> default_record(TuningReport(SweepSpec(), [d], dict(d, preset="lean"), "", {}, {},
        ...                             {}))[rk.P50_MS]
        20.0
    """
    pick = rep.recommended
    if not pick:
        return None
    want = (DEFAULT_PRESET, pick.get("cpus"), "resident", pick.get("steps"))
    batches = (pick.get("batch_size", 1), None)  # a record without a batch ran one text
    return next((dict(r) for r in rep.records
                 if record_key(r)[:4] == want and record_key(r)[4] in batches), None)


def comparison(rep: TuningReport) -> list[dict[str, Any]]:
    """The pick's figures next to the default's, one row each with ``ratio`` = pick /
    default; empty without both.

    Example:
        >>> d = {"preset": "ort-default", "cpus": 1, "loading": "resident", rk.P50_MS: 20.0}
        >>> p = dict(d, preset="lean", p50_ms=10.0)
        >>> [(r["key"], r["ratio"]) for r in comparison(TuningReport(SweepSpec(), [d, p], p, "",
        ...                                                          {}, {}, {}))]
        [('p50_ms', 0.5)]
    """
    pick, base = rep.recommended, default_record(rep)
    if not _ok(pick) or not _ok(base):
        return []
    return [{"key": key, "figure": rk.COLUMNS[key].label, "unit": rk.COLUMNS[key].unit,
             "recommended": pick[key], "default": base[key],
             "ratio": float(pick[key]) / float(base[key]) if float(base[key]) else None}
            for key in ANSWER_KEYS if pick.get(key) is not None and base.get(key) is not None]


def _threads(rep: TuningReport, pick: Mapping[str, Any]) -> int | None:
    """The intra-op threads the pick's sessions got (what the snippet sets)."""
    preset = rep.presets.get(str(pick.get("preset")), {})
    given = (pick.get("threads"), preset.get("intra_op_num_threads"), pick.get("cpus"))
    return next((value for value in given if isinstance(value, int)), None)


def session_snippet(rep: TuningReport) -> str:
    """Python that builds the pick's ``onnxruntime.SessionOptions`` (``so``) and
    ``providers`` ("" when nothing fits); the load policy is a comment.

    Example:
        >>> p = {"preset": "x", "cpus": 1, "loading": "resident", "threads": 1}
        >>> ns = {}
        >>> exec(session_snippet(TuningReport(SweepSpec(), [p], p, "", {}, {}, {"x": {}})), ns)
        >>> ns["so"].intra_op_num_threads
        1
    """
    pick = rep.recommended
    if not pick:
        return ""
    preset = dict(rep.presets.get(str(pick.get("preset")), {}))
    lines = [
        f"# {key_text(record_key(pick))}: the recommendation of the tts_kit report of "
        f"{rep.created or 'this sweep'}",
        "import onnxruntime as ort",
        "",
    ]
    mmap_kb = preset.get("malloc_mmap_threshold_kb")
    if mmap_kb:
        lines += [
            "# Before any session exists: allocations above this size get their own mapping",
            "# and go back to the OS when freed (glibc's mallopt M_MMAP_THRESHOLD).",
            "import ctypes",
            "import ctypes.util",
            "",
            "_libc = ctypes.util.find_library(\"c\")",
            "if _libc:",
            f"    ctypes.CDLL(_libc).mallopt(-3, {int(mmap_kb)} * 1024)",
            "",
        ]
    lines.append("so = ort.SessionOptions()")
    threads = _threads(rep, pick)
    if threads is not None:
        lines.append(f"so.intra_op_num_threads = {threads}  # one per vCPU the pick ran on")
    if preset.get("inter_op_num_threads") is not None:
        lines.append(f"so.inter_op_num_threads = {int(preset['inter_op_num_threads'])}")
    for name, enum, words in (("execution_mode", "ExecutionMode", _EXECUTION_MODE),
                              ("graph_optimization_level", "GraphOptimizationLevel", _OPT_LEVEL)):
        if preset.get(name) in words:
            lines.append(f"so.{name} = ort.{enum}.{words[preset[name]]}")
    for name in ("enable_cpu_mem_arena", "enable_mem_pattern"):
        if preset.get(name) is not None:
            lines.append(f"so.{name} = {bool(preset[name])}")
    for key, value in sorted((preset.get("config_entries") or {}).items()):
        lines.append(f"so.add_session_config_entry({json.dumps(str(key))}, "
                     f"{json.dumps(str(value))})")
    providers = list(preset.get("providers") or ["CPUExecutionProvider"])
    options = preset.get("provider_options") or {}
    plist = [(p, dict(options[p])) if options.get(p) else p for p in providers]
    lines += [f"providers = {plist!r}", "# one session per graph, e.g.:",
              "# ort.InferenceSession(\"onnx/vocoder.onnx\", so, providers=providers)"]
    loading = str(pick.get("loading", "resident"))
    if loading != "resident":
        lines += [f"# Load policy {loading!r} (not a session option): with tts_kit,",
                  f"# Engine(bundle, preset=SessionPreset.from_dict(PRESET), loading={loading!r})"]
    return "\n".join(lines) + "\n"


def serve_command(rep: TuningReport) -> str:
    """The `tts-kit serve` line that serves the pick with one worker, or "".

    Example:
        >>> p = {"preset": "lean", "cpus": 2, "loading": "paged", "status": "ok"}
        >>> rep = TuningReport(SweepSpec(), [p], p, "", {}, {}, {"lean": {"name": "lean"}})
        >>> serve_command(rep)
        'tts-kit serve --preset lean --loading paged --threads 2 --workers 1'
    """
    pick = rep.recommended
    if not pick:
        return ""
    parts = ["tts-kit", "serve", "--preset", shlex.quote(str(pick.get("preset"))),
             "--loading", shlex.quote(str(pick.get("loading", "resident")))]
    threads = _threads(rep, pick)
    if threads is not None:
        parts += ["--threads", str(threads)]
    return " ".join([*parts, "--workers", "1"])


def preset_json(rep: TuningReport) -> str:
    """The recommended preset as JSON (`tts_kit.runtime.sessions.SessionPreset.from_dict`), or "".

    Example:
        >>> p = {"preset": "x", "cpus": 1, "loading": "resident", "status": "ok"}
        >>> rep = TuningReport(SweepSpec(), [p], p, "", {}, {}, {"x": {"name": "x"}})
        >>> json.loads(preset_json(rep))["name"]
        'x'
    """
    pick = rep.recommended
    if not pick:
        return ""
    preset = {k: v for k, v in rep.presets.get(str(pick.get("preset")), {}).items()
              if k not in ("notes", "source")}
    return json.dumps(preset, indent=2)


def contention(rep: TuningReport) -> Contention:
    """Signs that the machine was busy during the sweep (`tts_kit.tuning.contention.assess`).

    Example:
        >>> p = {"preset": "x", "cpus": 1, "status": "ok", rk.P50_MS: 100.0}
        >>> rep = TuningReport(SweepSpec(), [p], p, "", {}, {}, {},
        ...                    extras={"recommended_trial": dict(p, p50_ms=170.0)})
        >>> contention(rep).remeasure
        (100.0, 170.0)
    """
    from tts_kit.tuning.contention import assess

    again = rep.extras.get("recommended_trial")
    cores = rep.environment.get("cpus_usable") or rep.environment.get("cpus_available")
    return assess(rep.records, rep.recommended, again if isinstance(again, Mapping) else None,
                  cores=cores if isinstance(cores, int) else None)


def provisional_line(rep: TuningReport) -> str:
    """The answer's first line when the machine was busy (else ""), with the rerun.

    Example:
        >>> rep = TuningReport(SweepSpec(), [{"status": "ok", "core_share": 45.0}], None,
        ...                    "", {}, {}, {})
        >>> provisional_line(rep)
        'provisional: the machine was busy (1 of 1 trials got 45 % of their cores); run `tts-kit report --rerun report.json` on a quiet machine'
    """  # noqa: E501
    where = display_path(rep.source) if rep.source else "report.json"
    return contention(rep).headline(shlex.quote(str(where)))


def _figure(key: str, value: Any) -> str:
    unit = rk.COLUMNS[key].unit
    return f"{rk.format_value(key, value)} {unit}".strip()


def answer_html(rep: TuningReport) -> str:
    """The report's first section (escaped HTML): the pick, why, the ratios against the
    default, and how to apply it.

    Example:
        >>> rep = TuningReport(SweepSpec(), [], None, "nothing fits <b>", {}, {}, {})
        >>> answer_html(rep)
        '<div class="tts-kit-answer"><h2>The answer</h2><p><b>Nothing to recommend</b> within the budget of 1024 MB: nothing fits &lt;b&gt;</p></div>'
    """  # noqa: E501
    budget = rep.spec.mem_budget_mb
    within = f" within the budget of {budget:g} MB" if budget else ""
    pick = rep.recommended
    parts = ['<div class="tts-kit-answer"><h2>The answer</h2>']
    warning = provisional_line(rep) if pick else ""
    if warning:  # first, before any pick: the figures below may be the neighbours'
        parts.append('<p class="tts-kit-provisional" style="border-left:4px solid #d29922;'
                     'background:#fff8c5;padding:6px 10px"><b>Provisional.</b> '
                     + re.sub(r"`([^`]+)`", r"<code>\1</code>",  # backticks: code
                              html.escape(warning.removeprefix("provisional: "))) + ".</p>")
    if not pick:
        parts.append(f"<p><b>Nothing to recommend</b>{within}: {html.escape(rep.reason)}</p>")
        return "".join(parts) + "</div>"
    use = "Provisionally, use" if warning else "Use"
    parts.append(f"<p><b>{use} {html.escape(key_text(record_key(pick)))}</b>{within}. "
                 f"Why: {html.escape(rep.reason)}.</p>")
    parts += [f"<p>{html.escape(line)}</p>" for line in verdict_lines(rep)]
    rows = comparison(rep)
    base = default_record(rep)
    if base is not None and record_key(base) == record_key(pick):
        parts.append("<p>That is the default (ONNX Runtime's own options, every graph "
                     "resident): on this machine no preset or load policy of the sweep beat "
                     "it within the budget. The settings below pin the thread count it ran "
                     "with.</p>")
    elif rows and base is not None:
        head = html.escape(key_text(record_key(base)))
        parts.append(f"<p>Against the default (ONNX Runtime's options, resident: {head}), "
                     "both measured in the sweep, each in its own fresh process:</p>")
        parts.append('<table class="tts-kit-compare"><tr><th>figure</th><th>recommended</th>'
                     "<th>default</th><th>ratio</th></tr>")
        for r in rows:
            ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}&times;"
            parts.append(f"<tr><td>{html.escape(r['figure'])}</td>"
                         f"<td>{html.escape(_figure(r['key'], r['recommended']))}</td>"
                         f"<td>{html.escape(_figure(r['key'], r['default']))}</td>"
                         f"<td>{ratio}</td></tr>")
        parts.append("</table>")
    elif pick.get("preset") != DEFAULT_PRESET:
        parts.append("<p>The sweep did not measure the default (ort-default, resident) on "
                     "these vCPUs, so there is no ratio to show.</p>")
    parts += [
        "<h3>Apply it</h3><p>ONNX Runtime session options (Python; paste where the sessions "
        "are created):</p>", code_block(session_snippet(rep), "snippet"),
        "<p>Serve with it (<code>tts-kit serve-sweep</code> then measures how many workers the "
        "box holds under load):</p>", code_block(serve_command(rep), "serve"),
        "<p>The preset as JSON (<code>SessionPreset.from_dict</code>; <code>tts-kit tune</code> "
        "and <code>tts-kit report</code> measure it by name):</p>",
        code_block(preset_json(rep), "preset"),
    ]
    return "".join(parts) + "</div>"


def spec_rows(rep: TuningReport) -> list[tuple[str, str]]:
    """What the sweep measured, as (setting, value) rows for a small table.

    Example:
        >>> rep = TuningReport(SweepSpec(presets=["lean"], cpus=[1]), [], None, "", {}, {}, {})
        >>> dict(spec_rows(rep))["vCPUs"]
        '1'
    """
    s, w = rep.spec, rep.spec.workload
    budget = "none" if s.mem_budget_mb is None else f"{s.mem_budget_mb:g} MB"
    texts = list(w.texts)
    return [
        ("presets", ", ".join(s.presets)),
        ("vCPUs", ", ".join(str(c) for c in s.cpus)),
        ("load policies", ", ".join(s.loadings)),
        ("flow steps", ", ".join(str(x) for x in s.steps or [])),
        ("texts per call", ", ".join(str(x) for x in s.batch_sizes or [])),
        ("trials", str(len(rep.records))),
        ("timed calls per trial", f"{w.repeats} (after one untimed first call)"),
        ("texts", f"{len(texts)} ({w.lang}), e.g. {texts[0][:60]!r}" if texts else "none"),
        ("voice", str(w.voice or "the bundle's default")),
        ("memory budget", budget),
    ]


def machine_rows(rep: TuningReport) -> list[tuple[str, str]]:
    """Where it was measured, as (what, value) rows: CPU, cores, memory, software, model.

    Example:
        >>> rep = TuningReport(SweepSpec(), [], None, "", {"cpu_model": "X", "cpus_usable": 2},
        ...                    {}, {})
        >>> dict(machine_rows(rep))["CPU"]
        'X, 2 usable core(s)'
    """
    e, m = rep.environment, rep.model
    mem = e.get("cgroup_memory_limit_mb") or e.get("memory_total_mb")
    quota = e.get("cgroup_cpu_quota")
    rows = [
        ("CPU", f"{e.get('cpu_model', '?')}, {e.get('cpus_usable', e.get('cpu_count', '?'))} "
                "usable core(s)" + (f" (CPU quota {quota})" if quota else "")),
        ("memory", "?" if mem is None else f"{float(mem):,.0f} MB"
         + (" (cgroup limit)" if e.get("cgroup_memory_limit_mb") else "")),
        ("OS", str(e.get("os", "?"))),
        ("software", f"Python {e.get('python', '?')}, onnxruntime {e.get('onnxruntime', '?')}, "
                     f"numpy {e.get('numpy', '?')}"),
        ("providers", ", ".join(e.get("providers") or []) or "?"),
    ]
    if m:
        standin = m.get("standin")
        kind = (f"stand-in ({standin.get('scale')})" if isinstance(standin, Mapping)
                else "model")
        params = m.get("params")
        size = f", {params / 1e6:.1f} M parameters" if isinstance(params, (int, float)) else ""
        rows.append(("model", f"{kind}{size} at {m.get('path', '?')}"))
    return rows


def latency_rows(rep: TuningReport, kernel: Mapping[str, Any] | None = None
                 ) -> list[dict[str, Any]]:
    """The pick's latency where it was measured (`tts_kit.notebook.plots.latency_story`):
    the sweep's trial, the re-measured one, and ``kernel`` (the notebook's process).

    Example:
        >>> p = {"preset": "x", "cpus": 1, rk.LOAD_S: 1.5, rk.FIRST_MS: 900.0, rk.P50_MS: 700.0}
        >>> rep = TuningReport(SweepSpec(), [p], p, "", {}, {}, {})
        >>> [(r["label"], r["session_s"]) for r in latency_rows(rep, {"session_s": 2.0})]
        [('sweep trial (fresh process, 1 vCPU)', 1.5), ('this kernel (not pinned)', 2.0)]
    """
    pick = rep.recommended or (rep.records[0] if rep.records else None)
    rows: list[dict[str, Any]] = []
    if not pick:
        return rows
    cpus = pick.get("cpus")
    for label, rec in ((f"sweep trial (fresh process, {cpus} vCPU)", pick),
                       (f"measured again (another fresh process, {cpus} vCPU)",
                        rep.extras.get("recommended_trial"))):
        if isinstance(rec, Mapping) and rec.get("status", "ok") == "ok":
            rows.append({"label": label, "session_s": rec.get(rk.LOAD_S),
                         rk.FIRST_MS: rec.get(rk.FIRST_MS), rk.P50_MS: rec.get(rk.P50_MS)})
    if kernel:
        rows.append({"label": "this kernel (not pinned)", **dict(kernel)})
    return rows


def verdict_lines(rep: TuningReport) -> list[str]:
    """Each swept dimension's effect, the tie set and the A/A check, in words.

    Example:
        >>> rep = TuningReport(SweepSpec(), [], None, "", {}, {}, {}, verdicts={
        ...     "band": 0.05, "tie_set": [["lean", 2, "paged", 8, 1], ["lean", 2, "resident", 8, 1]]})
        >>> verdict_lines(rep)
        ['These 2 are the same speed within 5 % on this machine: lean @ 2 vCPU, paged, 8 steps; lean @ 2 vCPU, resident, 8 steps.']
    """  # noqa: E501
    from tts_kit.tuning.verdict import Verdict, effect_lines

    v = rep.verdicts
    width = float(v.get("band") or 0.05)
    found = [dict(e, **{m: e[m] and Verdict.from_dict(e[m]) for m in ("latency", "peak")})
             for e in v.get("effects") or []]
    out = [f"What matters: {line}." for line in effect_lines(found, width)]
    ties = v.get("tie_set") or []
    if len(ties) > 1:
        out.append(f"These {len(ties)} are the same speed within {width * 100:.0f} % on this "
                   f"machine: {'; '.join(key_text(t) for t in ties)}.")
    aa = (v.get("aa") or {}).get(rk.P50_MS)
    if aa:
        check = Verdict.from_dict(aa)
        out.append(f"A/A check: the pick measured again in another fresh process is "
                   f"{check.text()} against itself" + (
                       "." if check.word == "tied" else
                       ": the machine is noisier than the band, so the answer is provisional."))
    return out


def conclusions(rep: TuningReport) -> list[str]:
    """What we measured and what to conclude, one sentence each.

    Example:
        >>> rep = TuningReport(SweepSpec(), [], None, "nothing fits", {}, {}, {})
        >>> conclusions(rep)[-1]
        'Nothing fitted the budget of 1024 MB: nothing fits.'
    """
    warning = provisional_line(rep) if rep.recommended else ""
    out: list[str] = [warning + "."] if warning else []
    ok = [r for r in rep.records if r.get("status", "ok") == "ok"]
    failed = len(rep.records) - len(ok)
    out.append(f"Measured {len(rep.records)} configuration(s), each in its own fresh process "
               f"({len(ok)} finished" + (f", {failed} did not" if failed else "") + ").")
    out += verdict_lines(rep)
    pick, base = rep.recommended, default_record(rep)
    budget = rep.spec.mem_budget_mb
    if pick is None:
        within = f" the budget of {budget:g} MB" if budget else " any budget"
        out.append(f"Nothing fitted{within}: {rep.reason}.")
        return out + model_lines(rep)
    out.append(f"Recommended: {key_text(record_key(pick))} ({rep.reason}).")
    if base is not None and record_key(base) != record_key(pick):
        from tts_kit.tuning.verdict import band, compare, noise
        width = rep.verdicts.get("band") or band(ok)  # the pick's own rule, in its words
        v = {k: compare(pick, base, k, width, noise(ok, k)) for k in (rk.P50_MS, rk.PEAK_RSS_MB)}
        if all(v.values()):
            out.append(f"Against the untuned default on the same vCPUs: latency "
                       f"{v[rk.P50_MS].text()}; peak {v[rk.PEAK_RSS_MB].text()}.")
    elif base is not None:
        out.append("It is the untuned default: keep ONNX Runtime's options on this machine.")
    return out + model_lines(rep)


def model_lines(rep: TuningReport) -> list[str]:
    """What the model is when that changes how to read the figures: a stand-in or a
    converted copy.

    Example:
        >>> model = {"conversion": {"verdict": "transparent", "decided_by": "mcd"}}
        >>> model_lines(TuningReport(SweepSpec(), [], None, "", {}, model, {}))[0][:34]
        'This model is a converted copy: th'
    """
    out: list[str] = []
    model = rep.model if isinstance(rep.model, Mapping) else {}
    standin = model.get("standin")
    if isinstance(standin, Mapping):
        from tts_kit.models.supertonic.standin import REALISTIC_SCALES

        scale = standin.get("scale")
        out.append("Measured on the stand-in " + (
            f"({scale}: the real model's sizes, so these costs carry over; the audio is noise)."
            if scale in REALISTIC_SCALES else
            f"({scale}: far smaller than the real model, so these figures do NOT carry over)."))
    conversion = model.get("conversion")
    if isinstance(conversion, Mapping) and conversion.get("verdict"):
        from tts_kit.precision.verdict_file import verdict_sentence

        out.append(verdict_sentence(conversion))
    return out


def replay(rep: TuningReport, bundle: Any) -> tuple[Any, dict[str, float]]:
    """Synthesise the sweep's first text with the pick's settings in this process (not
    isolated): the result and its ``session_s``/``first_ms`` for `latency_rows`.

    Example:
        >>> sorted(replay(TuningReport.load("report.json"), bundle)[1])  # doctest: +SKIP
        ['first_ms', 'session_s']
    """
    import time

    from tts_kit.models.family import make_engine  # either family

    pick = rep.recommended or rep.records[0]
    t0 = time.perf_counter()
    engine = make_engine(bundle, preset=rep.preset_of(pick), loading=pick["loading"],
                    stage_costs_mb=pick.get(rk.STAGE_COSTS_MB))
    session_s = time.perf_counter() - t0
    work = rep.spec.workload.replace(steps=pick["steps"])  # what the sweep synthesised
    t0 = time.perf_counter()
    result = engine.synthesize(work.texts[0], lang=work.lang, voice=work.voice_for(bundle),
                               steps=work.steps, speed=work.speed, seed=work.seed)
    first_ms = (time.perf_counter() - t0) * 1000
    return result, {"session_s": session_s, rk.FIRST_MS: first_ms}
