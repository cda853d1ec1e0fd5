"""The gfx950 performance model: a static analysis of the compiled code objects.

A model, not a measurement: nothing here has run on gfx950 hardware. Method and sources:
docs/perf-log/2026-12-01-gfx950-model.md; current predictions: docs/PERF.md.
"""
