"""``python -m docs.gen``: refresh the generated documentation (``--check``: only report stale files)."""

import sys

from docs.gen import main

sys.exit(main())
