"""The suite's own set-up (tests/conftest.py): a worker process per core with pytest-xdist,
unless ``-n`` is given, and the suite still runs where xdist is not loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ONE_TEST = "tests/test_utils.py::test_json_safe_makes_strict_json_of_what_the_summaries_hold"


def _pytest(*args: str) -> subprocess.CompletedProcess:
    # not as a worker of this run: xdist's own variables are left out
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", ONE_TEST, "-p", "no:cacheprovider",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_workers_by_default_and_none_with_n_0() -> None:
    pytest.importorskip("xdist")
    default = _pytest()
    assert default.returncode == 0, default.stdout[-2000:]
    assert "created: " in default.stdout and " worker" in default.stdout
    serial = _pytest("-n", "0")
    assert serial.returncode == 0, serial.stdout[-2000:]
    assert "created: " not in serial.stdout and "1 passed" in serial.stdout


def test_the_suite_runs_without_xdist() -> None:
    # -p no:xdist: the -n option does not exist, and the hook must not ask for it
    run = _pytest("-p", "no:xdist")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout and "created: " not in run.stdout
