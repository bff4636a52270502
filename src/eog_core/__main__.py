"""``python -m eog_core``: the same as the ``eog-core`` command."""

import sys

from eog_core.cli import console

sys.exit(console())
