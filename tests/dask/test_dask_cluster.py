"""``anonml anonymize --engine dask --scheduler tcp://...`` against a real cluster: a
``dask scheduler`` and ``dask worker`` processes started here on 127.0.0.1, the CLI in a
subprocess of its own (so no client of this process can be the default one), and workers
killed by PID during a run.

The workers import the anonml of this checkout (PYTHONPATH is set from ``anonml.__file__``).
The cluster is the session's (``real_cluster`` of tests/dask/conftest.py, shared with the other
real-cluster modules: its start takes a few seconds, each worker's a few more); each test sets
the number of live workers it needs with ``ensure`` (which replaces killed ones). The test that
kills the scheduler has its own cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import anonml  # noqa: E402

SRC = str(Path(anonml.__file__).resolve().parents[1])  # the src dir of the checkout under test
QI = ["age", "sex", "zip"]


def _env() -> dict:
    """The environment of the CLI subprocesses: this checkout's anonml first on PYTHONPATH."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": SRC + (os.pathsep + path if path else "")}


@pytest.fixture(scope="module")
def cluster(real_cluster):
    """The session's shared cluster (tests/dask/conftest.py); each test sets its workers."""
    return real_cluster


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    return pd.DataFrame({
        "age": age, "sex": rng.choice(["F", "M"], n), "zip": rng.integers(10000, 10100, n),
        "hours": rng.integers(1, 99, n),
        "income": np.where((age > 40) ^ (rng.random(n) < 0.2), ">50K", "<=50K"),
    })


def _write(folder: Path, frame: pd.DataFrame, parts: int) -> Path:
    folder.mkdir(parents=True)
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), parts)):
        frame.iloc[idx].reset_index(drop=True).to_parquet(folder / f"part-{i}.parquet")
    return folder


def _argv(data: Path, out: Path, address: str, *extra: str) -> list:
    return [sys.executable, "-m", "anonml", "anonymize", str(data), "--engine", "dask",
            "--scheduler", address, "--k", "20", "--qi", ",".join(QI), "--target", "income",
            "--labels", "-o", str(out), "--json", *extra]


def _check_output(frame: pd.DataFrame, out: Path, stdout: str) -> None:
    summary = json.loads(stdout.strip().splitlines()[-1])
    written = pd.read_parquet(out)
    assert summary["rows"] == len(written) == len(frame)
    assert written.groupby(QI).size().min() >= 20  # k-anonymous, checked here too
    # the same rows: non-QI columns unchanged in order, every QI vector a real input record
    pd.testing.assert_series_equal(written["hours"], frame["hours"], check_dtype=False,
                                   check_names=False)
    assert written["income"].astype(str).tolist() == frame["income"].tolist()
    real = set(map(tuple, frame[QI].to_numpy().tolist()))
    assert set(map(tuple, written[QI].to_numpy().tolist())) <= real


