"""The sandbox worker started early (anonml.modelfile._sandbox_start): one spare, for one
file, with the same walls as any worker."""

import argparse
import os
import signal

import joblib
import numpy as np
import pandas as pd
import pytest
from _sandbox_hostile import Hostile
from sklearn.ensemble import RandomForestClassifier

from anonml._errors import InputError
from anonml.cli import _start_sandbox
from anonml.modelfile import _sandbox_start as start
from anonml.modelfile import open_model, save_model

pytest.importorskip("skops")

LINUX_X86 = os.uname().sysname == "Linux" and os.uname().machine == "x86_64"


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
    y = np.where(X.a > 0, "yes", "no")
    return X, y


@pytest.fixture(scope="module")
def forests(data, tmp_path_factory):
    X, y = data
    folder = tmp_path_factory.mktemp("spare")
    out = []
    for seed in (0, 1):
        path = folder / f"forest{seed}.skops"
        model = RandomForestClassifier(5, random_state=seed).fit(X, y)
        save_model(model, path)
        out.append((path, model))
    return out


@pytest.fixture(autouse=True)
def no_spare_left():
    start._discard()
    yield
    assert not start._SPARE  # every test takes or discards what it started
    start._discard()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "State:\tZ" not in fh.read()
    except OSError:
        return False


def test_the_spare_serves_one_file_only(forests, data):
    X, _ = data
    (path0, model0), (path1, model1) = forests
    assert start.prestart(path0)
    spare_pid = start._SPARE[0][1].proc.pid
    first = open_model(path0)
    second = open_model(path1)  # no spare left: a new process of its own
    try:
        assert first._worker.proc.pid == spare_pid
        assert second._worker.proc.pid != spare_pid
        assert not start._SPARE
        np.testing.assert_array_equal(first.predict_proba(X), model0.predict_proba(X))
        np.testing.assert_array_equal(second.predict_proba(X), model1.predict_proba(X))
        # the worker's steps, in order, after it was started
        t = first.load_times
        assert t["started"] < t["opened"] < t["copied"] < t["answered"]
        assert t["worker_imported"] <= t["worker_request"] <= t["worker_read"]
        if LINUX_X86:  # the same walls as a worker started by the load itself
            assert first.seccomp
            with open(f"/proc/{spare_pid}/status") as fh:
                status = fh.read()
            assert "CapEff:\t0000000000000000" in status
            assert "Seccomp:\t2" in status
    finally:
        first.close()
        second.close()
    assert not _alive(spare_pid)


def test_a_spare_with_other_limits_is_stopped_not_used(forests):
    path, _ = forests[0]
    assert start.prestart(path)
    spare_pid = start._SPARE[0][1].proc.pid
    model = open_model(path, memory=3 * 2**30)  # another limit than the spare's
    try:
        assert model._worker.proc.pid != spare_pid
        assert not _alive(spare_pid)
    finally:
        model.close()


def test_a_dead_spare_is_replaced(forests, data):
    X, _ = data
    path, fitted = forests[0]
    assert start.prestart(path)
    proc = start._SPARE[0][1].proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    model = open_model(path)
    try:
        assert model._worker.proc.pid != proc.pid
        np.testing.assert_array_equal(model.predict(X), fitted.predict(X))
    finally:
        model.close()


def test_no_spare_for_what_is_not_a_file(tmp_path):
    assert not start.prestart(tmp_path)  # a folder
    assert not start.prestart(tmp_path / "missing.skops")
    assert not start._SPARE


@pytest.mark.skipif(not LINUX_X86, reason="the kernel filter is Linux x86-64 only")
def test_a_hostile_file_meets_the_same_walls_in_a_spare(tmp_path, data):
    X, y = data
    action, words = "write", "writing files"
    target = tmp_path / "planted.txt"
    path = tmp_path / f"{action}.joblib"
    joblib.dump(Hostile(action, str(target)).fit(X, y), path)
    assert start.prestart(path)
    spare_pid = start._SPARE[0][1].proc.pid
    model = open_model(path, trust=True)
    try:
        assert model._worker.proc.pid == spare_pid
        with pytest.raises(InputError, match=words):
            model.predict_proba(X)
        assert not target.exists()
    finally:
        model.close()


def test_the_cli_starts_the_worker_for_the_model_it_will_open(forests, tmp_path, monkeypatch):
    path = str(forests[0][0])
    started = []
    monkeypatch.setattr(start, "prestart", lambda p: started.append(p) or True)
    _start_sandbox(argparse.Namespace(mapping=path))
    _start_sandbox(argparse.Namespace(model=path, trust_model=False))
    _start_sandbox(argparse.Namespace(model="m.pkl", trust_model=False))  # refused unread
    _start_sandbox(argparse.Namespace(model="m.pkl", trust_model=True))
    _start_sandbox(argparse.Namespace(model=None, mapping=None))
    _start_sandbox(argparse.Namespace())  # a command without a model
    assert started == [path, path, "m.pkl"]
