"""Generalization hierarchies (taxonomy trees) of attributes, in the ARX CSV layout.

:class:`Hierarchy` holds one attribute's tree: one row per leaf value, column ``j`` the leaf's
ancestor at level ``j``, the last column a single root (``"*"``). It reads and writes ARX CSV
files (``value;level1;...;*``), builds flat, interval and ordered hierarchies, maps values to
leaves and finds each group's lowest common ancestor in one vectorized pass.

Examples
--------
>>> from anonml.hierarchies import Hierarchy
>>> age = Hierarchy.from_intervals(range(17, 91), widths=[5, 10, 20])
>>> age.generalize([17, 34, 90], 1).tolist()
['[15, 20[', '[30, 35[', '[90, 95[']
"""

from anonml.hierarchies._folder import read_arx_folder
from anonml.hierarchies._hierarchy import Hierarchy

__all__ = ["Hierarchy", "read_arx_folder"]
