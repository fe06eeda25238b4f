"""Model averaging (CATGNN / SDT-GNN): sum_j w_j * state_j / sum_j w_j over every partition of
every rank, with w_j the partition's owned training nodes; one flat all-reduce per sync."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.distributed as dist

State = dict[str, torch.Tensor]


def _averaged_keys(state: Mapping[str, torch.Tensor]) -> list[str]:
    return [key for key, value in state.items() if value.is_floating_point()]


def flatten(state: Mapping[str, torch.Tensor], keys: Sequence[str]) -> torch.Tensor:
    return torch.cat([state[key].reshape(-1) for key in keys])


def unflatten(vector: torch.Tensor, like: Mapping[str, torch.Tensor], keys: Sequence[str]) -> State:
    """Split a flat vector back into tensors shaped like `like`; other entries are copied."""
    result = {key: value.clone() for key, value in like.items()}
    offset = 0
    for key in keys:
        size = like[key].numel()
        result[key] = vector[offset : offset + size].view_as(like[key]).clone()
        offset += size
    return result


def weighted_state_sum(
    states: Sequence[Mapping[str, torch.Tensor]], weights: Sequence[float]
) -> State:
    """sum_j w_j * state_j over floating entries; integer entries (counters) from the first state."""
    keys = _averaged_keys(states[0])
    total = {key: value.clone() for key, value in states[0].items()}
    for key in keys:
        total[key] = sum(weight * state[key] for state, weight in zip(states, weights, strict=True))
    return total


def all_reduce_average(
    local_sum: Mapping[str, torch.Tensor], total_weight: float, *, distributed: bool
) -> State:
    """Sum the ranks' weighted sums (one flat all-reduce) and divide by the global weight.

    `distributed` is the caller's word, not `dist.is_initialized()`: under torchrun a sweep keeps
    its process group between jobs, and a centralized job on rank 0 alone must not enter it."""
    keys = _averaged_keys(local_sum)
    vector = flatten(local_sum, keys)
    if distributed:
        dist.all_reduce(vector, op=dist.ReduceOp.SUM)
    return unflatten(vector / total_weight, local_sum, keys)


def broadcast_state(
    state: Mapping[str, torch.Tensor], *, distributed: bool, source: int = 0
) -> State:
    """Every rank starts from rank `source`'s initial model."""
    keys = _averaged_keys(state)
    vector = flatten(state, keys)
    if distributed:
        dist.broadcast(vector, src=source)
    return unflatten(vector, state, keys)
