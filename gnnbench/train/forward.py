"""The model on one rank's device: a batch's features and numpy blocks moved per batch, the loss
and the predicted labels (single-label: the argmax; multilabel: every logit above 0)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.train.sampler import Block


def on_device(block: Block, device: torch.device) -> Block:
    return Block(torch.from_numpy(block.edge_index).to(device), block.num_src, block.num_dst)


def forward(model: nn.Module, x: torch.Tensor, blocks: list[Block], device: torch.device):
    """The model on a batch's features and its numpy blocks."""
    x = x.to(device, non_blocking=True)
    return model(x, [on_device(block, device) for block in blocks])


def loss(logits: torch.Tensor, target: torch.Tensor, multilabel: bool) -> torch.Tensor:
    if multilabel:
        return F.binary_cross_entropy_with_logits(logits, target.float())
    return F.cross_entropy(logits, target)


def predict(logits: torch.Tensor, multilabel: bool) -> torch.Tensor:
    return (logits > 0).to(torch.uint8) if multilabel else logits.argmax(dim=1)
