"""Progress of the audit's long steps: the library reports counted parts through a callback
(never prints), and ``anonml audit`` shows them on standard error unless ``-q``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from anonml.attacks import RMIA, LiRA, Target, WorstCaseAttribute, WorstCaseMembership
from anonml.safemodel import request_release


def _calls_ok(calls, label, total):
    """The calls for ``label``: done 0, 1, ... strictly increasing up to ``total``."""
    mine = [(d, t) for lab, d, t in calls if lab == label]
    assert mine, f"no progress for {label!r}; got {sorted({c[0] for c in calls})}"
    done = [d for d, _ in mine]
    assert {t for _, t in mine} == {total}
    assert done[0] == 0 and done[-1] == total
    assert all(b > a for a, b in zip(done, done[1:])), done
    return done


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(0)
    n = 160
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 4, n).astype(float),
                      "c": rng.choice(["x", "y", "z"], n)})
    y = ((X["a"] > 0) ^ (rng.random(n) < 0.2)).astype(int).to_numpy()
    Xn = X.assign(c=X["c"].map({"x": 0.0, "y": 1.0, "z": 2.0}))
    model = DecisionTreeClassifier(random_state=0).fit(Xn[:80], y[:80])
    return Target(model, Xn[:80], y[:80], Xn[80:], y[80:])


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_worst_case_counts_every_repetition_and_the_baseline(tiny, n_jobs):
    calls = []
    WorstCaseMembership(n_reps=5, n_dummy_reps=1, n_jobs=n_jobs, random_state=0).run(
        tiny, progress=lambda *a: calls.append(a))
    assert _calls_ok(calls, "worst-case attack repetitions", 10) == list(range(11))


@pytest.mark.parametrize("cls, label", [(RMIA, "RMIA reference models"),
                                        (LiRA, "LiRA shadow models")])
@pytest.mark.parametrize("n_jobs", [None, 2])
def test_reference_models_are_counted(tiny, cls, label, n_jobs):
    calls = []
    cls(4, n_jobs=n_jobs, random_state=0).run(tiny, progress=lambda *a: calls.append(a))
    _calls_ok(calls, label, 4)


def test_attribute_attack_counts_features(tiny):
    calls = []
    WorstCaseAttribute(categorical_features=["b", "c"], n_grid=5, random_state=0).run(
        tiny, progress=lambda *a: calls.append(a))
    assert _calls_ok(calls, "attribute attack features", 3) == [0, 1, 2, 3]


def test_no_callback_no_output_and_same_result(tiny, capsys):
    a = WorstCaseMembership(n_reps=3, random_state=0).run(tiny)
    b = WorstCaseMembership(n_reps=3, random_state=0).run(tiny, progress=lambda *_: None)
    assert a.extra["auc"] == b.extra["auc"]
    assert capsys.readouterr() == ("", "")


def test_request_release_reports_each_long_step(tiny):
    calls, messages = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        request_release(tiny, attacks=("worst_case", "rmia", "attribute"), n_reference=3,
                        categorical_features=["b", "c"], random_state=0,
                        progress=lambda *a: calls.append(a))
    _calls_ok(calls, "worst-case attack repetitions", 20)  # 10 + 10 baseline
    _calls_ok(calls, "RMIA reference models", 3)
    _calls_ok(calls, "attribute attack features", 3)
    # the steps, announced in the same protocol: (step, 0, None), each started and timed
    steps = [s for s, d, t in calls if t is None]
    assert all(d == 0 for _, d, t in calls if t is None)
    assert "worst-case membership attack ..." in steps
    assert any(s.startswith("worst-case membership attack: ") and s.endswith(" s")
               for s in steps)
    # progress_count (kept) takes the counted calls apart
    apart, counts = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        request_release(tiny, attacks=("worst_case",), random_state=0,
                        progress=lambda *a: apart.append(a),
                        progress_count=lambda *a: counts.append(a))
    assert all(t is None for _, _, t in apart) and apart
    _calls_ok(counts, "worst-case attack repetitions", 20)


def test_bad_callback_is_refused(tiny):
    from anonml._errors import InputError

    with pytest.raises(InputError, match="progress="):
        WorstCaseMembership(n_reps=2, random_state=0).run(tiny, progress="yes")


# ----------------------------------------------------------------------------- the CLI --------
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import joblib

    rng = np.random.default_rng(1)
    n = 200
    data = pd.DataFrame({"age": rng.integers(18, 90, n).astype(float),
                         "hours": rng.integers(1, 80, n).astype(float)})
    data["y"] = ((data["age"] > 45) ^ (rng.random(n) < 0.2)).astype(int)
    d = tmp_path_factory.mktemp("progress")
    data[:100].to_csv(d / "train.csv", index=False)
    data[100:].to_csv(d / "test.csv", index=False)
    joblib.dump(DecisionTreeClassifier(random_state=0).fit(data[["age", "hours"]][:100],
                                                           data["y"][:100]),
                d / "tree.joblib")
    return d


def _audit(files, out, *extra):
    from anonml.cli import main

    return main(["audit", "--model", str(files / "tree.joblib"), "--trust-model",
                 "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
                 "--target", "y", "--attacks", "worst_case,rmia,attribute", "--formats", "json",
                 "-o", str(out), *extra])


def test_cli_quiet_prints_nothing_on_stderr_and_otherwise_stage_lines(files, tmp_path, capsys):
    assert _audit(files, tmp_path / "quiet", "-q") == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith("VERDICT:")

    assert _audit(files, tmp_path / "loud") == 0
    err = capsys.readouterr().err.splitlines()  # stderr is not a terminal here: stage lines
    for label, total in (("worst-case attack repetitions", 20), ("RMIA reference models", 4),
                         ("attribute attack features", 2)):
        lines = [ln for ln in err if f"] {label}: " in ln]
        assert lines and lines[0].endswith(f"{label}: 0/{total}"), err
        assert lines[-1].endswith(f"{label}: {total}/{total}")
    assert any("worst-case membership attack" in ln for ln in err)
    assert not any("\r" in ln for ln in err)  # no bar drawn on a non-terminal


def test_the_cli_adapter_takes_the_one_protocol(capsys):
    """One adapter (anonml.cli._common.Progress) for every caller: a step is one line however
    often it is repeated while it goes on, a counted stage one line per count (no terminal),
    and a one-argument call is a step."""
    from anonml._progress import announce, check_progress, counter
    from anonml.cli._common import Progress

    say = Progress()
    say("reading the table")
    for level in (1, 2, 3):
        say("growing the tree (levels)", level, None)
    say("growing the tree (levels)", 0, 0)  # nothing counted: no "0/0" line
    tick = counter(say, "binning the partitions", 2)
    tick()
    tick()
    announce(say)("writing out.csv")
    err = capsys.readouterr().err.splitlines()
    assert [ln.split("] ", 1)[1] for ln in err] == [
        "reading the table ...", "growing the tree (levels) ...",
        "binning the partitions: 0/2", "binning the partitions: 1/2",
        "binning the partitions: 2/2", "writing out.csv ..."]
    Progress(quiet=True)("x", 1, 2)
    assert capsys.readouterr().err == ""
    assert check_progress(None)("x", 0, None) is None
    from anonml._errors import InputError

    with pytest.raises(InputError, match=r"progress='yes' must be a callable taking \(stage"):
        check_progress("yes")
