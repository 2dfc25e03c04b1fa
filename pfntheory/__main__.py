"""``python -m pfntheory``: the same as the ``pfntheory`` command."""

import sys

from pfntheory.cli import main

sys.exit(main())
