"""Experiments: the drivers and doc generators behind scripts/ (one module per generated doc:
docs/scale.md, docs/walshaw.md, docs/gpu.md, ...) and the paper claims (claims/).

They sit above tracking: they run datasets, partitioners and training, or read runs back through
gnnbench/track, and nothing below imports them. track/ itself only logs a job and reads runs.
"""
