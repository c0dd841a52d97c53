"""Outputs that appear whole or not at all, built in a sibling ``.<name>.tmp-<pid>-<random>``
(the pid lets `sweep_stale` find a dead writer's leftovers); SIGTERM and SIGHUP meanwhile
raise `Terminated`, so Ctrl-C's clean-up runs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from tts_kit.core.errors import TtsKitError
from tts_kit.core.procfacts import umask_mode

#: Signals turned into `Terminated` while an output is built (SIGINT raises KeyboardInterrupt).
GUARDED_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)
#: A temporary's name: ``.<name>.tmp-<pid>-<random><suffix>``.
TEMP_NAME = re.compile(r"^\..*\.tmp-(?P<pid>\d+)-[^/]*$")
#: Temporaries older than this are stale even when their pid is alive again (pid reuse).
STALE_AFTER_S = 24 * 3600.0


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while an output was being built (Ctrl-C's clean-up runs)."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


_guard_lock = threading.Lock()
_guard_depth = 0
_guard_saved: dict[int, object] = {}
_guard_caught: list[int] = []


def _raise_terminated(signum: int, frame: object) -> None:
    if _guard_caught:  # already unwinding: let the clean-up finish
        return
    _guard_caught.append(signum)
    raise Terminated(signum)


@contextlib.contextmanager
def _signals_as_exceptions() -> Iterator[None]:
    """SIGTERM/SIGHUP (default handlers, main thread) raise `Terminated`; re-sent at the end."""
    global _guard_depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _guard_lock:
        if _guard_depth == 0:
            _guard_caught.clear()
            for sig in GUARDED_SIGNALS:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    _guard_saved[sig] = signal.signal(sig, _raise_terminated)
        _guard_depth += 1
    try:
        yield
    finally:
        with _guard_lock:
            _guard_depth -= 1
            outermost = _guard_depth == 0
            if outermost:
                for sig, old in _guard_saved.items():
                    signal.signal(sig, old)  # type: ignore[arg-type]
                _guard_saved.clear()
        if outermost and _guard_caught:
            os.kill(os.getpid(), _guard_caught.pop())


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold interrupting signals for the few system calls that put an output in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, *GUARDED_SIGNALS})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _temp_prefix(dst: str | os.PathLike[str]) -> str:
    """The name prefix of ``dst``'s temporaries: ``.<name>.tmp-<pid>-``."""
    return f".{Path(dst).name}.tmp-{os.getpid()}-"


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def check_destination(dst: str | os.PathLike[str], example: str = "out.wav") -> Path:
    """Check, before any work, that a file can be written at ``dst`` (by writing a temporary
    beside it); else a one-line `TtsKitError` (``example``: the file name it suggests).

    Example:
        >>> check_destination(tempfile.gettempdir())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: ...: is a directory; give a file path (such as .../out.wav)
    """
    dst = Path(dst).expanduser()
    parent = dst.parent
    if dst.is_dir():
        raise TtsKitError(f"{dst}: is a directory; give a file path (such as {dst / example})")
    if not parent.exists():
        raise TtsKitError(f"{dst}: its directory does not exist; create it or choose another "
                          "path")
    if not parent.is_dir():
        raise TtsKitError(f"{dst}: a part of its path is not a directory; choose another path")
    if dst.exists() and not os.access(dst, os.W_OK):
        raise TtsKitError(f"{dst}: exists and is not writable; choose another path")
    try:
        fd, probe = tempfile.mkstemp(prefix=_temp_prefix(dst), dir=parent)
    except OSError as exc:
        raise TtsKitError(f"{dst}: cannot create a file there ({exc.strerror or exc}); "
                         "choose another path") from None
    os.close(fd)
    os.unlink(probe)
    return dst


