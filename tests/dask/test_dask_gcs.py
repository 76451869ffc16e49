"""The Dask engine reading a ``gs://`` dataset from a Google Cloud Storage emulator started
here (gcp-storage-emulator's server on 127.0.0.1), through fsspec/gcsfs on the client and on
worker processes.

Skipped unless gcsfs and gcp-storage-emulator are installed (``pip install gcsfs
gcp-storage-emulator``). gcsfs finds the emulator by ``STORAGE_EMULATOR_HOST``, as Google's
clients do; its experimental zonal/hierarchical-bucket probe (a gRPC call the emulator does not
serve, which waits 60 s before falling back) is switched off by
``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``, read when gcsfs is imported, so it is set before
the workers start and gcsfs is imported in a fresh process for the client side. The output is
a local folder (the target must be a shared path).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
if sys.modules.get("gcsfs") is None:
    # the probe switch is read at import: set it before this process imports gcsfs
    os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
gcsfs = pytest.importorskip("gcsfs")
emulator = pytest.importorskip("gcp_storage_emulator.server")

SRC = Path(__file__).resolve().parents[2] / "src"
QI = ["age", "sex", "zip"]


@pytest.fixture()
def gcs(monkeypatch, free_port):
    """A GCS emulator holding the bucket ``anonml-test``; the variables are set before any
    worker starts (they inherit them)."""
    port = free_port()
    server = emulator.create_server("127.0.0.1", port, in_memory=True,
                                    default_bucket="anonml-test")
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    gcsfs.GCSFileSystem.clear_instance_cache()  # an earlier test's endpoint must not be reused
    fs = gcsfs.GCSFileSystem(token="anon", project="anonml")
    try:
        yield fs
    finally:
        server.stop()
        gcsfs.GCSFileSystem.clear_instance_cache()


def _upload(fs, frame: pd.DataFrame, key: str) -> None:
    with fs.open(f"anonml-test/{key}", "wb") as fh:
        frame.to_parquet(fh)


def test_gs_dataset_in_local_folder_out(gcs, income_table, tmp_path) -> None:
    import anonml.dask as ad
    from anonml.engine._dataset import list_files

    frame = income_table(2400, 5)
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), 3)):
        _upload(gcs, frame.iloc[idx].reset_index(drop=True), f"data/part-{i}.parquet")
    # objects Arrow and Dask skip: never read, never counted
    _upload(gcs, frame.iloc[:50], "data/_extra.parquet")
    _upload(gcs, frame.iloc[:50], "data/.old/part-0.parquet")
    assert list_files("gs://anonml-test/data/") == [
        f"gs://anonml-test/data/part-{i}.parquet" for i in range(3)]
    client = ad.local_cluster(n_workers=2, memory_limit="1GB")  # worker processes
    try:
        res = ad.anonymize_dataset("gs://anonml-test/data/", tmp_path / "out", k=20,
                                   quasi_identifiers=QI, label="income", client=client)
        # the CLI in a process of its own, on the same cluster
        proc = subprocess.run(
            [sys.executable, "-m", "anonml", "anonymize", "gs://anonml-test/data/", "--engine",
             "dask", "--scheduler", client.scheduler.address, "--k", "20", "--qi",
             ",".join(QI), "--target", "income", "--labels", "-o", str(tmp_path / "cli"),
             "--json"],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "PYTHONPATH": str(SRC)})
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    assert (res.n_files, res.n_rows) == (3, len(frame))
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == len(frame) and out.groupby(QI).size().min() >= 20
    assert out["hours"].tolist() == frame["hours"].tolist()
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["files_in"] == 3 and summary["rows"] == len(frame)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli"), out)


def test_gs_missing_prefix_is_one_line(gcs, tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "anonml", "anonymize", "gs://anonml-test/nothing-here/",
         "--engine", "dask", "--k", "20", "--qi", ",".join(QI), "--target", "income", "--labels",
         "-o", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "gs://anonml-test/nothing-here/" in lines[0], proc.stderr
    assert not (tmp_path / "o").exists()
