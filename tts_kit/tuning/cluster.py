"""Sweeps across machines on Dask distributed: `TrialExecutor` runs a sweep's trials one per
worker at a time, each worker finding the model by fingerprint; records carry ``machine``
and ``worker`` (docs/guide.md)."""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing as mp
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.core.settings import settings as current_settings
from tts_kit.runtime.devices import environment
from tts_kit.tuning import tune
from tts_kit.tuning.spread import error_record

if TYPE_CHECKING:
    from distributed import Client

    from tts_kit.models.supertonic.bundle import Bundle

#: The Dask worker resource a trial takes one of: workers offer ``trial=1``.
RESOURCE = "trial"
#: How long `connect` waits for the scheduler and a trial worker by default (seconds).
CONNECT_TIMEOUT_S = 10.0
#: The port ``dask scheduler`` listens on when the address names none.
DEFAULT_PORT = 8786


class ClusterError(TtsKitError):
    """The cluster cannot be used (no Dask, no scheduler, no worker): one line and the fix.

    Example:
        >>> str(ClusterError("cannot reach the Dask scheduler at tcp://x:1"))
        'cannot reach the Dask scheduler at tcp://x:1'
    """


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError("sweeps on a cluster need Dask distributed: "
                           "pip install 'tts_kit[dask]'") from None
    return distributed


def connect(address: str, timeout_s: float | None = None) -> Client:
    """A ``distributed.Client`` on the scheduler at ``address``, waiting up to ``timeout_s``
    for it and a worker offering `RESOURCE`.

    Example:
        >>> client = connect("tcp://127.0.0.1:8786")  # doctest: +SKIP
    """
    distributed = _distributed()
    timeout_s = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    # A peer that is no scheduler: one line, not Dask's hang or its MemoryError.
    address = probe_scheduler(address, timeout_s)
    try:
        client = distributed.Client(address, timeout=f"{timeout_s}s")
    except (OSError, TimeoutError, ValueError, MemoryError) as exc:
        raise _unreachable(address, exc, 200) from None
    try:
        _wait_for_trial_workers(client, timeout_s)
    except ClusterError:
        client.close()
        raise
    return client


def _unreachable(address: str, exc: BaseException, width: int) -> ClusterError:
    why = " ".join(str(exc).split())[:width] or type(exc).__name__
    return ClusterError(f"cannot reach the Dask scheduler at {address} ({why}); start one "
                        "with `dask scheduler` and give its tcp://HOST:PORT")


def probe_scheduler(address: str, timeout_s: float = 10.0) -> str:
    """``address`` as ``tcp://HOST:PORT`` once a Dask scheduler greets there, asked over a
    plain socket with a deadline (Dask's client waits without bound on a silent peer);
    else `ClusterError`, one line naming the address.

    Example:
        >>> probe_scheduler("ucx://10.0.0.5:8786")
        Traceback (most recent call last):
        ...
        tts_kit.tuning.cluster.ClusterError: --scheduler ucx://10.0.0.5:8786: ...
    """
    head = f"--scheduler {address}"
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme != "tcp":
        raise ClusterError(f"{head}: tts-kit reaches Dask schedulers over tcp:// only (a "
                           f"{scheme}:// scheduler needs a transport or security setup it "
                           "does not have); give tcp://HOST:PORT")
    try:
        parts = urlsplit(f"tcp://{rest}")
        host, port = parts.hostname, parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise ClusterError(f"{head}: not an address ({exc}); give tcp://HOST:PORT") from None
    if not host or parts.path or parts.query:
        raise ClusterError(f"{head}: not an address; give tcp://HOST:PORT")
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            greeting = _read_some(sock, 24, timeout_s)
    except OSError as exc:
        raise _unreachable(address, exc, 160) from None
    # Dask's TCP framing opens with a small total length and frame count.
    total, frames = struct.unpack("<QQ", greeting[:16]) if len(greeting) >= 16 else (0, 0)
    if not (0 < total < 1 << 24 and 0 < frames < 1 << 10):
        said = "sent nothing" if not greeting else f"answered {greeting[:12]!r}"
        raise ClusterError(f"{head}: the peer accepted the connection but {said} within "
                           f"{timeout_s:g} s, which no Dask scheduler does; give the "
                           f"scheduler's tcp://HOST:PORT (`dask scheduler` listens on "
                           f"{DEFAULT_PORT})")
    host_text = f"[{host}]" if ":" in host else host
    return f"tcp://{host_text}:{port}"


