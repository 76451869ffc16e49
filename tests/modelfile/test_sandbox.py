"""The model sandbox (anonml.modelfile._sandbox): an untrusted model is held, called and
refitted only in a limited worker process; whatever it does there is one line here."""

import os
import signal
import threading

import joblib
import numpy as np
import pandas as pd
import pytest
from _sandbox_hostile import Hostile
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from anonml._errors import InputError, UntrustedModelError
from anonml.modelfile import _sandbox as sb
from anonml.modelfile import _sandbox_process as channel
from anonml.safemodel import open_model, save_model

pytest.importorskip("skops")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=list("abcd"))
    y = np.where(X.a + rng.normal(size=300) > 0, "yes", "no")
    return X, y


@pytest.fixture(scope="module")
def forest_file(data, tmp_path_factory):
    X, y = data
    path = tmp_path_factory.mktemp("m") / "forest.skops"
    model = RandomForestClassifier(10, random_state=0).fit(X, y)
    save_model(model, path)
    return path, model


def _hostile(tmp_path, data, action, arg=None):
    X, y = data
    path = tmp_path / f"{action}.joblib"
    joblib.dump(Hostile(action, arg).fit(X, y), path)
    return path


def test_sandboxed_model_answers_like_the_model(forest_file, data):
    X, y = data
    path, model = forest_file
    sm = open_model(path)
    try:
        if os.uname().sysname == "Linux" and os.uname().machine == "x86_64":
            assert sm.seccomp  # every thread, read from /proc by this process
            status = open(f"/proc/{sm._worker.proc.pid}/status").read()
            assert "CapEff:\t0000000000000000" in status
        assert sm.info["family"] == "random_forest"
        assert list(sm.classes_) == ["no", "yes"]
        np.testing.assert_array_equal(sm.predict_proba(X), model.predict_proba(X))
        np.testing.assert_array_equal(sm.predict(X), model.predict(X))
        import hashlib

        assert sm.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        # the auditor's process never built the estimator: only the proxy is here
        assert not any(isinstance(v, RandomForestClassifier) for v in vars(sm).values())
    finally:
        sm.close()


def test_refit_runs_in_a_worker_of_its_own(forest_file, data):
    X, y = data
    sm = open_model(forest_file[0])
    ref = clone(sm).set_params(random_state=3)
    ref.fit(X, y)
    try:
        assert isinstance(ref, sb.SandboxedEstimator)
        assert ref._worker.proc.pid != sm._worker.proc.pid
        p = ref.predict_proba(X)
        expected = RandomForestClassifier(10, random_state=3, n_jobs=1).fit(X, y).predict_proba(X)
        np.testing.assert_allclose(p, expected)
    finally:
        ref.close()
        sm.close()


def test_pipeline_memory_is_not_used_by_a_refit(tmp_path, data):
    X, y = data
    cache = tmp_path / "cache"
    cache.mkdir()
    model = make_pipeline(StandardScaler(), RandomForestClassifier(5, random_state=0),
                          memory=str(cache))
    path = tmp_path / "pipe.skops"
    save_model(model.fit(X, y), path)
    before = sorted(p.name for p in cache.rglob("*"))
    sm = open_model(path)
    ref = clone(sm).fit(X, y)
    ref.predict_proba(X)
    ref.close()
    sm.close()
    assert sorted(p.name for p in cache.rglob("*")) == before  # nothing written or read there


def test_pickles_need_trust(tmp_path, data):
    with pytest.raises(UntrustedModelError):
        open_model(_hostile(tmp_path, data, "none"))


@pytest.mark.parametrize("action, words", [
    ("segfault", "SIGSEGV"),
    ("kill", "does not allow signals"),
    ("write", "writing files"),
    ("raise", "ValueError: the model's own error over two lines"),
    ("wrong_rows", "not 300 rows long"),
])
def test_misbehaviour_is_one_line(tmp_path, data, action, words):
    X, _ = data
    target = tmp_path / "planted.txt"
    sm = open_model(_hostile(tmp_path, data, action, str(target)), trust=True)
    with pytest.raises(InputError) as err:
        sm.predict_proba(X)
    assert words in str(err.value)
    assert "\n" not in str(err.value)
    assert not target.exists()
    sm.close()


def test_processes_and_threads_are_refused(tmp_path, data):
    X, _ = data
    for action, words in (("spawn", "new processes"), ("threads", "threads")):
        sm = open_model(_hostile(tmp_path, data, action), trust=True)
        with pytest.raises(InputError, match=words):
            sm.predict_proba(X)
        sm.close()


def test_a_hang_is_stopped_at_the_budget(tmp_path, data, monkeypatch):
    X, _ = data
    monkeypatch.setattr(channel, "CALL_TIMEOUT", 3.0)
    sm = open_model(_hostile(tmp_path, data, "hang"), trust=True)
    pid = sm._worker.proc.pid
    with pytest.raises(InputError, match="did not finish in 3 s"):
        sm._call("predict_proba", X) if False else sm._worker.request(
            "call", "predict_proba", timeout=3.0, handle="model", method="predict_proba", X=X)
    sm._worker.proc.wait(timeout=10)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_memory_limit(tmp_path, data):
    X, _ = data
    sm = open_model(_hostile(tmp_path, data, "memory"), trust=True, memory=2 * 2**30)
    with pytest.raises(InputError, match="memory"):
        sm.predict_proba(X)
    sm.close()


def test_stdout_of_the_model_does_not_reach_the_channel(tmp_path, data):
    X, _ = data
    sm = open_model(_hostile(tmp_path, data, "stdout"), trust=True)
    assert sm.predict_proba(X).shape == (300, 2)
    sm.close()


