"""Does it still sound the same? Conformance against the official package or a second bundle
(`verify`, `cases`, `floor`), audio distances (`audio_metrics`) and the listener's metrics
and verdict (`quality`, `quality_verdict`, `listening`)."""
