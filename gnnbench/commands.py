"""What the `gnnbench NAME ...` subcommands share (below every stage: a stage's subcommand uses it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def without_arguments(doc: str) -> None:
    """The command line of a script that takes no arguments: `--help` prints its usage (the first
    line of `doc`) and exits, anything else is a one-line usage error, before it does any work."""
    argparse.ArgumentParser(description=doc.splitlines()[0]).parse_args()


def chosen_names(command: str, argv: list[str], known: Sequence[str]) -> list[str] | None:
    """The names `gnnbench <command> NAME [NAME ...] | all` asks for, in order; None, after one line
    on stderr naming the valid ones, when it names none or one it does not know."""
    names = list(known) if argv == ["all"] else argv
    if names and all(name in known for name in names):
        return names
    print(
        f"gnnbench: error: {command}: expected one or more of {', '.join(known)}, all; "
        f"got {' '.join(argv) or 'nothing'}",
        file=sys.stderr,
    )
    return None
