"""`python -m gnnbench`: the Hydra app. Composes the config and runs one job per combination.

Expected mistakes (an unknown dataset, p larger than the graph, a malformed file) end in one line
on stderr and a non-zero exit; in a sweep (`-m`) the failing job is recorded FAILED and the others
go on, and the sweep exits non-zero at the end with the list of failures.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from gnnbench.errors import ConfigError, GnnbenchError
from gnnbench.paths import REPO_ROOT

log = logging.getLogger("gnnbench")
CONF_DIR = REPO_ROOT / "conf"
_failures: list[str] = []


def check_group_choices(argv: list[str], conf_dir: Path = CONF_DIR) -> None:
    """Reject `group=value` overrides that name no config file, in one line (before Hydra)."""
    for arg in argv:
        if "=" not in arg or arg.startswith(("-", "+", "~", "hydra")):
            continue
        key, value = arg.split("=", 1)
        group = conf_dir / key
        if not group.is_dir() or "(" in value or "*" in value:
            continue
        choices = sorted(path.stem for path in group.glob("*.yaml"))
        for choice in value.split(","):
            if choice.strip() not in choices and choice.strip() != "null":
                raise ConfigError(
                    f"{key}={choice}: unknown {key} (expected one of: {', '.join(choices)})"
                )


def _is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def _job(cfg) -> dict | None:
    from omegaconf import OmegaConf

    from gnnbench.run import run

    config = OmegaConf.to_container(cfg, resolve=True)
    try:
        return run(config, OmegaConf.to_yaml(cfg, resolve=True))
    except GnnbenchError as exc:
        if not _is_multirun():
            print(f"gnnbench: error: {exc}", file=sys.stderr)
            sys.exit(2)
        log.error("job failed: %s", exc)
        _failures.append(f"{cfg.dataset.name} {cfg.partitioner.name} p={cfg.p}: {exc}")
        return None


def main() -> None:
    """Console entry point (`gnnbench` / `python -m gnnbench`)."""
    import hydra

    try:
        check_group_choices(sys.argv[1:])
    except ConfigError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    app = hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")(_job)
    app()
    if _failures:
        print(f"gnnbench: {len(_failures)} job(s) failed:", file=sys.stderr)
        for failure in _failures:
            print(f"  {failure}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
