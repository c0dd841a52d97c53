"""Rendering a report: papermill runs ``06_tuning_report`` on a report.json, then a
standalone, offline ``report.html`` is exported.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tts_kit.core import atomic
from tts_kit.core.settings import settings as current_settings
from tts_kit.core.textsafe import display_path, hide_home
from tts_kit.report._jsonschema import import_jsonschema
from tts_kit.report.spec import ReportError

#: The report notebook's source (jupytext percent format).
NOTEBOOK_NAME = "06_tuning_report.py"
#: Environment variable naming another report notebook (``.py`` or ``.ipynb``).
NOTEBOOK_ENV = "TTS_KIT_REPORT_NOTEBOOK"
#: What the headless kernel may log (a failing cell is reported from its outputs).
KERNEL_LOG_LEVEL = "CRITICAL"
#: Where a failed render keeps its partial notebook, beside the report.
FAILED_NOTEBOOK = "report.failed.ipynb"
KERNEL_NAME = "python3"  # this interpreter; tts_kit comes via PYTHONPATH
_ROOT = Path(__file__).resolve().parents[2]  # holds tts_kit/ (and notebooks/ in a checkout)


def report_notebook() -> Path:
    """The report notebook: ``$TTS_KIT_REPORT_NOTEBOOK``, else the checkout's
    ``notebooks/``, else the copy installed with the package (``tts_kit/_data/notebooks``).

    Example:
        >>> report_notebook().name
        '06_tuning_report.py'
    """
    from importlib import resources

    env = current_settings().report_notebook
    if env:
        if Path(env).is_file():
            return Path(env)
        raise ReportError(f"${NOTEBOOK_ENV} names {env}, which is not a file; fix or unset it")
    candidates = [_ROOT / "notebooks" / NOTEBOOK_NAME,
                  Path(str(resources.files("tts_kit") / "_data" / "notebooks" / NOTEBOOK_NAME))]
    for c in candidates:
        if c.is_file():
            return c
    raise ReportError(f"{NOTEBOOK_NAME} not found (looked at {', '.join(map(str, candidates))}); "
                      f"reinstall tts_kit or set ${NOTEBOOK_ENV} to the notebook")


def load_notebook(path: str | os.PathLike[str]) -> Any:
    """A notebook (``nbformat.NotebookNode``) from a jupytext ``.py`` or an ``.ipynb``.

    Example:
        >>> nb = load_notebook(report_notebook())
        >>> [c.metadata["tags"] for c in nb.cells if c.metadata.get("tags")]
        [['parameters']]
    """
    import_jsonschema()  # before jupytext/nbformat: see tts_kit.report._jsonschema
    import jupytext

    try:
        nb = jupytext.read(Path(path))
    except OSError as exc:
        raise ReportError(f"cannot read the notebook {path}: {exc.strerror or exc}") from None
    # An executed copy is a plain notebook: not paired with a .py wherever it is written.
    nb.metadata.pop("jupytext", None)
    # A .py without jupytext's header names no kernel (papermill: "No language found").
    if not (nb.metadata.get("kernelspec") or {}).get("language"):
        nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                     "name": KERNEL_NAME}
    return nb


def _kernel_manager_class(ctrl_c: _CtrlC) -> type:
    """A kernel manager known to ``ctrl_c``; its kernel imports this tts_kit, plots inline."""
    from jupyter_client import AsyncKernelManager

    root = str(_ROOT)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    extra = {"PYTHONPATH": os.pathsep.join([root, *[p for p in parts if p != root]]),
             "MPLBACKEND": "module://matplotlib_inline.backend_inline"}

    class _EnvKernelManager(AsyncKernelManager):  # type: ignore[misc]
        async def start_kernel(self, **kw: Any) -> None:
            kw["env"] = {**kw.get("env", os.environ), **extra}
            ctrl_c.kernels.append(self)
            await super().start_kernel(**kw)
            if ctrl_c.hit:  # pressed while it started
                ctrl_c.kill()

    return _EnvKernelManager


class _CtrlC:
    """While a notebook runs, Ctrl-C kills its kernel, raised once papermill returns."""

    def __init__(self) -> None:
        self.kernels: list[Any] = []
        self.hit = False

    def kill(self, *_: Any) -> None:
        self.hit = True
        logging.disable(logging.CRITICAL)  # nbclient's "kernel died": ours, not news
        for km in self.kernels:  # its own session (jupyter_client): its process group
            proc = getattr(km.provisioner, "process", None)
            if proc is not None:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        main = threading.current_thread() is threading.main_thread()
        ours = main and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        old = signal.signal(signal.SIGINT, self.kill) if ours else None
        try:
            yield
        except BaseException:
            if not self.hit:
                raise
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
            if self.hit:
                logging.disable(logging.NOTSET)
        if self.hit:
            raise KeyboardInterrupt


def execute_notebook(
    notebook: str | os.PathLike[str],
    output: str | os.PathLike[str],
    parameters: Mapping[str, Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout_s: float | None = None,
    progress: bool = False,
    *,
    partial_to: str | os.PathLike[str] | None = None,
) -> Path:
    """Run ``notebook`` (``.py`` or ``.ipynb``) headless into ``output`` with papermill; a
    failing cell raises `ReportError` naming the partial notebook (moved to ``partial_to``).

    Example:
        >>> execute_notebook("notebooks/00_quickstart.py", "out/quickstart.ipynb",
        ...                  {"quick": True})  # doctest: +SKIP
    """
    import_jsonschema()
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    with tempfile.TemporaryDirectory(prefix="tts-kit-nb-") as scratch:
        source = Path(scratch) / (Path(notebook).stem + ".ipynb")  # papermill reads .ipynb
        nbformat.write(load_notebook(notebook), str(source))
        ctrl_c = _CtrlC()
        try:
            with ctrl_c.active():
                papermill.execute_notebook(
                    str(source), str(output), parameters=dict(parameters or {}),
                    kernel_name=KERNEL_NAME, cwd=str(cwd) if cwd else None,
                    kernel_manager_class=_kernel_manager_class(ctrl_c),
                    execution_timeout=timeout_s, progress_bar=progress, log_output=False,
                    request_save_on_cell_execute=False,
                    extra_arguments=[f"--IPKernelApp.log_level={KERNEL_LOG_LEVEL}"],
                )
        except PapermillExecutionError as exc:
            msg = " ".join(f"{exc.ename}: {exc.evalue}".split())
            kept, where = Path(output), ""
            if kept.is_file() and kept.stat().st_size > 0:  # else papermill never wrote it
                _record_source(kept, Path(notebook))
                if partial_to is not None:
                    kept = Path(partial_to)
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(output, kept)
                where = f" (partial notebook: {kept})"
            raise ReportError(f"{Path(notebook).name} failed in cell {exc.exec_count}: "
                              f"{msg}{where}") from None
    _record_source(Path(output), Path(notebook))
    return Path(output)


def _record_source(output: Path, notebook: Path) -> None:
    """Name the notebook's source (not the scratch copy papermill read) in the output."""
    import_jsonschema()
    import nbformat

    nb = nbformat.read(str(output), as_version=4)  # papermill wrote it: both callers know
    nb.metadata.setdefault("papermill", {})["input_path"] = str(notebook)
    nbformat.write(nb, str(output))


