"""The seeded copy of a Piper graph: its ``RandomNormalLike`` draws become inputs
(`seeded_graph`), built once per graph content in ``$TTS_KIT_CACHE_DIR/piper/``, so the
caller's seed decides the noise.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

from tts_kit.core import atomic
from tts_kit.core.digests import file_sha256
from tts_kit.core.errors import BundleError
from tts_kit.core.settings import settings as current_settings

#: The noise inputs of the seeded graph (`seeded_graph`), in the graph's node order.
NOISE_PREFIX = "tts_kit_noise_"
#: Bump when `seeded_graph`'s rewrite changes (part of the cache key).
SEEDED_VERSION = 2

_REWRITE = r"""
import sys, numpy as np, onnx, onnxruntime as ort
from onnx import helper, TensorProto
src, dst, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
model = onnx.load(src)
rand = [n for n in model.graph.node if n.op_type == "RandomNormalLike"]
if not rand:
    sys.exit("no RandomNormalLike node: not a Piper (VITS) voice graph")
# One short run of the source tells each noise's rank and fixed (channel) sizes.
probe = onnx.load(src)
for n in rand:
    dtype = next((a.i for a in n.attribute if a.name == "dtype"), TensorProto.FLOAT)
    probe.graph.output.append(helper.make_tensor_value_info(n.output[0], dtype, None))
so = ort.SessionOptions(); so.log_severity_level = 3
sess = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"])
feeds = {"input": np.array([[1, 0, 20, 0, 2]], np.int64), "input_lengths": np.array([5], np.int64),
         "scales": np.array([0.667, 1.0, 0.8], np.float32)}
if "sid" in [i.name for i in sess.get_inputs()]:
    feeds["sid"] = np.array([0], np.int64)
shapes = [o.shape for o in sess.run(None, feeds)[1:]]
del sess, probe
g = model.graph
for k, (n, shape) in enumerate(zip(rand, shapes)):
    name = f"{prefix}{k}"
    dims = ["batch"] + list(shape[1:-1]) + [f"{name}_len"]
    g.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims))
    dtype = next((a.i for a in n.attribute if a.name == "dtype"), TensorProto.FLOAT)
    out = n.output[0]
    nodes = [
        helper.make_node("Shape", [n.input[0]], [f"{name}_shape"]),
        helper.make_node("ConstantOfShape", [f"{name}_rank"], [f"{name}_zeros"],
                         value=helper.make_tensor("v", TensorProto.INT64, [1], [0])),
        helper.make_node("Slice", [name, f"{name}_zeros", f"{name}_shape"],
                         [out if dtype == TensorProto.FLOAT else f"{name}_f"]),
    ]
    g.initializer.append(helper.make_tensor(f"{name}_rank", TensorProto.INT64, [1],
                                            [len(shape)]))
    if dtype != TensorProto.FLOAT:
        nodes.append(helper.make_node("Cast", [f"{name}_f"], [out], to=dtype))
    i = list(g.node).index(n)
    g.node.remove(n)
    for j, new in enumerate(nodes):
        g.node.insert(i + j, new)
model.metadata_props.append(onnx.StringStringEntryProto(key="tts_kit_seeded",
                                                        value=str(len(rand))))
onnx.save(model, dst)
"""
_SEEDED_LOCK = threading.Lock()


def seeded_graph(path: str | os.PathLike[str]) -> Path:
    """A copy of a Piper graph whose ``RandomNormalLike`` draws are slices of inputs
    (``tts_kit_noise_K``), so the caller decides the noise; built once per graph content,
    in a child process, in ``$TTS_KIT_CACHE_DIR/piper``.

    Example:
        >>> seeded_graph("voice/en_US-joe-medium.onnx")  # doctest: +SKIP
        PosixPath('~/.cache/tts_kit/piper/5a1.../seeded.onnx')
    """
    src = Path(path).resolve()
    key = hashlib.sha256(f"{SEEDED_VERSION}\0{file_sha256(src)}".encode()).hexdigest()[:32]
    target = current_settings().tts_kit_cache / "piper" / key
    out = target / "seeded.onnx"
    with _SEEDED_LOCK:
        if out.is_file():
            return out
        target.parent.mkdir(parents=True, exist_ok=True)
        # Processes starting on a cold cache at once (a server's workers) build it once.
        with atomic.build_lock(atomic.lock_beside(target.parent)):
            if not out.is_file():
                _build_seeded(src, target, out)
    return out


def _build_seeded(src: Path, target: Path, out: Path) -> None:
    """Write `seeded_graph`'s copy of ``src`` into ``target`` (a child process rewrites it)."""
    atomic.sweep_stale(target.parent)
    with atomic.atomic_dir(target) as work:
        proc = subprocess.run([sys.executable, "-c", _REWRITE, str(src),
                               str(work / out.name), NOISE_PREFIX],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise BundleError(f"{src.name}: cannot make its noise an input ({last})")


__all__ = ["NOISE_PREFIX", "SEEDED_VERSION", "seeded_graph"]
