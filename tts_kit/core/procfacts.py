"""Facts about processes, read from the OS in one place: memory, CPU time, cores, a
container's limits and glibc. Sizes in MiB; asking about a gone process gives None.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import math
import os
import resource
import signal
import sys
import time
from pathlib import Path

import psutil

from tts_kit.core.settings import settings as current_settings

MIB = 2.0**20
#: Carries ``run_isolated(cpus=N)`` into the child (and its children).
CPUS_ENV = "TTS_KIT_CPUS"


def _proc_numbers(path: str, *keys: str, base: int = 10) -> dict[str, int]:
    """The ``Key: number ...`` lines of a /proc file for ``keys`` (none where unreadable)."""
    try:
        with open(path, encoding="ascii") as fh:
            fields = [line.partition(":") for line in fh]
        return {k: int(rest.split()[0], base) for k, _, rest in fields if k in keys}
    except (OSError, ValueError, IndexError):
        return {}


def status_mb(*keys: str, pid: int | str = "self") -> dict[str, float]:
    """Fields of ``/proc/PID/status`` given in kB (``VmHWM``, ``RssAnon`` ...), in MiB.

    Example:
        >>> sorted(status_mb("VmRSS", "NoSuchField"))  # doctest: +SKIP
        ['VmRSS']
    """
    return {k: kb / 1024.0 for k, kb in _proc_numbers(f"/proc/{pid}/status", *keys).items()}


def rss_mb(pid: int | None = None) -> float | None:
    """Resident set size of ``pid`` (default: this process) now; None once it is gone.

    Example:
        >>> rss_mb() > 0
        True
    """
    try:
        return psutil.Process(pid).memory_info().rss / MIB
    except (psutil.Error, OSError):
        return None


def pss_mb(pid: int | None = None) -> float | None:
    """Proportional set size of ``pid`` (shared pages split between sharers); None where
    unknown.

    Example:
        >>> pss_mb() is None or pss_mb() > 0
        True
    """
    try:
        pss = getattr(psutil.Process(pid).memory_full_info(), "pss", None)
    except (psutil.Error, OSError):
        return None
    return None if pss is None else pss / MIB


def peak_rss_mb(pid: int | None = None) -> float:
    """The RSS high-water mark of ``pid``: ``VmHWM`` (a spawned child's ``ru_maxrss`` still
    carries its parent's fork), else this process's ``ru_maxrss``; NaN where unknown.

    Example:
        >>> peak_rss_mb() > 0
        True
    """
    hwm = status_mb("VmHWM", pid=pid or "self").get("VmHWM")
    if hwm is not None:
        return hwm
    if pid is None:
        scale = 1.0 if sys.platform == "darwin" else 1024.0  # macOS: bytes, Linux: KiB
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / MIB
    return math.nan


def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark to its current RSS; False where unsupported.

    Example:
        >>> reset_peak_rss() in (True, False)
        True
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def cpu_seconds(pid: int | None = None) -> float | None:
    """User + system CPU seconds of ``pid`` (default: this process), all threads.

    Example:
        >>> cpu_seconds() >= 0
        True
    """
    if pid is None:  # finer than psutil's clock ticks, for short timed calls
        return time.process_time()
    try:
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except (psutil.Error, OSError):
        return None


def allowed_cpus() -> list[int]:
    """The core ids this process may run on (its affinity mask), sorted.

    Example:
        >>> len(allowed_cpus()) >= 1
        True
    """
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def idlest_cpus(n: int, cores: list[int] | None = None, interval_s: float = 0.05,
                busy: list[float] | None = None) -> list[int]:
    """The ``n`` least busy of ``cores`` over ``interval_s``, sorted, ties to the lower id;
    ``busy`` (percent per core id) replaces the measurement.

    Example:
        >>> idlest_cpus(1, [0, 1], busy=[97.0, 4.0]), idlest_cpus(1, [0, 1], busy=[3.0, 8.0])
        ([1], [0])
    """
    cores = allowed_cpus() if cores is None else list(cores)
    if n >= len(cores):
        return sorted(cores)
    if busy is None:
        try:
            busy = psutil.cpu_percent(interval=interval_s, percpu=True)
        except Exception:  # pragma: no cover - /proc/stat unreadable: keep the order
            return sorted(cores[:n])
    load = {c: busy[c] if c < len(busy) else 0.0 for c in cores}
    # 10-point bins: a few percent of noise must not reorder idle cores
    return sorted(sorted(cores, key=lambda c: (round(load[c] / 10), c))[:n])


def _cgroup_read(root: str | os.PathLike[str] | None, v2: str, v1: str) -> str | None:
    """``root``'s (or $TTS_KIT_CGROUP_ROOT's, else our cgroup's) v2 file ``v2``, else v1's."""
    if root is None:
        root = current_settings().cgroup_root
    base = Path(root).expanduser() if root is not None else _cgroup_dir()
    raw = _read(base / v2) if base is not None else None
    return raw if raw or root is not None else _read(Path("/sys/fs/cgroup") / v1)


def _cgroup_dir() -> Path | None:
    """This process's cgroup v2 directory, or None (cgroup v1 or not Linux)."""
    for line in (_read(Path("/proc/self/cgroup")) or "").splitlines():
        if line.startswith("0::"):
            path = Path("/sys/fs/cgroup") / line[3:].strip().lstrip("/")
            return path if path.is_dir() else Path("/sys/fs/cgroup")
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except OSError:
        return None


def cgroup_cpu_quota(root: str | os.PathLike[str] | None = None) -> float | None:
    """The container's CPU quota in cores (``cpu.max`` 150000/100000 -> 1.5), else None;
    ``root``: a cgroup directory read instead (default ``$TTS_KIT_CGROUP_ROOT``).

    Example:
        >>> cgroup_cpu_quota() is None or cgroup_cpu_quota() > 0
        True
    """
    quota, _, period = (_cgroup_read(root, "cpu.max", "cpu/cpu.cfs_quota_us") or "").partition(" ")
    if quota and not period:  # cgroup v1 keeps the period in a file of its own
        period = _read(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")) or ""
    try:
        return int(quota) / int(period or 100000) if int(quota) > 0 else None
    except (TypeError, ValueError):  # "max" (no quota), missing or malformed
        return None


def cgroup_memory_limit_mb(root: str | os.PathLike[str] | None = None) -> float | None:
    """The container's memory limit in MiB (``memory.max``), else None (``root``: as for
    `cgroup_cpu_quota`).

    Example:
        >>> cgroup_memory_limit_mb() is None or cgroup_memory_limit_mb() > 0
        True
    """
    raw = _cgroup_read(root, "memory.max", "memory/memory.limit_in_bytes") or ""
    if not raw.isdigit():  # "max" (no limit), missing or malformed
        return None
    # cgroup v1 writes "no limit" as a huge page-aligned number.
    return None if int(raw) >= 2**60 else int(raw) / MIB


def usable_cores(root: str | os.PathLike[str] | None = None) -> int:
    """Cores this process can use: its affinity, capped by the cgroup CPU quota (rounded
    down, at least 1).

    Example:
        >>> 1 <= usable_cores() <= len(allowed_cpus())
        True
    """
    cores, quota = len(allowed_cpus()), cgroup_cpu_quota(root)
    return cores if quota is None else max(1, min(cores, int(quota)))


def current_cpus() -> int | None:
    """Cores `tts_kit.runtime.measure.run_isolated` gave this process, else None.

    Example:
        >>> current_cpus() is None or current_cpus() >= 1
        True
    """
    raw = (current_settings().cpus or "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def umask_mode(mode: int) -> int:
    """``mode`` as the umask lets a new file or directory have it (what ``mkdir`` gives).

    Example:
        >>> umask_mode(0o777) | 0o777 == 0o777
        True
    """
    # From /proc where reported: setting the umask to read it changes it for every thread.
    mask = _proc_numbers("/proc/self/status", "Umask", base=8).get("Umask")
    if mask is None:
        mask = os.umask(0o077)
        os.umask(mask)
    return mode & ~mask


@functools.cache
def libc() -> ctypes.CDLL | None:
    """glibc (or the platform's C library), loaded once; None where it cannot be loaded.

    Example:
        >>> libc() is None or hasattr(libc(), "free")
        True
    """
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def _glibc(name: str, *args: int) -> bool:
    fn = getattr(libc(), name, None)
    return bool(fn(*args)) if fn is not None else False


def malloc_trim() -> bool:
    """Ask glibc to return free heap pages to the OS; False where there is no glibc.

    Example:
        >>> malloc_trim() in (True, False)
        True
    """
    return _glibc("malloc_trim", 0)


def mallopt(param: int, value: int) -> bool:
    """glibc's ``mallopt(param, value)``; False where there is no glibc.

    Example:
        >>> mallopt(-3, 1024 * 1024) in (True, False)  # M_MMAP_THRESHOLD
        True
    """
    return _glibc("mallopt", int(param), int(value))


def release_memory() -> None:
    """Collect garbage and trim the C heap, which otherwise keeps freed pages.

    Example:
        >>> release_memory()
    """
    gc.collect()
    malloc_trim()


def die_with_parent(parent: int | None = None) -> None:
    """Linux: SIGKILL this process when its parent (pid ``parent``: at once if already
    gone) dies, so a killed server leaves no worker.

    Example:
        >>> import subprocess, sys
        >>> subprocess.run([sys.executable, "-c", "0"], preexec_fn=die_with_parent).returncode
        0
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:  # it died before prctl
        os.kill(os.getpid(), signal.SIGKILL)
