"""Out-of-core and distributed anonymization on Dask (docs/dask.md).

``import anonml`` never imports this package; importing it imports dask only when a function is
called, and a missing dask gives a one-line install hint.

* :func:`anonymize_dataset` -- Parquet dataset (or dask DataFrame) in, verified k-anonymous
  partitioned Parquet dataset out;
* :func:`local_cluster` -- a ``distributed.Client`` on a LocalCluster sized to the machine;
* :class:`DaskAnonymization` -- what was done (sizes, verified figures, seconds per stage);
* :class:`ClusterError` -- the cluster lost work it could not recompute (one line).
"""

from anonml.dask._api import DaskAnonymization, anonymize_dataset, local_cluster
from anonml.dask._cluster import ClusterError

__all__ = ["anonymize_dataset", "local_cluster", "DaskAnonymization", "ClusterError"]
