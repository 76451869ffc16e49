"""The CLI's in-memory rules on Dask against a real cluster (a ``dask scheduler`` and ``dask
worker`` processes: the session's cluster of tests/dask/conftest.py): ``--save-mapping`` then
``anonml transform`` of the training rows, recursive (c, l)-diversity, hierarchical
t-closeness, and one-line refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
pytest.importorskip("skops")

from test_dask_cluster import _env  # noqa: E402 - the CLI's environment

from anonml.hierarchies import Hierarchy  # noqa: E402
from anonml.privacy import k_anonymity, l_diversity, t_closeness  # noqa: E402

QI = ["age", "sex", "zip"]
DEPTS = ["ops", "hr", "it", "law", "lab", "pay"]


@pytest.fixture
def cluster(real_cluster):
    """The session's shared cluster (tests/dask/conftest.py) with two live workers."""
    real_cluster.ensure(2)
    return real_cluster


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    return pd.DataFrame({
        "age": age, "sex": rng.choice(["F", "M"], n), "zip": rng.integers(10000, 10100, n),
        "dept": rng.choice(DEPTS, n, p=[0.5, 0.2, 0.1, 0.1, 0.05, 0.05]),
        "income": np.where((age > 40) ^ (rng.random(n) < 0.2), ">50K", "<=50K"),
    })


def _write(folder: Path, frame: pd.DataFrame, parts: int) -> Path:
    folder.mkdir(parents=True)
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), parts)):
        frame.iloc[idx].reset_index(drop=True).to_parquet(folder / f"part-{i}.parquet")
    return folder


def _anonymize(data: Path, out: Path, address: str, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "anonml", "anonymize", str(data), "--engine", "dask",
            "--scheduler", address, "--k", "20", "--qi", ",".join(QI), "--target", "income",
            "--labels", "-o", str(out), "--json", *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=300)


def test_save_mapping_then_transform(cluster, tmp_path) -> None:
    """The mapping saved by the Dask run maps the training rows, through ``anonml transform``
    in memory, to exactly the run's output."""
    frame = _table(4000)
    data = _write(tmp_path / "data", frame, 3)
    run = _anonymize(data, tmp_path / "out", cluster.address, "--save-mapping",
                     str(tmp_path / "m.skops"))
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["mapping"] == str(tmp_path / "m.skops")
    out = pd.read_parquet(tmp_path / "out")
    frame.drop(columns=["income"]).to_csv(tmp_path / "rows.csv", index=False)
    tr = subprocess.run([sys.executable, "-m", "anonml", "transform", str(tmp_path / "rows.csv"),
                         "--mapping", str(tmp_path / "m.skops"), "-o", str(tmp_path / "t.csv"),
                         "--handle-unknown", "ignore"],
                        capture_output=True, text=True, env=_env(), timeout=300)
    assert tr.returncode == 0, tr.stderr[-3000:]
    mapped = pd.read_csv(tmp_path / "t.csv")
    for c in QI:
        assert mapped[c].astype(str).tolist() == out[c].astype(str).tolist()
    assert mapped["dept"].tolist() == frame["dept"].tolist()
    # and on the cluster: each file of a Parquet dataset mapped by the same mapping
    rows = _write(tmp_path / "rows", frame.drop(columns=["income"]), 2)
    tr = subprocess.run([sys.executable, "-m", "anonml", "transform", str(rows), "--engine",
                         "dask", "--scheduler", cluster.address, "--mapping",
                         str(tmp_path / "m.skops"), "-o", str(tmp_path / "tdir"),
                         "--handle-unknown", "ignore"],
                        capture_output=True, text=True, env=_env(), timeout=300)
    assert tr.returncode == 0, tr.stderr[-3000:]
    mapped = pd.read_parquet(tmp_path / "tdir")
    for c in QI:
        assert mapped[c].astype(str).tolist() == out[c].astype(str).tolist()
    assert mapped["dept"].tolist() == frame["dept"].tolist()
    # refused in one line before any work: the file exists now
    again = _anonymize(data, tmp_path / "out2", cluster.address, "--save-mapping",
                       str(tmp_path / "m.skops"))
    assert again.returncode == 1 and "already exists" in again.stderr
    assert "Traceback" not in again.stderr and not (tmp_path / "out2").exists()


def test_recursive_l_and_hierarchical_t_on_the_cli(cluster, tmp_path) -> None:
    frame = _table(4000, 1)
    data = _write(tmp_path / "data", frame, 3)
    run = _anonymize(data, tmp_path / "rec", cluster.address, "--sensitive", "dept", "--l", "3",
                     "--l-kind", "recursive", "--c", "2")
    assert run.returncode == 0, run.stderr[-3000:]
    out = pd.read_parquet(tmp_path / "rec")
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["merges"] > 0
    assert summary["l"] == l_diversity(out, QI, "dept", kind="recursive", c=2) >= 3
    rows = [[d, "office" if d in ("hr", "law", "pay") else "floor", "*"] for d in DEPTS]
    hier = tmp_path / "hier"
    hier.mkdir()
    (hier / "dept.csv").write_text("\n".join(";".join(r) for r in rows) + "\n")
    run = _anonymize(data, tmp_path / "h", cluster.address, "--sensitive", "dept", "--t",
                     "0.05", "--t-distance", "hierarchical", "--hierarchies", str(hier))
    assert run.returncode == 0, run.stderr[-3000:]
    out = pd.read_parquet(tmp_path / "h")
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    t = t_closeness(out, QI, "dept", distance="hierarchical", hierarchy=Hierarchy(rows))
    assert summary["t"] == pytest.approx(t) and t <= 0.05 and summary["merges"] > 0
    assert k_anonymity(out, QI) >= 20
    # a hierarchy of a quasi-identifier is not read on Dask: one line, nothing written
    (hier / "sex.csv").write_text("F;*\nM;*\n")
    bad = _anonymize(data, tmp_path / "bad", cluster.address, "--sensitive", "dept", "--t",
                     "0.05", "--t-distance", "hierarchical", "--hierarchies", str(hier))
    assert bad.returncode == 1 and "hierarchy of 'sex'" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "bad").exists()
