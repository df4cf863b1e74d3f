"""``python -m harness`` is the ``harness`` command."""

import sys

from harness.main import main

sys.exit(main())
