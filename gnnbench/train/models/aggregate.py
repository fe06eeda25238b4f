"""Neighbour aggregation on a block as one CSR sparse-dense product (targets x sources).

PyG's scatter aggregation gathers an (E, F) copy of the source features and scatters it back;
the product reads each source row in place, about 5x faster on CPU for the sampler's blocks, and
its backward (A^T @ grad) skips the (E, F) copy too. Weights are built once per block and layer.
"""

from __future__ import annotations

import warnings

import torch

# torch flags CSR support as beta on every construction; the products used here are stable.
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


def block_csr(
    target: torch.Tensor,
    source: torch.Tensor,
    weight: torch.Tensor,
    num_dst: int,
    num_src: int,
) -> torch.Tensor:
    """The (num_dst, num_src) CSR matrix with `weight` at (target, source); duplicate entries add.

    The sampler emits edges grouped by target in order, so the sort is skipped for its blocks.
    """
    if target.numel() > 1 and not bool((target[1:] >= target[:-1]).all()):
        order = torch.argsort(target, stable=True)
        target, source, weight = target[order], source[order], weight[order]
    row_start = torch.zeros(num_dst + 1, dtype=torch.int64, device=target.device)
    torch.cumsum(torch.bincount(target, minlength=num_dst), 0, out=row_start[1:])
    return torch.sparse_csr_tensor(
        row_start,
        source.to(torch.int64),
        weight,
        size=(num_dst, num_src),
        check_invariants=False,
    )


def mean_adjacency(
    edge_index: torch.Tensor, num_src: int, num_dst: int, dtype: torch.dtype
) -> torch.Tensor:
    """Weights 1/in-degree: A @ x is each target's mean over its sampled neighbours (0 if none)."""
    source, target = edge_index[0], edge_index[1]
    in_degree = torch.bincount(target, minlength=num_dst).to(dtype)
    weight = in_degree.reciprocal()[target]
    return block_csr(target, source, weight, num_dst, num_src)


def gcn_adjacency(
    edge_index: torch.Tensor, num_src: int, num_dst: int, dtype: torch.dtype
) -> torch.Tensor:
    """Weights 1/sqrt(d_j d_i) with self-loops on the targets (out-degree d_j of source j,
    in-degree d_i of target i, loops counted): Kipf & Welling's normalisation on a block."""
    loops = torch.arange(num_dst, device=edge_index.device)
    source = torch.cat([edge_index[0], loops])
    target = torch.cat([edge_index[1], loops])
    out_degree = torch.bincount(source, minlength=num_src).to(dtype)
    in_degree = torch.bincount(target, minlength=num_dst).to(dtype)
    weight = (out_degree[source] * in_degree[target]).rsqrt()
    return block_csr(target, source, weight, num_dst, num_src)
