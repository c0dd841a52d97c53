"""Start a ``tts-kit serve`` in a subprocess on a free local port, wait until it is ready,
and stop it with SIGTERM: what the tests, the load-test sweep and the notebook use.

Example:
    >>> with start_server(["--workers", "1"]) as server:  # doctest: +SKIP
    ...     server.url
    'http://127.0.0.1:41234'
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ServerHandle:
    """A running server: its ``url``, process, and `stop`."""

    def __init__(self, proc: subprocess.Popen, url: str, log: Path):
        self.proc = proc
        self.url = url
        self.log = log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        """What the server printed so far."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM (drain, stop the workers), SIGKILL after ``timeout_s``; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


def wait_ready(url: str, proc: subprocess.Popen | None = None, timeout_s: float = 300.0,
               api_key: str | None = None) -> dict[str, Any]:
    """Poll ``url``/health until it answers 200; its JSON. RuntimeError on exit or timeout."""
    import httpx

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode} before it "
                               "was ready")
        with contextlib.suppress(httpx.HTTPError):
            r = httpx.get(f"{url}/health", timeout=2.0)
            if r.status_code == 200:
                return dict(r.json())
        time.sleep(0.2)
    raise RuntimeError(f"the server at {url} was not ready after {timeout_s:g} s")


@contextlib.contextmanager
def start_server(args: Sequence[str] = (), env: dict[str, str] | None = None,
                 ready_timeout_s: float = 300.0, log_dir: str | os.PathLike[str] | None = None
                 ) -> Iterator[ServerHandle]:
    """Run ``tts-kit serve ARGS --port FREE`` until the block ends (then SIGTERM).

    The server's output goes to a log file (``log_dir``, default a temporary directory).
    """
    import tempfile

    port = free_port()
    log_path = Path(log_dir or tempfile.mkdtemp(prefix="tts-kit-serve-")) / f"serve-{port}.log"
    cmd = [sys.executable, "-m", "tts_kit.cli", "serve", *args, "--port", str(port)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    handle = ServerHandle(proc, f"http://127.0.0.1:{port}", log_path)
    try:
        try:
            wait_ready(handle.url, proc, ready_timeout_s)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; its output: {handle.output()[-1500:]}") from None
        yield handle
    finally:
        handle.stop()
