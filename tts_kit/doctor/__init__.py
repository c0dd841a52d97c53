"""``tts-kit doctor``: what breaks on-device deployments, checked on this machine, with fixes;
each ``*_status`` function decides from facts passed in (tested without the machine).
"""

from __future__ import annotations

import contextlib
import ctypes.util
import importlib.metadata
import os
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from tts_kit.core import procfacts
from tts_kit.core.errors import TtsKitError
from tts_kit.core.settings import settings
from tts_kit.core.textsafe import display_path

# The machine's native facts (ELF needs, loaded libraries, CPU flags), re-exported here.
from tts_kit.doctor.native import cpu_flags, elf_needed, loaded_library, ort_libraries

Status = Literal["ok", "warn", "fail", "skip"]
STATUSES: tuple[str, ...] = ("ok", "warn", "fail", "skip")

#: Packages that each install the ``onnxruntime`` module; two of them overwrite each other.
ORT_DISTRIBUTIONS: tuple[str, ...] = (
    "onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-directml",
    "onnxruntime-qnn", "onnxruntime-training", "ort-nightly", "ort-nightly-gpu",
)
GOMP_FIX = ("install the GNU OpenMP runtime: apt-get install libgomp1 (Debian, Ubuntu, "
            "python:*-slim), apk add libgomp (Alpine), dnf install libgomp (Fedora, RHEL)")


@dataclass(frozen=True)
class Check:
    """One check's outcome: what was looked at, what was found, and the fix when not ok.

    Example:
        >>> Check("libgomp", "ok", "not linked by this build").to_dict()["status"]
        'ok'
    """

    name: str  # what was checked (``cpu quota``)
    status: Status  # ``skip``: not checked here
    found: str  # a sentence or two
    fix: str = ""  # what to do about it ("" when ok)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise TtsKitError(f"Check {self.name!r}: status must be one of {STATUSES}, got "
                             f"{self.status!r}")

    def to_dict(self) -> dict[str, str]:
        """Plain JSON form (``tts-kit doctor --json``)."""
        return asdict(self)


def ort_status(version: str | None, providers: Sequence[str], error: str | None,
               distributions: Sequence[str]) -> Check:
    """The ``onnxruntime`` check from what importing it gave (``error``: None when it
    imported) and the installed `ORT_DISTRIBUTIONS` (``"onnxruntime-gpu 1.22.0"``).

    Example:
        >>> ort_status(None, [], "No module named 'onnxruntime'", []).fix
        'pip install onnxruntime (or onnxruntime-gpu for CUDA)'
    """
    if error is not None:
        fix = (GOMP_FIX if "libgomp" in error
               else "pip install onnxruntime (or onnxruntime-gpu for CUDA)")
        return Check("onnxruntime", "fail", f"import failed: {error}", fix)
    package = f" (package {distributions[0]})" if len(distributions) == 1 else ""
    found = f"{version}{package}; providers: {', '.join(providers) or 'none'}"
    if len(distributions) > 1:
        # Both write the same onnxruntime/ directory; uninstalling one breaks the other.
        return Check("onnxruntime", "warn",
                     f"{found}; {len(distributions)} packages install it: "
                     f"{', '.join(distributions)}",
                     f"keep one: pip uninstall -y {' '.join(d.split()[0] for d in distributions)}"
                     " and pip install the one you need (onnxruntime-gpu for CUDA)")
    return Check("onnxruntime", "ok", found)


def _ort_distributions() -> list[str]:
    out = []
    for name in ORT_DISTRIBUTIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out.append(f"{name} {importlib.metadata.version(name)}")
    return out


def check_onnxruntime() -> tuple[Check, Any]:
    """The ``onnxruntime`` check, and the module (None when it does not import)."""
    try:
        import onnxruntime as ort
    except Exception as exc:  # ImportError, or an OSError from a missing shared library
        return ort_status(None, [], f"{type(exc).__name__}: {exc}", _ort_distributions()), None
    return ort_status(str(ort.__version__), list(ort.get_available_providers()), None,
                      _ort_distributions()), ort


