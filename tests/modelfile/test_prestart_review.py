"""Hostile review of the early sandbox worker (anonml.modelfile._sandbox_start, session 6).

Attacks on "started early, never reused" (docs/security.md): the spare handed to a forked
copy of the process that started it, a fork while another thread holds the spare's lock, two
spares from concurrent starts, the folder the command runs in reaching the worker's import path
under another spelling, and the walls of a spare before any load has taken it.
"""

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from anonml.modelfile import _probe
from anonml.modelfile import _sandbox_start as start

SRC = str(Path(start.__file__).resolve().parents[2])
LINUX = sys.platform.startswith("linux")


@pytest.fixture(autouse=True)
def no_spare_left():
    start._discard()
    yield
    start._discard()
    assert not start._SPARE


def _run(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_neither_takes_nor_stops_the_parents_spare():
    # the child (a fork of the command: multiprocessing's fork, a Dask process pool forked from
    # the CLI) must not be handed the parent's spare, and its exit must not stop it
    out = _run(f"""
        import os, sys
        from anonml.modelfile import _sandbox_start as start
        assert start.prestart({start.__file__!r})
        (key, launched) = start._SPARE[0][:2]
        pid = os.fork()
        if pid == 0:
            del launched  # the child keeps no reference: its copy may be collected
            got = start.take(*key)
            import gc
            gc.collect()  # collecting the child's copy must not remove the parent's folder
            start._discard()  # what the child's exit (atexit) runs
            os._exit(0 if got is None else 3)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        alive = launched.proc.poll() is None and os.path.isdir(launched.tmp.name)
        mine = start.take(*key)
        print(code, alive, mine is launched)
        if mine is not None:
            mine.discard()
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0", "True", "True"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_while_the_spare_lock_is_held_does_not_hang_the_child():
    out = _run(f"""
        import os, time
        from anonml.modelfile import _sandbox_start as start
        assert start.prestart({start.__file__!r})
        key = start._SPARE[0][0]
        start._LOCK.acquire()  # another thread of the command is taking the spare
        pid = os.fork()
        if pid == 0:
            start.take(*key)
            start._discard()
            os._exit(0)
        start._LOCK.release()
        end = time.monotonic() + 20
        while time.monotonic() < end:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("done", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print("hung")
        start._discard()
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["done", "0"]


def test_concurrent_starts_leave_one_spare(monkeypatch):
    # "there is at most one early worker": two threads starting one each at the same time
    barrier = threading.Barrier(2, timeout=30)
    real = start.launch

    def launch(*args, **kwargs):
        barrier.wait()  # both starts are past their check for a spare already waiting
        return real(*args, **kwargs)

    monkeypatch.setattr(start, "launch", launch)
    threads = [threading.Thread(target=start.prestart, args=(start.__file__,))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    procs = [s[1].proc for s in start._SPARE]
    try:
        assert len(procs) == 1
    finally:
        start._discard()
    for p in procs:
        assert p.poll() is not None  # every spare started was stopped


@pytest.mark.skipif(not LINUX, reason="symlinks and /proc")
def test_the_current_folder_is_left_out_of_the_worker_path_under_any_spelling(
        tmp_path, monkeypatch):
    # a folder holding a downloaded model (and a skops.py beside it) is the current folder; the
    # user's path names it through a symlink: the worker must not import from it
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    monkeypatch.chdir(real)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "link"), str(real / "."), *sys.path])
    child = _probe._child_path()
    assert all(os.path.realpath(p) != str(real.resolve()) for p in child)


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_a_spare_has_its_walls_before_it_is_taken():
    # before any load takes it (nothing sent, no file named), the spare is already limited,
    # without capabilities and, on x86-64 Linux, under the seccomp filter
    assert start.prestart(start.__file__)
    key, launched = start._SPARE[0][:2]
    pid = launched.proc.pid
    deadline = time.monotonic() + 60
    status = ""
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as fh:
            status = fh.read()
        if "CapEff:\t0000000000000000" in status and (
                "Seccomp:\t2" in status or os.uname().machine != "x86_64"):
            break
        time.sleep(0.05)
    with open(f"/proc/{pid}/limits") as fh:
        limits = fh.read()
    assert launched.proc.poll() is None
    assert "CapEff:\t0000000000000000" in status
    if os.uname().machine == "x86_64":
        assert "Seccomp:\t2" in status
    size = [ln for ln in limits.splitlines() if ln.startswith("Max address space")][0].split()
    assert int(size[3]) == int(size[4]) == key[0]  # soft = hard = the load's memory limit
    fsize = [ln for ln in limits.splitlines() if ln.startswith("Max file size")][0].split()
    assert fsize[3] == fsize[4] == "0"
    # the spare's command line names no file: it learns the file only from the load's request
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        argv = fh.read().split(b"\0")
    assert not any(a.endswith(os.path.basename(start.__file__).encode()) for a in argv)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_cannot_talk_to_or_stop_the_parents_worker(tmp_path):
    # multiprocessing's fork (Linux's default before Python 3.14) copies an opened model: the
    # child must not send requests down the parent's pipes (the answers would cross) nor stop
    # the parent's worker when its copy is collected or it exits
    pytest.importorskip("skops")
    out = _run(f"""
        import gc, os
        import numpy as np
        from sklearn.tree import DecisionTreeClassifier
        from anonml.modelfile import open_model, save_model
        X = np.arange(40, dtype=float).reshape(20, 2)
        y = (X[:, 0] > 15).astype(int)
        save_model(DecisionTreeClassifier(random_state=0).fit(X, y), {str(tmp_path / "m.skops")!r})
        model = open_model({str(tmp_path / "m.skops")!r})
        import pickle
        shipped = pickle.dumps(model)  # as sent to a Dask worker: the file's bytes
        pickle.loads(shipped)  # reopened here once, and cached
        pid = os.fork()
        if pid == 0:
            try:
                model.predict_proba(X)
                code = 3
            except Exception as exc:
                code = 0 if "forked" in str(exc) else 4
            mine = pickle.loads(shipped)  # this process's own sandbox, not the cached one
            if code == 0 and not (mine.predict(X) == y).all():
                code = 5
            mine.close()
            model.close()
            del model
            gc.collect()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        print(model._worker.proc.poll() is None, os.path.isdir(model._worker._tmp.name))
        print(bool((model.predict(X) == y).all()))
        model.close()
    """, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0", "True", "True", "True"]


def test_a_folder_and_environment_set_for_the_worker_do_not_reach_it(tmp_path):
    # the command runs in the folder of a downloaded model that holds modules named like the
    # worker's (sitecustomize, numpy, skops, anonml), with Python's variables pointing there:
    # the early worker (and the load that takes it) imports none of them
    pytest.importorskip("skops")
    from sklearn.tree import DecisionTreeClassifier

    import numpy as np

    from anonml.modelfile import save_model

    folder = tmp_path / "download"
    (folder / "skops").mkdir(parents=True)
    (folder / "anonml").mkdir()
    marker = tmp_path / "ran"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("sitecustomize.py", "usercustomize.py", "numpy.py", "threadpoolctl.py",
                 "startup.py", "skops/__init__.py", "anonml/__init__.py"):
        (folder / name).write_text(payload)
    (folder / "evil.pth").write_text(f"import os; {payload}")
    X = np.arange(40, dtype=float).reshape(20, 2)
    y = (X[:, 0] > 15).astype(int)
    save_model(DecisionTreeClassifier(random_state=0).fit(X, y), folder / "m.skops")
    env = dict(os.environ, PYTHONPATH=SRC, PYTHONSTARTUP=str(folder / "startup.py"),
               PYTHONUSERBASE=str(folder), PYTHONHOME=os.environ.get("PYTHONHOME", ""),
               PYTHONINSPECT="")
    env.pop("PYTHONHOME") if not env["PYTHONHOME"] else None
    script = textwrap.dedent("""
        import numpy as np
        from anonml.modelfile import _sandbox_start as start, open_model
        assert start.prestart("m.skops")
        model = open_model("m.skops")
        X = np.arange(40, dtype=float).reshape(20, 2)
        print(int(model.predict(X).sum()))
        model.close()
    """)
    # -P: the command's own process does not put its folder first (the installed ``anonml``
    # script does not either); the worker is what is under test
    out = subprocess.run([sys.executable, "-P", "-c", script], cwd=folder, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(int(y.sum()))]
    assert not marker.exists(), marker.read_text()


def test_the_worker_module_is_imported_inside_the_walls():
    # the start line imports only what applies the limits, then applies them, then imports the
    # worker (its imports, and everything after, run limited and filtered)
    line = start._CHILD
    assert line.index("_apply_limits(*") < line.index("_sandbox_worker")
