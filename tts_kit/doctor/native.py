"""What ``tts-kit doctor`` reads from the machine below Python: ELF ``DT_NEEDED`` entries,
ONNX Runtime's libraries, the libraries loaded here, the CPU's flags (facts only).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import struct
from pathlib import Path


def elf_needed(path: str | os.PathLike[str]) -> list[str] | None:
    """The ``DT_NEEDED`` entries of an ELF file (as ``readelf -d``, without binutils); None
    if not readable.

    Example:
        >>> elf_needed("/no/such/library.so") is None
        True
    """
    try:
        with open(path, "rb") as fh:
            ident = fh.read(16)
            if ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
                return None
            is64, end = ident[4] == 2, "<" if ident[5] == 1 else ">"
            fh.seek(0x28 if is64 else 0x20)
            shoff = struct.unpack(end + ("Q" if is64 else "I"), fh.read(8 if is64 else 4))[0]
            fh.seek(0x3A if is64 else 0x2E)
            shentsize, shnum = struct.unpack(end + "HH", fh.read(4))
            shfmt = end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
            sections = []
            for i in range(shnum):
                fh.seek(shoff + i * shentsize)
                sections.append(struct.unpack(shfmt, fh.read(struct.calcsize(shfmt))))
            dynfmt = end + ("qQ" if is64 else "iI")
            for sec in sections:
                if sec[1] != 6:  # SHT_DYNAMIC
                    continue
                strtab = sections[sec[6]]
                fh.seek(strtab[4])
                strings = fh.read(strtab[5])
                fh.seek(sec[4])
                raw = fh.read(sec[5])
                out = []
                for tag, val in struct.iter_unpack(dynfmt, raw[: len(raw) - len(raw)
                                                                % struct.calcsize(dynfmt)]):
                    if tag == 0:  # DT_NULL
                        break
                    if tag == 1:  # DT_NEEDED
                        out.append(strings[val: strings.index(b"\0", val)].decode("ascii",
                                                                                  "replace"))
                return out
    except (OSError, struct.error, IndexError, ValueError):
        return None
    return None


def ort_libraries() -> list[Path]:
    """The shared libraries of the installed ``onnxruntime`` package, found without
    importing it (a failing import can still be diagnosed).

    Example:
        >>> all(p.name.startswith(("lib", "onnxruntime")) for p in ort_libraries())
        True
    """
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return []
    capi = Path(list(spec.submodule_search_locations)[0]) / "capi"
    return sorted(p for p in capi.glob("*.so*") if p.is_file())


def loaded_library(fragment: str) -> str | None:
    """Path of a shared library loaded into this process whose name contains ``fragment``.

    Example:
        >>> loaded_library("no-such-library-xyz") is None
        True
    """
    with contextlib.suppress(OSError):
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.split(maxsplit=5)[-1].strip()
                if fragment in os.path.basename(path):
                    return path
    return None


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str] | None:
    """The CPU's feature flags (``flags`` on x86, ``Features`` on Arm); None off Linux.

    Example:
        >>> cpu_flags("/no/such/cpuinfo") is None
        True
    """
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        return None
    return set()


__all__ = ["cpu_flags", "elf_needed", "loaded_library", "ort_libraries"]
