"""The Dask engine reading an ``s3://`` dataset from an S3-compatible server started here
(moto's server mode on 127.0.0.1), through fsspec/s3fs on the client and on the workers.

Skipped unless moto (with its server), s3fs and boto3 are installed (``pip install
'moto[s3,server]' s3fs``). The output is a local folder (the target must be a shared path).
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
pytest.importorskip("s3fs")
boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")


@pytest.fixture()
def s3(monkeypatch, free_port):
    """An S3 server; the AWS_* variables are set before any worker starts (they inherit
    them), so the client's and the workers' s3fs reach it."""
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(key, value)
    bucket = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket.create_bucket(Bucket="anonml-test")
    import s3fs

    # fsspec reuses an S3FileSystem made with the same arguments, and with it the endpoint of
    # an earlier test's environment: this server's endpoint must be read afresh
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        yield bucket
    finally:
        server.stop()
        s3fs.S3FileSystem.clear_instance_cache()


def test_s3_dataset_in_local_folder_out(s3, income_table, tmp_path, capsys) -> None:
    import anonml.dask as ad
    from anonml.cli import main

    frame = income_table(2400, 4)
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), 3)):
        path = tmp_path / f"p{i}.parquet"
        frame.iloc[idx].reset_index(drop=True).to_parquet(path)
        s3.upload_file(str(path), "anonml-test", f"data/part-{i}.parquet")
    # files Arrow and Dask skip: never read, never counted
    s3.upload_file(str(tmp_path / "p0.parquet"), "anonml-test", "data/_extra.parquet")
    s3.upload_file(str(tmp_path / "p1.parquet"), "anonml-test", "data/.old/part-0.parquet")
    client = ad.local_cluster(n_workers=1, memory_limit="1GB")
    try:
        res = ad.anonymize_dataset("s3://anonml-test/data/", tmp_path / "out", k=20,
                                   quasi_identifiers=["age", "sex", "zip"], label="income",
                                   client=client)
        code = main(["anonymize", "s3://anonml-test/data/", "--engine", "dask", "--scheduler",
                     client.scheduler.address, "--k", "20", "--qi", "age,sex,zip", "--target",
                     "income", "--labels", "-o", str(tmp_path / "cli"), "--json"])
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    assert (res.n_files, res.n_rows) == (3, len(frame))
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == len(frame) and out.groupby(["age", "sex", "zip"]).size().min() >= 20
    assert out["hours"].tolist() == frame["hours"].tolist()
    stdout, err = capsys.readouterr()
    assert code == 0, err
    assert '"files_in": 3' in stdout and f'"rows": {len(frame)}' in stdout
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli"), out)
