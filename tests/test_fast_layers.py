"""The CSR layers compute what PyG's SAGEConv and the scatter-based GCN layer computed: outputs and
gradients to 1e-5 on random blocks, targets without neighbours and unsorted edges included."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch_geometric.nn import SAGEConv

from gnnbench.train.models import build_model, relu_dropout
from gnnbench.train.models.gcn import BlockGCNConv
from gnnbench.train.models.sage import BlockSAGEConv
from gnnbench.train.sampler import Block, NeighbourSampler

pytestmark = pytest.mark.usefixtures("pyg_generated_code_removed")

TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def scatter_gcn(conv: BlockGCNConv, x, edge_index, size) -> torch.Tensor:
    """The scatter-based BlockGCNConv.forward this change replaced (the reference numerics)."""
    num_src, num_dst = size
    loops = torch.arange(num_dst)
    source = torch.cat([edge_index[0], loops])
    target = torch.cat([edge_index[1], loops])
    ones = torch.ones(source.numel())
    out_degree = torch.zeros(num_src).index_add_(0, source, ones)
    in_degree = torch.zeros(num_dst).index_add_(0, target, ones)
    weight = (out_degree[source] * in_degree[target]).rsqrt()
    h = conv.linear(x[0])
    out = torch.zeros(num_dst, h.size(1)).index_add_(0, target, h[source] * weight.unsqueeze(1))
    return out + conv.bias


def random_block(rng: np.random.Generator, shuffle: bool) -> tuple[torch.Tensor, int, int]:
    """A block like the sampler's: targets are the first num_dst sources, edges grouped by target
    (shuffled if asked), up to 6 distinct neighbours each; every third target has none."""
    num_dst = int(rng.integers(5, 40))
    num_src = num_dst + int(rng.integers(0, 60))
    sources, targets = [], []
    for target in range(num_dst):
        count = 0 if target % 3 == 0 else int(rng.integers(1, 7))
        sources.append(rng.choice(num_src, size=min(count, num_src), replace=False))
        targets.append(np.full(len(sources[-1]), target))
    edge_index = np.stack([np.concatenate(sources), np.concatenate(targets)]).astype(np.int64)
    if shuffle:
        edge_index = edge_index[:, rng.permutation(edge_index.shape[1])]
    return torch.from_numpy(edge_index), num_src, num_dst


def outputs_and_gradients(conv, forward, edge_index, num_src, num_dst, features):
    """forward's output and the gradients of a random projection of it (inputs and weights)."""
    conv.zero_grad()
    x = features.clone().requires_grad_(True)
    out = forward(conv, (x, x[:num_dst]), edge_index, (num_src, num_dst))
    (out * torch.linspace(-1, 1, out.numel(), device=out.device).view_as(out)).sum().backward()
    return out.detach(), x.grad, {k: p.grad.clone() for k, p in conv.named_parameters()}


def assert_same(fast_conv, reference_conv, reference_forward, seed: int, shuffle: bool) -> None:
    rng = np.random.default_rng(seed)
    edge_index, num_src, num_dst = random_block(rng, shuffle)
    features = torch.from_numpy(rng.standard_normal((num_src, 12)).astype(np.float32))
    fast = outputs_and_gradients(
        fast_conv, lambda c, x, e, s: c(x, e, s), edge_index, num_src, num_dst, features
    )
    reference = outputs_and_gradients(
        reference_conv, reference_forward, edge_index, num_src, num_dst, features
    )
    torch.testing.assert_close(fast[0], reference[0], **TOLERANCE)
    torch.testing.assert_close(fast[1], reference[1], **TOLERANCE)
    assert fast[2].keys() == reference[2].keys()
    for name in fast[2]:
        torch.testing.assert_close(fast[2][name], reference[2][name], **TOLERANCE)


@pytest.mark.parametrize("shuffle", [False, True], ids=["grouped", "unsorted"])
@pytest.mark.parametrize("seed", range(5))
def test_sage_equals_pyg_sageconv(seed: int, shuffle: bool):
    torch.manual_seed(seed)
    reference = SAGEConv(12, 7, aggr="mean")
    torch.manual_seed(seed)
    fast = BlockSAGEConv(12, 7, aggr="mean")
    for name, tensor in reference.state_dict().items():  # same initialisation, same keys
        assert torch.equal(fast.state_dict()[name], tensor), name
    assert_same(fast, reference, lambda c, x, e, s: c(x, e, size=s), seed, shuffle)


@pytest.mark.parametrize("shuffle", [False, True], ids=["grouped", "unsorted"])
@pytest.mark.parametrize("seed", range(5))
def test_gcn_equals_scatter_gcn(seed: int, shuffle: bool):
    conv = BlockGCNConv(12, 7)
    with torch.no_grad():
        conv.bias.uniform_(-1, 1)  # a non-zero bias, so a misplaced one shows
    assert_same(conv, conv, scatter_gcn, seed, shuffle)