@contextlib.contextmanager
def atomic_file(dst: str | os.PathLike[str], *, replace: bool = True,
                suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``dst``; on success it becomes ``dst`` in one step.

    Removed on any failure. ``replace=False``: ``FileExistsError`` rather than overwrite;
    ``suffix``: the temporary's (default ``dst``'s).

    Example:
        >>> d = Path(tempfile.mkdtemp())
        >>> with atomic_file(d / "x.json") as tmp:
        ...     _ = tmp.write_text("{}")
        >>> (d / "x.json").read_text()
        '{}'
    """
    dst = Path(dst)
    with _signals_as_exceptions():
        fd, name = tempfile.mkstemp(prefix=_temp_prefix(dst),
                                    suffix=dst.suffix if suffix is None else suffix,
                                    dir=dst.parent)
        os.close(fd)
        tmp = Path(name)
        try:
            yield tmp
            os.chmod(tmp, umask_mode(0o666))  # mkstemp makes 0600; outputs get the usual
            with _signals_blocked():
                if replace:
                    os.replace(tmp, dst)
                else:
                    _link_into_place(tmp, dst)
            _fsync_dir(dst.parent)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _link_into_place(tmp: Path, dst: Path) -> None:
    try:
        os.link(tmp, dst)  # atomic, and never overwrites
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise
        # No hard links here: check, then rename (a small window).
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, "already exists", str(dst)) from None
        os.replace(tmp, dst)
        return
    tmp.unlink()


def _own_temp(name: str) -> bool:
    """Whether ``name`` is a temporary of this process (`_temp_prefix`'s form)."""
    m = TEMP_NAME.match(name)
    return bool(m) and int(m["pid"]) == os.getpid()


def check_dir_destination(dst: str | os.PathLike[str]) -> Path:
    """Check, before any work, that `atomic_dir` can build at ``dst`` (missing or an empty
    directory, not a link, and a new directory can be made there); one-line `TtsKitError`.

    Example:
        >>> d = Path(tempfile.mkdtemp())
        >>> check_dir_destination(d / "new") == d / "new"
        True
    """
    dst = Path(dst).expanduser()
    if dst.is_symlink():  # dangling or not: the output cannot be put there
        raise TtsKitError(f"{dst}: is a symbolic link (to {os.readlink(dst)}); give a new path "
                         "that is not a link")
    if dst.exists() and not dst.is_dir():
        raise TtsKitError(f"{dst}: is a file; give a new directory path, or an empty directory")
    if dst.is_dir():
        try:
            names = [n for n in os.listdir(dst) if not _own_temp(n)]
        except OSError as exc:
            raise TtsKitError(f"{dst}: cannot list it ({exc.strerror or exc}); choose "
                             "another path") from None
        if names:
            raise TtsKitError(f"{dst}: already exists and is not an empty directory; choose a "
                             "new path or remove it")
        where = dst
    else:
        # The nearest ancestor that exists: what ``mkdir(parents=True)`` builds under.
        where = next((p for p in dst.parents if p.exists() or p.is_symlink()),
                     Path(dst.anchor or "."))
        if not where.is_dir():
            raise TtsKitError(f"{where}: not a directory; choose another path")
    try:
        probe = tempfile.mkdtemp(prefix=_temp_prefix(dst), dir=where)
    except OSError as exc:
        raise TtsKitError(f"{where}: cannot create a directory there ({exc.strerror or exc}); "
                         "choose another path") from None
    os.rmdir(probe)
    return dst


def _move_up(tmp: Path, dst: Path, last: str | None) -> None:
    """Move ``tmp``'s entries into ``dst`` (which holds ``tmp``), ``last`` last; all or none."""
    if any(n != tmp.name and not _own_temp(n) for n in os.listdir(dst)):  # written meanwhile
        raise OSError(errno.ENOTEMPTY, "Directory not empty", str(dst))  # as os.replace would
    names = sorted(os.listdir(tmp), key=lambda n: (n == last, n))
    moved: list[str] = []
    try:
        for name in names:  # `last` (e.g. the config's folder) last: a half-moved one never loads
            os.rename(tmp / name, dst / name)
            moved.append(name)
    except BaseException:
        for name in moved:  # put back what moved, so the failure leaves ``dst`` empty
            with contextlib.suppress(OSError):
                os.rename(dst / name, tmp / name)
        raise
    tmp.rmdir()


@contextlib.contextmanager
def atomic_dir(dst: str | os.PathLike[str], *, last: str | None = None) -> Iterator[Path]:
    """Yield a temporary directory; on success its content becomes ``dst``.

    An existing empty ``dst`` (a mount point) is built inside, its entries moved up with
    ``last`` last. On any failure ``dst`` is as it was.

    Example:
        >>> d = Path(tempfile.mkdtemp())
        >>> with atomic_dir(d / "out") as tmp:
        ...     _ = (tmp / "a.txt").write_text("a")
        >>> sorted(p.name for p in (d / "out").iterdir()), sorted(p.name for p in d.iterdir())
        (['a.txt'], ['out'])
    """
    dst = Path(dst)
    into = dst.is_dir() and not dst.is_symlink()
    # Built inside an existing ``dst`` (named as if beside ``dst/<name>``), else beside it;
    # once moved into place there is nothing left for scratch_dir to remove.
    with scratch_dir(dst / dst.name if into else dst) as tmp:
        yield tmp
        with _signals_blocked():
            if into:
                _move_up(tmp, dst, last)
            else:
                os.chmod(tmp, umask_mode(0o777))  # mkdtemp makes 0700
                os.replace(tmp, dst)
        _fsync_dir(dst if into else dst.parent)


@contextlib.contextmanager
def scratch_dir(beside: str | os.PathLike[str]) -> Iterator[Path]:
    """A private working directory next to ``beside`` (same file system), always removed.

    Example:
        >>> d = Path(tempfile.mkdtemp())
        >>> with scratch_dir(d / "out") as s:
        ...     s.name.startswith(".out.tmp-")
        True
        >>> list(d.iterdir())
        []
    """
    beside = Path(beside)
    with _signals_as_exceptions():
        tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(beside), dir=beside.parent))
        try:
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def lock_beside(directory: str | os.PathLike[str]) -> Path:
    """The lock file of ``directory``'s builds, beside it (``.NAME.lock``).

    Example:
        >>> lock_beside("/cache/external").as_posix()
        '/cache/.external.lock'
    """
    directory = Path(directory)
    return directory.with_name(f".{directory.name}.lock")