def _read_some(sock: socket.socket, n: int, timeout_s: float) -> bytes:
    """Up to ``n`` bytes from ``sock`` within ``timeout_s`` (fewer when the peer stops)."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while len(data) < n and (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(data))
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _wait_for_trial_workers(client: Client, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for a worker that offers `RESOURCE`; `ClusterError` if none."""
    deadline = time.monotonic() + timeout_s
    while True:
        workers = client.scheduler_info().get("workers", {})
        if any((w.get("resources") or {}).get(RESOURCE) for w in workers.values()):
            return
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"no worker of the scheduler offers the {RESOURCE!r} resource ({len(workers)} "
                f"worker(s)); start workers with `dask worker ADDRESS --nthreads 1 "
                f"--resources {RESOURCE}=1`")
        time.sleep(0.2)


@dataclass(frozen=True)
class ModelRef:
    """What a worker needs to find the client's model: path, fingerprint, stand-in marker.

    Example:
        >>> ref = ModelRef.of(Bundle.discover())  # doctest: +SKIP
        >>> ref.standin["scale"], len(ref.fingerprint)  # doctest: +SKIP
        ('tiny', 4)
    """

    path: str  #: the bundle directory on the client
    fingerprint: Mapping[str, str]  #: SHA-256 of every graph
    standin: Mapping[str, Any] | None = None  #: scale, seed, version; None: a real model

    @classmethod
    def of(cls, bundle: Bundle | str | os.PathLike[str]) -> ModelRef:
        """The reference of a `Bundle` or bundle directory (hashes every graph once)."""
        from tts_kit.models.base import SpeechModel
        from tts_kit.models.resolve import open_model

        b = bundle if isinstance(bundle, SpeechModel) else open_model(bundle)
        if not b.capabilities.distributed:
            raise BundleError(f"{b.label} cannot be swept across machines yet (workers find a "
                              "model by its graphs' fingerprint); tune it here, without "
                              "--scheduler")
        info = b.standin_info
        return cls(str(b.path), dict(b.fingerprint()), dict(info) if info else None)


class ModelNotFound(TtsKitError):
    """A worker has no model with the client's fingerprint (one line, naming the worker)."""


# (path, size and mtime of each graph) -> fingerprint: a worker hashes a bundle once.
_HASHES: dict[tuple[Any, ...], dict[str, str]] = {}
_HASH_LOCK = threading.Lock()


def _fingerprint(path: Path) -> dict[str, str]:
    from tts_kit.core import contract
    from tts_kit.models.supertonic.bundle import Bundle

    bundle = Bundle(path)
    stats = tuple((s, os.stat(bundle.stage_path(s)).st_size,
                   os.stat(bundle.stage_path(s)).st_mtime_ns) for s in contract.STAGES)
    key = (str(path.resolve()), stats)
    with _HASH_LOCK:
        if key not in _HASHES:
            _HASHES[key] = dict(bundle.fingerprint())
        return _HASHES[key]


def _check(path: Path, want: Mapping[str, str]) -> str | None:
    """None when ``path`` holds the model ``want`` fingerprints; else why not (short)."""
    if not path.is_dir():
        return "not there"
    try:
        have = _fingerprint(path)
    except (OSError, ValueError) as exc:  # BundleError is a ValueError
        return " ".join(str(exc).split())[:160]
    differ = sorted(s for s in want if have.get(s) != want[s])
    return f"different SHA-256 of {', '.join(differ)}" if differ else None


def locate_on_worker(ref: ModelRef, where: str = "this worker") -> Path:
    """The directory here holding ``ref``'s model: the client's path when it holds the same
    graphs, a rebuilt stand-in, or ``$TTS_KIT_MODEL_DIR``; else `ModelNotFound`.

    Example:
        >>> locate_on_worker(ModelRef.of("models/full"), "tcp://10.0.0.6:38811")  # doctest: +SKIP
        PosixPath('/srv/models/full')
    """
    same = Path(ref.path)
    if _check(same, ref.fingerprint) is None:
        return same
    if ref.standin is not None:
        from tts_kit.models.supertonic.standin import STANDIN_VERSION, ensure_standin

        version = ref.standin.get("version", STANDIN_VERSION)
        if version != STANDIN_VERSION:
            raise ModelNotFound(
                f"worker {where}: its tts_kit builds stand-in v{STANDIN_VERSION}, the client "
                f"measured v{version}; install the same tts_kit on the workers")
        # The graphs are seeded: the same scale and seed give the same costs here.
        return ensure_standin(str(ref.standin.get("scale", "tiny")),
                              int(ref.standin.get("seed", 0)))
    reasons = [f"{same}: {_check(same, ref.fingerprint)}"]
    env = current_settings().model_dir  # the worker's own settings
    if env:
        why = _check(Path(env).expanduser(), ref.fingerprint)
        if why is None:
            return Path(env).expanduser()
        reasons.append(f"$TTS_KIT_MODEL_DIR {env}: {why}")
    else:
        reasons.append("$TTS_KIT_MODEL_DIR unset")
    raise ModelNotFound(f"worker {where} has no copy of the client's model ("
                        f"{'; '.join(reasons)}); copy the bundle to the same path or set "
                        "$TTS_KIT_MODEL_DIR on the worker")


