"""The initial latent noise of the Supertonic flow: seeded like the official package
(`OfficialNoise`), or the caller's array (`FixedNoise`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.models.synthesis import is_seed as _is_seed

#: ``noise(frames) -> array [B, LATENT_CHANNELS, max(frames)]``: a batch's initial latent
#: (``frames[b]``: item ``b``'s length; the engine masks what lies past it).
NoiseSource = Callable[[list[int]], np.ndarray]


class OfficialNoise:
    """Draws the initial latent as the official package does after ``np.random.seed(seed)``
    (``np.random.randn(B, 144, L)`` per batch), from its own ``RandomState``.

    Example:
        >>> a = OfficialNoise(0)([2, 3])
        >>> np.random.seed(0); b = np.random.randn(2, contract.LATENT_CHANNELS, 3)
        >>> a.shape, bool(np.array_equal(a, b.astype(np.float32)))
        ((2, 144, 3), True)
    """

    def __init__(self, seed: int):
        if not _is_seed(seed):
            raise TtsKitError(f"seed must be an integer >= 0, got {seed!r}")
        self.seed = int(seed)
        self._rs = np.random.RandomState(self.seed)

    def __call__(self, frames: list[int]) -> np.ndarray:
        shape = (len(frames), contract.LATENT_CHANNELS, max(frames))
        return self._rs.randn(*shape).astype(np.float32)


class FixedNoise:
    """A caller's initial latent for one batch, ``[B, 144, L]`` (or ``[144, L]``); ``L`` must
    cover the longest item.

    Example:
        >>> FixedNoise(np.ones((144, 5), np.float32))([3]).shape
        (1, 144, 3)
    """

    def __init__(self, latent: np.ndarray):
        a = np.asarray(latent, np.float32)
        if a.ndim == 2:
            a = a[None]
        if a.ndim != 3 or a.shape[1] != contract.LATENT_CHANNELS:
            raise TtsKitError(f"noise must have shape [batch, {contract.LATENT_CHANNELS}, "
                              f"frames], got {list(np.shape(latent))}")
        self.latent = a
        self._used = False

    def __call__(self, frames: list[int]) -> np.ndarray:
        if self._used:
            raise TtsKitError("a noise array covers one batch of chunks, but the text was "
                             "split into several; give shorter texts or a noise source "
                             "(e.g. OfficialNoise(seed))")
        self._used = True
        want = (len(frames), contract.LATENT_CHANNELS, max(frames))
        if self.latent.shape[0] != want[0] or self.latent.shape[2] < want[2]:
            raise TtsKitError(f"noise has shape {list(self.latent.shape)}, the batch needs "
                             f"{list(want)} (or more frames)")
        return self.latent[:, :, : want[2]]


def chunk_rng(seed: int | None, index: int) -> np.random.Generator:
    """The generator of chunk ``index``'s initial noise, from the seed and the index only
    (chunk 0 draws as ``np.random.default_rng(seed)``); ``seed`` None: fresh noise.

    Example:
        >>> a = chunk_rng(7, 0).standard_normal(2)
        >>> bool(np.array_equal(a, np.random.default_rng(7).standard_normal(2)))
        True
    """
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(np.random.SeedSequence(int(seed),
                                                        spawn_key=(index,) if index else ()))


def _noise_source(noise: np.ndarray | NoiseSource | None) -> NoiseSource | None:
    if noise is None or callable(noise):
        return noise
    if isinstance(noise, (np.ndarray, list, tuple)):
        return FixedNoise(np.asarray(noise))
    raise TtsKitError(f"noise must be an array, a noise source (OfficialNoise(seed)) or None, "
                     f"got {type(noise).__name__}")


__all__ = ["FixedNoise", "NoiseSource", "OfficialNoise", "chunk_rng"]
