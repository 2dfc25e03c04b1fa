"""``python -m pfntheory.report``: the same as ``pfntheory report``."""

import sys

from .cli import main

sys.exit(main())