def _where() -> tuple[str, str]:
    """(this worker's address, host name); outside a worker, (host name, host name)."""
    host = socket.gethostname()
    try:
        from distributed import get_worker

        return str(get_worker().address), host
    except (ImportError, ValueError):
        return host, host


def worker_trial(ref: ModelRef, preset: Any, workload: Any, **kwargs: Any) -> dict[str, Any]:
    """`tts_kit.tuning.tune.trial` on a Dask worker, on its copy of ``ref``'s model, with
    ``machine`` and ``worker``; no model here gives an ``error`` record naming the worker.

    Example:
        >>> rec = client.submit(worker_trial, ModelRef.of("models/full"), "lean",
        ...                     Workload(), cpus=1, pure=False).result()  # doctest: +SKIP
        >>> rec["worker"]["address"], rec["machine"]["cpu_model"]  # doctest: +SKIP
    """
    address, host = _where()
    start = time.time()
    # Nanny-started workers are daemonic processes, and multiprocessing refuses children
    # to those; the trial's child is reaped by run_isolated itself, so this is safe.
    if mp.current_process().daemon:
        mp.current_process().daemon = False
    try:
        path = locate_on_worker(ref, address)
    except ValueError as exc:  # ModelNotFound, a broken copy, an unknown scale
        msg = " ".join(str(exc).split())
        if not msg.startswith("worker "):
            msg = f"worker {address}: {msg}"
        record = error_record(preset, workload, msg, **kwargs)
    else:
        record = tune.trial(path, preset, workload, **kwargs)
    record["machine"] = environment()
    record["worker"] = {"address": address, "host": host, "start": start, "end": time.time()}
    return record


