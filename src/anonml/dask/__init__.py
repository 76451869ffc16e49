"""Out-of-core and distributed anonymization on Dask (see docs/dask.md)."""
