"""Open and validate a Supertonic model bundle (the layout in ``tts_kit.core.contract``):
every file is checked, in one-line `BundleError`s, without loading the weights; `fetch_model`
downloads the real one at the revision the official package (v1.3.1) pins.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from tts_kit.core import contract
from tts_kit.core.atomic import atomic_dir
from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.core.protoscan import (
    ELEM_NAMES,
    FLOAT,
    FLOAT16,
    INT64,
    ScanError,
    ValueInfo,
    scan_onnx,
)
from tts_kit.core.settings import Settings
from tts_kit.core.settings import settings as current_settings
from tts_kit.core.userfiles import read_json
from tts_kit.models.base import Capabilities, StagedModel, StageInfo, precision_of
from tts_kit.models.discovery import locate


@dataclass(frozen=True)
class VoiceStyle:
    """A voice (its file stem, e.g. ``M1``): the two style tensors the graphs take,
    ``style_ttl`` (float32 [1, 50, 256]) and ``style_dp`` (float32 [1, 8, 16])."""

    name: str
    ttl: np.ndarray
    dp: np.ndarray


def _read_json(path: Path, root: Path) -> Any:
    rel = path.relative_to(root)
    if not path.is_file():
        raise BundleError(f"{rel}: missing (expected a file of the Supertonic layout)")
    return read_json(path, str(rel), "re-download or rebuild it", BundleError)


def _check_tensor(rel: str, kind: str, found: ValueInfo, spec: contract.TensorSpec):
    elem = found.elem_type
    want = {"float32": FLOAT, "int64": INT64}[spec.dtype]
    # FP16 conversions without keep_io_types carry float16 I/O; the engine casts for them.
    ok_types = {want, FLOAT16} if want == FLOAT else {want}
    if elem not in ok_types:
        raise BundleError(f"{rel}: {kind} '{spec.name}' has element type "
                          f"{ELEM_NAMES.get(elem, elem)}, expected {spec.dtype}")
    dims = found.dims
    if len(dims) != spec.rank:
        raise BundleError(f"{rel}: {kind} '{spec.name}' has rank {len(dims)} {dims}, "
                          f"expected rank {spec.rank} {list(spec.shape)}")
    for axis, (got, exp) in enumerate(zip(dims, spec.shape)):
        if isinstance(exp, int) and isinstance(got, int) and got != exp:
            raise BundleError(f"{rel}: {kind} '{spec.name}' has size {got} on axis {axis}, "
                              f"expected {exp} (shape {list(spec.shape)})")


class Bundle(StagedModel):
    """A validated Supertonic model directory (``onnx/`` and ``voice_styles/`` in it); what
    is wrong is a one-line `BundleError` naming the file.

    Example:
        >>> Bundle("models/supertonic-3").stages["vocoder"].params  # doctest: +SKIP
        24961025
    """

    family = "supertonic"

    def __init__(self, path: str | os.PathLike[str]):
        try:
            root = Path(path).expanduser().resolve()
            is_dir = root.is_dir()
        except (OSError, RuntimeError, ValueError) as exc:
            # A symlink loop is RuntimeError before Python 3.13 and OSError (ELOOP) after;
            # a name too long is OSError, a NUL in it ValueError. No bundle can be there.
            raise BundleError(f"{path}: cannot be opened as a directory ({exc}); point it at "
                              "the bundle directory itself") from None
        self.path: Path = root
        if not is_dir:
            raise BundleError(f"{path}: not a directory (expected a Supertonic bundle with onnx/ "
                              "and voice_styles/; build one with `tts-kit standin DIR`)")
        try:
            self._open()
        except BundleError as exc:  # the messages name files inside the bundle: say which
            raise BundleError(f"bundle {root}: {exc}") from None
        except OSError as exc:  # unreadable files, a directory where a file belongs, ...
            raise BundleError(f"bundle {root}: {exc.filename or ''}: {exc.strerror or exc}; "
                              "check the bundle's files and their permissions") from None

    def _open(self) -> None:
        root = self.path
        self.config: dict[str, Any] = _read_json(root / contract.CONFIG_FILE, root)
        self._check_config()
        indexer = _read_json(root / contract.INDEXER_FILE, root)
        # Every entry checked (in C): one 2**70 anywhere would fail the int64 conversion.
        if not isinstance(indexer, list) or not indexer or set(map(type, indexer)) != {int} or (
                min(indexer) < -1 or max(indexer) >= 2**31):
            raise BundleError(f"{contract.INDEXER_FILE}: expected a JSON list of token ids, ints "
                              "from -1 to 2**31-1 (code point -> token id); re-download or "
                              "rebuild the bundle")
        #: code point -> token id (-1 = unsupported), as an int64 array for vector lookup.
        self.indexer: np.ndarray = np.asarray(indexer, dtype=np.int64)
        self.stages: dict[str, StageInfo] = {s: self._check_graph(s) for s in contract.STAGES}
        vdir = root / contract.VOICE_DIR
        files = sorted(vdir.glob("*.json")) if vdir.is_dir() else []
        if not files:
            raise BundleError(f"{contract.VOICE_DIR}/: no voice styles (*.json) found")
        self._styles = {f.stem: self._load_voice(f) for f in files}  # each checked now

    # -- validation -------------------------------------------------------------------

    def _check_config(self) -> None:
        cfg = self.config
        if not isinstance(cfg, dict):
            raise BundleError(f"{contract.CONFIG_FILE}: expected a JSON object, found "
                              f"{type(cfg).__name__}; re-download or rebuild the bundle")
        want = {
            ("ae", "sample_rate"): contract.SAMPLE_RATE,
            ("ae", "base_chunk_size"): contract.BASE_CHUNK_SIZE,
            ("ttl", "chunk_compress_factor"): contract.CHUNK_COMPRESS_FACTOR,
            ("ttl", "latent_dim"): contract.LATENT_DIM,
        }
        for (section, key), expected in want.items():
            found = cfg.get(section, {}).get(key) if isinstance(cfg.get(section), dict) else None
            if found != expected:
                raise BundleError(f"{contract.CONFIG_FILE}: {section}.{key} is {found!r}, "
                                  f"expected {expected}")

    def _check_graph(self, stage: str) -> StageInfo:
        spec = contract.GRAPHS[stage]
        path = self.path / spec.path
        if not path.is_file():
            raise BundleError(f"{spec.path}: missing (the bundle needs all four graphs)")
        try:
            scan = scan_onnx(path)
        except (ScanError, OSError, ValueError) as exc:
            raise BundleError(f"{spec.path}: not a readable ONNX model ({exc}); re-download or "
                              "rebuild it") from None
        for kind, found, wanted in (("input", scan.inputs, spec.inputs),
                                    ("output", scan.outputs, spec.outputs)):
            names = [v.name for v in found]
            if sorted(names) != sorted(t.name for t in wanted):  # ORT ignores their order
                raise BundleError(f"{spec.path}: {kind}s are {names}, expected "
                                  f"{[t.name for t in wanted]}")
            by_name = {v.name: v for v in found}
            for t in wanted:
                _check_tensor(spec.path, kind, by_name[t.name], t)
        size = path.stat().st_size + sum(p.stat().st_size
                                         for p in path.parent.glob(f"{path.name}.data*"))
        return StageInfo(stage, path, size, scan.params, precision_of(scan.initializer_types))

    def _load_voice(self, path: Path) -> VoiceStyle:
        rel = path.relative_to(self.path)
        data = _read_json(path, self.path)
        arrays = {}
        wanted = (("style_ttl", contract.STYLE_TTL_DIMS), ("style_dp", contract.STYLE_DP_DIMS))
        for key, dims in wanted:
            entry = data.get(key) if isinstance(data, dict) else None
            if not isinstance(entry, dict) or "dims" not in entry or "data" not in entry:
                raise BundleError(f"{rel}: missing '{key}' with 'dims' and 'data'")
            if not isinstance(entry["dims"], list) or entry["dims"] != list(dims):
                raise BundleError(f"{rel}: {key} dims are {entry['dims']}, expected {list(dims)}")
            try:
                arr = np.asarray(entry["data"], dtype=np.float32).reshape(dims)
            except (ValueError, TypeError, OverflowError):
                raise BundleError(f"{rel}: {key} data does not fill dims {list(dims)}") from None
            bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
            if bad:  # would give an all-NaN waveform
                raise BundleError(f"{rel}: {key} has {bad} value(s) that are NaN or infinite; "
                                  "the voice file is damaged: re-download it or remove it from "
                                  "voice_styles/")
            arrays[key] = arr
        return VoiceStyle(path.stem, arrays["style_ttl"], arrays["style_dp"])

    # -- what the bundle knows --------------------------------------------------------

    @property
    def voices(self) -> list[str]:
        """Voice style names, sorted (``['F1', 'M1', ...]``)."""
        return list(self._styles)

    @property
    def default_voice(self) -> str:
        """The voice used when none is named: ``M1`` (the official default), else the first.

        Example:
            >>> Bundle.discover().default_voice  # doctest: +SKIP
            'M1'
        """
        return "M1" if "M1" in self._styles else self.voices[0]

    def voice(self, name: str) -> VoiceStyle:
        """The voice style ``name``; unknown names raise ``ValueError``."""
        if name not in self._styles:
            raise TtsKitError(f"unknown voice '{name}'; available voices: {', '.join(self.voices)}")
        return self._styles[name]

    @property
    def sample_rate(self) -> int:
        return int(self.config["ae"]["sample_rate"])

    @property
    def label(self) -> str:
        """Which model speaks, for banners: ``Supertonic`` or ``Supertonic stand-in (tiny)``."""
        if self.is_standin:
            return f"Supertonic stand-in ({(self.standin_info or {}).get('scale', '?')})"
        return "Supertonic"

    @property
    def languages(self) -> list[str]:
        """Language codes the text front end reads (`tts_kit.core.contract.LANGUAGES`)."""
        return list(contract.LANGUAGES)

    @property
    def capabilities(self) -> Capabilities:
        """Everything but noise scales."""
        return Capabilities(flow_steps=True, caller_noise=True, official_reference=True,
                            distributed=True, batching=True, standin=self.is_standin,
                            chunk_jobs=True)

    def ref(self) -> str:
        """What reopens this bundle in another process: its directory."""
        return str(self.path)

    @property
    def is_standin(self) -> bool:
        """True for a tts_kit stand-in (random weights: `tts_kit.models.supertonic.standin`)."""
        return contract.STANDIN_KEY in self.config

    @property
    def standin_info(self) -> dict[str, Any] | None:
        """The stand-in marker (scale, seed, version), or None for a real model."""
        return self.config.get(contract.STANDIN_KEY)

    def describe(self) -> dict[str, Any]:
        """Everything the bundle knows, JSON-ready (used by ``tts-kit info`` and reports)."""
        return {"path": str(self.path), "standin": self.standin_info,
                "sample_rate": self.sample_rate, "voices": self.voices, "params": self.params,
                "stages": self.describe_stages()}

    def __repr__(self) -> str:
        kind = "stand-in" if self.is_standin else "model"
        return f"Bundle({str(self.path)!r}, {kind}, {self.params / 1e6:.1f}M params)"

    @classmethod
    def discover(cls, path: str | os.PathLike[str] | None = None, *,
                 settings: Settings | None = None) -> Bundle:
        """Open the Supertonic bundle `tts_kit.models.discovery.locate` finds.

        Example:
            >>> Bundle.discover().is_standin
            True
        """
        found = locate(path, settings=settings)
        if found.family != cls.family:
            raise BundleError(
                f"{found.ref} ({found.source}) is a Piper voice; Bundle and Engine open "
                "Supertonic bundles only: use tts_kit.open_model() or tts_kit.make_engine()")
        return cls(found.ref)


def resolve_model_dir(path: str | os.PathLike[str] | None = None, *,
                      settings: Settings | None = None) -> tuple[Path, str]:
    """The model directory (or Piper voice file) `tts_kit.models.discovery.locate` finds,
    and where it came from.

    Example:
        >>> resolve_model_dir()[1]
        'stand-in (tiny)'
    """
    found = locate(path, settings=settings)
    return Path(found.ref), found.source


# -- the real model, downloaded ---------------------------------------------------------

#: model name -> (hub repository, pinned commit)
MODELS: dict[str, tuple[str, str]] = {
    "supertonic-3": ("Supertone/supertonic-3", "724fb5abbf5502583fb520898d45929e62f02c0b"),
    "supertonic-2": ("Supertone/supertonic-2", "75e6727618a02f323c720cba9478152d4bc16ca4"),
}


class FetchError(TtsKitError):
    """The model could not be downloaded (offline, hub error, or target not empty)."""


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    if current_settings().hf_hub_offline:
        return False
    from huggingface_hub import constants

    host = urlparse(constants.ENDPOINT).hostname or ""
    try:
        with socket.create_connection((host, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def fetch_model(model: str = "supertonic-3", dest: str | os.PathLike[str] | None = None) -> Path:
    """Download ``model`` into ``dest`` (default: the official package's cache directory).

    Example:
        >>> fetch_model("supertonic-3", "models/supertonic-3")  # doctest: +SKIP
        PosixPath('models/supertonic-3')
    """
    if model not in MODELS:
        raise FetchError(f"unknown model '{model}'; choose one of: {', '.join(MODELS)}")
    s = current_settings()
    if dest or s.supertonic_cache_dir:
        target = Path(dest or s.supertonic_cache_dir).expanduser()
    else:  # the official package's cache
        target = s.home / ".cache" / model.replace("-", "")
    if target.exists() and any(target.iterdir()):
        raise FetchError(f"{target} already exists and is not empty; pass an empty or new --dir")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise FetchError("huggingface_hub is not installed: pip install 'tts_kit[hub]'") from None
    if not _hub_reachable():
        raise FetchError("the model hub is not reachable (offline?); use the stand-in instead "
                         "(`tts-kit standin DIR`, or run without --model), or copy a "
                         "downloaded bundle here and pass --model DIR")
    repo, revision = MODELS[model]
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_dir(target) as tmp:
            snapshot_download(repo_id=repo, revision=revision, local_dir=str(tmp))
            Bundle(tmp)  # refuse to install something that is not a valid bundle
    except Exception as exc:
        raise FetchError(f"download of {repo}@{revision[:12]} failed: {exc}") from None
    return target
