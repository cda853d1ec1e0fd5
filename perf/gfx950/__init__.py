"""The gfx950 performance model: a static analysis of the compiled code objects.

A model, not a measurement: nothing here has run on gfx950 hardware. See docs/PERF.md,
"gfx950: a performance model from the code objects".
"""
