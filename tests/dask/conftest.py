"""Shared fixtures of the Dask tests: a LocalCluster of two worker processes (the tests that
need separate ``dask scheduler`` / ``dask worker`` processes start them themselves, see
test_dask_cluster.py)."""

import pytest


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
        memory_limit="1GB",
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