def export_html(notebook: str | os.PathLike[str], output: str | os.PathLike[str]) -> Path:
    """Write a standalone HTML page of an executed notebook (images and audio inline).

    Example:
        >>> export_html("out/report.ipynb", "out/report.html")  # doctest: +SKIP
    """
    import_jsonschema()
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    # Widget views need the live kernel (or a CDN); a standalone page shows the figures.
    nb.metadata.pop("widgets", None)
    exporter = HTMLExporter(template_name="lab", exclude_input=True,
                            exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    # The lab template's CDN scripts (require.js, MathJax) out: the page stands alone.
    body = re.sub(r"<script[^>]+src=\"https?://[^\"]+\"[^>]*>\s*</script>", "", body)
    Path(output).write_text(body, encoding="utf-8")
    return Path(output)


def render_report(
    report_json: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    model_dir: str | os.PathLike[str] | None = None,
    model_source: str | None = None,
    timeout_s: float | None = None,
    progress: bool = False,
    full_paths: bool = False,
    failed_to: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Run the report notebook on ``report_json``; write and return report.html and .ipynb
    in ``out`` (default: beside it). ``model_dir``: the bundle the notebook plays a sample
    with (default: the report's); a failed run's partial notebook goes to ``failed_to``.

    Example:
        >>> [p.name for p in render_report("reports/standin/report.json")]  # doctest: +SKIP
        ['report.html', 'report.ipynb']
    """
    src = Path(report_json).expanduser().resolve()
    if model_dir is None:
        try:
            model_dir = json.loads(src.read_text(encoding="utf-8"))["model"]["path"]
            model_dir = Path(str(model_dir)).expanduser()
        except (OSError, ValueError, KeyError, TypeError):
            raise ReportError(f"{src}: not a readable report.json; write one with "
                              "`tts-kit report --out DIR`") from None
    out_dir = Path(out).expanduser().resolve() if out is not None else src.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    ipynb, html_path = out_dir / "report.ipynb", out_dir / "report.html"
    failed = Path(failed_to) if failed_to is not None else out_dir / FAILED_NOTEBOOK
    # Stored in the notebook: the kernel runs in out_dir, and expands "~/..." itself.
    report_param = src.name if src.parent == out_dir else display_path(src, full=full_paths)
    notebook = report_notebook()
    with atomic.atomic_file(ipynb) as tmp_nb, atomic.atomic_file(html_path) as tmp_html:
        try:
            execute_notebook(
                notebook, tmp_nb,
                parameters={"model_dir": display_path(Path(model_dir).expanduser(),
                                                      full=full_paths),
                            "model_source": model_source, "report_json": report_param},
                cwd=out_dir, timeout_s=timeout_s, progress=progress, partial_to=failed,
            )
        except ReportError:
            if not full_paths and failed.is_file():
                _hide_home_in_notebook(failed)
            raise
        if not full_paths:
            _hide_home_in_notebook(tmp_nb)
        export_html(tmp_nb, tmp_html)
    failed.unlink(missing_ok=True)  # an older failure's notebook: this render succeeded
    return [html_path, ipynb]


def _hide_home_in_notebook(path: Path) -> None:
    """Paths under the home directory as ``~`` in a notebook's metadata and text outputs."""
    import_jsonschema()
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    meta = nb.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if isinstance(meta.get(key), str):
            meta[key] = display_path(meta[key])
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            for key in ("text", "evalue", "traceback"):
                if key in out:
                    out[key] = _hidden(out[key])
            data = out.get("data") or {}
            for mime in data:
                if mime.startswith("text/") or mime.endswith("json"):
                    data[mime] = _hidden(data[mime])
    nbformat.write(nb, str(path))


def _hidden(value: Any) -> Any:
    """A string, or the strings of a list, with the home directory as ``~``."""
    if isinstance(value, list):
        return [_hidden(v) for v in value]
    return hide_home(value) if isinstance(value, str) else value
