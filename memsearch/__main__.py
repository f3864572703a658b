"""``python -m memsearch``: the command line."""

import sys

from .cli.app import main

sys.exit(main())
