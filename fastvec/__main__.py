"""``python -m fastvec bench`` / ``python -m fastvec list``."""

import sys

from fastvec.cli import main

sys.exit(main())
