"""fsspec URLs as the Dask engine's source (anonml/engine/_dataset.py): an in-process
``memory://`` filesystem end to end, and one line naming the package a URL needs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
fsspec = pytest.importorskip("fsspec")
pytest.importorskip("pyarrow")

from anonml._errors import InputError  # noqa: E402
from anonml.engine._dataset import check_schema, list_files  # noqa: E402
from anonml.privacy import k_anonymity  # noqa: E402

import anonml.dask as ad  # noqa: E402

QI = ["age", "sex", "zip"]


def _table(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    age = rng.integers(18, 80, n)
    return pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], n),
                         "zip": rng.integers(10000, 10050, n),
                         "income": np.where(age > 40, ">50K", "<=50K")})


@pytest.fixture()
def memory_dataset(tmp_path):
    """Three Parquet files under memory://ds/ (and a hidden and an underscore one)."""
    fs = fsspec.filesystem("memory")
    frame = _table(1200)
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), 3)):
        with fs.open(f"/ds/part-{i}.parquet", "wb") as fh:
            frame.iloc[idx].reset_index(drop=True).to_parquet(fh)
    for name in ("/ds/.old/part-0.parquet", "/ds/_tmp.parquet"):
        with fs.open(name, "wb") as fh:
            frame.iloc[:10].to_parquet(fh)
    yield frame
    fs.rm("/ds", recursive=True)


def test_memory_url_listed_and_read(memory_dataset, tmp_path):
    files = list_files("memory://ds/")
    assert files == [f"memory://ds/part-{i}.parquet" for i in range(3)]
    names, kinds = check_schema(files, QI + ["income"], "memory://ds/")
    assert list(names) == ["age", "sex", "zip", "income"] and kinds["sex"] == "string"
    # the engine reads the URLs where its tasks run: threads of this process share memory://
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    try:
        res = ad.anonymize_dataset("memory://ds/", tmp_path / "out", k=20, quasi_identifiers=QI,
                                   label="income", client=client)
    finally:
        client.close()
        cluster.close()
    out = pd.read_parquet(tmp_path / "out")
    assert res.n_files == 3 and res.n_rows == len(out) == len(memory_dataset)
    assert k_anonymity(out, QI) >= 20
    assert out["income"].astype(str).tolist() == memory_dataset["income"].tolist()


def test_gs_url_without_gcsfs_is_one_line_naming_it(tmp_path, monkeypatch):
    # gcsfs made unimportable (it is in the test extra, for tests/dask/test_dask_gcs.py)
    monkeypatch.setitem(sys.modules, "gcsfs", None)
    loaded = sys.modules["fsspec.registry"]._registry  # the classes fsspec imported already
    monkeypatch.delitem(loaded, "gs", raising=False)
    monkeypatch.delitem(loaded, "gcs", raising=False)
    with pytest.raises(InputError, match="gcsfs"):
        list_files("gs://bucket/data/")
    argv = ["anonymize", "gs://bucket/data/", "--engine", "dask", "--k", "20", "--qi",
            ",".join(QI), "--target", "income", "--labels", "-o", str(tmp_path / "out")]
    code = ("import sys; sys.modules['gcsfs'] = None; from anonml.cli import main; "
            f"sys.exit(main({argv!r}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    errors = [line for line in run.stderr.splitlines() if line.startswith("anonml: error")]
    assert run.returncode == 1 and len(errors) == 1 and "gcsfs" in errors[0], run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "out").exists()