def test_cli_on_a_real_scheduler(cluster, tmp_path) -> None:
    """The CLI's client is not the default one (set_as_default=False) and lives in another
    process than the workers: the engine must use it for every submit and wait."""
    cluster.ensure(2)
    frame = _table(3000)
    data = _write(tmp_path / "data", frame, 3)
    out = tmp_path / "out"
    run = subprocess.run(_argv(data, out, cluster.address), capture_output=True, text=True,
                         env=_env(), timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    _check_output(frame, out, run.stdout)
    assert json.loads(run.stdout.strip().splitlines()[-1])["workers"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "out"]


def _run_and_kill(argv: list, when: str, kill: Callable) -> tuple[int, str, str]:
    """Run the CLI; when a progress line (stderr) contains ``when``, call ``kill()``."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), bufsize=1)
    err_lines: list[str] = []
    fired = threading.Event()

    def read_err() -> None:
        for line in proc.stderr:
            err_lines.append(line)
            if not fired.is_set() and when in line:
                fired.set()
                kill()

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    guard = threading.Timer(240, proc.kill)  # a hang is a failure, not a stuck test run
    guard.start()
    try:
        out = proc.stdout.read()  # stderr is read by the thread only
        proc.wait()
    finally:
        guard.cancel()
    reader.join(timeout=30)
    assert fired.is_set(), f"no progress line with {when!r}: {''.join(err_lines)[-2000:]}"
    return proc.returncode, out, "".join(err_lines)


def _kill_one(cluster) -> Callable:
    victim = cluster.alive()[0]

    def kill() -> None:
        os.kill(victim.pid, signal.SIGKILL)

    return kill


# the progress line (stderr) at which a worker is killed, and the stage that is then running:
# "... bins: 1/6" mid first pass; "tree ..." as the tree starts (with this little data every
# node is finished by the local subtrees launched at once: Dask's shuffle by node, then
# HistTree); "representatives (ranges of groups): 1/" (the first range of groups done: its
# rows were shuffled from every partition; then the winners' values are picked in each
# partition) and "writing the partitions: 1/6" mid stage; "writing the partitions: 6/6" just
# before the verification reads the written files
KILL_AT = {"bins": "scanning the columns for the bins: 1/6", "tree": "tree",
           "representatives": "representatives (ranges of groups): 1/",
           "recode_write": "writing the partitions: 1/6", "verify": "writing the partitions: 6/6"}


@pytest.mark.parametrize("stage", list(KILL_AT))
def test_a_worker_killed_during_a_stage_is_survived(cluster, tmp_path, stage) -> None:
    """SIGKILL one of three workers when the progress line of ``KILL_AT[stage]`` appears:
    Dask recomputes what it held (no scattered data; every task has a recipe) and the run
    completes and verifies. What the dead worker held from the earlier stages (binned
    partitions, row groups, the representatives) is lost and recomputed."""
    cluster.ensure(3)
    frame = _table(30000, 1)
    data = _write(tmp_path / "data", frame, 6)
    out = tmp_path / "out"
    code, stdout, err = _run_and_kill(_argv(data, out, cluster.address), KILL_AT[stage],
                                      _kill_one(cluster))
    assert code == 0, err[-3000:]
    _check_output(frame, out, stdout)
    assert len(cluster.alive()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "out"]


def test_every_worker_killed_is_one_line_and_nothing_written(cluster, tmp_path) -> None:
    """With no worker left, Dask would wait for ever: after --no-workers-timeout seconds the
    run stops with one line, exit code 1, and nothing at the target (nor a temporary folder)."""
    cluster.ensure(3)
    frame = _table(30000, 2)
    data = _write(tmp_path / "data", frame, 6)
    out = tmp_path / "out"
    victims = cluster.alive()

    def kill_all() -> None:
        for w in victims:
            os.kill(w.pid, signal.SIGKILL)

    code, stdout, err = _run_and_kill(
        _argv(data, out, cluster.address, "--no-workers-timeout", "3"), "tree", kill_all)
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("anonml: error")]
    assert len(lines) == 1, err[-3000:]
    assert "a Dask worker was lost and the work could not be recomputed" in lines[0]
    assert "no worker for 3 s" in lines[0] and "fix:" in lines[0]
    assert "Traceback" not in err
    # and nothing else: every other line of stderr is a progress line (no log of distributed)
    assert [line for line in err.splitlines() if line and not line.startswith("[")] == lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert not cluster.alive()


def test_scheduler_killed_is_one_line_and_nothing_written(new_real_cluster,
                                                          tmp_path) -> None:
    """The scheduler holds the task graph: when it dies the run cannot go on (Dask has no
    scheduler failover). One line, exit code 1, nothing at the target, no traceback."""
    c = new_real_cluster(tmp_path / "logs")  # its own: its scheduler is killed
    try:
        c.ensure(2)
        frame = _table(30000, 3)
        data = _write(tmp_path / "data", frame, 6)
        out = tmp_path / "out"
        code, stdout, err = _run_and_kill(
            _argv(data, out, c.address, "--no-workers-timeout", "5"), "tree",
            lambda: os.kill(c.scheduler.pid, signal.SIGKILL))
    finally:
        c.close()
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("anonml: error")]
    assert len(lines) == 1, err[-3000:]
    assert "Dask scheduler was lost" in lines[0] and "fix:" in lines[0]
    assert "Traceback" not in err, err[-3000:]
    assert [line for line in err.splitlines() if line and not line.startswith("[")] == lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "logs"]
