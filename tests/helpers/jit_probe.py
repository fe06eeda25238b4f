"""Run in a fresh interpreter by tests/test_meter.py (rule 3): the partition stage's unmeasured
warm-up, then the measured work on a store; prints (JSON) the numba kernels that gained a
compiled or cache-loaded signature inside the measured step, which the warm-up should have
covered.

    python tests/helpers/jit_probe.py <partitioner> '<overrides JSON>' <store directory> <p>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from numba.core.dispatcher import Dispatcher

from gnnbench.data.store import GraphStore
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage import runner as stage


def signatures() -> dict[str, int]:
    """Every numba kernel of gnnbench loaded so far, with how many signatures it holds."""
    found = {}
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("gnnbench"):
            for attribute, value in vars(module).items():
                if isinstance(value, Dispatcher):
                    found[f"{module_name}.{attribute}"] = len(value.signatures)
    return found


def main() -> None:
    name, overrides, store_dir, p = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
    spec = PartitionSpec.defaults(name, **overrides)
    stage._compile_unmeasured(spec, int(p), 0)
    before = signatures()
    spec.run_refined(GraphStore(Path(store_dir)), int(p), 0)
    after = signatures()
    print(json.dumps(sorted(key for key, count in after.items() if count > before.get(key, 0))))


if __name__ == "__main__":
    main()
