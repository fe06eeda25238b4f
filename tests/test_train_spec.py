"""The typed train config (TrainSpec, ModelSpec), the training-mode registry and the coordinator."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers.configured import FAST, SAGE
from helpers.graphs import community_store

from gnnbench.errors import ConfigError, DataError, root_cause, worker_failure
from gnnbench.train.coordinator import SingleProcess, Torchrun
from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.modes.centralized import Centralized
from gnnbench.train.record import EpochRecord
from gnnbench.train.runner import check_training_config, run_training
from gnnbench.train.spec import TrainSpec, spec_from_conf


def test_unknown_train_key_is_one_line_naming_the_valid_keys():
    with pytest.raises(
        ConfigError, match=r"^train\.lrr: unknown key for train=model_avg; valid keys: "
    ) as info:
        spec_from_conf({"mode": "model_avg", "lrr": 0.1}, SAGE)
    assert "\n" not in str(info.value) and ", lr, " in str(info.value)


def test_unknown_model_key_is_one_line():
    with pytest.raises(
        ConfigError, match=r"^model\.hiden: unknown key for model=sage; valid keys: dropout, "
    ):
        spec_from_conf({"mode": "centralized"}, {**SAGE, "hiden": 8})


def test_a_missing_key_is_an_error_not_a_default():
    """Defaults live in the YAML: a train group without one of its keys is not filled in code."""
    with pytest.raises(
        ConfigError, match=r"^train\.epochs: missing for train=centralized; valid keys: "
    ):
        TrainSpec.from_config({"mode": "centralized"}, SAGE, sync_interval=1, seed=0, num_gpus=1)


def test_the_spec_carries_the_job_axes_and_yaml_defaults():
    spec = spec_from_conf({"mode": "model_avg"}, SAGE, sync_interval=3, seed=7, num_gpus=2)
    assert (spec.sync_interval, spec.seed, spec.num_gpus) == (3, 7, 2)
    assert spec.epochs == 20 and spec.fanouts == (25, 10)  # gnnbench/schema.py's TrainKeys
    assert spec.worker_mem_gb == 4  # the schema's shared/p_auto/memory_budget, model_avg's
    assert spec.model.as_config() == SAGE
    with pytest.raises(ConfigError, match=r"^sync_interval: expected >= 1, got 0$"):
        spec_from_conf({"mode": "model_avg"}, SAGE, sync_interval=0)
    bogus = spec_from_conf({"mode": "model_avg"} | {"mode": "bogus"}, SAGE)  # parsed without the
    with pytest.raises(ConfigError, match=r"^train\.mode: unknown training mode 'bogus'"):
        check_training_config(spec=bogus, p=2)  # registry; refused before any data is read


@TRAINING_MODES.register("test_frozen")
class Frozen(Centralized):
    """A mode registered outside gnnbench: evaluates the initial model, never updates it."""

    def train_round(self, start: int, length: int, record: EpochRecord) -> None:
        record.train_nodes_per_epoch[start : start + length] = 0


def test_a_mode_registered_in_a_test_module_is_found_by_name(tmp_path):
    assert TRAINING_MODES.get("test_frozen") is Frozen and "test_frozen" in TRAINING_MODES.names()
    store = community_store(tmp_path / "store", num_nodes=120)
    spec = spec_from_conf({"mode": "test_frozen", **FAST, "epochs": 2}, SAGE, num_gpus=1)
    result = run_training(store_path=store.path, book_path=None, spec=spec)
    assert result.mode == "test_frozen" and result.train_nodes_per_epoch == 0
    assert [entry["train_loss"] for entry in result.history] == [0.0, 0.0]


def test_single_process_coordinator_runs_everything_itself():
    single = SingleProcess()
    assert single.leads and single.share(lambda: 3) == 3 and single.together(lambda: 4) == 4


def test_the_expected_failure_of_the_lowest_rank_is_every_rank_s():
    failures = [
        {"rank": 0, "expected": False, "type": "RuntimeError", "message": "gloo timed out"},
        {"rank": 2, "expected": True, "type": "DataError", "message": "b: bad"},
        {"rank": 1, "expected": True, "type": "DataError", "message": "a: bad", "metrics": {}},
    ]
    chosen = worker_failure(failures)
    assert isinstance(chosen, DataError) and str(chosen) == "worker 1 failed: a: bad"
    unexpected = worker_failure([{**failures[0], "traceback": "Traceback ...\n"}])
    assert type(unexpected) is RuntimeError
    assert str(unexpected) == "worker 0 failed: gloo timed out (RuntimeError)"
    assert unexpected.worker_traceback == "worker 0:\nTraceback ...\n"  # for the error.log


def test_one_rule_picks_the_root_cause_for_spawned_and_torchrun_ranks():
    """errors.root_cause: expected before unexpected, then the earliest, then the lowest rank
    (launch._failure and the coordinator both raise errors.worker_failure, which reads it)."""
    later = {"rank": 0, "expected": True, "at": 2.0}
    earlier = {"rank": 3, "expected": True, "at": 1.0}
    crash = {"rank": 1, "expected": False, "at": 0.5}
    assert root_cause([later, earlier, crash]) is earlier
    assert root_cause([crash, {"rank": 2, "expected": False, "at": 0.1}])["rank"] == 2
    assert root_cause([{"rank": 1, "expected": True}, {"rank": 0, "expected": True}])["rank"] == 0


def _rank_main(rank: int, port: int, scratch: str) -> None:
    """One torchrun-like rank: rank 1 fails inside `together`, rank 0 inside `share`, then rank 0
    cannot open its records while rank 1 waits for its word."""
    os.environ.update(RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1")
    os.environ.update(MASTER_PORT=str(port), LOCAL_RANK=str(rank))
    spec = spec_from_conf({"mode": "grad_avg", "backend": "gloo", "device": "cpu"}, SAGE)
    coordinator = Torchrun(spec, rank)
    seen = {}

    def fail_on(failing_rank: int, message: str):
        if rank == failing_rank:
            raise DataError(message)
        return "fine"

    def records_then_share():
        def unopenable():
            raise DataError("mlflow.db: unreadable")

        with coordinator.records(unopenable):
            return coordinator.share(lambda: "paths")

    for name, step in (
        ("together", lambda: coordinator.together(lambda: fail_on(1, "part-1: unreadable"))),
        ("share", lambda: coordinator.share(lambda: fail_on(0, "store: no features"))),
        ("records", records_then_share),
    ):
        try:
            seen[name] = {"value": step()}
        except Exception as exc:  # noqa: BLE001 - what each rank saw is the test's result
            seen[name] = {"type": type(exc).__name__, "message": str(exc)}
    Path(scratch, f"rank-{rank}.json").write_text(json.dumps(seen))
    dist.destroy_process_group()  # as every rank must before it exits (else gloo may abort it)


@pytest.mark.distributed
def test_a_failure_on_one_rank_reaches_the_others_as_the_same_one_line_error(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.start_processes(_rank_main, args=(port, str(tmp_path)), nprocs=2, start_method="spawn")
    rank0, rank1 = (json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in (0, 1))
    assert rank0["together"] == {
        "type": "DataError",
        "message": "worker 1 failed: part-1: unreadable",
    }
    assert rank1["together"] == {"type": "DataError", "message": "part-1: unreadable"}
    assert (
        rank0["share"] == rank1["share"] == {"type": "DataError", "message": "store: no features"}
    )
    unopenable = {"type": "DataError", "message": "mlflow.db: unreadable"}
    assert rank0["records"] == rank1["records"] == unopenable  # rank 1 waited in share
