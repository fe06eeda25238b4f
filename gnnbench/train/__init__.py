"""Stage 3: train a GNN on a PartitionBook (model_avg, grad_avg) or on the whole graph
(centralized, the reference).

Entry point: `gnnbench.train.runner.run_training(store_path=, book_path=, spec=)` with a
`spec.TrainSpec`; the modes register in `modes/`, `coordinator` decides what each torchrun rank
does, and a run returns a `result.TrainResult`. Nothing here imports a later stage.
"""
