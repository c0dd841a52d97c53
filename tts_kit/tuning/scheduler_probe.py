"""Is there a Dask scheduler at this address? Asked over a plain socket with a deadline,
before Dask's client (which waits without bound on a silent peer) connects.
"""

from __future__ import annotations

import socket
import struct
import time
from urllib.parse import urlsplit

from tts_kit.core.errors import TtsKitError


class ProbeError(TtsKitError):
    """No Dask scheduler answers at the address (one line, naming it)."""


#: The port ``dask scheduler`` listens on when the address names none.
DEFAULT_PORT = 8786


def probe_scheduler(address: str, timeout_s: float = 10.0) -> str:
    """``address`` as ``tcp://HOST:PORT`` once a Dask scheduler greets there; else
    `ProbeError`, one line naming the address.

    Example:
        >>> probe_scheduler("ucx://10.0.0.5:8786")
        Traceback (most recent call last):
        ...
        tts_kit.tuning.scheduler_probe.ProbeError: --scheduler ucx://10.0.0.5:8786: ...
    """
    head = f"--scheduler {address}"
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme != "tcp":
        raise ProbeError(f"{head}: tts-kit reaches Dask schedulers over tcp:// only (a "
                           f"{scheme}:// scheduler needs a transport or security setup it "
                           "does not have); give tcp://HOST:PORT")
    try:
        parts = urlsplit(f"tcp://{rest}")
        host, port = parts.hostname, parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise ProbeError(f"{head}: not an address ({exc}); give tcp://HOST:PORT") from None
    if not host or parts.path or parts.query:
        raise ProbeError(f"{head}: not an address; give tcp://HOST:PORT")
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            greeting = _read_some(sock, 24, timeout_s)
    except OSError as exc:
        why = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise ProbeError(f"cannot reach the Dask scheduler at {address} ({why}); start one "
                           "with `dask scheduler` and give its tcp://HOST:PORT") from None
    if not _is_dask_greeting(greeting):
        said = "sent nothing" if not greeting else f"answered {greeting[:12]!r}"
        raise ProbeError(f"{head}: the peer accepted the connection but {said} within "
                           f"{timeout_s:g} s, which no Dask scheduler does; give the "
                           f"scheduler's tcp://HOST:PORT (`dask scheduler` listens on "
                           f"{DEFAULT_PORT})")
    host_text = f"[{host}]" if ":" in host else host
    return f"tcp://{host_text}:{port}"


def _read_some(sock: socket.socket, n: int, timeout_s: float) -> bytes:
    """Up to ``n`` bytes from ``sock`` within ``timeout_s`` (fewer when the peer stops)."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(data))
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _is_dask_greeting(data: bytes) -> bool:
    """Whether ``data`` starts like Dask's TCP framing: small total length and frame count."""
    if len(data) < 16:
        return False
    total, frames = struct.unpack("<QQ", data[:16])
    return 0 < total < 1 << 24 and 0 < frames < 1 << 10

