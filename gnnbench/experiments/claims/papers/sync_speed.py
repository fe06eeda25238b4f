"""Claim 6 (SDT-GNN Table IV): model-averaging epochs are as fast as gradient-averaging ones,
with far fewer synchronisations."""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.claims.claim import CPU, Claim, Half, Verdict, register, two_halves
from gnnbench.experiments.claims.tables import has_columns, mean_std_table, seed_means, span

TIME_TOLERANCE = 1.10  # "as fast": within 10% of the other's epoch time


def judge_sync_speed(frame: pd.DataFrame) -> Verdict | None:
    """Two halves per graph: model_avg's epochs within 10% of grad_avg's (time), and fewer
    all-reduces per epoch (syncs). Holds when both hold on every graph; refuted when either fails
    on every graph ("as fast" is the claim, not only the fewer syncs); partly otherwise."""
    if not has_columns(frame, "train.mode", "epoch_time_s", "sync_count"):
        return None
    time = seed_means(frame, ["dataset.name"], "train.mode", "epoch_time_s")
    syncs = seed_means(frame, ["dataset.name"], "train.mode", "sync_count")
    if not {"model_avg", "grad_avg"} <= set(time):
        return None
    speed = (time["model_avg"] / time["grad_avg"]).dropna()
    fewer = (syncs["grad_avg"] / syncs["model_avg"]).dropna()
    within = speed <= TIME_TOLERANCE
    halves = {
        "time": Half(f"model_avg epoch time {span(speed, '.2f')}x grad_avg's", within.mean(),
                     f"epochs more than {TIME_TOLERANCE - 1:.0%} slower on "
                     f"{int((~within).sum())}/{within.size} graphs"),
        "syncs": Half(f"{span(fewer, '.1f')}x fewer all-reduces per epoch ({speed.size} graphs)",
                      (fewer > 1).mean(), "not fewer synchronisations on "
                      f"{int((fewer <= 1).sum())}/{fewer.size} graphs"),
    }  # fmt: skip
    failed = [half.why_not for half in halves.values() if half.share == 0]
    if failed:
        ours = "; ".join(half.ours for half in halves.values())
        return Verdict(ours, "refuted", "; ".join(failed))
    return two_halves(halves)


def detail_sync_speed(frame: pd.DataFrame) -> list[str]:
    """Epoch time and all-reduces per epoch per graph and mode."""
    lines = mean_std_table(frame, ["dataset.name"], "train.mode", "epoch_time_s")
    return ["Epoch time s:", "", *lines, "", "All-reduces per epoch:", ""] + mean_std_table(
        frame, ["dataset.name"], "train.mode", "sync_count"
    )


CLAIM = register(
    Claim(
        6, "SDT-GNN Table IV", "Model-averaging epochs are as fast as gradient-averaging epochs, "
        "with far fewer synchronisations", "same epoch time, far fewer syncs",
        ("claim_6_sync_speed",), CPU + "; gloo all-reduce between processes on one host",
        judge_sync_speed, detail_sync_speed,
    )
)  # fmt: skip
