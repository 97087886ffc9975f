"""``python -m fastvec.bench [options]``: the same as ``fastvec bench [options]``."""

import sys

from fastvec.bench.cli import main

sys.exit(main())