@pytest.mark.parametrize("name", ["sage", "gcn"])
def test_model_on_sampled_blocks_matches_pyg(name: str):
    """Whole 2-layer models on the sampler's own blocks: the state_dict loads into a model of PyG
    layers (checkpoints and model averaging keep working) and both give the same logits."""
    rng = np.random.default_rng(0)
    num_nodes, degree = 300, 8
    indices = rng.integers(0, num_nodes, num_nodes * degree)
    indptr = np.arange(0, num_nodes * degree + 1, degree)
    indptr[1:][rng.random(num_nodes) < 0.1] = 0  # some nodes lose their neighbours...
    indptr = np.maximum.accumulate(indptr)  # ...keeping the CSR valid
    batch = NeighbourSampler(indptr, indices, [5, 3]).sample(np.arange(0, 300, 7), rng_seed=1)
    config = {"name": name, "layers": 2, "hidden": 16, "dropout": 0.0}
    fast = build_model(10, 4, config)
    reference = build_model(10, 4, config)
    if name == "sage":
        reference.convs = torch.nn.ModuleList(SAGEConv(*c.lin_l.weight.T.shape) for c in fast.convs)
    reference.load_state_dict(fast.state_dict())
    blocks = [Block(torch.from_numpy(b.edge_index), b.num_src, b.num_dst) for b in batch.blocks]
    x = torch.from_numpy(rng.standard_normal((len(batch.n_id), 10)).astype(np.float32))
    if name == "gcn":
        expected = x
        for i, block in enumerate(blocks):
            expected = scatter_gcn(
                reference.convs[i],
                (expected, expected[: block.num_dst]),
                block.edge_index,
                (block.num_src, block.num_dst),
            )
            if i == 0:
                expected = expected.relu()
    else:
        expected = reference(x, blocks)
    torch.testing.assert_close(fast(x, blocks), expected, **TOLERANCE)


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("name", ["sage", "gcn"])
def test_layers_on_cuda_equal_the_cpu(name: str):
    """cuSPARSE's product gives the CPU's outputs and gradients (float32, to 1e-4)."""
    conv = BlockSAGEConv(12, 7, aggr="mean") if name == "sage" else BlockGCNConv(12, 7)
    on_gpu = type(conv)(12, 7, **({"aggr": "mean"} if name == "sage" else {})).cuda()
    on_gpu.load_state_dict(conv.state_dict())
    edge_index, num_src, num_dst = random_block(np.random.default_rng(3), shuffle=True)
    features = torch.randn(num_src, 12)
    call = lambda c, x, e, s: c(x, e, s)  # noqa: E731
    cpu = outputs_and_gradients(conv, call, edge_index, num_src, num_dst, features)
    gpu = outputs_and_gradients(on_gpu, call, edge_index.cuda(), num_src, num_dst, features.cuda())
    torch.testing.assert_close(gpu[0].cpu(), cpu[0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(gpu[1].cpu(), cpu[1], rtol=1e-4, atol=1e-4)
    for key in cpu[2]:
        torch.testing.assert_close(gpu[2][key].cpu(), cpu[2][key], rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@needs_cuda
def test_centralized_training_on_cuda_reports_gpu_memory(gnnbench_home):
    """One centralized epoch on a small synthetic graph on cuda:0: it learns and logs its peak."""
    from gnnbench.data.datasets import prepare_dataset
    from gnnbench.train.runner import run_training
    from gnnbench.train.spec import spec_from_conf

    store = prepare_dataset({"name": "gpu-check", "source": "synthetic", "num_nodes": 2000,
                             "avg_degree": 10, "num_classes": 4, "feature_dim": 16, "seed": 1})  # fmt: skip
    train = {"mode": "centralized", "epochs": 2, "fanouts": [10, 5], "batch_size": 256,
             "device": "cuda", "timeout_s": 120}  # fmt: skip
    model = {"name": "sage", "layers": 2, "hidden": 32, "dropout": 0.0}
    result = run_training(
        store_path=store.path,
        book_path=None,
        spec=spec_from_conf(train, model, num_gpus=1, sync_interval=1, seed=0),
    )
    assert result.gpu_peak_mb > 0
    assert result.test_f1_micro > 0.25  # above chance for 4 balanced classes


@pytest.mark.parametrize("rate", [0.0, 0.5, 0.8])
def test_relu_dropout_is_relu_then_inverted_dropout(rate: float):
    """Every output is 0 or relu(h) / (1 - rate); positives are kept with probability 1 - rate;
    the gradient is the same mask; evaluation (and rate 0) is plain ReLU; a seed repeats it."""
    # h from its own generator: drawn from the global one after manual_seed(3), its signs would
    # follow the very uniforms that draw the mask
    h = torch.randn(400, 250, generator=torch.Generator().manual_seed(0)).requires_grad_(True)
    torch.manual_seed(3)
    out = relu_dropout(h, rate, training=True)
    out.sum().backward()
    kept = out != 0
    assert not kept[h <= 0].any()
    scaled = torch.where(kept, h.relu() / (1 - rate), torch.zeros_like(h))
    torch.testing.assert_close(out, scaled, **TOLERANCE)
    torch.testing.assert_close(h.grad, kept.float() / (1 - rate), **TOLERANCE)
    kept_share = kept[h > 0].float().mean().item()
    assert abs(kept_share - (1 - rate)) < 0.01  # ~50k positives: std of the share < 0.003
    torch.manual_seed(3)
    assert torch.equal(relu_dropout(h, rate, training=True), out)
    assert torch.equal(relu_dropout(h, rate, training=False), h.relu())


def test_building_every_model_leaves_nothing_in_the_temporary_folder(tmp_path):
    """PyG writes a generated module per layer class into TMPDIR at a process's first build; a
    fresh process (nothing imported yet) builds every model and PyG's own baseline model."""
    build = (
        "from gnnbench.train.models import MODELS, build_model\n"
        "from gnnbench.train.baselines.pyg import SAGE\n"
        "from gnnbench.train.spec import ModelSpec\n"
        "config = {'layers': 2, 'hidden': 8, 'dropout': 0.0, 'heads': 2}\n"
        "for name in MODELS.names():\n"
        "    build_model(4, 3, {**config, 'name': name})\n"
        "SAGE(4, 3, ModelSpec.from_config({**config, 'name': 'sage'}))\n"
    )
    folder = tmp_path / "tmp"
    folder.mkdir()
    env = {**os.environ, "TMPDIR": str(folder)}
    done = subprocess.run([sys.executable, "-c", build], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert list(folder.iterdir()) == []
