"""Reproductions of the papers' experiments, and the demo.

Run ``python -m anonml.experiments --help`` for the list. The results land in ``docs/``.
"""

from anonml._models import paper_nn

__all__ = ["paper_nn"]
