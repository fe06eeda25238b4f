"""Stage 3: train a GNN on a PartitionBook (model averaging) or on the whole graph (reference).

Entry point: `gnnbench.train.runner.run_training`. Nothing here imports a later stage.
"""
