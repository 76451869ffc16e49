"""Fixtures shared by the test modules.

* ``adult_split(n_train, n_test)``: the first ``n_train`` rows of the bundled Adult data's
  published training split and the first ``n_test`` of its test split, as
  ``(X_train, X_test, y_train, y_test)`` with fresh indices; the split is read once per session.
* ``demo_json_run``: one ``anonml demo -o <folder> --json -q`` per session, as
  ``(exit code, stdout, folder)``: tests/cli/test_demo.py and tests/test_readme.py each ran
  this same command (seconds each).
* ``pytest_cmdline_main``: the tests run in a worker process per core, 4 at most (pytest-xdist's
  ``-n auto --maxprocesses=4``), unless ``-n`` is given (``-n 0``: this process alone), xdist
  is not installed or is disabled (``-p no:xdist``), or ``--pdb`` is. On 2 cores the suite
  took 792 s in one process and 494 s in two (BENCHMARKS.md, "Session 12"): much of it waits
  on subprocesses (the CLI, Dask's scheduler and workers, sandboxes). Set here rather than in
  ``addopts``, where ``-n`` would be an unknown option without xdist.
* ``_one_openmp_thread`` (autouse, session): OpenMP pools of this process (scikit-learn's
  histogram gradient boosting, XGBoost) run one thread. On a busy 2-core machine their idle
  threads spin against the other processes: one contract check of
  ``SafeHistGradientBoostingClassifier`` took 16-34 s with them and 1.2-2 s without. No test
  checks a thread count; subprocesses (the CLI, sandbox workers, Dask workers) are not affected.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    # (before xdist's own hook, which turns "auto" into a worker count; never in a worker).
    # numprocesses is None when -n is not given, absent when xdist is not loaded
    if hasattr(config, "workerinput"):
        return
    if getattr(config.option, "numprocesses", 0) is None and not config.getoption("usepdb"):
        config.option.numprocesses = "auto"
        config.option.maxprocesses = config.option.maxprocesses or 4


@pytest.fixture(scope="session", autouse=True)
def _one_openmp_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="openmp"):
        yield


@pytest.fixture(scope="session")
def adult_split():
    from anonml.datasets import load_adult

    d = load_adult()
    Xtr, Xte, ytr, yte = d.train_test_split()

    def take(n_train: int, n_test: int):
        return (Xtr.iloc[:n_train].reset_index(drop=True),
                Xte.iloc[:n_test].reset_index(drop=True),
                ytr.iloc[:n_train].reset_index(drop=True),
                yte.iloc[:n_test].reset_index(drop=True))

    return take


@pytest.fixture(scope="session")
def demo_json_run(tmp_path_factory):
    import contextlib
    import io

    from anonml.cli import main

    out_dir = tmp_path_factory.mktemp("demo_json") / "demo"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["demo", "-o", str(out_dir), "--json", "-q"])
    return code, buf.getvalue(), out_dir
