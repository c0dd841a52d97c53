"""Browser check: JupyterLab renders 00_quickstart's player widget and memory graph.

Starts JupyterLab on 127.0.0.1 (random port, random token, throw-away settings and
runtime directories) serving a temporary ``.ipynb`` of ``notebooks/00_quickstart.py``
(JupyterLab autosaves outputs; the committed notebook stays clean), opens it in headless
Chromium, runs all cells through JupyterLab's command registry
(``notebook:run-all-cells``), waits until the kernel is idle, and then checks the
page: no "Error displaying widget", no error output, a player (``.tts-kit-player`` with
an ``<audio>`` element holding WAV data) and a memory graph (``.tts-kit-memory-graph``
with a decoded PNG) that showed at least two frames while its trial ran (every frame the
page showed is listed in ``graph_frames``, milliseconds after the run started). With
``--save``, it instead checks that saving a run notebook leaves its ``.py`` unchanged.
It saves screenshots of the window, the player and the graph, and prints a JSON summary;
exit status 0 when every check passed.

Requirements (installed by the script when missing, or do it by hand):

* Chromium: ``apt-get update && apt-get install -y chromium fonts-noto-cjk`` (Debian's
  package, and a CJK font: without it notebook 01's Korean shows as empty boxes; the
  script runs it with ``--headless --no-sandbox --disable-gpu ...`` and a new, empty
  ``--user-data-dir``).
* Node.js and npm, for ``playwright-core`` (the driver only; no browser download):
  the script runs ``npm install playwright-core@1`` into ``~/.cache/tts_kit/browser_check``
  (or ``$TTS_KIT_CACHE_DIR/browser_check``) on first use.
* This project's Python environment with JupyterLab and ipywidgets (the ``notebooks``
  extra); the kernel finds tts_kit through ``PYTHONPATH``.

Usage::

    python bench/browser_check.py --out out/browser-check   # screenshots land there

The notebook runs with its defaults (the model is discovered: the stand-in unless
``TTS_KIT_MODEL_DIR`` names another).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]

# The driver: plain playwright-core against the system Chromium (no browser download).
DRIVER_JS = r"""
const { chromium } = require('playwright-core');
const [url, outDir, userDataDir, exe, flagsJson, timeoutS, expectJson] = process.argv.slice(2);
const expect = JSON.parse(expectJson || '[]');
const flags = JSON.parse(flagsJson);
(async () => {
  const result = { checks: {}, notes: [] };
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: exe, headless: true, args: flags,
    viewport: { width: 1400, height: 2200 },
  });
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('pageerror', e => result.notes.push('pageerror: ' + String(e).slice(0, 200)));
  const deadline = Date.now() + Number(timeoutS) * 1000;
  try {
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 120000 });
    await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 120000 });
    // JupyterLab runs with expose_app_in_browser: drive it through its command registry
    // (menus move between versions; commands do not).
    const kernelIdle = () => {
      const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
      const k = w && w.sessionContext && w.sessionContext.session &&
        w.sessionContext.session.kernel;
      return !!k && k.status === 'idle';
    };
    await page.waitForFunction(kernelIdle, null, { timeout: 180000 });
    await page.click('.jp-Notebook .jp-Cell');  // focus the notebook, not the file browser
    // Every frame the live memory graph shows while it runs (each update is a new image
    // URL): the graph must visibly move during a trial, not jump from empty to final.
    await page.evaluate(() => {
      window.__graphFrames = [];
      const t0 = performance.now();
      new MutationObserver(() => {
        for (const img of document.querySelectorAll('.tts-kit-memory-graph img')) {
          const f = window.__graphFrames;
          if (img.src && !f.some(x => x.src === img.src))
            f.push({ src: img.src, t: Math.round(performance.now() - t0),
                     status: (img.closest('.tts-kit-memory-graph').innerText || '').slice(0, 80) });
        }
      }).observe(document.body, { subtree: true, childList: true, attributes: true,
                                   attributeFilter: ['src'] });
    });
    await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
    result.notes.push('ran notebook:run-all-cells');
    // Done when the kernel is idle again and every code cell has an execution count.
    await page.waitForTimeout(3000);
    while (Date.now() < deadline) {
      const state = await page.evaluate((idleSrc) => {
        const idle = eval(idleSrc)();
        const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
          .map(p => p.textContent.trim());
        return { idle, prompts,
                 done: prompts.length > 0 && prompts.every(p => /\[\d+\]/.test(p)) };
      }, '(' + kernelIdle.toString() + ')');
      if (state.done && state.idle) { result.prompts = state.prompts; break; }
      result.last_prompts = state.prompts;
      await page.waitForTimeout(1000);
    }
    await page.waitForTimeout(2000);  // let the last widget views render
    const info = await page.evaluate(() => {
      const text = document.body.innerText;
      const player = document.querySelector('.tts-kit-player');
      const audio = player && player.querySelector('audio');
      const graph = document.querySelector('.tts-kit-memory-graph');
      const img = graph && graph.querySelector('img');
      return {
        widget_errors: (text.match(/Error displaying widget/g) || []).length,
        error_outputs: document.querySelectorAll(
          '.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]').length,
        player: !!player,
        player_buttons: player ? player.querySelectorAll('button').length : 0,
        audio: !!audio,
        audio_src: audio ? (audio.src || '').slice(0, 16) : '',
        audio_duration: audio ? audio.duration : null,
        graph: !!graph,
        graph_img_width: img ? img.naturalWidth : 0,
        graph_status: graph ? graph.innerText.slice(0, 200) : '',
        banner: text.includes(__STANDIN_NOTE__),
        graph_frames: (window.__graphFrames || []).map(f => ({ t: f.t, status: f.status })),
      };
    });
    Object.assign(result, info);
    const live = info.graph_frames.filter(f => /running/.test(f.status));
    result.checks = {
      all_cells_ran: !!result.prompts,
      no_widget_error: info.widget_errors === 0,
      no_error_output: info.error_outputs === 0,
      banner: info.banner,
    };
    if (expect.includes('player'))
      result.checks.player_rendered = info.player && info.audio && info.audio_src.length > 0;
    if (expect.includes('graph'))
      result.checks.memory_graph_rendered = info.graph && info.graph_img_width > 0;
    if (expect.includes('graph'))  // at least two intermediate frames while running
      result.checks.memory_graph_moved = live.length >= 2;
    const player = await page.$('.tts-kit-player');
    if (player) { await player.scrollIntoViewIfNeeded();
      await player.screenshot({ path: outDir + '/player.png' }); }
    const graph = await page.$('.tts-kit-memory-graph');
    if (graph) { await graph.scrollIntoViewIfNeeded();
      await graph.screenshot({ path: outDir + '/memory_graph.png' }); }
    // A window shot from the model banner down: the player and the graph fit below it.
    const top = await page.$('.tts-kit-banner') || player;
    if (top) await top.evaluate(e => e.scrollIntoView({ block: 'start' }));
    await page.waitForTimeout(500);
    await page.screenshot({ path: outDir + '/jupyterlab.png' });
    // And the end of the notebook: its last cells ("what we measured, what to conclude").
    const cells = await page.$$('.jp-Notebook .jp-Cell');
    if (cells.length) {
      const last = cells[Math.max(0, cells.length - 3)];
      await last.evaluate(e => e.scrollIntoView({ block: 'start' }));
      await page.waitForTimeout(500);
      await page.screenshot({ path: outDir + '/end.png' });
    }
  } catch (e) {
    result.error = String(e).slice(0, 500);
    try { await page.screenshot({ path: outDir + '/jupyterlab.png' }); } catch (_) {}
  }
  await ctx.close();
  console.log(JSON.stringify(result));
})();
"""

# The save check's driver: open a .py source as a notebook (jupytext's factory), run it,
# save it through JupyterLab's own command, and wait until the document is clean.
SAVE_JS = r"""
const { chromium } = require('playwright-core');
const [url, path, outDir, userDataDir, exe, flagsJson, timeoutS] = process.argv.slice(2);
(async () => {
  const result = { notes: [] };
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: exe, headless: true, args: JSON.parse(flagsJson),
    viewport: { width: 1400, height: 1600 },
  });
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('pageerror', e => result.notes.push('pageerror: ' + String(e).slice(0, 200)));
  const deadline = Date.now() + Number(timeoutS) * 1000;
  try {
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 120000 });
    await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.started !== undefined,
                               null, { timeout: 120000 });
    await page.evaluate(() => window.jupyterapp.started);
    result.factory = await page.evaluate(async (p) => {
      const reg = window.jupyterapp.docRegistry;
      const names = ['Jupytext Notebook', 'Notebook'].filter(n => reg.getWidgetFactory(n));
      await window.jupyterapp.commands.execute('docmanager:open', { path: p, factory: names[0] });
      return names[0];
    }, path);
    const current = () => {
      const w = window.jupyterapp.shell.currentWidget;
      const k = w && w.sessionContext && w.sessionContext.session &&
        w.sessionContext.session.kernel;
      return { idle: !!k && k.status === 'idle', dirty: !!(w && w.context && w.context.model.dirty),
               prompts: [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                 .map(p => p.textContent.trim()) };
    };
    const src = '(' + current.toString() + ')()';
    await page.waitForFunction(s => eval(s).idle, src, { timeout: 180000 });
    await page.click('.jp-Notebook .jp-Cell');
    await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
    await page.waitForTimeout(3000);
    let state;
    while (Date.now() < deadline) {
      state = await page.evaluate(s => eval(s), src);
      if (state.idle && state.prompts.length && state.prompts.every(p => /\[\d+\]/.test(p))) break;
      await page.waitForTimeout(1000);
    }
    result.prompts = state.prompts;
    await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
    await page.waitForFunction(s => !eval(s).dirty, src, { timeout: 60000 });
    await page.waitForTimeout(1000);
    result.error_outputs = await page.evaluate(() => document.querySelectorAll(
      '.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]').length);
    await page.screenshot({ path: outDir + '/saved.png' });
  } catch (e) {
    result.error = String(e).slice(0, 500);
    try { await page.screenshot({ path: outDir + '/saved.png' }); } catch (_) {}
  }
  await ctx.close();
  console.log(JSON.stringify(result));
})();
"""

LAB_SETTINGS = {
    # Render every cell (no virtual windowing), so off-screen outputs exist in the DOM.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # No news and update pop-ups over the screenshot (and no network for them).
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False,
    },
}


def _cache() -> Path:
    base = os.environ.get("TTS_KIT_CACHE_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "tts_kit") / \
        "browser_check"


def ensure_chromium() -> str:
    """The Chromium binary; installs Debian's package when it is missing (needs root)."""
    if Path(CHROMIUM).is_file():
        return CHROMIUM
    if shutil.which("apt-get") is None:
        sys.exit(f"browser_check: {CHROMIUM} is missing; install Chromium and set $CHROMIUM")
    print("browser_check: installing chromium (apt-get)", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "chromium", "fonts-noto-cjk"], check=True,
                   env=env)
    return CHROMIUM