def libgomp_status(needed: dict[str, list[str] | None], import_error: str | None,
                   loaded: str | None, installed: str | None) -> Check:
    """The ``libgomp`` check from ONNX Runtime's libraries' NEEDED entries (library -> list,
    None: unreadable), where libgomp is ``loaded`` here and where it is ``installed``.

    Example:
        >>> libgomp_status({"libonnxruntime.so": ["libstdc++.so.6"]}, None, None, None).status
        'ok'
    """
    readable = {name: libs for name, libs in needed.items() if libs is not None}
    linking = sorted(name for name, libs in readable.items()
                     if any(lib.startswith("libgomp") for lib in libs))
    if import_error is not None and "libgomp" in import_error:
        return Check("libgomp", "fail", f"import onnxruntime failed: {import_error}", GOMP_FIX)
    if not readable:
        what = ("no onnxruntime shared library found" if not needed else
                f"could not read the ELF headers of {', '.join(sorted(needed))}")
        return Check("libgomp", "skip", f"not checked: {what}")
    if not linking:
        return Check("libgomp", "ok",
                     f"not linked by this onnxruntime build: none of its {len(readable)} shared "
                     f"libraries ({', '.join(sorted(readable))}) lists it as NEEDED; a slim "
                     "image needs nothing for it")
    where = loaded or installed
    if where:
        return Check("libgomp", "ok", f"linked by {', '.join(linking)}; found: {where}")
    return Check("libgomp", "fail", f"linked by {', '.join(linking)}; not found", GOMP_FIX)


def check_libgomp(import_error: str | None) -> Check:
    """The ``libgomp`` check on this machine (Linux; elsewhere ``skip``)."""
    if not sys.platform.startswith("linux"):
        return Check("libgomp", "skip", f"not checked on {sys.platform} (a Linux image concern)")
    needed = {p.name: elf_needed(p) for p in ort_libraries()}
    linked = any(libs and any(lib.startswith("libgomp") for lib in libs)
                 for libs in needed.values())
    # find_library runs ldconfig: only worth it when the answer matters
    installed = ctypes.util.find_library("gomp") if linked else None
    return libgomp_status(needed, import_error, loaded_library("libgomp"), installed)


def cpu_features_status(flags: set[str] | None, machine: str) -> Check:
    """The ``cpu features`` check: what ONNX Runtime's INT8 kernels can use here.

    Example:
        >>> cpu_features_status({"sse4_2"}, "x86_64").status
        'warn'
    """
    name = "cpu features"
    if flags is None:
        return Check(name, "skip", "not checked (no /proc/cpuinfo on this system)")
    measure = ("measure before shipping INT8: tts-kit convert MODEL OUT --to int8 reports its "
               "latency and fidelity against FP32 here; keep FP32 (or FP16) if it is not faster")
    if machine.lower() in ("x86_64", "amd64", "i386", "i686", "x86"):
        vnni = sorted(f for f in flags if f in ("avx512_vnni", "avx_vnni", "amx_int8"))
        have = [f for f in ("avx2", "avx512f") if f in flags] + vnni
        found = f"x86: {', '.join(have) or 'no AVX2'}"
        if vnni:
            return Check(name, "ok", f"{found}: INT8 runs on VNNI kernels")
        if "avx2" in flags:
            return Check(name, "warn", f"{found}; no VNNI: INT8 matrix products run on AVX2, "
                         "often little faster than FP32 (and u8s8 weights may saturate)",
                         measure)
        return Check(name, "warn", f"{found}: INT8 and FP32 run on SSE kernels, slowly",
                     "deploy on a CPU with AVX2, better AVX512-VNNI or AVX-VNNI "
                     f"(Cascade Lake, Ice Lake, Zen 4, Alder Lake or newer); {measure}")
    if machine.lower() in ("aarch64", "arm64"):
        dot = sorted(f for f in flags if f in ("asimddp", "i8mm"))
        if dot:
            return Check(name, "ok", f"Arm: {', '.join(dot)}: INT8 uses dot-product kernels")
        return Check(name, "warn", "Arm: no asimddp (dot product): INT8 gains are small",
                     measure)
    return Check(name, "skip", f"not checked on {machine}")