@contextlib.contextmanager
def build_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock between processes on the file ``path`` (none without ``fcntl``).

    Example:
        >>> d = Path(tempfile.mkdtemp())
        >>> with build_lock(lock_beside(d / "cache")):
        ...     (d / ".cache.lock").is_file()
        True
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def install_files(src_dir: str | os.PathLike[str], dst_dir: str | os.PathLike[str],
                  names: list[str]) -> list[Path]:
    """Move ``names`` from a finished temporary directory into ``dst_dir``, each replaced in
    one rename with signals held.

    Example:
        >>> a, b = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
        >>> _ = (a / "r.json").write_text("new")
        >>> [p.name for p in install_files(a, b, ["r.json"])]
        ['r.json']
    """
    src, dst = Path(src_dir), Path(dst_dir)
    with _signals_blocked():
        for name in names:
            os.chmod(src / name, umask_mode(0o666))
            os.replace(src / name, dst / name)
    _fsync_dir(dst)
    return [dst / name for name in names]


def _is_stale(path: str) -> bool:
    """Whether ``path`` is a temporary whose writer is gone (or that is very old)."""
    m = TEMP_NAME.match(Path(path).name)
    try:
        return bool(m) and (not psutil.pid_exists(int(m["pid"]))
                            or time.time() - os.lstat(path).st_mtime > STALE_AFTER_S)
    except OSError:
        return False


def sweep_stale(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove (and return) the temporaries dead writers left in ``directory``; only for
    directories tts_kit owns (the cache), never a user's.

    Example:
        >>> d = Path(tempfile.mkdtemp())
        >>> (d / ".k.tmp-999999999-x").mkdir()
        >>> [p.name for p in sweep_stale(d)]
        ['.k.tmp-999999999-x']
    """
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not _is_stale(entry.path):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # another sweeper got there first: fine
                continue
        removed.append(Path(entry.path))
    return removed