def ensure_driver() -> Path:
    """A directory with ``node_modules/playwright-core`` (npm install on first use)."""
    d = _cache()
    if not (d / "node_modules" / "playwright-core").is_dir():
        if shutil.which("npm") is None:
            sys.exit("browser_check: npm is missing; install Node.js 18+ and npm")
        d.mkdir(parents=True, exist_ok=True)
        print(f"browser_check: npm install playwright-core into {d}", file=sys.stderr)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(d),
                        "playwright-core@1"], check=True)
    return d


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout_s: float, proc: subprocess.Popen) -> None:
    end = time.time() + timeout_s
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with code {proc.returncode}; see jupyterlab.log")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {timeout_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    """Run the check; returns 0 when the player and the memory graph rendered."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="directory for screenshots (default: temp)")
    ap.add_argument("--notebook", default=["notebooks/00_quickstart.py"], nargs="+",
                    help="notebook sources (.py, jupytext percent format) or .ipynb to open, "
                         "relative to the repository root (an .ipynb copy of each is served)")
    ap.add_argument("--all", action="store_true", help="every notebooks/NN_*.py in turn")
    ap.add_argument("--quick", action="store_true",
                    help="set the notebooks' quick parameter (less work, the same model)")
    ap.add_argument("--timeout", type=float, default=420,
                    help="seconds for running all cells of one notebook")
    ap.add_argument("--save", action="store_true",
                    help="instead: open each .py source, run it, save it in JupyterLab, and "
                         "check the saved .py is the committed one, byte for byte")
    args = ap.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="tts-kit-browser-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    check = (lambda nb, o: check_save(nb, o, args.timeout, args.quick)) if args.save else (
        lambda nb, o: check_notebook(nb, o, args.timeout, args.quick))
    sources = (ROOT / "notebooks").glob("[0-9][0-9]_*.py")
    notebooks = (sorted(str(p.relative_to(ROOT)) for p in sources) if args.all
                 else list(args.notebook))
    results = {}
    for nb in notebooks:
        sub_out = out / Path(nb).stem if len(notebooks) > 1 else out
        sub_out.mkdir(parents=True, exist_ok=True)
        results[Path(nb).stem] = check(nb, sub_out)
    ok = all(r.get("checks") and all(r["checks"].values()) and "error" not in r
             for r in results.values())
    print(json.dumps(results if len(results) > 1 else next(iter(results.values())), indent=2))
    print("browser_check:", "PASS" if ok else "FAIL", file=sys.stderr)
    return 0 if ok else 1


