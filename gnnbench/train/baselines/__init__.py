"""Other systems' own training, run beside gnnbench's as baselines (train=distdgl, ...).

The scripts here run in the baseline's environment, not gnnbench's (DGL 2.1.0 needs torch <=
2.2.1): they import only the standard library, numpy, torch and the baseline's package, and are
never imported by gnnbench; gnnbench's side of each baseline is its training mode
(gnnbench/train/modes/<name>.py), which launches them and reads back what they wrote.
"""
