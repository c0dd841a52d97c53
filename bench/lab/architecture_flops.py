"""The architecture's FLOPs formula: FLOPs per run of each Supertonic stage from the
dimensions in its ``tts.json`` alone, to hold the graphs' count
(`tts_kit.tuning.flops.graph_flops`) against (``bench/standin_realism.py``, the tests).

Example:
    >>> from tts_kit.models.supertonic.standin import _config
    >>> from tts_kit.tuning.flops import reference_dims
    >>> f = architecture_flops(_config("full", 0), reference_dims(8.0))
    >>> round(f["vector_estimator"] / 1e9, 1)
    29.4
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tts_kit.core import contract

_STYLE_TOKENS, _STYLE_DIM = contract.STYLE_TTL_DIMS[1], contract.STYLE_TTL_DIMS[2]


def _f_convnext(n: int, cfg: dict) -> int:
    """A ConvNeXt layer stack over ``n`` positions: depthwise conv + two pointwise."""
    ch, k, hid = cfg["idim"], cfg["ksz"], cfg["intermediate_dim"]
    return cfg["num_layers"] * 2 * n * ch * (k + 2 * hid)


def _f_self_attn(n: int, cfg: dict) -> int:
    """VITS attention layers: q, k, v, o projections, scores and mixing, the FFN."""
    ch, ffn = cfg["hidden_channels"], cfg["filter_channels"]
    return cfg["n_layers"] * (2 * n * ch * (4 * ch + 2 * ffn) + 4 * n * n * ch)


def _f_cross_attn(nq: int, nk: int, dq: int, dk: int, units: int) -> int:
    """q from ``nq`` queries, k and v from ``nk`` keys, scores, mixing, output projection."""
    return 2 * nq * dq * units * 2 + 2 * 2 * nk * dk * units + 4 * nq * nk * units


def _f_dp(cfg: dict, t: int) -> int:
    se, pr = cfg["dp"]["sentence_encoder"], cfg["dp"]["predictor"]
    ch, hid = pr["sentence_dim"], pr["hdim"]
    return (_f_convnext(t, se["convnext"]) + _f_self_attn(t, se["attn_encoder"])
            + 2 * t * ch * ch + 2 * pr["n_style"] * pr["style_dim"] * hid
            + 2 * t * ch * hid + (pr["n_layer"] - 1) * 2 * t * hid * hid + 2 * t * hid)


def _f_te(cfg: dict, t: int) -> int:
    te, sp = cfg["ttl"]["text_encoder"], cfg["ttl"]["speech_prompted_text_encoder"]
    return (_f_convnext(t, te["convnext"]) + _f_self_attn(t, te["attn_encoder"])
            + _f_cross_attn(t, _STYLE_TOKENS, sp["text_dim"], sp["style_dim"], sp["n_units"])
            + 2 * t * te["proj_out"]["idim"] * te["proj_out"]["odim"])


def _f_ve(cfg: dict, t: int, lat: int) -> int:
    """One flow step; the vector field runs on the doubled batch (cond + uncond)."""
    vf = cfg["ttl"]["vector_field"]
    mb, te = vf["main_blocks"], vf["time_encoder"]
    ch, n2 = vf["proj_in"]["odim"], 2 * lat
    ldim = contract.LATENT_CHANNELS
    tx, st = mb["text_cond_layer"], mb["style_cond_layer"]
    block = (sum(_f_convnext(n2, mb[k]) for k in ("convnext_0", "convnext_1", "convnext_2"))
             + 2 * 2 * te["hdim"] * ch
             + 2 * _f_cross_attn(lat, t, ch, tx["text_dim"], tx["n_units"])
             + 2 * _f_cross_attn(lat, _STYLE_TOKENS, ch, st["style_dim"],
                                 st.get("n_units", _STYLE_DIM)))
    return (2 * (te["time_dim"] * te["hdim"] + te["hdim"] ** 2) + 2 * n2 * ldim * ch
            + mb["n_blocks"] * block + _f_convnext(n2, vf["last_convnext"]) + 2 * n2 * ch * ldim)


def _f_voc(cfg: dict, lat: int) -> int:
    dec = cfg["ae"]["decoder"]
    f, ch, head = contract.CHUNK_COMPRESS_FACTOR * lat, dec["hdim"], dec["head"]
    stack = {"idim": ch, "ksz": dec["ksz"], "intermediate_dim": dec["intermediate_dim"],
             "num_layers": dec["num_layers"]}
    return (2 * f * dec["idim"] * ch * dec["ksz_init"] + _f_convnext(f, stack)
            + 2 * f * ch * head["hdim"] * head["ksz"] + 2 * f * head["hdim"] * head["odim"])


def architecture_flops(cfg: Mapping[str, Any], dims: Mapping[str, int]) -> dict[str, int]:
    """FLOPs per run of each stage from a Supertonic ``tts.json`` at ``dims`` (``B`` = 1)."""
    t, lat = dims["T"], dims["L"]
    return {"duration_predictor": _f_dp(cfg, t), "text_encoder": _f_te(cfg, t),
            "vector_estimator": _f_ve(cfg, t, lat), "vocoder": _f_voc(cfg, lat)}
