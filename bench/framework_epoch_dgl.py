"""GraphSAGE epochs with DGL's NeighborSampler on a GraphStore; runs in the DistDGL environment.

    <envs/distdgl>/bin/python framework_epoch_dgl.py --store DIR --epochs N --fanouts 25 10
        --batch-size 512 --hidden 256 --lr 0.01 --threads T --seed S

The same model and settings as gnnbench's centralized GraphSAGE (2 mean SAGEConv layers, ReLU
and dropout 0.5 between them, Adam, cross-entropy on the store's training split). fanouts follow
gnnbench's order (nearest the seeds first); DGL's list is per layer from the input, so reversed.
Imports only the standard library, numpy, torch and dgl (DGL 2.1 needs its own torch 2.2.1) and
reads the store's files directly. Prints one JSON line: {"epoch_s": [seconds of each epoch],
"epoch_cpu_s": [CPU seconds of each]},
with "test_f1_micro" (the last model on the test split, every neighbour) under --evaluate.

--init dgl keeps DGL's SAGEConv initialisation (weights xavier-uniform with ReLU gain, biases
torch's default); --init pyg re-draws the weights as PyG's SAGEConv does (torch's Linear default,
kaiming-uniform with a=sqrt(5)), the only difference left between the two models.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def load_graph(store: Path):
    """The store as a DGLGraph (both edge directions) with features, labels and training ids."""
    import dgl
    import torch

    meta = json.loads((store / "meta.json").read_text())
    id_dtype = np.dtype(meta["id_dtype"]).newbyteorder("<")
    edges = np.fromfile(store / "edges.bin", dtype=id_dtype).reshape(-1, 2).astype(np.int64)
    src = torch.from_numpy(np.concatenate([edges[:, 0], edges[:, 1]]))
    dst = torch.from_numpy(np.concatenate([edges[:, 1], edges[:, 0]]))
    graph = dgl.graph((src, dst), num_nodes=int(meta["num_nodes"]))
    features = torch.from_numpy(np.load(store / "feat.npy").astype(np.float32))
    labels = torch.from_numpy(np.load(store / "label.npy").astype(np.int64))
    with np.load(store / "split.npz") as split:
        train_ids = torch.from_numpy(split["train"].astype(np.int64))
        test_ids = torch.from_numpy(split["test"].astype(np.int64))
    return graph, features, labels, train_ids, test_ids


def build_model(in_dim: int, hidden: int, out_dim: int, dropout: float, init: str):
    """Two mean SAGEConv layers; init "pyg" re-draws their weights as PyG's SAGEConv does."""
    import torch
    from dgl.nn import SAGEConv

    class Sage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList(
                [SAGEConv(in_dim, hidden, "mean"), SAGEConv(hidden, out_dim, "mean")]
            )

        def forward(self, blocks, h):
            for i, (conv, block) in enumerate(zip(self.convs, blocks, strict=True)):
                h = conv(block, h)
                if i < len(self.convs) - 1:
                    h = torch.nn.functional.dropout(h.relu(), dropout, self.training)
            return h

    model = Sage()
    if init == "pyg":  # PyG's Linear.reset_parameters: torch's default, kaiming-uniform(a=sqrt 5)
        for conv in model.convs:
            torch.nn.init.kaiming_uniform_(conv.fc_neigh.weight, a=5**0.5)
            torch.nn.init.kaiming_uniform_(conv.fc_self.weight, a=5**0.5)
    return model


def test_f1_micro(model, graph, features, labels, test_ids) -> float:
    """Micro-F1 (accuracy, single-label) of the model on the test split, every neighbour."""
    import torch

    model.eval()
    with torch.no_grad():
        logits = model([graph] * len(model.convs), features)
    return float((logits[test_ids].argmax(1) == labels[test_ids]).float().mean())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--fanouts", type=int, nargs="+", default=[25, 10])
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", choices=("dgl", "pyg"), default="dgl")
    parser.add_argument("--evaluate", action="store_true")
    args = parser.parse_args(argv)

    import dgl
    import torch

    torch.set_num_threads(args.threads)
    dgl.seed(args.seed)
    torch.manual_seed(args.seed)
    graph, features, labels, train_ids, test_ids = load_graph(args.store)
    num_classes = int(labels.max()) + 1
    model = build_model(features.shape[1], args.hidden, num_classes, args.dropout, args.init)
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr)
    sampler = dgl.dataloading.NeighborSampler(list(reversed(args.fanouts)))
    loader = dgl.dataloading.DataLoader(
        graph, train_ids, sampler, batch_size=args.batch_size, shuffle=True, num_workers=0
    )
    epoch_s, epoch_cpu_s = [], []
    model.train()
    for _ in range(args.epochs):
        start, cpu = time.perf_counter(), time.process_time()
        for input_nodes, output_nodes, blocks in loader:
            loss = torch.nn.functional.cross_entropy(
                model(blocks, features[input_nodes]), labels[output_nodes]
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        epoch_s.append(time.perf_counter() - start)
        epoch_cpu_s.append(time.process_time() - cpu)
    result = {"epoch_s": epoch_s, "epoch_cpu_s": epoch_cpu_s}
    if args.evaluate:
        result["test_f1_micro"] = test_f1_micro(model, graph, features, labels, test_ids)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