class TrialExecutor(cf.Executor):
    """A ``concurrent.futures.Executor`` over a Dask client: ``submit(tune.trial, bundle,
    ...)`` runs `worker_trial` holding one `RESOURCE`; other functions go as they are.

    Example:
        >>> with local_cluster(2) as client:  # doctest: +SKIP
        ...     result = tune.sweep(bundle, ["lean"], cpus=(1,), executor=TrialExecutor(client))
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self._inner = client.get_executor(resources={RESOURCE: 1}, pure=False)
        self._refs: dict[str, ModelRef] = {}
        # At most one trial in flight per free slot: a worker handed several waits them out
        # there, and loses them all if it dies.
        self._busy = 0
        self._slot_freed = threading.Condition()
        self.lost: str | None = None  #: why the scheduler is gone, once it is
        # The futures handed out and not settled -> their task (fn, args, kwargs).
        self._pending: dict[cf.Future, tuple[Callable[..., Any], tuple, dict]] = {}
        self._watcher: threading.Thread | None = None

    def ref(self, bundle: Any) -> ModelRef:
        """The `ModelRef` of ``bundle`` (a `Bundle` or path), computed once per path."""
        key = str(Path(getattr(bundle, "path", bundle)))
        if key not in self._refs:
            self._refs[key] = ModelRef.of(bundle)
        return self._refs[key]

    def _alive(self) -> bool:
        """False (and `lost` set) once the client lost its scheduler (Dask cancels all then)."""
        if self.lost is None and getattr(self.client, "status", "running") != "running":
            address = getattr(self.client.scheduler, "address", None) or "?"
            self.lost = (f"lost the Dask scheduler at {address} before every trial "
                         "finished; the unfinished trials are marked lost")
        if self.lost is not None:
            self._settle_lost()
        return self.lost is None

    def _slots(self) -> int:
        """Trial slots the cluster offers now (workers come and go; at least one)."""
        try:
            workers = self.client.scheduler_info().get("workers", {}).values()
        except Exception:  # noqa: BLE001 - a scheduler that does not answer: one at a time
            return 1
        return max(1, int(sum(w.get("resources", {}).get(RESOURCE, 0) for w in workers)))

    def _release(self, _future: Any) -> None:
        with self._slot_freed:
            self._busy -= 1
            self._slot_freed.notify_all()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        """Submit one task, waiting while every trial slot is taken; once the scheduler is
        lost, a trial's future holds a lost record, any other task's a `ClusterError`."""
        outer: cf.Future = cf.Future()
        self._pending[outer] = (fn, args, kwargs)
        self._watch()
        while True:
            if not self._alive():
                return outer
            # Ask the scheduler outside the lock: the answer comes through Dask's IO loop,
            # which may be running `_release` (it needs the lock) right now: a deadlock.
            slots = self._slots()
            with self._slot_freed:
                if self._busy < slots:
                    self._busy += 1
                    break
                self._slot_freed.wait(1.0)  # then re-read the slots: a lost worker may be back
        try:
            if fn is tune.trial:
                bundle, *rest = args
                future = self._inner.submit(worker_trial, self.ref(bundle), *rest, **kwargs)
            else:
                future = self._inner.submit(fn, *args, **kwargs)
        except BaseException:
            self._release(None)
            self._pending.pop(outer, None)
            raise
        future.add_done_callback(self._release)
        future.add_done_callback(lambda f: self._settle(outer, f))
        return outer

    def _settle(self, outer: cf.Future, inner: cf.Future) -> None:
        """Hand ``inner``'s outcome to ``outer``; a cancellation means the scheduler is gone."""
        if inner.cancelled() or isinstance(inner.exception(), cf.CancelledError):
            if self._alive():  # cancelled while the scheduler answers: say so
                self._resolve(outer, None, cf.CancelledError())
            return
        self._resolve(outer, inner.result() if inner.exception() is None else None,
                      inner.exception())

    def _resolve(self, outer: cf.Future, result: Any, exc: BaseException | None) -> None:
        self._pending.pop(outer, None)
        if outer.done():
            return
        if exc is not None:
            outer.set_exception(exc)
        else:
            outer.set_result(result)

    def _settle_lost(self) -> None:
        """Every future not finished gets a lost record, or a `ClusterError` if no trial's."""
        for outer, (fn, args, kwargs) in list(self._pending.items()):
            if fn is tune.trial and len(args) >= 3:
                self._resolve(outer, error_record(args[1], args[2], str(self.lost), **kwargs),
                              None)
            else:
                self._resolve(outer, None, ClusterError(str(self.lost)))

    def _watch(self) -> None:
        """Start a thread that notices a lost scheduler even when Dask cancels nothing."""
        if self._watcher is not None:
            return

        def watch() -> None:
            while self._pending and self._alive():
                time.sleep(0.25)
            self._watcher = None  # the next submit starts another

        self._watcher = threading.Thread(target=watch, name="tts-kit-scheduler-watch",
                                         daemon=True)
        self._watcher.start()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self.lost is None:
            self._inner.shutdown(wait=wait)


def local_cluster(n_workers: int = 2, timeout_s: float = 60.0, **kwargs: Any) -> Client:
    """A client on a new ``distributed.LocalCluster`` of trial workers on 127.0.0.1 (closed
    with it). They share this machine's cores: a demonstration, not a measurement.

    Example:
        >>> with local_cluster(1) as client:  # doctest: +SKIP
        ...     list(client.scheduler_info()["workers"])
        ['tcp://127.0.0.1:40123']
    """
    distributed = _distributed()
    import dask

    opts: dict[str, Any] = dict(
        n_workers=n_workers, processes=True, threads_per_worker=1,
        resources={RESOURCE: 1}, host="127.0.0.1",
        # Any free port: the scheduler's HTTP server starts even without a dashboard, and on
        # 8787 warns into the notebook when a neighbour holds it.
        dashboard_address="127.0.0.1:0",
        scheduler_kwargs={"allowed_failures": 0, "dashboard": False},
        silence_logs=logging.ERROR,
    )
    opts.update(kwargs)
    # Non-daemonic workers may start a trial's process (worker_trial also copes).
    with dask.config.set({"distributed.worker.daemon": False}):
        return distributed.Client(timeout=f"{timeout_s}s", **opts)