def check_notebook(notebook: str, out: Path, timeout: float, quick: bool) -> dict:
    """Open one notebook in JupyterLab in headless Chromium, run it, check and screenshot."""
    exe = ensure_chromium()
    driver_dir = ensure_driver()
    from tts_kit.models.discovery import default_standin_scale
    from tts_kit.models.supertonic.standin import (
        scale_note,  # the banner's words, as the library spells them
    )

    note = scale_note(default_standin_scale())  # the notebooks discover their model
    driver = DRIVER_JS.replace("__STANDIN_NOTE__", json.dumps(note))
    (driver_dir / "driver.js").write_text(driver, encoding="utf-8")

    with tempfile.TemporaryDirectory(prefix="tts-kit-lab-") as tmp:
        tmp_p = Path(tmp)
        # Serve a copy: JupyterLab autosaves outputs into the notebook it has open, and
        # the committed notebooks stay without outputs.
        serve = tmp_p / "serve"
        serve.mkdir()
        from tts_kit.report import load_notebook

        nb_copy = serve / (Path(notebook).stem + ".ipynb")
        nb = load_notebook(ROOT / notebook)
        if quick:  # as papermill would: the parameters cell's value, changed in place
            for cell in nb.cells:
                if "parameters" in cell.metadata.get("tags", []):
                    cell.source = cell.source.replace("quick = False", "quick = True", 1)
        nbformat.write(nb, str(nb_copy))
        with running_lab(serve, tmp_p, out) as (base, token):
            url = f"{base}/lab/tree/{nb_copy.name}?token={token}&reset"
            user_data = tmp_p / "chromium-profile"
            user_data.mkdir()
            t0 = time.time()
            expect = {"00_quickstart": ["player", "graph"]}.get(Path(notebook).stem, [])
            result = _drive(driver_dir / "driver.js",
                            [url, str(out), str(user_data), exe, json.dumps(CHROMIUM_FLAGS),
                             str(timeout), json.dumps(expect)], timeout)
            if "error" not in result or "checks" in result:
                result["seconds"] = round(time.time() - t0, 1)
                result["screenshots"] = sorted(str(p) for p in out.glob("*.png"))
    return result