def cpu_quota_status(quota: float | None, affinity: int, physical: int | None, usable: int,
                     cores_preset: int, source: str = "") -> Check:
    """The ``cpu quota`` check: ONNX Runtime's default thread count (one per ``physical``
    core) against what it may use (``quota`` in CPUs; ``cores_preset``: ``"cores"`` here).

    Example:
        >>> c = cpu_quota_status(1.5, 2, 2, 1, 1)
        >>> c.status, c.found.split("; ")[:2]
        ('warn', ['cgroup CPU quota 1.5 CPUs -> 1 usable core', 'affinity 2 cores'])
    """
    name = "cpu quota"
    limit = (f"cgroup CPU quota {quota:g} CPUs -> {usable} usable core{'s' * (usable != 1)}"
             if quota is not None else "no cgroup CPU quota")
    ort_default = physical if physical is not None else affinity
    found = (f"{limit}{source}; affinity {affinity} core{'s' * (affinity != 1)}; ONNX "
             f"Runtime's default starts {ort_default} intra-op thread"
             f"{'s' * (ort_default != 1)} (one per physical core of the host); a preset with "
             f'"cores" threads gets {cores_preset} here')
    if ort_default <= usable:
        return Check(name, "ok", found)
    why = "the quota" if quota is not None and int(quota) < affinity else "the affinity"
    return Check(name, "warn", found + f"; {why} throttles the extra threads",
                 f"set SessionOptions.intra_op_num_threads = {usable} (tts_kit presets with "
                 f'"cores" do this), or tune with tts-kit tune --cpus '
                 f"{','.join(str(c) for c in (1, 2, 4) if c <= usable)}; do not leave it at "
                 "0 (ONNX Runtime's default) in this container")


def _cgroup_source() -> str:
    override = settings().cgroup_root
    return f" (read from $TTS_KIT_CGROUP_ROOT={display_path(override)})" if override else ""


def check_cpu_quota(ort_ok: bool) -> Check:
    """The ``cpu quota`` check on this machine."""
    import psutil

    source = _cgroup_source()
    usable = procfacts.usable_cores()
    if ort_ok:
        from tts_kit.runtime.sessions import cores_in_force

        cores_preset = cores_in_force()
    else:
        cores_preset = procfacts.current_cpus() or usable
    return cpu_quota_status(procfacts.cgroup_cpu_quota(), len(procfacts.allowed_cpus()),
                            psutil.cpu_count(logical=False), usable, cores_preset, source)


def providers_status(providers: Sequence[str], cuda: tuple[bool, str] | None,
                     gpus: str | None) -> Check:
    """The ``execution providers`` check; ``cuda``: `tts_kit.runtime.devices.probe_cuda`'s
    answer when CUDA is listed; ``gpus``: what ``nvidia-smi -L`` lists.

    Example:
        >>> providers_status(["CPUExecutionProvider"], None, "GPU 0: NVIDIA L4").status
        'warn'
    """
    name = "execution providers"
    listed = ", ".join(providers) or "none"
    if cuda is not None:
        ok, why = cuda
        if ok:
            return Check(name, "ok", f"{listed}; CUDA runs a session here")
        return Check(name, "warn", f"{listed}; CUDA is listed but does not run: {why}",
                     "install the CUDA and cuDNN libraries this onnxruntime-gpu was built for "
                     "(pip install onnxruntime-gpu[cuda,cudnn] brings them), or pip install "
                     "onnxruntime for CPU only; sessions fall back to CPU meanwhile")
    first_gpu = gpus.splitlines()[0] if gpus else ""
    if first_gpu:
        return Check(name, "warn", f"{listed}; a GPU is present ({first_gpu}) but this "
                     "onnxruntime has no CUDAExecutionProvider",
                     "for the GPU: pip uninstall -y onnxruntime && pip install "
                     "onnxruntime-gpu; on CPU only, nothing to do")
    return Check(name, "ok", f"{listed} (CPU only; no GPU found)")


