"""`train=pyg_cluster`: Cluster-GCN in PyG as a baseline (gnnbench/train/baselines/pyg.py):
ClusterData cuts the whole graph into train.num_clusters x num_gpus METIS clusters (through
torch-sparse: the PyG METIS baseline), each of num_gpus ranks trains a share of them,
train.clusters_per_batch a batch, DDP. p, the partitioner and sync_interval do not apply; the
clustering is prepare_time_s."""

from __future__ import annotations

import time

from gnnbench.train.baselines import BaselineMode
from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.spec import Job, TrainSpec

NAME = "pyg_cluster"


@TRAINING_MODES.register(NAME)
class PygCluster(BaselineMode):
    partitioned = False
    ignored_axes = ("partitioner", "p", "sync_interval")

    RECIPE = {"model.name": "sage", "train.strategy": "cluster", "train.sampler_workers": 0}

    @classmethod
    def check(cls, spec: TrainSpec, p: int | None) -> None:
        from gnnbench.train.baselines.pyg import require_sampler

        super().check(spec, p)
        require_sampler(f"train={NAME}", metis=True)

    @classmethod
    def train_outside(cls, job: Job) -> dict:
        from torch_geometric.loader import ClusterData

        from gnnbench.train import launch
        from gnnbench.train.baselines.pyg import cluster_rank, load_data

        job = cls.on_cpu(job)
        started = time.perf_counter()
        data = load_data(job.store_path)
        clusters = ClusterData(data, num_parts=job.spec.num_clusters * job.spec.num_gpus)
        prepared = time.perf_counter() - started
        result = launch.spawn_workers(job, job.spec.num_gpus, cluster_rank, (data, clusters))
        return {**result, "prepare_time_s": prepared}
