"""anonml.frontier: the sweep's table, shared reference models, automatic k, files, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import anonml
from anonml._errors import InputError
from anonml.datasets import load_adult
from anonml._frontier import FrontierResult, frontier
from anonml._frontier._result import pareto_mask

QI = ["age", "sex", "race", "marital-status", "education-num"]
FAST = dict(n_reference=2, worst_case_reps=2, max_attribute_records=100, random_state=0)


@pytest.fixture(scope="module")
def data():
    d = load_adult()
    f = d.frame
    train = f[d.split == "train"].sample(700, random_state=3)
    test = f[d.split == "test"].sample(400, random_state=3)
    return (train.drop(columns="income"), train["income"], test.drop(columns="income"),
            test["income"])


def _lr(X):
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    num = [c for c in X.columns if c not in cat]
    return make_pipeline(make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), cat), (StandardScaler(), num)),
        LogisticRegression(max_iter=500))


@pytest.fixture(scope="module")
def result(data):
    X, y, Xt, yt = data
    steps = []
    res = frontier(X, y, Xt, yt, quasi_identifiers=QI, model=_lr(X), methods=("ag", "mondrian"),
                   ks=(50, 10), progress=lambda s, d, n: steps.append((s, d, n)), **FAST)
    res._steps = steps
    return res


def test_table_rows_in_order(result):
    t = result.table
    assert list(t["method"]) == ["none", "ag", "ag", "mondrian", "mondrian", "dp"]
    assert pd.isna(t.loc[0, "k"]) and list(t["k"][1:5]) == [10, 50, 10, 50]
    assert t.loc[5, "epsilon"] == 1.0 and pd.isna(t.loc[1, "epsilon"])
    ok = t[t["status"] == "ok"]
    assert len(ok) == 6, t["status"].tolist()  # the DP logistic regression runs here
    assert t.loc[0, "accuracy_loss"] == 0.0
    np.testing.assert_allclose(t["accuracy_loss"], t.loc[0, "accuracy"] - t["accuracy"])
    for col in ("accuracy", "attack_auc", "worst_case_auc"):
        assert t[col].between(0, 1).all()
    assert t.loc[1:4, "accuracy_mapped"].between(0, 1).all()
    assert t.loc[1:4, "gcp"].between(0, 1).all() and (t.loc[1:4, "gcp"] > 0).all()
    # larger k -> fewer groups, more information lost
    for m in ("ag", "mondrian"):
        part = t[t["method"] == m].sort_values("k")
        assert part["groups"].is_monotonic_decreasing
        assert part["gcp"].iloc[1] >= part["gcp"].iloc[0]
        assert (part["groups"] * part["k"] <= 700).all()
    assert (t["reference_models"][1:5] == "shared").all()
    assert t.loc[5, "reference_models"] == "own"


def test_every_point_carries_its_interval(result):
    t = result.table[result.table["status"] == "ok"]
    assert result.settings["bootstrap"] == 200
    for col in ("accuracy", "attack_auc"):
        assert (t[f"{col}_lo"] <= t[col]).all() and (t[col] <= t[f"{col}_hi"]).all()
        assert (t[f"{col}_hi"] > t[f"{col}_lo"]).all()
    anon = t[t["k"].notna()]
    for col in ("accuracy_mapped", "accuracy_loss", "accuracy_loss_mapped"):
        assert (anon[f"{col}_lo"] <= anon[col] + 1e-12).all()
        assert (anon[col] <= anon[f"{col}_hi"] + 1e-12).all()
    assert t.loc[0, "accuracy_loss_lo"] == t.loc[0, "accuracy_loss_hi"] == 0.0
    # the paired loss is tighter than the two accuracies' intervals side by side
    width = anon["accuracy_loss_hi"] - anon["accuracy_loss_lo"]
    assert (width < (anon["accuracy_hi"] - anon["accuracy_lo"]) * 2).all()
    assert t["tpr_at_0.1%_fpr_lo"].isna().all()  # 400 test rows: not measurable, no interval
    line = result.recommend(accuracy_budget=0.05)
    assert "[" in line and "]" in line


def test_same_seed_same_numbers_bootstrap_off(data):
    X, y, Xt, yt = data
    runs = [frontier(X, y, Xt, yt, quasi_identifiers=QI, model=_lr(X), methods=("mondrian",),
                     ks=(20,), dp=False, bootstrap=b, **FAST) for b in (40, 40, 0)]
    a, b, off = (r.table.drop(columns="seconds") for r in runs)
    pd.testing.assert_frame_equal(a, b)
    assert off["accuracy_lo"].isna().all() and off["attack_auc_hi"].isna().all()
    np.testing.assert_array_equal(off["attack_auc"], a["attack_auc"])
    with pytest.raises(InputError, match=r"^bootstrap=5 must be an integer >= 20, e\.g\. "
                       r"bootstrap=200; the number of replicates, or 0 for no intervals$"):
        frontier(X, y, Xt, yt, quasi_identifiers=QI, model=_lr(X), ks=(20,), bootstrap=5)


def test_tpr_not_measurable_below_1000_nonmembers(result):
    t = result.table[result.table["status"] == "ok"]
    assert (t["tpr_measurable"] == False).all()  # noqa: E712 - 400 test rows
    assert t["tpr_at_0.1%_fpr"].isna().all()
    assert any("not measurable" in n for n in result.notes)


def test_progress_names_method_k_and_step(result):
    # the one protocol (anonml._progress): steps announced as (text, 0, None), the points
    # counted as ("frontier points", done, n)
    texts = [s for s, _, n in result._steps if n is None]
    assert "point 2/6: ag k=10: anonymize" in texts
    assert "point 5/6: mondrian k=50: retrain" in texts
    assert any(s.startswith("point 4/6: mondrian k=10: rmia") for s in texts)
    points = [(d, n) for s, d, n in result._steps if s == "frontier points"]
    assert points[0] == (0, 6) and points[-1] == (6, 6)
    dones = [d for d, _ in points]
    assert dones == sorted(dones)
    assert {s for s, _, n in result._steps if n is not None} == {"frontier points"}


def test_shared_reference_equals_rmia(data):
    """Reused reference models give exactly RMIA's score (same seed, same pieces)."""
    from sklearn.base import clone

    from anonml.attacks import RMIA, Target
    from anonml._frontier._measure import SharedReference

    X, y, Xt, yt = data
    model = _lr(X).fit(X, y)
    target = Target(model, X, y, Xt, yt)
    shared = SharedReference(target, clone(model), 2, random_state=5)
    a = shared.run(target)
    b = RMIA(2, n_jobs=1, random_state=5).run(target)
    assert a.auc == pytest.approx(b.auc, abs=1e-12)
    np.testing.assert_allclose(a.scores, b.scores)