def model_status(path: str | None, source: str, standin: dict[str, Any] | None,
                 size_mb: float | None, error: str | None, loads: bool | None) -> Check:
    """The ``model`` check from discovery's answer (``path`` None: discovery failed;
    ``loads`` None: not checked).

    Example:
        >>> model_status("/m", "stand-in (tiny)", {"scale": "tiny"}, 3.0, None, True).status
        'warn'
    """
    name = "model"
    if path is None or error is not None:
        where = f"{path} ({source})" if path else source
        fix = ("tts-kit info --model DIR says what is wrong with a bundle; point --model or "
               "$TTS_KIT_MODEL_DIR at a complete one, tts-kit fetch downloads the real model")
        if loads is False:
            fix = ("upgrade onnxruntime (pip install -U onnxruntime) or use a bundle exported "
                   "for this version")
        return Check(name, "fail", f"{where}: {error}", fix)
    size = f", {size_mb:.0f} MB" if size_mb is not None else ""
    load = {True: "all four graphs load", False: "graphs do not load",
            None: "loading not checked (--no-load)"}[loads]
    found = f"{path} ({source}{size}); {load}"
    if standin is not None:
        scale = standin.get("scale")
        sizes = ("the real model's layer sizes" if scale == "full" else
                 "far smaller than the real model, so its costs are not the real ones")
        return Check(name, "warn", f"{found}; a stand-in ({scale}): synthetic weights, "
                     f"noise for audio, {sizes}",
                     "for real speech: tts-kit fetch (or --model DIR, $TTS_KIT_MODEL_DIR)")
    return Check(name, "ok", found)


def check_model(model: str | os.PathLike[str] | None, load: bool,
                ort_ok: bool) -> tuple[Check, float | None]:
    """The ``model`` check on this machine, and the model's size in MB (None: unknown)."""
    if not ort_ok:
        return Check("model", "skip", "not checked: onnxruntime does not import"), None
    from tts_kit.models.discovery import locate
    from tts_kit.models.resolve import open_location

    path: Path | None = None
    source = "discovery"
    try:  # the one resolver (`tts_kit.models.resolve`), in its two steps to name the path
        found = locate(model)
        path = found.ref if isinstance(found.ref, Path) else None  # not for piper:NAME
        source = found.source
        bundle = open_location(found)
    except Exception as exc:  # a broken bundle, or a stand-in that could not be built
        shown = display_path(path) if path is not None else None
        return model_status(shown, source, None, None, str(exc).splitlines()[0], None), None
    size_mb = sum(info.size_bytes for info in bundle.stages.values()) / 2**20
    loads: bool | None = None
    error = None
    if load:
        from tts_kit.runtime.loading import check_loads

        try:
            check_loads(bundle)
            loads = True
        except Exception as exc:
            loads, error = False, str(exc).splitlines()[0]
    return model_status(display_path(bundle.path), source, bundle.standin_info, size_mb,
                        error, loads), size_mb


