"""The out-of-core engine's engine-neutral half: per-partition kernels and their merges, and
the one reading of a Parquet dataset (local folders and fsspec URLs).

Nothing here imports an engine. A driver (:mod:`anonml.dask` today; a Spark or Ray driver
would sit beside it) runs the kernels of :mod:`anonml.engine._kernels` on its workers and
reduces their results with the merges there; the command line and the drivers list and check
a dataset with :mod:`anonml.engine._dataset`. See docs/dask.md and docs/architecture.md.
"""
