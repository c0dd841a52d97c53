"""ONNX Runtime around a model: session presets, load policies, isolated measurement, devices."""
