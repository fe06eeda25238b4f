"""`python -m gnnbench.track.report`: table mode by default (see gnnbench.track.report.cli)."""

import sys

from gnnbench.track.report.cli import main

sys.exit(main())