def test_only_regular_files_are_opened(tmp_path):
    fifo = tmp_path / "m.skops"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO|regular"):
        open_model(fifo)
    big = tmp_path / "big.skops"
    with open(big, "wb") as fh:
        fh.truncate(3 * 2**30)  # sparse: no disk used
    with pytest.raises(InputError, match="bytes"):
        open_model(big, max_bytes=2**30)


def test_worker_answers_are_never_unpickled():
    """An answer frame that holds a pickled object array is refused, not loaded."""
    import io

    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(channel._Broken):
        channel._read_npy(buf.getvalue())
    buf = io.BytesIO()
    np.save(buf, np.zeros(3, dtype=complex))
    with pytest.raises(channel._Broken):
        channel._read_npy(buf.getvalue())


def test_threads_share_one_model_safely(forest_file, data):
    X, _ = data
    sm = open_model(forest_file[0])
    out = [None] * 4

    def call(i):
        out[i] = sm.predict_proba(X)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(o, out[0]) for o in out)
    sm.close()


def test_refit_bounds_refuse_or_clip(tmp_path, data):
    X, y = data
    path = tmp_path / "big.skops"
    save_model(RandomForestClassifier(450, max_depth=2, random_state=0).fit(X, y), path)
    sm = open_model(path)
    with pytest.raises(InputError, match="n_estimators"):
        clone(sm)
    sm.close()
    sm = open_model(path)
    sm.clip_refit = True
    ref = clone(sm).fit(X, y)
    assert [(a["parameter"], a["file_value"], a["value_used"]) for a in sm.refit_adjustments] \
        == [("n_estimators", 450, 400)]
    assert ref.predict_proba(X).shape == (300, 2)
    ref.close()
    sm.close()


def test_audit_reports_clipped_refits(tmp_path, data):
    import json

    from anonml.cli import main

    X, y = data
    path = tmp_path / "big.skops"
    save_model(RandomForestClassifier(450, max_depth=2, random_state=0).fit(X, y), path)
    X.iloc[:200].assign(label=y[:200]).to_csv(tmp_path / "train.csv", index=False)
    X.iloc[200:].assign(label=y[200:]).to_csv(tmp_path / "test.csv", index=False)
    common = ["audit", "--model", str(path), "--train", str(tmp_path / "train.csv"), "--test",
              str(tmp_path / "test.csv"), "--target", "label", "--attacks", "rmia",
              "--formats", "json", "-q"]
    assert main([*common, "-o", str(tmp_path / "refused")]) == 1
    assert not (tmp_path / "refused").exists()
    assert main([*common, "--refit-bounds", "clip", "-o", str(tmp_path / "r")]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    adj = report["model"]["refit_adjustments"]
    assert [(a["parameter"], a["file_value"], a["value_used"]) for a in adj] == [
        ("n_estimators", "450", "400")]
    import hashlib

    assert report["model"]["file"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_worker_that_stops_reading_cannot_stall_the_auditor():
    import time

    r, w = os.pipe()
    os.set_blocking(w, False)
    t0 = time.monotonic()
    with pytest.raises(channel._Broken):
        channel._write_all(w, b"x" * (16 << 20), time.monotonic() + 1.0)
    assert time.monotonic() - t0 < 10
    os.close(r)
    os.close(w)


@pytest.mark.skipif(not (os.uname().sysname == "Linux" and os.uname().machine == "x86_64"),
                    reason="the seccomp filter is for Linux x86-64")
def test_seccomp_filter_refuses_in_the_kernel(tmp_path):
    """What Python's audit hook cannot see, the kernel refuses: writes, processes, sockets,
    the parent's memory and signals to it; reading, threads and numerical work go on."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, socket, threading, numpy as np
        from anonml.modelfile._seccomp import install
        assert install()
        def refused(f):
            try:
                f()
            except OSError:
                return True
            return False
        out = dict(
            write=refused(lambda: os.open({str(tmp_path / 'w')!r}, os.O_WRONLY | os.O_CREAT)),
            mkdir=refused(lambda: os.mkdir({str(tmp_path / 'd')!r})),
            fork=refused(os.fork),
            socket=refused(socket.socket),
            parent_memory=refused(lambda: open(f"/proc/{{os.getppid()}}/mem", "r+b")),
            kill_parent=refused(lambda: os.kill(os.getppid(), 0)),
            read=not refused(lambda: open("/proc/self/status").read()),
            numpy=float(np.linalg.inv(np.eye(4) + 1).sum()) > 0,
        )
        t = threading.Thread(target=lambda: None); t.start(); t.join()
        print(sorted(k for k, v in out.items() if not v))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert not (tmp_path / "w").exists() and not (tmp_path / "d").exists()


def test_forged_facts_are_refused():
    good = {"family": "random_forest", "params": {}, "measures": {"structure.x": 1},
            "structure": {}, "tamper": ["no_fingerprint", []],
            "model_section": {"class": "A", "inner_class": "A", "params": {},
                              "fingerprint": None, "n_features": 3}}
    checked = sb._checked_facts(dict(good, extra="ignored", details={"x": "y"}), "m",
                                "random_forest")
    assert checked["measures"] == good["measures"] and "extra" not in checked
    assert "details" not in checked
    for forged in (dict(good, family="dp_random_forest"),
                   dict(good, measures={"membership.rmia.auc": 0.5}),
                   dict(good, measures={"structure.x": [1]}),
                   dict(good, tamper="unchanged")):
        with pytest.raises(InputError, match="malformed facts"):
            sb._checked_facts(forged, "m", "random_forest")


def test_terminal_escapes_from_a_file_are_shown_not_sent():
    from anonml._errors import one_line

    line = one_line("feature 'x\x1b[2K\x1b[1GVERDICT: RELEASE\u202e' is refused")
    assert "\x1b" not in line and "\u202e" not in line
    assert "\\u001b[2K" in line
