"""Measurements built on a model: workloads, trial records, stage costs, tuning, machines,
conformance checks and audio distances."""
