"""Structural disclosure measures of a fitted classifier on its own training data.

Trusted research environments check a statistical output (a table, a regression) against
rules of thumb before release: no cell below a threshold count, no cell that reveals a class
with certainty, enough residual degrees of freedom. The GRAIMATTER recommendations (Jefferson
et al. 2022) and SACRO-ML's ``StructuralAttack`` apply the same rules to a trained model by
looking at the *equivalence classes* it induces on its training records: records the model
cannot tell apart. :func:`structural_measures` computes those measures as counts only (no
record, no value of a record, is ever returned):

* **k-anonymity of the model**: the size of the smallest equivalence class, and how many are
  smaller than ``threshold`` (ACRO's ``safe_threshold``, default 10);
* **class disclosure**: an equivalence class whose predicted probability of some class is
  (close to) 0 tells that no training record of that group has that label;
* **small-group risk**: for some class, 0 < probability × group size < ``threshold``, i.e. the
  model reports on fewer than ``threshold`` records of one label;
* **residual degrees of freedom**: training rows minus learned parameters (ACRO's
  ``safe_dof_threshold``, default 10);
* **generalisation**: train and test accuracy, their gap, and a two-sample Kolmogorov–Smirnov
  test of per-record log-losses on training versus test records (p < 0.05 means the model
  treats its training records measurably differently: the signal membership inference uses).

Differences from SACRO-ML (``sacroml/attacks/structural_attack.py``)
--------------------------------------------------------------------
* **Forests and boosted trees are grouped by leaf signature**, not by predicted probabilities:
  two training records are equivalent when they land in the same leaf of *every* tree. A
  released tree ensemble exposes its trees, so the partition an attacker can compute is the
  leaf signature; grouping by output probabilities merges distinct cells whose averaged votes
  happen to coincide and so understates the risk. The rows of the leaf matrix are grouped
  without Python loops (64-bit multiplicative row hashes, ``np.unique``, then an exact check
  of every row against its group's first row, falling back to ``np.unique(axis=0)`` on a
  collision). ``min_leaf_size`` also reports, over all trees, the smallest leaf occupied by
  training records: the k-anonymity of the least anonymous single tree.
* **Class disclosure is reported twice**: ``zero_probability_groups`` is SACRO-ML's count
  (every group with a probability close to 0); ``class_disclosure_groups`` counts only those
  smaller than ``threshold``. A pure leaf of 500 records is not a disclosure in the
  statistical-disclosure-control sense (a table cell of 500 with a zero next to it passes the
  threshold rule), so the rules engine can use the second count.
* **Parameter counts** follow SACRO-ML for trees (2 per internal node: feature and threshold;
  ``n_classes − 1`` per leaf), forests (sum over trees) and MLPs (weights and biases), and
  are extended to gradient boosting (scikit-learn: 2 per internal node and one value per leaf
  of each regression tree, plus the ``n_classes − 1`` prior log-odds unless ``init="zero"``;
  histogram gradient boosting: the same from its predictors plus the baseline), linear models
  (coefficients, plus intercepts when fitted), torch networks (trainable tensors) and the
  diffprivlib forest (its trees). For XGBoost each leaf holds one scalar (a vector of
  ``n_classes`` for ``multi_strategy="multi_output_tree"``), so the count is
  2 · internal nodes + leaf values + the base scores; SACRO-ML's
  2 · internal + (n_classes − 1) · leaves + n_trees over-counts multi-class boosters, whose
  trees are already one per class.

References
----------
Jefferson, E. et al. (2022). GRAIMATTER Green Paper: Recommendations for disclosure control of
trained machine learning (ML) models from trusted research environments (TREs). Zenodo,
doi:10.5281/zenodo.7089491.
SACRO-ML (AI-SDC/SACRO-ML): ``sacroml/attacks/structural_attack.py``, ``StructuralAttack``.
Samarati, P. & Sweeney, L. (1998). Protecting privacy when disclosing information:
k-anonymity and its enforcement through generalization and suppression. SRI-CSL-98-04.
"""

from __future__ import annotations

import json
import numbers
from typing import Any

import numpy as np

from anonml._errors import InputError, NotFittedError

__all__ = ["count_params", "group_rows", "structural_measures"]

