"""Config values across versions: the keys added after runs and books existed, with the value
that computes what a config without the key computed, and one rule for comparing values, in two
forms; plus the digest that run keys and book paths both hash with.

- **Keys added later** (KEYS_ADDED_LATER) and their neutral values keep a job's run key
  (gnnbench/identity.py) and a book's path (gnnbench/partition/stage/book_identity.py) where they were
  before the key existed.
- **Values**, one rule in two forms. A typed config value (what run keys and book paths digest)
  is neutral only in the neutral value's own type (`is_neutral`): `grid_dims: 2.0` or
  `chunk_refinement: 1` is no config from before the key (grid and grem reject both), so it keeps
  a key of its own and reaches that error instead of a cached book or a skipped job; and the
  digests hash JSON text, where 2 and 2.0 differ, so reading 2.0 as 2 there would move existing
  keys. A value as text (`as_text`: a run's logged parameters are text, and pandas reads
  whole-number columns with gaps as floats) has lost its type: there 2, 2.0, '2' and '2.0' are
  one value, and so are True, 'True' and 'true'.

Below every stage: the partition stage (book paths) and the job layer (run keys) both read it.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

# Config keys added after runs and partition books existed, each with the value that computes what
# a config without the key computed. At that value a key is left out of a job's run key, and a
# partitioner's own key (and refine_objective) out of its book's identity, so resuming after an
# upgrade still finds the older runs and books instead of running them again (chunk_edges always
# was in streaming partitioners' book identities, so it stays there). A key whose new default
# changes results does not belong here. Keys are per section, not per partitioner: a partitioner
# that later takes a key of the same name must share its neutral value or pick another name.
KEYS_ADDED_LATER: dict[str, Any] = {
    "partitioner.chunk_edges": 1048576,  # moved into the shared block, with the old default
    "partitioner.refine_objective": "edge_cut",
    "partitioner.chunk_refinement": True,  # grem's
    "partitioner.grid_dims": 2,  # grid's
    "partitioner.subpart_lp_passes": 0,  # quotient's
    "partitioner.subpart_slack": 1.03,  # quotient's
    "partitioner.quotient_ncuts": 1,  # quotient's
    "partitioner.subpart_fm_passes": 0,  # quotient's
    "partitioner.node_fm_passes": 0,  # quotient's
    "partitioner.coarsening": "base",  # quotient's
    "partitioner.cluster_passes": 5,  # quotient's (read only with coarsening=clusters)
    "partitioner.coarse_nodes": 8192,  # quotient's (read only with coarsening=clusters)
    "partitioner.level_fm_passes": 0,  # quotient's (read only with coarsening=clusters)
    "partitioner.vcycles": 0,  # quotient's (read only with coarsening=clusters)
    "train.optimizer_state": "local",
    "dataset.features": "none",
    "dataset.feature_dtype": "float32",
    "dataset.split_fractions": [0.70, 0.15, 0.15],
    "partitioner.feature_rows": "copy",  # books before it copied feature rows into each partition
    "train.cluster_method": "bfs",
    "train.cluster_boundary": True,  # cluster batches held their boundary before the key
    "train.batch_preparation": "inline",
    "train.prefetch_partitions": False,
    "train.superbatch": 1,
    "train.superbatch_mb": None,
}


def digest(payload: Any, size: int) -> str:
    """Hex blake2b of the payload's sorted JSON (anything else as its str): `size` bytes."""
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=size).hexdigest()


def is_neutral(dotted_key: str, value: Any) -> bool:
    """Whether `section.key` is one of the KEYS_ADDED_LATER and holds its neutral value, of the
    neutral value's type (1 is not True, 2.0 is not 2)."""
    if dotted_key not in KEYS_ADDED_LATER:
        return False
    neutral = KEYS_ADDED_LATER[dotted_key]
    return type(value) is type(neutral) and value == neutral


def as_text(value: Any) -> str:
    """A value as text that compares equal between a config and a run: 4, 4.0, '4' -> '4',
    1048576 -> '1048576', 0.10 -> '0.1'; True, 'True', 'true' -> 'true'; absent (None, NaN: a key
    the chosen partitioner lacks) -> ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or str(value).lower() in ("true", "false"):
        return str(value).lower()
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return str(int(number)) if number.is_integer() else repr(number)


def is_neutral_text(dotted_key: str, text: str) -> bool:
    """`is_neutral` for a value as text (`as_text`), whose type is gone."""
    return dotted_key in KEYS_ADDED_LATER and text == as_text(KEYS_ADDED_LATER[dotted_key])
