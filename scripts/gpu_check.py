"""The GPU path in one command (`make gpu-check`): every training mode on CUDA and on the same
machine's CPU, the CUDA tests, then docs/gpu.md and docs/gpu_check.json.

    python3 scripts/gpu_check.py --wheelhouse wheelhouse --raw-dir RAW     # on the CUDA machine
    python scripts/gpu_check.py --device cpu --out /tmp/rehearsal          # the CPU half, anywhere
    python scripts/gpu_check.py --render docs/gpu_check.json               # the page from its file
    python3 scripts/gpu_check.py --only synthetic_large --merge docs/gpu_check.json ...  # a rerun

Without a CUDA device the default (`--device cuda`) prints "no CUDA device: not run" and keeps a
page holding measured figures (gnnbench/experiments/gpu_check.py says what runs).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from gnnbench.paths import REPO_ROOT, raw_dir  # noqa: E402
from gnnbench.setup.wheelhouse import install  # noqa: E402

DOCS = REPO_ROOT / "docs"


def has_cuda() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.device_count() > 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cuda: the GPU jobs, then the same on the CPU; cpu: the CPU half")  # fmt: skip
    parser.add_argument("--budget-s", type=float, default=480.0, help="the whole check's wall time")
    parser.add_argument("--wheelhouse", type=Path, help="install the dependencies from it first")
    parser.add_argument(
        "--raw-dir", type=Path, default=raw_dir(), help="cora's and amazon_cs's files"
    )
    parser.add_argument("--out", type=Path, default=DOCS, help="where gpu.md and gpu_check.json go")
    parser.add_argument(
        "--render", type=Path, help="only rewrite <out>/gpu.md from this results file"
    )
    parser.add_argument("--only", type=lambda text: text.split(","), metavar="DATASET[,...]",
                        help="only these datasets' jobs, without the CUDA tests (a rerun)")  # fmt: skip
    parser.add_argument("--merge", type=Path, metavar="RESULTS",
                        help="write the results merged onto this earlier results file")  # fmt: skip
    args = parser.parse_args(argv)
    if args.render:
        from gnnbench.experiments.gpu_doc import render

        render(args.render, args.out / "gpu.md")
        return 0
    if args.device == "cpu" and args.out.resolve() == DOCS:
        parser.error("--device cpu rehearses the check: give --out a folder outside docs/")
    if args.device == "cuda" and not has_cuda():
        from gnnbench.experiments.gpu_doc import MEASURED, not_run_doc, write_doc

        print("no CUDA device: not run")
        page = args.out / "gpu.md"
        if not (page.is_file() and MEASURED in page.read_text()):
            write_doc(page, not_run_doc())
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds: the running job is stopped
    devices = ["cuda", "cpu"] if args.device == "cuda" else ["cpu"]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gnnbench-wheelhouse-") as scratch:
        site = None
        if args.wheelhouse:  # before anything imports a dependency it brings
            site = str(install(args.wheelhouse, Path(scratch) / "site"))
            sys.path.insert(0, site)
        from gnnbench.experiments.gpu_check import check

        budget_left = args.budget_s - (time.monotonic() - start)
        return check(devices, budget_left, site, args.raw_dir, args.out, args.only, args.merge)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