def _drive(script: Path, args: list[str], timeout: float) -> dict:
    """Run a Node driver script; its last JSON line, or ``{"error": ...}``."""
    proc = subprocess.run(["node", str(script), *args], cwd=script.parent,
                          capture_output=True, text=True, timeout=timeout + 300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": f"driver: {proc.stdout[-1000:]} {proc.stderr[-1000:]}"}
    return json.loads(lines[-1])


@contextlib.contextmanager
def running_lab(serve: Path, tmp: Path, out: Path, env: dict[str, str] | None = None
                ) -> Iterator[tuple[str, str]]:
    """JupyterLab on 127.0.0.1 (random port and token, throw-away settings) serving
    ``serve``; yields ``(base_url, token)`` and stops the server (and its kernels) after."""
    settings = tmp / "settings"
    for name, value in LAB_SETTINGS.items():
        f = settings / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value), encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ, **(env or {}),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
    }
    lab_log = open(out / "jupyterlab.log", "w", encoding="utf-8")  # noqa: SIM115
    lab = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={serve}", "--ServerApp.open_browser=False",
         "--LabApp.news_url=", "--LabApp.expose_app_in_browser=True",
         # Containers often run as root; Jupyter refuses that unless told.
         *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])],
        cwd=serve, env=env, stdout=lab_log, stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/api/status?token={token}", 120, lab)
        yield base, token
    finally:
        # Shut the server (and with it the kernel) down; it is our own child.
        lab.terminate()
        try:
            lab.wait(30)
        except subprocess.TimeoutExpired:
            lab.kill()
        lab_log.close()


