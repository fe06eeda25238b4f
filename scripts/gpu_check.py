"""The GPU path in one command (`make gpu-check`): train every mode on CUDA and write docs/gpu.md.

On a CUDA machine: `python -m gnnbench -m train=model_avg,grad_avg,centralized num_gpus=1` on cora
(and amazon_cs when its raw file is present), logged to a private MLflow store, then the CUDA
tests (`pytest -m gpu`); docs/gpu.md gets each run's epoch time, gpu_peak_mb and test F1 and the
tests' outcome. Without a CUDA device it prints "no CUDA device: not run" and says so in the doc
(a doc holding measured figures is kept). `--device cpu` runs the same procedure on the CPU, to
check this script, writing only to --doc.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gnnbench.track.report.gpu_check import DATASETS, DOC, check


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = parser.parse_args(argv)
    if args.device == "cpu" and args.doc == DOC:
        parser.error("--device cpu checks the script: give --doc a path outside docs/")
    return check(args.device, args.epochs, args.doc, args.datasets)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
