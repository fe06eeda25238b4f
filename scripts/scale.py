"""Partition stage at scale on generated power-law graphs -> docs/scale.md (+ .csv, .png).

    python scripts/scale.py                         # SPRING at 20 M and 100 M edges
    python scripts/scale.py --sizes 20000000 --all-streaming   # every streaming partitioner
    python scripts/scale.py --sizes --billion       # experiment=billion: 1 B edges, p=16 (hours)
    python scripts/scale.py --no-run                # only rebuild the doc from docs/scale.csv
    python scripts/scale.py --sizes --training 1000000 10000000   # papers_scale training rows
    python scripts/scale.py --sizes --training 100000000 --partitioners spring   # 1 B edges

Per size: the import into a GraphStore (timed by the data stage), then the real partition stage
(a fresh process under memray) for each partitioner, p=8, a structure-only book (node_data=False,
what train=none builds) unless --features F. Results are merged into docs/scale.csv by (edges,
partitioner, feature_dim) after every run, so sizes can be run one at a time and an interrupted
run resumes where it stopped; sizes planned but absent from the CSV are listed in the doc as not
run, with the reason given by --not-run.

--billion runs gnnbench/conf/experiment/billion.yaml's graph, p and partitioners (METIS among them, under
its partitioner.memory_limit_gb=16: it must end out of memory in one line, which its row records),
so the 1 B rows are what `python -m gnnbench -m experiment=billion` partitions.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gnnbench.experiments import scale_doc as doc
from gnnbench.experiments import scale_partition as scale
from gnnbench.experiments.scale_doc import DOCS, MACHINE, TRAINING_CSV
from gnnbench.experiments.scale_partition import BILLION, SIZES
from gnnbench.partition.base import streaming_partitioners
from gnnbench.paths import REPO_ROOT


def parse_not_run(values: list[str]) -> dict[int, str]:
    reasons = {}
    for value in values:
        size, _, reason = value.partition("=")
        if not reason:
            raise SystemExit(f"--not-run: expected EDGES=REASON, got {value!r}")
        reasons[int(float(size))] = reason
    return reasons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="*", default=list(SIZES))
    parser.add_argument("--billion", action="store_true", help="also experiment=billion (hours)")
    parser.add_argument("--all-streaming", action="store_true", help="every streaming partitioner")
    parser.add_argument("--partitioners", help="comma-separated names (default: spring)")
    parser.add_argument("--rerun", action="store_true", help="measure rows the CSV already has")
    parser.add_argument("--p", type=int, default=8)
    parser.add_argument("--features", type=int, default=0, help="feature dim (0: structure only)")
    parser.add_argument("--no-run", action="store_true", help="only rebuild the doc from the CSV")
    parser.add_argument(
        "--training",
        type=float,
        nargs="*",
        default=[],
        metavar="NODES",
        help="papers_scale training runs at these node counts (mean degree 20)",
    )
    parser.add_argument("--not-run", action="append", default=[], metavar="EDGES=REASON")
    parser.add_argument("--home", type=Path, default=REPO_ROOT / ".benchmarks" / "scale")
    parser.add_argument("--machine", default=MACHINE, help="where the figures were measured")
    args = parser.parse_args()
    os.environ.setdefault("GNNBENCH_HOME", str(args.home))
    csv = DOCS / "scale.csv"
    if not args.no_run:
        names = (args.partitioners or "spring").split(",")
        if args.all_streaming:
            names = streaming_partitioners()
        runs = [(name, scale.partitioner_config(name)) for name in names]
        for size in [int(size) for size in args.sizes]:
            scale.run_size(
                scale.graph_config(size, args.features), size, runs, args.p, csv, args.rerun
            )
        for nodes in [int(nodes) for nodes in args.training]:
            home = Path(os.environ["GNNBENCH_HOME"])
            scale.run_training(nodes, home, TRAINING_CSV, args.partitioners and names)
        if args.billion:
            graph, p, runs = scale.billion_experiment()
            if args.partitioners:
                runs = [(name, config) for name, config in runs if name in names]
            scale.run_size(graph, BILLION, runs, p, csv, args.rerun)
    frame = scale.merge(csv, [])
    doc.plot(frame, DOCS / "scale.png")
    not_run = {BILLION: "not run here: hours on this 2-core machine; run with --billion"}
    not_run.update(parse_not_run(args.not_run))
    doc.write_doc(frame, sorted({*SIZES, BILLION}), not_run, args.machine, DOCS / "scale.md")


if __name__ == "__main__":
    main()
