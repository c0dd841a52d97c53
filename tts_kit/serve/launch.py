"""Start a ``tts-kit serve`` in a subprocess on a free local port (flags, or a `ServeConfig`
as JSON on its stdin), wait until it is ready, and stop it with SIGTERM."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tts_kit.core.errors import TtsKitError
from tts_kit.core.userfiles import read_json

if TYPE_CHECKING:
    from tts_kit.serve.config import ServeConfig


def read_config(source: str) -> ServeConfig:
    """The `ServeConfig` in JSON file ``source``, or on stdin for ``-``.

    Example:
        >>> read_config("serve.json").port  # doctest: +SKIP
        9000
    """
    from tts_kit.serve.config import ServeConfig

    if source != "-":
        return ServeConfig.from_dict(read_json(source, f"--config-json {source}",
                                               "give a JSON object of settings"))
    try:
        text = sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:  # a binary file: not UTF-8 text
        raise TtsKitError("--config-json -: cannot read it (not UTF-8 text; give a JSON "
                          "file)") from None
    return ServeConfig.from_json(text)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclasses.dataclass(eq=False)
class ServerHandle:
    """A running server: its ``url``, process, and `stop`."""

    proc: subprocess.Popen
    url: str
    log: Path | IO[bytes]  #: a file in the caller's log_dir, or one with no name

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        """What the server printed so far."""
        with contextlib.suppress(OSError):
            if isinstance(self.log, Path):
                return self.log.read_text(errors="replace")
            fd = self.log.fileno()  # pread: the server's write offset is shared, left alone
            return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")
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


def wait_ready(url: str, proc: subprocess.Popen | None = None,
               timeout_s: float = 300.0) -> dict[str, Any]:
    """Poll ``url``/health until it answers 200; its JSON. RuntimeError on exit or timeout."""
    import httpx

    end = time.monotonic() + timeout_s
    # One client for all the polls: each `httpx.get` would build a TLS context (50 ms CPU).
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < end:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the server exited with status {proc.returncode} before "
                                   "it was ready")
            with contextlib.suppress(httpx.HTTPError):
                r = client.get(f"{url}/health")
                if r.status_code == 200:
                    return dict(r.json())
            time.sleep(0.2)
    raise RuntimeError(f"the server at {url} was not ready after {timeout_s:g} s")


@contextlib.contextmanager
def start_server(args: Sequence[str] = (), env: dict[str, str] | None = None,
                 log_dir: str | os.PathLike[str] | None = None, *,
                 config: ServeConfig | None = None,
                 preexec_fn: Callable[[], Any] | None = None) -> Iterator[ServerHandle]:
    """Run ``tts-kit serve ARGS --port FREE``, or ``config``, until the block ends (then
    SIGTERM). Its output goes to a log in ``log_dir``, else to a nameless file. It dies
    with this process (SIGKILL included; Linux ties this to the calling thread: call from
    one that outlives the block). ``preexec_fn`` runs in it before it starts.

    Example:
        >>> with start_server(config=ServeConfig(workers=2)) as server:  # doctest: +SKIP
        ...     server.url
        'http://127.0.0.1:41235'
    """
    import tempfile

    from tts_kit.core.procfacts import die_with_parent

    if config is not None and args:
        raise TtsKitError("start_server: give flags or a config, not both")
    port = free_port()
    me = os.getpid()

    def before_exec() -> None:
        die_with_parent(me)
        if preexec_fn is not None:
            preexec_fn()

    serve = [sys.executable, "-m", "tts_kit.cli", "serve"]
    if config is None:
        cmd, data = [*serve, *args, "--port", str(port)], None
    else:
        cmd = [*serve, "--config-json", "-"]
        data = dataclasses.replace(config, port=port).to_json().encode()
    log = open(Path(log_dir) / f"serve-{port}.log", "wb") if log_dir else tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})},
                                stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                                preexec_fn=before_exec)
    except BaseException:
        log.close()
        raise
    if data is not None:
        with contextlib.suppress(BrokenPipeError), proc.stdin:  # type: ignore[union-attr]
            proc.stdin.write(data)  # type: ignore[union-attr]
    handle = ServerHandle(proc, f"http://127.0.0.1:{port}",
                          Path(log.name) if log_dir else log)
    try:
        try:
            wait_ready(handle.url, proc)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; its output: {handle.output()[-1500:]}") from None
        yield handle
    finally:
        handle.stop()
        log.close()


class Stopped(SystemExit):
    """The process got SIGTERM or SIGHUP (`signals_end_the_block`); ``signum`` says which.
    A SystemExit: the only kind (with KeyboardInterrupt) that asyncio's guards and a
    library's ``except Exception`` let through."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


@contextlib.contextmanager
def signals_end_the_block() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Stopped` inside the block (so ``finally`` clauses run); the
    old handlers come back after. A no-op outside the main thread.

    Example:
        >>> with signals_end_the_block():
        ...     pass
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    stopping: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        if not stopping:  # once: a second signal must not cut the clean-up short
            stopping.append(signum)
            raise Stopped(signum)

    old = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
