"""Shared fixtures of the Dask tests.

* ``client``: a client (module scope) of a LocalCluster of two worker processes in this
  process; the cluster is shared (its workers start once, not once per module);
* ``real_cluster``: a ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, shared
  by every real-cluster module (test_dask_cluster*.py, test_dask_rules_cluster.py); a test
  sets the number of live workers it needs with ``real_cluster.ensure(n)``, which starts new
  workers in place of killed ones, so tests that kill workers use it too;
* ``new_real_cluster(logdir)``: a cluster of the test's own, closed after it (for a test that
  kills the scheduler).

The two shared clusters start when a test first needs them and close when the run leaves this
folder (the teardown of its last test before a test elsewhere), not at the end of the session:
idle, a scheduler and two workers still take a few per cent of a core each, and the rest of the
suite runs on the same 2 cores. A later test of this folder starts them again.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


HERE = Path(__file__).resolve().parent


class _Shared:
    """A cluster started on first use (``get``) and closed by ``close`` (it can start again)."""

    def __init__(self, start):
        self._start = start
        self.value = None

    def get(self, *args):
        if self.value is None:
            self.value = self._start(*args)
        return self.value

    def close(self) -> None:
        value, self.value = self.value, None
        if value is not None:
            value.close()


def _start_local_cluster():
    import distributed

    return distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
        memory_limit="1GB",
    )


_LOCAL = _Shared(_start_local_cluster)
_REAL = _Shared(lambda factory: RealCluster(factory.mktemp("dask-logs")))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the fixtures of the last test of this folder (before a test elsewhere, or at the
    end) are torn down, close the shared clusters."""
    result = yield
    if nextitem is None or HERE not in Path(nextitem.path).resolve().parents:
        _LOCAL.close()
        _REAL.close()
    return result


def pytest_sessionfinish(session, exitstatus):
    _LOCAL.close()  # an interrupted run too
    _REAL.close()


@pytest.fixture(scope="module")
def client():
    """A client of the shared LocalCluster, the default client for this module only; when it
    closes, the workers release what the module's tasks left on them."""
    distributed = pytest.importorskip("distributed")
    c = distributed.Client(_LOCAL.get())
    yield c
    c.close()


def _src() -> str:
    import anonml

    return str(Path(anonml.__file__).resolve().parents[1])  # the src dir of the checkout


def _env() -> dict:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": _src() + (os.pathsep + path if path else "")}


def _dask_cli() -> str:
    found = shutil.which("dask") or str(Path(sys.executable).with_name("dask"))
    if not Path(found).exists():
        pytest.skip("the `dask` command is not installed")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RealCluster:
    """A scheduler and worker processes (no nanny: a worker's PID is the worker itself)."""

    def __init__(self, logdir: Path):
        self.dask = _dask_cli()
        self.logdir = logdir
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.scheduler = self._start("scheduler", [
            "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"])
        deadline = time.monotonic() + 30
        while True:  # until the scheduler accepts connections
            if self.scheduler.poll() is not None:
                raise RuntimeError(f"dask scheduler exited: {self.log('scheduler')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("dask scheduler did not start in 30 s") from None
                time.sleep(0.2)
        import distributed

        self.client = distributed.Client(self.address, timeout=30, set_as_default=False)

    def _start(self, name: str, argv: list) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "wb")
        p = subprocess.Popen([self.dask, *argv], stdout=log, stderr=subprocess.STDOUT,
                             env=_env(), start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def log(self, name: str) -> str:
        return (self.logdir / f"{name}.log").read_text(errors="replace")[-2000:]

    def add_workers(self, n: int) -> None:
        for _ in range(n):
            i = len(self.workers)
            self.workers.append(self._start(f"worker{i}", [
                "worker", self.address, "--nworkers", "1", "--nthreads", "1", "--no-nanny",
                "--no-dashboard", "--memory-limit", "1GB", "--host", "127.0.0.1",
                "--name", f"w{i}"]))

    def alive(self) -> list[subprocess.Popen]:
        return [w for w in self.workers if w.poll() is None]

    def ensure(self, n: int) -> None:
        """Exactly ``n`` live workers registered (starts more, or stops the extra ones)."""
        live = self.alive()
        for w in live[n:]:
            w.kill()
            w.wait()
        self.add_workers(n - min(n, len(live)))
        deadline = time.monotonic() + 60
        while len(self.client.nthreads()) != n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{n} workers did not register in 60 s")
            time.sleep(0.2)

    def close(self) -> None:
        try:
            self.client.close(timeout=5)
        except Exception:  # noqa: BLE001 - teardown must reach the kills
            pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = RealCluster(tmp_path_factory.mktemp("dask-logs"))
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory):
    """The shared real cluster (started on first use, closed when the run leaves this folder)."""
    pytest.importorskip("distributed")
    return _REAL.get(tmp_path_factory)


@pytest.fixture
def new_real_cluster():
    """A factory of clusters of the test's own (logs in the folder given), closed after it."""
    pytest.importorskip("distributed")
    made: list[RealCluster] = []

    def make(logdir: Path) -> RealCluster:
        logdir.mkdir(parents=True, exist_ok=True)
        made.append(RealCluster(logdir))
        return made[-1]

    yield make
    for c in made:
        c.close()


@pytest.fixture()
def free_port():
    """A function giving a free TCP port on 127.0.0.1 (for a server a test starts)."""
    return _free_port


@pytest.fixture()
def income_table():
    """A function making a small table (age, sex, zip, hours, income from age) of ``n`` rows
    drawn with ``seed``: the object-store tests' dataset."""
    import numpy as np
    import pandas as pd

    def make(n: int, seed: int):
        rng = np.random.default_rng(seed)
        age = rng.integers(18, 80, n)
        return pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], n),
                             "zip": rng.integers(10000, 10100, n),
                             "hours": rng.integers(1, 99, n),
                             "income": np.where(age > 40, ">50K", "<=50K")})

    return make