_ALPHA = 0.05  # KS test: p below this is a significant train/test loss difference
_ROUND = 12  # probabilities rounded to 1e-12 before grouping
_LOSS_FLOOR = 1e-15  # log-loss of a record whose true class has probability 0
_CHUNK = 1 << 16  # rows hashed at a time
_MULTIPLIERS = np.random.default_rng(0x5AFE).integers(
    1, np.iinfo(np.int64).max, size=4096, dtype=np.int64
).astype(np.uint64) | np.uint64(1)


# ---------------------------------------------------------------------------------------------
# grouping identical rows, vectorized
# ---------------------------------------------------------------------------------------------
def _row_keys(M: np.ndarray) -> np.ndarray:
    """64-bit words that are equal exactly when the values are equal (per cell)."""
    if M.dtype.kind == "f":
        M = np.asarray(M, dtype=np.float64) + 0.0  # -0.0 -> 0.0
        M[np.isnan(M)] = np.nan  # one NaN bit pattern
        return np.ascontiguousarray(M).view(np.uint64)
    if M.dtype.kind in "iub":
        return np.ascontiguousarray(M.astype(np.int64, copy=False)).view(np.uint64)
    raise InputError(f"group_rows needs a numeric matrix, got dtype {M.dtype}")


def group_rows(M: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group identical rows of a numeric matrix.

    Parameters
    ----------
    M : array-like of shape (n, d) or (n,)
        Integers (leaf ids) or floats (compared bit for bit after mapping -0.0 to 0.0).

    Returns
    -------
    inverse : ndarray of shape (n,)
        Group id (0 .. G-1) of every row.
    counts : ndarray of shape (G,)
        Rows per group.
    first : ndarray of shape (G,)
        Index of the first row of every group.

    Notes
    -----
    Each row is hashed to 64 bits as Σ_j key_j · m_j (mod 2⁶⁴) with fixed random odd
    multipliers m_j, the hashes are grouped with one ``np.unique``, and every row is then
    compared with the first row of its group; if any differs (a hash collision) the rows are
    grouped exactly with ``np.unique(axis=0)`` instead. No Python loop runs over rows.
    """
    M = np.asarray(M)
    if M.ndim == 1:
        M = M[:, None]
    if M.ndim != 2:
        raise InputError(f"group_rows needs a 1-D or 2-D matrix, got shape {M.shape}")
    n, d = M.shape
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    K = _row_keys(M)
    if d == 1:
        h = K[:, 0]
    else:
        mult = _MULTIPLIERS[np.arange(d) % _MULTIPLIERS.size]
        h = np.empty(n, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for s in range(0, n, _CHUNK):
                h[s : s + _CHUNK] = (K[s : s + _CHUNK] * mult).sum(axis=1, dtype=np.uint64)
    _, first, inverse, counts = np.unique(
        h, return_index=True, return_inverse=True, return_counts=True
    )
    inverse = inverse.reshape(-1)
    if d > 1 and not np.array_equal(K, K[first[inverse]]):
        _, first, inverse, counts = np.unique(
            K, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
        inverse = inverse.reshape(-1)
    return inverse.astype(np.int64), counts.astype(np.int64), first.astype(np.int64)


def _min_leaf_size(L: np.ndarray) -> int:
    """Smallest positive leaf occupancy over all trees (columns) of a leaf-id matrix."""
    L = L.astype(np.int64, copy=False)
    L = L - L.min(axis=0)  # ids from 0 in every column
    offsets = np.concatenate([[0], np.cumsum(L.max(axis=0) + 1)[:-1]])
    counts = np.bincount((L + offsets).ravel())
    return int(counts[counts > 0].min())


# ---------------------------------------------------------------------------------------------
# model introspection
# ---------------------------------------------------------------------------------------------
def _root(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _dp_forest_class() -> Any:
    from anonml.dp._diffprivlib import DPRandomForestClassifier

    return DPRandomForestClassifier


def _torch_module(model: Any) -> Any:
    """The torch network inside anonml's torch classifiers (or any ``model_`` that is one)."""
    net = getattr(model, "model_", None)
    if net is not None and _root(net) == "torch":
        import torch

        if isinstance(net, torch.nn.Module):
            return net
    return None


def _leaf_matrix(model: Any, X: Any) -> tuple[str, np.ndarray | None]:
    """(equivalence_method, leaf ids): 1-D for one tree, (n, trees) for ensembles."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.ensemble._forest import BaseForest
    from sklearn.tree import BaseDecisionTree

    if isinstance(model, BaseDecisionTree):
        return "leaves", np.asarray(model.apply(X)).reshape(-1)
    if isinstance(model, (BaseForest, GradientBoostingClassifier)):
        L = np.asarray(model.apply(X))
        return "leaf_signature", L.reshape(L.shape[0], -1)
    if (
        _root(model) == "xgboost"
        and hasattr(model, "apply")
        and model.get_params().get("booster") in (None, "gbtree", "dart")
    ):
        L = np.asarray(model.apply(X))
        return "leaf_signature", L.reshape(L.shape[0], -1)
    if isinstance(model, _dp_forest_class()):
        from anonml.dp._logistic import check_features

        Xf = check_features(X).astype(np.float32)
        L = np.asarray(model.estimator_.apply(Xf))
        return "leaf_signature", L.reshape(L.shape[0], -1)
    return "probabilities", None


def _tree_params(tree: Any, values_per_leaf: int) -> int:
    """2 per internal node (feature, threshold) + ``values_per_leaf`` per leaf."""
    t = tree.tree_
    n_leaves = int(np.count_nonzero(t.children_left == t.children_right))
    return 2 * (int(t.node_count) - n_leaves) + n_leaves * values_per_leaf


def _class_values(tree: Any) -> int:
    return int(np.sum(np.atleast_1d(tree.n_classes_) - 1))


def _xgb_params(model: Any) -> int | None:
    raw = json.loads(bytes(model.get_booster().save_raw("json")))
    learner = raw["learner"]
    base = str(learner.get("learner_model_param", {}).get("base_score", "0"))
    n_base = len(base.strip("[]").split(","))
    gb = learner["gradient_booster"]
    model_json = gb.get("model") or gb.get("gbtree", {}).get("model")
    if gb.get("name") == "gblinear":  # weights and biases, one per feature and class
        return len(gb["model"]["weights"])
    if not model_json or "trees" not in model_json:
        return None
    total = n_base
    for tree in model_json["trees"]:
        left = np.asarray(tree["left_children"])
        n_leaves = int(np.count_nonzero(left == -1))
        leaf_size = max(1, int(tree["tree_param"].get("size_leaf_vector", 1)))
        total += 2 * (left.size - n_leaves) + n_leaves * leaf_size
    if gb.get("name") == "dart":
        total += len(gb.get("weight_drop", []))
    return total


def _hgb_params(model: Any) -> int | None:
    predictors = getattr(model, "_predictors", None)
    baseline = getattr(model, "_baseline_prediction", None)
    if predictors is None or baseline is None:
        return None
    total = int(np.size(baseline))
    for stage in predictors:
        for predictor in stage:
            is_leaf = np.asarray(predictor.nodes["is_leaf"]).astype(bool)
            total += 2 * int(np.count_nonzero(~is_leaf)) + int(np.count_nonzero(is_leaf))
    return total


def count_params(model: Any) -> int | None:
    """Learned parameters of a fitted classifier, or ``None`` when it cannot be counted.

    See the module notes for the formula of each model family.
    """
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
    from sklearn.ensemble._forest import BaseForest
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import BaseDecisionTree

    if isinstance(model, BaseDecisionTree):
        return _tree_params(model, _class_values(model))
    if isinstance(model, BaseForest):
        return sum(_tree_params(t, _class_values(t)) for t in model.estimators_)
    if isinstance(model, GradientBoostingClassifier):
        total = sum(_tree_params(t, 1) for t in np.ravel(model.estimators_))
        init = getattr(model, "init_", "zero")
        if isinstance(init, str):  # "zero": raw predictions start at 0
            return total
        if type(init).__name__ == "DummyClassifier":
            return total + int(model.n_classes_) - 1
        inner = count_params(init)
        return None if inner is None else total + inner
    if isinstance(model, HistGradientBoostingClassifier):
        return _hgb_params(model)
    if isinstance(model, MLPClassifier):
        return int(sum(w.size for w in model.coefs_) + sum(b.size for b in model.intercepts_))
    if _root(model) == "xgboost" and hasattr(model, "get_booster"):
        return _xgb_params(model)
    if isinstance(model, _dp_forest_class()):
        n_classes = len(model.classes_)
        return sum(_tree_params(t, n_classes - 1) for t in model.estimator_.estimators_)
    net = _torch_module(model)
    if net is not None:
        return int(sum(p.numel() for p in net.parameters() if p.requires_grad))
    coef = getattr(model, "coef_", None)
    if coef is not None:
        n = int(np.size(coef))
        if getattr(model, "fit_intercept", True) and getattr(model, "intercept_", None) is not None:
            n += int(np.size(model.intercept_))
        return n
    return None


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def _check_threshold(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"{name}={value!r} must be a positive integer, e.g. {name}=10")
    return int(value)


def _label_index(classes: np.ndarray, y: Any, n_rows: int, name: str, strict: bool) -> np.ndarray:
    """Position of every label in ``classes`` (-1 for an unknown label when not strict)."""
    import pandas as pd

    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise InputError(
            f"{name} must be 1-D with one label per row of X ({n_rows} rows), got shape {y.shape}"
        )
    idx = pd.Index(classes).get_indexer(pd.Index(y))
    if strict and (idx < 0).any():
        raise InputError(
            f"{name} has {int((idx < 0).sum())} labels outside model.classes_; pass the "
            f"labels the model was trained on"
        )
    return idx


def _n_rows(X: Any, name: str) -> int:
    shape = getattr(X, "shape", None)
    if shape is None:
        X = np.asarray(X)
        shape = X.shape
    if len(shape) != 2 or shape[0] == 0:
        raise InputError(f"{name} must be a non-empty 2-D table, got shape {tuple(shape)}")
    return int(shape[0])


def _proba(model: Any, X: Any, n_rows: int, n_classes: int) -> np.ndarray:
    p = np.asarray(model.predict_proba(X), dtype=np.float64)
    if p.shape != (n_rows, n_classes):
        raise InputError(
            f"model.predict_proba returned shape {p.shape}, expected ({n_rows}, {n_classes}) "
            f"(one column per class of model.classes_)"
        )
    return p


def _accuracy_and_losses(p: np.ndarray, idx: np.ndarray) -> tuple[float, np.ndarray]:
    rows = np.arange(p.shape[0])
    known = idx >= 0
    p_true = np.where(known, p[rows, np.where(known, idx, 0)], 0.0)
    correct = known & (np.argmax(p, axis=1) == idx)
    losses = -np.log(np.clip(p_true, _LOSS_FLOOR, 1.0))
    return float(correct.mean()), losses


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------
def structural_measures(model: Any, X_train: Any, y_train: Any, X_test: Any = None,
                        y_test: Any = None, *, threshold: int = 10,
                        dof_threshold: int = 10) -> dict[str, Any]:
    """Equivalence-class, parameter-count and generalisation measures of a fitted classifier.

    Parameters
    ----------
    model : fitted classifier
        Anything with ``classes_`` and ``predict_proba``. Equivalence classes: the leaves of a
        decision tree; the leaf signature (leaf of every tree) of a random forest, extra
        trees, scikit-learn gradient boosting, XGBoost or anonml's diffprivlib forest; for any
        other model (MLP, logistic regression, histogram gradient boosting, DP models, torch
        networks) the training records with identical ``predict_proba`` rows (rounded to
        1e-12). Subclasses (anonml's Safe* wrappers) are recognized through ``isinstance``.
    X_train, y_train : table and labels
        The training data (DataFrame or array; labels of any hashable type, all in
        ``model.classes_``).
    X_test, y_test : table and labels, optional
        Held-out data for the generalisation measures (a label outside ``model.classes_``
        counts as a wrong prediction with log-loss −log 1e-15).
    threshold : int, default 10
        Minimum group size / cell count (ACRO's ``safe_threshold``).
    dof_threshold : int, default 10
        Minimum residual degrees of freedom (ACRO's ``safe_dof_threshold``).

    Returns
    -------
    dict
        Plain JSON values, counts only:
        ``equivalence_method`` ("leaves", "leaf_signature" or "probabilities"), ``n_samples``,
        ``n_groups``, ``min_group_size``, ``n_small_groups`` (size < threshold),
        ``share_records_small_groups``, ``min_leaf_size`` (tree models: smallest leaf
        occupied by training records over all trees; else None), ``zero_probability_groups``
        (SACRO-ML's class disclosure: a class probability close to 0), ``class_disclosure_groups``
        (those with fewer than ``threshold`` records), ``small_group_risk_groups`` (some class
        with 0 < probability × size < threshold), ``n_params`` (None when not countable),
        ``residual_dof`` (n_samples − n_params, or None), ``train_accuracy``,
        ``test_accuracy``, ``generalisation_gap`` (train − test accuracy), ``loss_ks_pvalue``
        (two-sample KS test of per-record log-losses, train vs test) — the last three None
        without test data — and SACRO-ML's flags ``k_anonymity_risk``,
        ``class_disclosure_risk`` (on the small groups), ``small_group_risk``, ``dof_risk``
        (None when n_params is None) and ``gen_error_risk`` (p < 0.05; None without test
        data), with ``threshold`` and ``dof_threshold``.

    Raises
    ------
    NotFittedError
        ``model`` has no ``classes_``.
    InputError
        Bad thresholds, empty or mismatched data, training labels outside ``classes_``.
    """
    threshold = _check_threshold(threshold, "threshold")
    dof_threshold = _check_threshold(dof_threshold, "dof_threshold")
    classes = getattr(model, "classes_", None)
    if classes is None or not callable(getattr(model, "predict_proba", None)):
        raise NotFittedError(
            f"structural_measures needs a fitted classifier with classes_ and predict_proba; "
            f"{type(model).__name__} has none: fit it first"
        )
    classes = np.asarray(classes)
    if (X_test is None) != (y_test is None):
        raise InputError("give both X_test and y_test, or neither")
    n = _n_rows(X_train, "X_train")
    y_idx = _label_index(classes, y_train, n, "y_train", strict=True)
    proba = _proba(model, X_train, n, classes.size)

    method, L = _leaf_matrix(model, X_train)
    if L is None:
        keys = np.round(proba, _ROUND)
    else:
        if L.shape[0] != n:
            raise InputError(f"model.apply returned {L.shape[0]} rows for {n} rows of X_train")
        keys = L
    _, counts, first = group_rows(keys)
    group_p = proba[first]
    min_leaf = None if L is None else _min_leaf_size(L.reshape(n, -1))

    small = counts < threshold
    zero = np.isclose(group_p, 0.0).any(axis=1)
    freqs = group_p * counts[:, None]
    small_cells = ((freqs > 0) & (freqs < threshold)).any(axis=1)

    n_params = count_params(model)
    residual = None if n_params is None else int(n - n_params)
    train_acc, train_losses = _accuracy_and_losses(proba, y_idx)

    test_acc = gap = pvalue = None
    if X_test is not None:
        from scipy.stats import ks_2samp

        n_test = _n_rows(X_test, "X_test")
        t_idx = _label_index(classes, y_test, n_test, "y_test", strict=False)
        test_acc, test_losses = _accuracy_and_losses(
            _proba(model, X_test, n_test, classes.size), t_idx
        )
        gap = float(train_acc - test_acc)
        pvalue = float(ks_2samp(train_losses, test_losses).pvalue)

    return {
        "equivalence_method": method,
        "n_samples": int(n),
        "n_groups": int(counts.size),
        "min_group_size": int(counts.min()),
        "n_small_groups": int(small.sum()),
        "share_records_small_groups": float(counts[small].sum() / n),
        "min_leaf_size": min_leaf,
        "zero_probability_groups": int(zero.sum()),
        "class_disclosure_groups": int((zero & small).sum()),
        "small_group_risk_groups": int(small_cells.sum()),
        "n_params": None if n_params is None else int(n_params),
        "residual_dof": residual,
        "train_accuracy": train_acc,
        "test_accuracy": test_acc,
        "generalisation_gap": gap,
        "loss_ks_pvalue": pvalue,
        "k_anonymity_risk": bool(small.any()),
        "class_disclosure_risk": bool((zero & small).any()),
        "small_group_risk": bool(small_cells.any()),
        "dof_risk": None if residual is None else bool(residual < dof_threshold),
        "gen_error_risk": None if pvalue is None else bool(pvalue < _ALPHA),
        "threshold": threshold,
        "dof_threshold": dof_threshold,
    }
