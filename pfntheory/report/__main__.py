"""``python -m pfntheory.report``: the same as ``pfntheory report``."""

import sys

from pfntheory.cli.report import main

sys.exit(main())
