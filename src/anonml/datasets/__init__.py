"""Bundled public tabular datasets for anonymization and privacy-attack experiments.

Each loader returns a fresh :class:`Dataset` (features, target, quasi-identifier sets,
published split if any, provenance). The data files ship inside the package; their origin,
licences and sha256 checksums are in ``anonml/datasets/data/ATTRIBUTION.md``.

- :func:`load_adult`: UCI Adult census income, 48,842 rows, published train/test split.
- :func:`load_nursery`: UCI Nursery, 12,960 rows, 8 categorical features.
- :func:`load_loan`: LendingClub loans 2007–2011, 39,786 rows (substitute for the 2015
  excerpt used by Goldsteen et al.; terms of use unclear, research use only).
- :func:`load_adult_hierarchies`: generalization hierarchies of the Adult columns (ARX CSV).

Examples
--------
>>> from anonml.datasets import load_adult
>>> adult = load_adult()
>>> X_train, X_test, y_train, y_test = adult.train_test_split()
>>> len(X_train), len(X_test)
(32561, 16281)
"""

from __future__ import annotations

from anonml.datasets._hierarchies import load_adult_hierarchies
from anonml.datasets._loaders import Dataset, load_adult, load_loan, load_nursery

__all__ = ["Dataset", "load_adult", "load_nursery", "load_loan", "load_adult_hierarchies"]
