"""The right-to-be-forgotten experiment (Malle et al., 2016) on a small slice of Adult.

The full run is in docs/results/forgetting.*, not in the tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonml._errors import InputError
from anonml.datasets import load_adult
from anonml.experiments import forgetting
from anonml.experiments.__main__ import main
from anonml.privacy import k_anonymity

N_TRAIN = 1500
N_TEST = 4000


@pytest.fixture(scope="module")
def adult():
    data = load_adult()
    X_train, _, y_train, _ = data.train_test_split()
    X, y = X_train.iloc[:N_TRAIN], (y_train.iloc[:N_TRAIN] == ">50K").astype(int).to_numpy()
    return data, X, y


@pytest.fixture(scope="module")
def small_run():
    return forgetting.run(seeds=(0,), fractions=(0.5, 1.0), ks=(50,), n_jobs=1, n_train=N_TRAIN,
                          n_test=N_TEST)


# -- ranking ----------------------------------------------------------------------------------
def test_rank_values_returns_three_categorical_values_of_the_data(adult):
    data, X, y = adult
    top = forgetting.rank_values(X, y, data.categorical_features)
    assert len(top) == 3 and list(top["rank"]) == [1, 2, 3]
    for r in top.itertuples():
        assert r.attribute in data.categorical_features
        carrying = int((X[r.attribute] == r.value).sum())
        assert carrying == r.rows and carrying >= 0.01 * len(X)
        assert r.label == f"{r.attribute}={r.value}"
    # the top 3 are the head of the full ranking, which is sorted by |coefficient|
    full = forgetting.rank_values(X, y, data.categorical_features, top=None)
    assert list(full.label[:3]) == list(top.label)
    assert (np.diff(full.abs_coefficient) <= 0).all()
    assert np.allclose(full.abs_coefficient, full.coefficient.abs())
    assert set(full.attribute) == set(data.categorical_features)  # numeric columns are not ranked


def _toy(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "color": rng.choice(["red", "blue", "green", "white"], n, p=[0.3, 0.3, 0.2, 0.2]),
        "shape": rng.choice(["a", "b", "c"], n),
        "num": rng.normal(size=n),
    })
    y = ((X.color == "red").to_numpy() ^ (rng.random(n) < 0.05)).astype(int)
    X.loc[:9, "color"], y[:10] = "purple", 1  # a rare value, always positive
    return X, y


def test_rank_values_puts_the_value_that_decides_the_label_first():
    X, y = _toy()
    ranking = forgetting.rank_values(X, y, top=None)
    assert ranking.label.iloc[0] == "color=red" and ranking.coefficient.iloc[0] > 0
    # every value of the irrelevant attribute ranks below every value of the relevant one
    assert ranking[ranking.attribute == "shape"]["rank"].min() > ranking[ranking.attribute == "color"]["rank"].max()
    # the rare value (10 of 3000 rows) is ranked only when the support floor is lifted
    assert "color=purple" not in set(ranking.label)
    assert "color=purple" in set(forgetting.rank_values(X, y, top=None, min_support=0).label)


# -- deletion sets ----------------------------------------------------------------------------
def test_deletion_sets_remove_the_stated_fraction_of_the_value_rows_only(adult):
    data, X, y = adult
    values = forgetting.rank_values(X, y, data.categorical_features)
    fractions = (0.2, 0.5, 0.8, 1.0)
    sets = forgetting.deletion_sets(X, values, fractions, seed=3)
    assert set(sets) == {(label, f) for label in values.label for f in fractions}
    for r in values.itertuples():
        carrying = set(np.flatnonzero((X[r.attribute] == r.value).to_numpy()))
        previous = set()
        for f in fractions:
            drop = sets[(r.label, f)]
            assert len(drop) == len(set(drop)) == round(f * len(carrying))
            assert set(drop) <= carrying                     # no row without the value
            assert previous <= set(drop)                     # nested: 50% contains 20%
            previous = set(drop)
        assert previous == carrying                          # 100% deletes every such row
    # another seed deletes other rows
    other = forgetting.deletion_sets(X, values, (0.5,), seed=4)
    assert not np.array_equal(other[(values.label[0], 0.5)], sets[(values.label[0], 0.5)])
    again = forgetting.deletion_sets(X, values, (0.5,), seed=3)
    assert np.array_equal(again[(values.label[0], 0.5)], sets[(values.label[0], 0.5)])


def test_deletion_sets_accept_pairs_and_reject_bad_input(adult):
    _, X, _ = adult
    sets = forgetting.deletion_sets(X, [("sex", "Female")], (0.25,), seed=0)
    drop = sets[("sex=Female", 0.25)]
    assert (X.iloc[drop]["sex"] == "Female").all()
    assert len(drop) == round(0.25 * (X["sex"] == "Female").sum())
    with pytest.raises(InputError, match="1.5"):
        forgetting.deletion_sets(X, [("sex", "Female")], (1.5,))
    with pytest.raises(InputError, match="Martian"):
        forgetting.deletion_sets(X, [("sex", "Martian")], (0.5,))
    with pytest.raises(InputError, match="zip"):
        forgetting.deletion_sets(X, [("zip", "1010")], (0.5,))


# -- anonymizing instead ----------------------------------------------------------------------
def test_anonymized_training_rows_are_k_anonymous(adult):
    data, X, y = adult
    qi = list(data.qi_sets["12"])
    assert k_anonymity(X, qi) < 7  # the raw rows are not
    X_anon, ag = forgetting.anonymize(X, y, 7, qi, seed=0)
    assert X_anon.shape == X.shape and list(X_anon.columns) == list(X.columns)
    assert k_anonymity(X_anon, qi) >= 7
    mapped = ag.transform(X.iloc[:200])
    assert mapped.equals(X_anon.iloc[:200])  # training rows map to their group's representative


# -- the grid ---------------------------------------------------------------------------------
def test_run_returns_one_row_per_training_set_classifier_and_seed(small_run):
    df = small_run
    n_clf = len(forgetting.CLASSIFIERS)
    # baseline + 3 values x (fraction 0 = baseline, 0.5, 1.0) + one k, times the classifiers
    assert len(df) == n_clf * (1 + 3 * 3 + 1)
    assert list(df.columns) == forgetting._COLUMNS
    assert df.groupby(["setting", "value", "fraction", "k", "classifier", "seed"], dropna=False).size().max() == 1
    assert set(df.classifier) == set(forgetting.CLASSIFIERS)
    assert df.accuracy.between(0.6, 1).all() and df.f1_macro.between(0.3, 1).all()
    base = df[df.setting == "baseline"].set_index("classifier")
    assert (base.n_train == N_TRAIN).all() and (base.n_deleted == 0).all()
    dele = df[df.setting == "deletion"]
    assert dele.value.nunique() == 3 and set(dele.fraction) == {0.0, 0.5, 1.0}
    assert (dele.n_deleted == (dele.fraction * dele.rows_with_value).round()).all()
    assert (dele.n_train + dele.n_deleted == N_TRAIN).all()
    zero = dele[dele.fraction == 0]
    assert np.allclose(zero.accuracy, base.accuracy.reindex(zero.classifier).to_numpy())
    # the same rows as deletion_sets gives for that seed
    X = load_adult().train_test_split()[0].iloc[:N_TRAIN]
    first = dele[dele["rank"] == 1].iloc[0]
    attr, value = first.value.split("=", 1)
    sets = forgetting.deletion_sets(X, [(attr, value)], (1.0,), seed=0)
    assert len(sets[(first.value, 1.0)]) == dele[(dele["rank"] == 1) & (dele.fraction == 1.0)].n_deleted.iloc[0]
    anon = df[df.setting == "anonymized"]
    assert (anon.k == 50).all() and (anon.k_verified >= 50).all()
    assert anon.accuracy_mapped.between(0.6, 1).all() and anon.n_groups.between(1, N_TRAIN // 50).all()
    assert df.loc[df.setting != "anonymized", "accuracy_mapped"].isna().all()


def test_summary_and_outputs(small_run, tmp_path):
    df = small_run
    summary = forgetting.summarize(df)
    row = summary[(summary.setting == "deletion") & (summary.fraction == 1.0)
                  & (summary["rank"] == 1) & (summary.classifier == "random_forest")].iloc[0]
    raw = df[(df.setting == "deletion") & (df.fraction == 1.0) & (df["rank"] == 1)
             & (df.classifier == "random_forest")].accuracy.iloc[0]
    base = df[(df.setting == "baseline") & (df.classifier == "random_forest")].accuracy.iloc[0]
    assert row.accuracy_mean == pytest.approx(raw)
    assert row.delta_accuracy == pytest.approx(100 * (raw - base))
    assert len(summary) == len(df)  # one seed: one row per training set and classifier
    paths = forgetting.write_outputs(df, tmp_path)
    assert pd.read_csv(paths["raw"]).shape == df.shape
    assert len(pd.read_csv(paths["summary"])) == len(summary)
    text = paths["markdown"].read_text(encoding="utf-8")
    label = df[df["rank"] == 1].value.iloc[0]
    assert f"− 100% of `{label}`" in text and "| AG k=50 |" in text and "SaNGreeA" in text
    assert paths["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths.values())


@pytest.mark.parametrize("kwargs, match", [
    ({"fractions": (0.0,)}, "0.0"),
    ({"ks": (1,)}, "k 1"),
    ({"seeds": ()}, "no seed"),
    ({"n_jobs": 0}, "n_jobs"),
    ({"n_train": 50}, "n_train"),
    ({"n_test": 10}, "n_test"),
    ({"classifiers": ("knn",)}, "knn"),
])
def test_bad_arguments_are_input_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        forgetting.run(**kwargs)


def test_command_line(small_run, tmp_path, capsys, monkeypatch):
    calls = []

    def fake_run(*args, **kwargs):  # the grid itself is tested above; here only the wiring
        calls.append((args, kwargs))
        return small_run

    monkeypatch.setattr(forgetting, "run", fake_run)
    out = tmp_path / "res"
    code = main(["forgetting", "--seeds", "4", "5", "--fractions", "1.0", "--k", "50", "--n-train", "400",
                 "--n-test", "300", "--n-jobs", "1", "--out", str(out), "--name", "f"])
    assert code == 0
    assert calls == [(([4, 5], [1.0], [50], 1, 400), {"n_test": 300})]
    assert {p.name for p in out.iterdir()} == {"f.csv", "f_summary.csv", "f.md", "f.png"}
    assert "| AG k=50 |" in capsys.readouterr().out
    monkeypatch.undo()
    assert main(["forgetting", "--k", "1", "--out", str(out)]) == 1
    assert "k 1 must be" in capsys.readouterr().err
