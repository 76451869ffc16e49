"""The CLI on a real cluster (a ``dask scheduler`` and ``dask worker`` processes started here,
the CLI in a subprocess; helpers of test_dask_cluster.py), beyond the anonymization proper:

* a lost worker during the ``--save-mapping`` pass (anonml/dask/_mapping.py) and during
  ``anonml transform --engine dask`` (anonml/dask/_transform.py): one of three workers is
  killed (SIGKILL by PID) when the stage's first progress line appears, and the run completes
  with the output of an undisturbed run; every worker killed: one line, exit code 1, nothing
  at the target (no mapping file, no temporary folder);
* relative paths typed in a folder that is not the workers' working folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
pytest.importorskip("skops")

from test_dask_cluster import (  # noqa: E402 - the helpers of that module
    QI, _argv, _check_output, _env, _kill_one, _run_and_kill, _table, _write)

from anonml.dask._api import STAGES  # noqa: E402
from anonml.dask._transform import STAGE  # noqa: E402

#: the progress lines (stderr) at which workers are killed: the first partition summarised
#: for the mapping, the first file mapped
MAPPING_AT = f"{STAGES['mapping']}: 1/"
TRANSFORM_AT = f"{STAGE}: 1/"


@pytest.fixture(scope="module")
def cluster(real_cluster):
    """The session's shared cluster (tests/dask/conftest.py); each test sets its workers."""
    return real_cluster