def check_save(notebook: str, out: Path, timeout: float = 420, quick: bool = True) -> dict:
    """Open a notebook's ``.py`` source in JupyterLab (with jupytext, as a user does), run
    every cell, save, and compare the ``.py`` JupyterLab wrote with the one it opened.

    The served copy is the committed source (its ``quick`` parameter set when ``quick``)
    beside the repository's ``jupytext.toml``; ``result["checks"]["source_unchanged"]``
    says whether saving left its bytes as they were (the paired ``.ipynb`` must appear,
    so the save really happened).

    Example:
        >>> check_save("notebooks/01_text_normalization.py", Path("out"))  # doctest: +SKIP
    """
    exe, driver_dir = ensure_chromium(), ensure_driver()
    (driver_dir / "save.js").write_text(SAVE_JS, encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="tts-kit-lab-") as tmp:
        tmp_p = Path(tmp)
        serve = tmp_p / "serve"
        serve.mkdir()
        shutil.copy(ROOT / "notebooks" / "jupytext.toml", serve / "jupytext.toml")
        source = (ROOT / notebook).read_text(encoding="utf-8")
        if quick:
            source = source.replace("\nquick = False", "\nquick = True", 1)
        py = serve / Path(notebook).name
        py.write_bytes(source.encode("utf-8"))
        user_data = tmp_p / "chromium-profile"
        user_data.mkdir()
        t0 = time.time()
        with running_lab(serve, tmp_p, out) as (base, token):
            result = _drive(driver_dir / "save.js",
                            [f"{base}/lab?token={token}&reset", py.name, str(out),
                             str(user_data), exe, json.dumps(CHROMIUM_FLAGS), str(timeout)],
                            timeout)
        saved = py.read_bytes()
        result["seconds"] = round(time.time() - t0, 1)
        result["checks"] = {
            "saved": py.with_suffix(".ipynb").is_file(),
            "no_error_output": result.get("error_outputs") == 0,
            "source_unchanged": saved == source.encode("utf-8"),
        }
        if saved != source.encode("utf-8"):
            import difflib

            result["diff"] = "".join(difflib.unified_diff(
                source.splitlines(True), saved.decode("utf-8", "replace").splitlines(True),
                "committed", "saved by JupyterLab", n=0))[:4000]
    return result


if __name__ == "__main__":
    sys.exit(main())
