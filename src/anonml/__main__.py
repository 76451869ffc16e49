"""``python -m anonml`` runs the command-line interface."""

import sys

from anonml.cli import main

sys.exit(main())