def test_reference_models_trained_once(data, monkeypatch):
    import anonml.attacks._shadow as shadow

    X, y, Xt, yt = data
    calls = []
    real = shadow.shadow_scores
    monkeypatch.setattr(shadow, "shadow_scores",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    res = frontier(X, y, Xt, yt, quasi_identifiers=QI, model=_lr(X), methods=("mondrian",),
                   ks=(10, 20, 40), dp=False, **FAST)
    assert len(res.table) == 4 and len(calls) == 1


def test_matched_reference_trains_per_point(data):
    X, y, Xt, yt = data
    res = frontier(X, y, Xt, yt, quasi_identifiers=QI, model=_lr(X), methods=("ag",),
                   ks=(20,), dp=False, reference="matched", **FAST)
    assert res.table.loc[1, "reference_models"] == "own"
    assert 0 <= res.table.loc[1, "attack_auc"] <= 1


def test_dp_unavailable_is_one_line_not_a_crash(data, monkeypatch):
    import anonml._frontier._sweep as sweep

    def broken(*a, **k):
        raise InputError("diffprivlib cannot be imported with scikit-learn 9.9 (DOUBLE); "
                         "install a diffprivlib release that supports it")

    monkeypatch.setattr(sweep, "dp_baseline", broken)
    X, y, Xt, yt = data
    res = frontier(X, y, Xt, yt, quasi_identifiers=QI, model=_lr(X), methods=("mondrian",),
                   ks=(20,), **FAST)
    row = res.table.iloc[-1]
    assert row["method"] == "dp" and row["status"].startswith("unavailable: diffprivlib")
    assert "\n" not in row["status"] and pd.isna(row["accuracy"])
    res.recommend(accuracy_budget=1.0)  # the other points still answer


# ----------------------------------------------------------------------------- automatic k ----
def _hand(rows, attack="rmia") -> FrontierResult:
    base = {"status": "ok", "accuracy_mapped": None, "ncp": 0.1, "gcp": 0.1, "groups": 5,
            "tpr_measurable": True, "epsilon": None}
    return FrontierResult(pd.DataFrame([{**base, **r} for r in rows]), {"attack": attack}, [])


HAND = [
    {"method": "none", "k": None, "accuracy": 0.85, "attack_auc": 0.70, "tpr_at_0.1%_fpr": 0.05},
    {"method": "ag", "k": 10, "accuracy": 0.848, "attack_auc": 0.60, "tpr_at_0.1%_fpr": 0.02},
    {"method": "ag", "k": 100, "accuracy": 0.842, "attack_auc": 0.54, "tpr_at_0.1%_fpr": 0.004},
    {"method": "ag", "k": 1000, "accuracy": 0.80, "attack_auc": 0.51, "tpr_at_0.1%_fpr": 0.001},
    {"method": "mondrian", "k": 10, "accuracy": 0.846, "attack_auc": 0.58, "tpr_at_0.1%_fpr": 0.01},
    {"method": "mondrian", "k": 100, "accuracy": 0.83, "attack_auc": 0.545,
     "tpr_at_0.1%_fpr": 0.005},
]


def test_largest_k():
    r = _hand(HAND)
    best = r.largest_k(0.01)
    assert (best["method"], best["k"]) == ("ag", 100)
    best = r.largest_k(0.005, method="mondrian")
    assert (best["method"], best["k"]) == ("mondrian", 10)
    assert r.largest_k(0.1)["k"] == 1000


def test_smallest_k_auc_and_tpr():
    r = _hand(HAND)
    best = r.smallest_k(max_auc=0.55)
    assert (best["method"], best["k"]) == ("ag", 100)  # k=100 ties; ag is more accurate
    assert r.smallest_k(max_auc=0.59)["method"] == "mondrian"
    assert r.smallest_k(max_tpr=0.002)["k"] == 1000


def test_budget_no_point_meets_names_the_closest():
    r = _hand(HAND)
    with pytest.raises(InputError, match=r"no point meets attack AUC <= 0.5; the closest is "
                       r"ag k=1000"):
        r.smallest_k(max_auc=0.5)
    with pytest.raises(InputError, match=r"closest is ag k=10 .*smaller k"):
        r.largest_k(0.001)


def test_recommend_is_one_plain_line():
    r = _hand(HAND)
    line = r.recommend(accuracy_budget=0.01)
    assert "\n" not in line
    assert line.startswith("recommended: ag k=100: costs 0.80 accuracy points")
    assert "RMIA AUC 0.540 vs 0.700" in line and "buys" in line
    both = r.recommend(accuracy_budget=0.01, risk_budget={"auc": 0.55})
    assert "ag k=100" in both
    with pytest.raises(InputError, match=r"no point meets an accuracy loss of at most 0.10 "
                       r"points and attack AUC <= 0.55; the closest is ag k=100"):
        r.recommend(accuracy_budget=0.001, risk_budget=0.55)
    assert r.recommendation["met"] is False
    assert r.recommendation["nearest"] == {"method": "ag", "k": 100}
    with pytest.raises(InputError, match="accuracy_budget= or risk_budget="):
        r.recommend()
    with pytest.raises(InputError, match="risk_budget"):
        r.recommend(risk_budget="0.5")


def _ci(v, half):
    return {"lo": v - half, "hi": v + half}


def _with_ci(rows, acc_half=0.004, auc_half=0.006):
    """Hand rows with intervals of the given half-widths (losses paired: half as wide)."""
    out = []
    base = rows[0]["accuracy"]
    for r in rows:
        r = dict(r)
        for col, half in (("accuracy", acc_half), ("accuracy_mapped", acc_half),
                          ("attack_auc", auc_half)):
            if r.get(col) is not None:
                r[f"{col}_lo"], r[f"{col}_hi"] = r[col] - half, r[col] + half
        if r["method"] != "none":
            for loss, col in (("accuracy_loss", "accuracy"),
                              ("accuracy_loss_mapped", "accuracy_mapped")):
                if r.get(col) is not None:
                    v = base - r[col]
                    r[f"{loss}_lo"], r[f"{loss}_hi"] = v - acc_half / 2, v + acc_half / 2
        out.append(r)
    return out


def test_undefended_model_is_recommended_when_it_meets_the_budget():
    r = _hand(_with_ci(HAND))
    line = r.recommend(risk_budget={"auc": 0.99})
    assert line.startswith("recommended: the undefended model as it is: it already meets")
    assert r.recommendation["point"] == {"method": "none", "k": None}
    assert r.recommendation["rule"].startswith("the undefended model meets every budget")
    both = r.recommend(accuracy_budget=0.01, risk_budget={"auc": 0.99})
    assert both.startswith("recommended: the undefended model")
    # the model as it is does not meet auc <= 0.6: an anonymized point does
    assert not r.recommend(risk_budget={"auc": 0.6}).startswith("recommended: the undefended")


def test_risk_tie_goes_to_higher_mapped_accuracy():
    """The issue's case: AG and Mondrian k=1000 differ by 0.0003 in AUC (well within the
    intervals); Mondrian is worse by 0.3 points raw and 4.8 on mapped rows: AG is chosen."""
    rows = _with_ci([
        {"method": "none", "k": None, "accuracy": 0.864, "attack_auc": 0.687,
         "tpr_at_0.1%_fpr": 0.036},
        {"method": "ag", "k": 1000, "accuracy": 0.830, "accuracy_mapped": 0.826,
         "attack_auc": 0.5103, "tpr_at_0.1%_fpr": 0.002},
        {"method": "mondrian", "k": 1000, "accuracy": 0.827, "accuracy_mapped": 0.778,
         "attack_auc": 0.5100, "tpr_at_0.1%_fpr": 0.002},
    ])
    r = _hand(rows)
    line = r.recommend(accuracy_budget=0.05)
    assert line.startswith("recommended: ag k=1000: costs 3.40 [3.20, 3.60] accuracy points")
    assert "not significantly different in risk: mondrian k=1000 (AUC 0.510 [0.504, 0.516]" \
        in line and "chosen by higher mapped, then raw accuracy" in line
    assert r.recommendation["not_significant"] == ["mondrian k=1000"]
    assert r.largest_k(0.05)["method"] == "ag"  # the same tie rule
    # separated intervals: the lower AUC wins whatever its accuracy
    far = _hand(_with_ci(rows, auc_half=0.0001))
    assert far.recommend(accuracy_budget=0.05).startswith("recommended: mondrian k=1000")
    assert far.largest_k(0.05)["method"] == "mondrian"


def test_budget_met_only_within_noise_is_said():
    r = _hand(_with_ci(HAND, auc_half=0.02))
    line = r.recommend(risk_budget={"auc": 0.55})
    assert line.startswith("recommended: ag k=100")  # 0.540 <= 0.55, interval up to 0.560
    assert "budget met only within noise: attack AUC <= 0.55 (upper bound 0.560)" in line
    assert r.recommendation["within_noise"] == ["attack AUC <= 0.55 (upper bound 0.560)"]
    r = _hand(_with_ci(HAND, acc_half=0.004, auc_half=0.001))
    tight = r.recommend(accuracy_budget=0.0081)  # ag k=100: loss 0.80 [0.60, 1.00]
    assert tight.startswith("recommended: ag k=100: costs 0.80 [0.60, 1.00] accuracy points")
    assert "budget met only within noise: accuracy loss <= 0.81 points (upper bound 1.00)" \
        in tight
    roomy = r.recommend(accuracy_budget=0.011)  # the same point, its interval within 1.1
    assert roomy.startswith("recommended: ag k=100") and "within noise" not in roomy


def test_undefended_model_when_no_point_lowers_the_risk_significantly():
    rows = _with_ci([
        {"method": "none", "k": None, "accuracy": 0.85, "attack_auc": 0.52,
         "tpr_at_0.1%_fpr": 0.002},
        {"method": "ag", "k": 10, "accuracy": 0.845, "accuracy_mapped": 0.84,
         "attack_auc": 0.515, "tpr_at_0.1%_fpr": 0.002},
    ], auc_half=0.01)
    line = _hand(rows).recommend(accuracy_budget=0.01)
    assert line.startswith("recommended: the undefended model as it is: no point within the "
                           "budget has a significantly lower attack AUC")
    assert "not significantly different in risk: ag k=10" in line


def test_recommend_without_intervals_is_unchanged_in_form():
    line = _hand(HAND).recommend(accuracy_budget=0.01)
    assert "[" not in line and "within noise" not in line


def test_tpr_budget_not_measurable_is_refused():
    rows = [{**r, "tpr_measurable": False, "tpr_at_0.1%_fpr": None} for r in HAND]
    r = FrontierResult(pd.DataFrame([{"status": "ok", "ncp": 0.1, "gcp": 0.1, "groups": 5,
                                      "epsilon": None, "accuracy_mapped": None, **x}
                                     for x in rows]), {"attack": "rmia", "n_test": 300}, [])
    with pytest.raises(InputError, match=r"TPR at 0.1% FPR is not measurable with 300 test "
                       r"rows \(it needs at least 1,000 non-members\)"):
        r.recommend(risk_budget={"tpr": 0.01})


def test_from_dict_round_trip():
    r = _hand(_with_ci(HAND))
    r.recommend(accuracy_budget=0.01)
    back = FrontierResult.from_dict(json.loads(r.to_json()))
    pd.testing.assert_frame_equal(back.table, r.table)
    assert back.recommendation == r.recommendation
    assert back.recommend(accuracy_budget=0.01) == r.recommend(accuracy_budget=0.01)


def test_pareto_mask_by_hand():
    acc = np.array([0.85, 0.848, 0.842, 0.80, 0.846, 0.83, np.nan])
    auc = np.array([0.70, 0.60, 0.54, 0.51, 0.58, 0.545, 0.5])
    # mondrian k=100 (0.83, 0.545) is beaten by ag k=100 (0.842, 0.54)
    assert pareto_mask(acc, auc).tolist() == [True, True, True, True, True, False, False]
    assert _hand(HAND).table["pareto"].tolist() == [True, True, True, True, True, False]


# ----------------------------------------------------------------------------- files ---------
def test_files(result, tmp_path):
    result.to_csv(tmp_path / "f.csv")
    back = pd.read_csv(tmp_path / "f.csv")
    assert list(back["method"]) == list(result.table["method"])
    result.to_json(tmp_path / "f.json")
    doc = json.loads((tmp_path / "f.json").read_text())
    assert doc["points"][0]["method"] == "none" and doc["points"][0]["k"] is None
    assert doc["settings"]["ks"] == [10, 50] and doc["settings"]["n_train"] == 700
    assert all(p["tpr_at_0.1%_fpr"] is None for p in doc["points"])  # NaN -> null
    result.plot(tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result.to_html(tmp_path / "f.html")
    page = (tmp_path / "f.html").read_text()
    assert "data:image/png;base64," in page and page.count("<tr") == 7
    assert "src=\"http" not in page and "<script" not in page  # self-contained


def test_anonml_frontier_is_the_function():
    import anonml._frontier  # importing the implementation must not shadow the public function

    assert anonml.frontier is frontier and callable(anonml.frontier)
    assert anonml.FrontierResult is FrontierResult


# ----------------------------------------------------------------------------- bad input -----
@pytest.mark.parametrize("kwargs, match", [
    (dict(methods=()), "the sweep is empty"),
    (dict(ks=()), "the sweep is empty"),
    (dict(ks=(10, 5000)), r"k=5000 is above the 700 training rows"),
    (dict(ks=(1,)), r"k=1 must be an integer >= 2"),
    (dict(methods=("ag", "kmeans")), r"method 'kmeans' is not known"),
    (dict(quasi_identifiers=["age", "zip"]), r"quasi-identifier 'zip' is not a column"),
    (dict(attack="shokri"), r"attack='shokri'"),
    (dict(l=2), "sensitive=COLUMN"),
    (dict(model=None), "give exactly one of model="),
    (dict(model=None, estimator="svm"), r"estimator='svm' is not known"),
])
def test_bad_parameters_one_line(data, kwargs, match):
    X, y, Xt, yt = data
    params = dict(quasi_identifiers=QI, model=_lr(X), methods=("ag",), ks=(10,))
    params.update(kwargs)
    with pytest.raises(InputError, match=match) as info:
        frontier(X, y, Xt, yt, **params)
    assert "\n" not in str(info.value)


def test_test_set_without_target(data):
    X, y, Xt, _ = data
    with pytest.raises(InputError, match="y_test is missing: the test set has no target"):
        frontier(X, y, Xt, None, quasi_identifiers=QI, model=_lr(X), ks=(10,))


def test_model_that_cannot_be_cloned(data):
    class Opaque:  # fits and predicts, but has no get_params: clone fails
        def fit(self, X, y):
            return self

    X, y, Xt, yt = data
    with pytest.raises(InputError, match="cannot be cloned for retraining"):
        frontier(X, y, Xt, yt, quasi_identifiers=QI, model=Opaque(), ks=(10,))


def test_columns_must_match(data):
    X, y, Xt, yt = data
    with pytest.raises(InputError, match="X_test has other columns"):
        frontier(X, y, Xt.drop(columns=["age"]), yt, quasi_identifiers=QI, model=_lr(X),
                 ks=(10,))


def test_point_that_cannot_be_made_is_marked_failed(data):
    X, y, Xt, yt = data
    res = frontier(X, y, Xt, yt, quasi_identifiers=["age", "education-num"], model=_lr(X),
                   methods=("mondrian",), ks=(10,), sensitive="race", l=50, dp=False, **FAST)
    row = res.table.iloc[1]
    assert row["status"].startswith("failed: ") and "\n" not in row["status"]
    assert math.isnan(row["accuracy"])


def test_l_diversity_on_every_point(data, monkeypatch):
    """sensitive + l reach every anonymizer; each output is verified l-diverse by the library."""
    import anonml.anonymize as an

    seen = []
    real = an.MondrianAnonymizer.fit_transform

    def spy(self, X, y=None):
        out = real(self, X, y)
        seen.append((self.sensitive, self.l, dict(self.privacy_ or {})))
        return out

    monkeypatch.setattr(an.MondrianAnonymizer, "fit_transform", spy)
    X, y, Xt, yt = data
    res = frontier(X, y, Xt, yt, quasi_identifiers=["age", "education-num"], model=_lr(X),
                   methods=("mondrian",), ks=(10,), sensitive="race", l=2, dp=False, **FAST)
    assert res.table.loc[1, "status"] == "ok"
    assert seen and seen[0][:2] == ("race", 2) and seen[0][2]["l"] >= 2


def test_lira_trains_its_own_shadow_models_per_point(data):
    X, y, Xt, yt = data
    params = {**FAST, "n_reference": 4}
    res = frontier(X, y, Xt, yt, quasi_identifiers=QI, model=_lr(X), methods=("mondrian",),
                   ks=(20,), dp=False, attack="lira", **params)
    t = res.table
    assert (t["attack"] == "lira").all() and (t["reference_models"] == "own").all()
    assert t["attack_auc"].between(0, 1).all()
    assert not any("shared" in n for n in res.notes)


def test_docs_example_line_is_what_the_code_prints():
    """docs/frontier.md's example line is the recommendation the code gives for the sweep it
    came from (docs/frontier/adult.json, the frontier.json of that run)."""
    from pathlib import Path

    root = Path(__file__).parents[2] / "docs"
    text = (root / "frontier.md").read_text(encoding="utf-8")
    block = text.split("<!-- example-line -->", 1)[1].split("```", 2)[1]
    line = block.strip()
    doc = json.loads((root / "frontier" / "adult.json").read_text(encoding="utf-8"))
    res = FrontierResult.from_dict(doc)
    budgets = doc["recommendation"]["budgets"]
    assert res.recommend(accuracy_budget=budgets["accuracy_loss"]) == line
    assert doc["recommendation"]["line"] == line  # what the command printed and recorded