@pytest.fixture(scope="module")
def undisturbed(cluster, tmp_path_factory):
    """The data, and an undisturbed run with --save-mapping and its transform (the reference)."""
    cluster.ensure(2)
    root = tmp_path_factory.mktemp("ref")
    frame = _table(30000, 5)
    data = _write(root / "data", frame, 6)
    rows = _write(root / "rows", frame.drop(columns=["income"]), 8)
    run = subprocess.run(_argv(data, root / "out", cluster.address, "--save-mapping",
                               str(root / "m.skops")),
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    tr = subprocess.run(_transform(rows, root / "mapped", root / "m.skops", cluster.address),
                        capture_output=True, text=True, env=_env(), timeout=300)
    assert tr.returncode == 0, tr.stderr[-3000:]
    return {"frame": frame, "data": data, "rows": rows, "out": pd.read_parquet(root / "out"),
            "mapping": root / "m.skops", "mapped": pd.read_parquet(root / "mapped")}


def _transform(rows: Path, out: Path, mapping: Path, address: str, *extra: str) -> list:
    return [sys.executable, "-m", "anonml", "transform", str(rows), "--engine", "dask",
            "--scheduler", address, "--mapping", str(mapping), "-o", str(out),
            "--handle-unknown", "ignore", *extra]


def _kill_all(cluster):
    victims = cluster.alive()

    def kill() -> None:
        for w in victims:
            os.kill(w.pid, signal.SIGKILL)

    return kill


def _one_line(code: int, err: str) -> str:
    """Exit code 1 and one error line; every other line of stderr is a progress line."""
    assert code == 1, err[-3000:]
    errors = [line for line in err.splitlines() if line.startswith("anonml: error")]
    assert len(errors) == 1, err[-3000:]
    others = [line for line in err.splitlines() if line and not line.startswith("anonml: error")
              and not line.startswith("[")]
    assert not others, err[-3000:]  # no log line, no traceback
    return errors[0]


def test_a_worker_killed_while_the_mapping_is_built(cluster, undisturbed, tmp_path) -> None:
    """The mapping pass reads the binned partitions and the groups of earlier stages (tasks
    with recipes): those the dead worker held are recomputed, and the saved mapping maps the
    training rows exactly as the undisturbed run's mapping does."""
    cluster.ensure(3)
    ref = undisturbed
    out, m = tmp_path / "out", tmp_path / "m.skops"
    code, stdout, err = _run_and_kill(
        _argv(ref["data"], out, cluster.address, "--save-mapping", str(m)), MAPPING_AT,
        _kill_one(cluster))
    assert code == 0, err[-3000:]
    _check_output(ref["frame"], out, stdout)
    assert json.loads(stdout.strip().splitlines()[-1])["mapping"] == str(m)
    assert len(cluster.alive()) == 2
    pd.testing.assert_frame_equal(pd.read_parquet(out), ref["out"])
    # the new mapping, applied on the cluster, equals the reference mapping's transform
    tr = subprocess.run(_transform(ref["rows"], tmp_path / "mapped", m, cluster.address),
                        capture_output=True, text=True, env=_env(), timeout=300)
    assert tr.returncode == 0, tr.stderr[-3000:]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "mapped"), ref["mapped"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.skops", "mapped", "out"]


def test_every_worker_killed_while_the_mapping_is_built(cluster, undisturbed, tmp_path) -> None:
    cluster.ensure(2)
    out, m = tmp_path / "out", tmp_path / "m.skops"
    code, _, err = _run_and_kill(
        _argv(undisturbed["data"], out, cluster.address, "--save-mapping", str(m),
              "--no-workers-timeout", "3"), MAPPING_AT, _kill_all(cluster))
    line = _one_line(code, err)
    assert "a Dask worker was lost" in line and "no worker for 3 s" in line, line
    assert list(tmp_path.iterdir()) == []  # neither the output, the mapping nor a temporary


def test_a_worker_killed_during_transform(cluster, undisturbed, tmp_path) -> None:
    """Each file is one task that reads, maps and writes its part: a task of the dead worker
    runs again on another, and the folder equals the undisturbed transform's."""
    cluster.ensure(3)
    out = tmp_path / "mapped"
    code, stdout, err = _run_and_kill(
        _transform(undisturbed["rows"], out, undisturbed["mapping"], cluster.address),
        TRANSFORM_AT, _kill_one(cluster))
    assert code == 0, err[-3000:]
    assert "30,000 rows from 8 Parquet files" in stdout
    assert len(cluster.alive()) == 2
    mapped = pd.read_parquet(out)
    pd.testing.assert_frame_equal(mapped, undisturbed["mapped"])
    assert sorted(p.name for p in out.iterdir()) == [f"part.{i:05d}.parquet" for i in range(8)]
    # the training rows map to the anonymized output's QI values, as in the undisturbed run
    for c in QI:
        assert mapped[c].astype(str).tolist() == undisturbed["out"][c].astype(str).tolist()
    assert [p.name for p in tmp_path.iterdir()] == ["mapped"]


def test_every_worker_killed_during_transform(cluster, undisturbed, tmp_path) -> None:
    cluster.ensure(2)
    code, _, err = _run_and_kill(
        _transform(undisturbed["rows"], tmp_path / "mapped", undisturbed["mapping"],
                   cluster.address, "--no-workers-timeout", "3"),
        TRANSFORM_AT, _kill_all(cluster))
    line = _one_line(code, err)
    assert "a Dask worker was lost" in line and "no worker for 3 s" in line, line
    assert list(tmp_path.iterdir()) == []


def test_relative_paths_from_another_folder_than_the_workers(cluster, tmp_path) -> None:
    """The workers run in their own working folder (here the test's, not tmp_path): the
    command must not hand them its relative paths (they read 'data/part-0.parquet' from the
    wrong folder, and wrote the output there). Anonymize with a mapping, then transform, all
    with relative paths typed in tmp_path."""
    cluster.ensure(2)
    assert Path.cwd() != tmp_path
    frame = _table(3000, 6)
    _write(tmp_path / "data", frame, 3)
    _write(tmp_path / "rows", frame.drop(columns=["income"]), 2)
    argv = _argv(Path("data"), Path("out"), cluster.address, "--save-mapping", "m.skops")
    run = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    _check_output(frame, tmp_path / "out", run.stdout)
    tr = subprocess.run(_transform(Path("rows"), Path("mapped"), Path("m.skops"),
                                   cluster.address, "-q"),
                        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert tr.returncode == 0, tr.stderr[-3000:]
    mapped = pd.read_parquet(tmp_path / "mapped")
    out = pd.read_parquet(tmp_path / "out")
    for c in QI:
        assert mapped[c].astype(str).tolist() == out[c].astype(str).tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "m.skops", "mapped", "out",
                                                         "rows"]
    # a damaged page is named as typed, relative to the command's folder
    raw = bytearray((tmp_path / "data" / "part-1.parquet").read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little") + 8
    raw[8:len(raw) - footer - 8] = bytes((b * 31 + 17) % 256 for b in raw[8:len(raw) - footer - 8])
    (tmp_path / "data" / "part-1.parquet").write_bytes(bytes(raw))
    bad = subprocess.run([*_argv(Path("data"), Path("out2"), cluster.address), "-q"],
                         capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    line = _one_line(bad.returncode, bad.stderr)
    assert "Parquet file 'data/part-1.parquet' could not be read" in line, line
    assert not (tmp_path / "out2").exists()


def test_results_lost_after_they_finished_are_one_line(cluster) -> None:
    """Every task finished, then every worker died before the results were fetched (the race
    in which ``anonml transform`` had mapped all its files when the kill landed, and the
    fetch of the row counts waited for ever for a worker to recompute them): the gather
    notices the empty cluster and raises ClusterError after ``no_workers_timeout``."""
    import operator
    import time

    from anonml.dask._cluster import ClusterError, Watched

    cluster.ensure(2)
    watched = Watched(cluster.client, 3.0)
    futures = [cluster.client.submit(operator.mul, i, 2, pure=False) for i in range(6)]
    watched.wait(futures)
    assert all(f.status == "finished" for f in futures)
    _kill_all(cluster)()
    started = time.monotonic()
    with pytest.raises(ClusterError, match="no worker for 3 s"):
        watched.gather(futures)
    assert time.monotonic() - started < 60
    cluster.ensure(2)  # for the tests after this one