def memory_status(limit_mb: float | None, available_mb: float, model_mb: float | None,
                  source: str = "") -> Check:
    """The ``memory`` check: room under the limit below 1x the model fails, below 2x
    (session creation copies initialisers) is tight.

    Example:
        >>> memory_status(512.0, 8000.0, 400.0).status
        'warn'
    """
    name = "memory"
    room = min(available_mb, limit_mb) if limit_mb is not None else available_mb
    limit = (f"cgroup memory limit {limit_mb:.0f} MB{source}" if limit_mb is not None
             else "no cgroup memory limit")
    found = f"{limit}; {available_mb:.0f} MB available"
    if model_mb is None:
        return Check(name, "ok" if room > 0 else "warn", f"{found}; model size unknown")
    found += f"; the model's graphs are {model_mb:.0f} MB"
    need = 2 * model_mb
    fix = (f"give it at least {need:.0f} MB (docker run --memory {need:.0f}m, a Kubernetes "
           "memory limit), or load less at once: loading='paged' or 'budget:MB' (tts-kit tune "
           "--loading resident,paged shows each one's peak), or tts-kit convert --to fp16 "
           "(half the weights)")
    if room < model_mb:
        return Check(name, "fail", f"{found}: the model does not fit", fix)
    if room < need:
        return Check(name, "warn", f"{found}: tight (under 2x the model while sessions are "
                     "created)", fix)
    return Check(name, "ok", found)


def run_checks(model: str | os.PathLike[str] | None = None, load: bool = True) -> list[Check]:
    """Every check. ``model``: a bundle directory (default: discovery); ``load``: load each
    graph in ONNX Runtime (seconds for a full-size model).

    Example:
        >>> [c.name for c in run_checks(load=False)]  # doctest: +SKIP
        ['onnxruntime', 'libgomp', 'cpu features', 'cpu quota', 'execution providers', \
'model', 'memory']
    """
    import platform

    import psutil

    ort_check, ort = check_onnxruntime()
    ort_ok = ort is not None
    flags = cpu_flags() if sys.platform.startswith("linux") else None
    checks = [ort_check, check_libgomp(None if ort_ok else ort_check.found),
              cpu_features_status(flags, platform.machine()), check_cpu_quota(ort_ok)]
    if ort_ok:  # CUDA is probed (seconds, in a child) only where it is listed
        from tts_kit.runtime import devices

        providers = list(ort.get_available_providers())
        cuda = devices.probe_cuda(timeout_s=120) if devices.CUDA in providers else None
        gpus = devices.gpu_list() if cuda is None else None
        checks.append(providers_status(providers, cuda, gpus))
    else:
        checks.append(Check("execution providers", "skip",
                            "not checked: onnxruntime does not import"))
    model_check, model_mb = check_model(model, load, ort_ok)
    available_mb = psutil.virtual_memory().available / 2**20
    return [*checks, model_check, memory_status(procfacts.cgroup_memory_limit_mb(),
                                                available_mb, model_mb, _cgroup_source())]


def failed(checks: Iterable[Check]) -> bool:
    """Whether any check failed (``tts-kit doctor`` then exits 1).

    Example:
        >>> failed([Check("a", "ok", ""), Check("b", "warn", "", "x")])
        False
    """
    return any(c.status == "fail" for c in checks)


def format_checks(checks: Sequence[Check], width: int = 100) -> str:
    """The checks as terminal text: a status column, the finding, the fix under it.

    Example:
        >>> print(format_checks([Check("libgomp", "ok", "not linked"),
        ...                      Check("cpu quota", "warn", "1.5 CPUs", "set threads")]))
        ok    libgomp              not linked
        warn  cpu quota            1.5 CPUs
                                   fix: set threads
        2 checks: 1 ok, 1 warning, 0 failed
    """
    indent = " " * 27
    lines = []
    for c in checks:
        lines += textwrap.wrap(c.found, width, initial_indent=f"{c.status:<6}{c.name:<21}",
                               subsequent_indent=indent, break_on_hyphens=False) or [c.name]
        if c.fix:
            lines += textwrap.wrap(f"fix: {c.fix}", width, initial_indent=indent,
                                   subsequent_indent=indent + "     ",
                                   break_on_hyphens=False)
    counts = {s: sum(c.status == s for c in checks) for s in STATUSES}
    tail = f", {counts['skip']} not checked" if counts["skip"] else ""
    lines.append(f"{len(checks)} checks: {counts['ok']} ok, {counts['warn']} warning"
                 f"{'s' * (counts['warn'] != 1)}, {counts['fail']} failed{tail}")
    return "\n".join(lines)
