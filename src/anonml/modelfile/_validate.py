"""Structural validation of a loaded model, before anything calls it.

A model file that only holds vetted types can still crash the process that uses it:
scikit-learn's tree code and XGBoost's predictor follow node indices read from the file
without bounds checks, so children pointing out of range read arbitrary memory (a segfault),
and children pointing back at an ancestor loop for ever. This module checks every such index
in numpy, vectorized, and raises one :class:`~anonml._errors.InputError` naming the part that is
wrong.

What is checked
---------------
* scikit-learn ``Tree`` (decision trees, each tree of a forest or of gradient boosting): every
  array has ``node_count`` entries; a node is a leaf in both children or in neither; children
  lie after their parent and inside the array, and every node but the root has exactly one
  parent (so the nodes form one tree, with no cycle); split features are below
  ``n_features``; thresholds are finite; ``value`` has shape
  ``(node_count, n_outputs, max_n_classes)`` and finite entries; no path is deeper than the
  tree's recorded ``max_depth`` (scikit-learn sizes buffers by it).
* ``HistGradientBoostingClassifier``'s predictors: the same for its node records, plus
  categorical bitset indices.
* Multi-layer perceptrons and linear models: weight shapes chain from ``n_features_in_`` to
  the classes, all finite.
* Pipelines and column transformers: each step, recursively; fitted sub-estimators held in
  attributes (forests' ``estimators_``, wrappers' ``estimator``), recursively.
* XGBoost models (JSON, UBJSON, or the booster inside a ``.skops`` file): in
  :mod:`anonml.modelfile._validate_xgboost`, on the decoded document *before* XGBoost parses
  it; a loaded XGBoost estimator met in the walk is re-dumped and checked the same way.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from anonml._errors import InputError, one_line
from anonml.modelfile._family import SAFE_OPTIONAL, SAFE_WRAPPERS
from anonml.modelfile._limits import MAX_CLASSES, MAX_TREE_DEPTH, per_feature
from anonml.modelfile._limits import bad as _bad
from anonml.modelfile._limits import exact_int as _exact_int
from anonml.modelfile._limits import n_features as _n_features

__all__ = ["validate_model"]


# ----------------------------------------------------------------------------- scikit-learn


def _check_children(where: str, left: np.ndarray, right: np.ndarray, leaf_value: int) -> np.ndarray:
    """Leaves agree in both children; children lie after their parent, in range; one parent each.

    Returns the depth of every node.
    """
    n = left.shape[0]
    if right.shape[0] != n:
        raise _bad(where, "left and right children arrays differ in length")
    leaf = left == leaf_value
    if not np.array_equal(leaf, right == leaf_value):
        i = int(np.flatnonzero(leaf != (right == leaf_value))[0])
        raise _bad(where, f"node {i} has one child")
    inner = np.flatnonzero(~leaf)
    for side, child in (("left", left[inner]), ("right", right[inner])):
        bad = (child <= inner) | (child >= n)
        if bad.any():
            i = int(inner[np.argmax(bad)])
            c = int(child[np.argmax(bad)])
            raise _bad(where, f"node {i}'s {side} child {c} is out of range or not after its "
                       f"parent (nodes 0..{n - 1})")
    counts = np.bincount(np.concatenate([left[inner], right[inner]]).astype(np.int64),
                         minlength=n)
    if n and counts[0] != 0 or (counts[1:] != 1).any():
        i = int(np.flatnonzero(counts[1:] != 1)[0]) + 1 if (counts[1:] != 1).any() else 0
        raise _bad(where, f"node {i} has {int(counts[i])} parents (a tree gives each node "
                   "but the root exactly one)")
    depth = np.zeros(n, dtype=np.int64)
    frontier = np.array([0], dtype=np.int64) if n else np.empty(0, dtype=np.int64)
    d = 0
    while frontier.size:  # one vectorized step per level; children > parent bounds it by n
        frontier = frontier[~leaf[frontier]]
        d += 1
        frontier = np.concatenate([left[frontier], right[frontier]]).astype(np.int64)
        depth[frontier] = d
    return depth


def check_sklearn_tree(tree: Any, where: str, n_features: int | None = None) -> None:
    """Validate a ``sklearn.tree._tree.Tree`` (see the module docstring)."""
    state = tree.__getstate__()
    nodes, values = state.get("nodes"), state.get("values")
    n = int(state.get("node_count", -1))
    if not isinstance(nodes, np.ndarray) or nodes.dtype.names is None or nodes.ndim != 1:
        raise _bad(where, "the node array is missing or not a record array")
    if n < 1 or nodes.shape[0] != n:
        raise _bad(where, f"node_count {n} does not match the {nodes.shape[0]} node records")
    need = ("left_child", "right_child", "feature", "threshold", "n_node_samples")
    if any(f not in nodes.dtype.names for f in need):
        raise _bad(where, "the node records lack fields scikit-learn needs")
    left = nodes["left_child"].astype(np.int64)
    right = nodes["right_child"].astype(np.int64)
    depth = _check_children(where, left, right, -1)
    if depth.max() > MAX_TREE_DEPTH:
        raise _bad(where, f"a path is {int(depth.max()):,} deep (anonml reads trees up to "
                   f"{MAX_TREE_DEPTH:,} levels)")
    if depth.max() > int(state.get("max_depth", -1)):
        raise _bad(where, f"a path is {int(depth.max())} deep but max_depth says "
                   f"{state.get('max_depth')}")
    inner = left != -1
    nf = int(tree.n_features)
    if n_features is not None and nf != int(n_features):
        raise _bad(where, f"the tree reads {nf} features but its estimator has "
                   f"n_features_in_={n_features}")
    feat = nodes["feature"][inner]
    if feat.size and (feat.min() < 0 or feat.max() >= nf):
        raise _bad(where, f"a split reads feature {int(feat.max() if feat.max() >= nf else feat.min())}"
                   f", outside 0..{nf - 1}")
    if not np.isfinite(nodes["threshold"][inner]).all():
        raise _bad(where, "a split threshold is not finite")
    if "missing_go_to_left" in nodes.dtype.names and (nodes["missing_go_to_left"] > 1).any():
        raise _bad(where, "missing_go_to_left holds a value other than 0 and 1")
    n_outputs = int(tree.n_outputs)
    n_classes = np.asarray(tree.n_classes)
    if n_outputs < 1 or n_classes.shape != (n_outputs,) or (n_classes < 1).any():
        raise _bad(where, f"the tree has {n_outputs} outputs and class counts "
                   f"{n_classes.tolist()[:5]}; every output needs at least one value")
    if not isinstance(values, np.ndarray) or values.ndim != 3 or values.shape[:2] != (n, n_outputs) \
            or n_classes.shape != (n_outputs,) or values.shape[2] != int(n_classes.max()):
        raise _bad(where, f"the value array has shape {getattr(values, 'shape', None)}, not "
                   f"({n}, {n_outputs}, {int(n_classes.max()) if n_classes.size else '?'})")
    if not np.isfinite(values).all():
        raise _bad(where, "a leaf value is not finite")


def _check_hgb(model: Any, where: str, strict: bool) -> None:
    """HistGradientBoosting: predictors are called on the validated input (width
    ``n_features_in_``), one per output column per iteration. Under ``strict`` (an untrusted
    file) categorical models are refused: their bitsets are indexed through the bin mapper's
    own flags without bounds checks, and a genuine one holds a ``functools.partial`` anyway."""
    predictors = model.__dict__.get("_predictors")
    if predictors is None:
        return
    nf = _n_features(model, where)
    k = model.__dict__.get("n_trees_per_iteration_")
    expected = _expected_outputs(model)
    if not _exact_int(k) or (expected is not None and int(k) != expected):
        raise _bad(where, f"n_trees_per_iteration_ {k!r} does not match its classes")
    k = int(k)
    if not isinstance(predictors, list) or not predictors:
        raise _bad(f"{where}._predictors", "is not a non-empty list")
    if strict:
        cat_flags = [model.__dict__.get("is_categorical_"),
                     getattr(model.__dict__.get("_bin_mapper"), "is_categorical_", None)]
        if model.__dict__.get("_preprocessor") is not None or any(
                f is not None and np.asarray(f).any() for f in cat_flags):
            raise _bad(where, "categorical HistGradientBoosting models are not read without "
                       "--trust-model (trust=True)")
    for i, row in enumerate(predictors):
        if not isinstance(row, (list, tuple)) or len(row) != k:
            raise _bad(f"{where}._predictors[{i}]", f"does not hold n_trees_per_iteration_={k} "
                       "trees")
        for j, pred in enumerate(row):
            w = f"{where}._predictors[{i}][{j}]"
            nodes = getattr(pred, "nodes", None)
            if not isinstance(nodes, np.ndarray) or nodes.dtype.names is None or nodes.ndim != 1 \
                    or nodes.shape[0] < 1:
                raise _bad(w, "the node array is missing or not a record array")
            leaf = nodes["is_leaf"].astype(bool)
            left = np.where(leaf, -1, nodes["left"].astype(np.int64))
            right = np.where(leaf, -1, nodes["right"].astype(np.int64))
            _check_children(w, left, right, -1)
            feat = nodes["feature_idx"][~leaf]
            if feat.size and (feat.min() < 0 or feat.max() >= nf):
                raise _bad(w, f"a split reads a feature outside 0..{nf - 1}")
            if np.isnan(nodes["num_threshold"][~leaf]).any() or not np.isfinite(
                    nodes["value"][leaf]).all():
                raise _bad(w, "a threshold or leaf value is NaN or infinite")
            cat = (~leaf) & (nodes["is_categorical"] != 0)
            bitsets = np.asarray(getattr(pred, "raw_left_cat_bitsets", np.empty((0, 8))))
            if bitsets.ndim != 2 or bitsets.shape[1] != 8 or bitsets.dtype != np.uint32:
                raise _bad(w, "raw_left_cat_bitsets is not an (n, 8) array of uint32")
            if cat.any():
                if strict:
                    raise _bad(w, "a categorical split in an untrusted file")
                is_cat = model.__dict__.get("is_categorical_")
                if is_cat is None or not np.asarray(is_cat)[nodes["feature_idx"][cat]].all() \
                        or nodes["bitset_idx"][cat].max() >= bitsets.shape[0]:
                    raise _bad(w, "a categorical split points outside its bitsets")


def _check_weights(model: Any, where: str, nf: int | None) -> None:
    coefs = getattr(model, "coefs_", None)
    if coefs is not None:  # multi-layer perceptron
        inter = getattr(model, "intercepts_", None)
        if not isinstance(coefs, list) or not isinstance(inter, list) or len(coefs) != len(inter):
            raise _bad(where, "coefs_ and intercepts_ are not matching lists")
        width = nf
        for i, (w, b) in enumerate(zip(coefs, inter)):
            w, b = np.asarray(w), np.asarray(b)
            if w.ndim != 2 or (width is not None and w.shape[0] != width) or b.shape != (w.shape[1],):
                raise _bad(where, f"layer {i} has weights {w.shape} and bias {b.shape}, which do "
                           f"not chain from {width} inputs")
            if not (np.isfinite(w).all() and np.isfinite(b).all()):
                raise _bad(where, f"layer {i} holds a weight that is not finite")
            width = w.shape[1]
        return
    coef = getattr(model, "coef_", None)
    if coef is not None and isinstance(coef, np.ndarray) and hasattr(model, "classes_"):
        rows = _expected_outputs(model)
        if coef.ndim != 2 or (nf is not None and coef.shape[1] != nf) or \
                (rows is not None and coef.shape[0] != rows):
            raise _bad(where, f"coef_ has shape {coef.shape}, not ({rows}, {nf})")
        intercept = np.asarray(getattr(model, "intercept_", np.zeros(coef.shape[0])))
        if intercept.shape != (coef.shape[0],):
            raise _bad(where, f"intercept_ has shape {intercept.shape}, not ({coef.shape[0]},)")
        if not np.isfinite(coef).all() or not np.isfinite(intercept).all():
            raise _bad(where, "coef_ or intercept_ holds a value that is not finite")


def _check_rff(model: Any, where: str, nf: int) -> None:
    """anonml's DP SVC: frequencies (features × D), weights on the 2D cos/sin features, one
    intercept a row, per-feature bounds; all finite."""
    d = model.__dict__
    omega, coef, inter = (d.get(k) for k in ("random_weights_", "coef_", "intercept_"))
    if not all(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in (omega, coef, inter)):
        raise _bad(where, "random_weights_, coef_ and intercept_ are not float arrays")
    rows = _expected_outputs(model)
    if omega.ndim != 2 or omega.shape[0] != nf or not 1 <= omega.shape[1] <= 20_000 or \
            coef.shape != (rows, 2 * omega.shape[1]) or inter.shape != (rows,):
        raise _bad(where, f"random_weights_ {omega.shape}, coef_ {coef.shape} and intercept_ "
                   f"{inter.shape} do not chain from {nf} features to {rows} score(s)")
    bounds = d.get("bounds_")
    if not (isinstance(bounds, tuple) and len(bounds) == 2 and all(
            isinstance(b, np.ndarray) and b.shape == (nf,) and b.dtype.kind == "f"
            for b in bounds)) or not (bounds[0] <= bounds[1]).all():
        raise _bad(f"{where}.bounds_", f"is not a pair of {nf} ordered lower and upper bounds")
    if not all(np.isfinite(a).all() for a in (omega, coef, inter, *bounds)):
        raise _bad(where, "a frequency, weight or bound is not finite")
    # the epsilon the rules read (epsilon_spent_) is the one the refits use (epsilon)
    spent, eps = d.get("epsilon_spent_"), d.get("epsilon")
    if spent is not None and not (isinstance(spent, float) and isinstance(eps, (int, float))
                                  and not isinstance(eps, bool) and spent == float(eps)):
        raise _bad(where, f"epsilon_spent_ {str(spent)[:20]} is not its epsilon "
                   f"{str(eps)[:20]}")


def _forward(where: str, child: np.ndarray, parent: np.ndarray, n: int, what: str) -> None:
    """Every child lies after its parent and inside the ``n`` nodes: a walk down such a tree
    (one vectorized step per level) always ends."""
    if ((child <= parent) | (child >= n)).any():
        raise _bad(where, f"{what} is out of range or not after its node (nodes 0..{n - 1})")


def _check_anonml_tree(obj: Any, where: str) -> None:
    """anonml's own node-array trees (the histogram tree of AG, Mondrian's cut tree): every
    child an internal node can route to lies after it and inside the arrays, so ``apply``
    ends."""
    from anonml.anonymize._rtree import _ranges

    feature = np.asarray(getattr(obj, "feature_", np.empty(0)))
    n = feature.shape[0]
    if feature.ndim != 1 or n < 1:
        raise _bad(where, "the tree has no node array")
    inner = np.flatnonzero(feature >= 0)
    if type(obj).__name__ == "RoutingTree":
        _check_routing_tree(obj, where, feature, inner, n)
        return
    if type(obj).__name__ == "HistTree":
        if any(np.asarray(a).shape != (n,) for a in (obj.children_left_, obj.children_right_,
                                                     obj.threshold_, obj.offset_)):
            raise _bad(where, "the node arrays differ in length")
        for side in (obj.children_left_, obj.children_right_):
            _forward(where, np.asarray(side)[inner], inner, n, "a node's child")
        return
    # Mondrian's _CutTree: children stored from child_offset_, 2 or lca_size_ of them
    nodes = np.asarray(obj.child_nodes_)
    off = np.asarray(obj.child_offset_)[inner]
    width = np.where(np.asarray(obj.kind_)[inner] == 2,  # _CHILDREN: a hierarchy cut
                     np.asarray(obj.lca_size_)[inner], 2)
    if (off < 0).any() or (width < 1).any() or (off + width > nodes.size).any():
        raise _bad(where, "a cut's children lie outside the child array")
    pos, ordinal, _ = _ranges(off, width)
    _forward(where, nodes[pos], inner[ordinal], n, "a cut's child")
    _forward(where, np.asarray(obj.largest_)[inner], inner, n, "a cut's child")


def _check_routing_tree(obj: Any, where: str, feature: np.ndarray, inner: np.ndarray,
                        n: int) -> None:
    """A released mapping's routing tree: node arrays of one length, children after their
    node, splits reading its own columns, categorical splits naming categories it holds."""
    d = obj.__dict__
    arrays = {a: np.asarray(d.get(a, np.empty(0))) for a in (
        "threshold_", "left_", "right_", "group_", "cat_offset_", "cat_count_", "cat_missing_",
        "named_left_")}
    if any(a.shape != (n,) for a in arrays.values()):
        raise _bad(where, "the routing tree's node arrays differ in length")
    columns, categorical, cats = d.get("columns"), d.get("categorical"), d.get("categories_")
    if isinstance(cats, np.ndarray) and cats.dtype.kind == "U" and cats.ndim == 1:
        cats = cats.tolist()
    if not isinstance(columns, list) or not isinstance(categorical, list) or \
            not isinstance(cats, list) or not set(categorical) <= set(columns):
        raise _bad(where, "the routing tree lacks its columns or categories")
    for side in (arrays["left_"], arrays["right_"]):
        _forward(where, side[inner], inner, n, "a split's child")
    if inner.size and (feature[inner].max() >= len(columns)):
        raise _bad(where, "a split reads a column the routing tree does not have")
    off, cnt = arrays["cat_offset_"][inner], arrays["cat_count_"][inner]
    named = off >= 0
    if (cnt < 0).any() or (off[named] + cnt[named] > len(cats)).any():
        raise _bad(where, "a split names categories outside the routing tree's list")
    if not all(type(v) in (str, int, float, bool) for v in cats):
        raise _bad(where, "the routing tree names a category that is not a plain value")
    texts = d.get("text_thresholds_", [])
    if isinstance(texts, np.ndarray) and texts.dtype.kind == "U" and texts.ndim == 1:
        texts = texts.tolist()
    tidx = np.asarray(d.get("text_index_", np.full(n, -1)))
    if not isinstance(texts, list) or not all(type(t) is str for t in texts) or \
            tidx.shape != (n,) or (tidx >= len(texts)).any():
        raise _bad(where, "the routing tree's text thresholds do not match its splits")


MAX_NESTING = 50


def _check_attributes(obj: Any, where: str) -> None:
    """No restored attribute may shadow a method or property of the class (a file could set
    ``predict_proba`` to a number and have the audit read its own input back), and no dunder
    attribute is restored."""
    cls = type(obj)
    for name in vars(obj):
        if not isinstance(name, str) or name.startswith("__"):
            raise _bad(where, f"it restores the attribute {str(name)[:40]!r}")
        static = None
        for klass in cls.__mro__:
            if name in vars(klass):
                static = vars(klass)[name]
                break
        if static is not None and (callable(static) or isinstance(
                static, (property, staticmethod, classmethod))):
            raise _bad(where, f"its attribute {name!r} hides the class's method or property")


def _expected_outputs(obj: Any) -> int | None:
    classes = obj.__dict__.get("classes_")
    if not isinstance(classes, np.ndarray) or classes.ndim != 1:
        return None
    return 1 if classes.size <= 2 else int(classes.size)


def _check_members(obj: Any, where: str, nf: int) -> None:
    """Forests' and boosting's member trees are called with ``check_input=False`` on the
    parent's validated input: each must read exactly the parent's features, and gradient
    boosting's grid of trees must match the output columns it writes into."""
    from sklearn.base import BaseEstimator
    from sklearn.tree._tree import Tree

    ests = obj.__dict__.get("estimators_")
    if ests is None:
        return
    if type(obj).__name__.endswith("GradientBoostingClassifier"):
        k = obj.__dict__.get("n_trees_per_iteration_", None)
        expected = _expected_outputs(obj)
        if not isinstance(ests, np.ndarray) or ests.ndim != 2 or not _exact_int(k) or \
                ests.shape[1] != int(k) or (expected is not None and int(k) != expected) or \
                ests.shape[0] < 1:
            raise _bad(f"{where}.estimators_", f"shape {getattr(ests, 'shape', None)} does not "
                       f"match the {k} output column(s) of {expected} classes")
        n_est = obj.__dict__.get("n_estimators_")
        if n_est is not None and (not _exact_int(n_est) or int(n_est) != ests.shape[0]):
            raise _bad(where, f"n_estimators_ {n_est!r} does not match its {ests.shape[0]} stages")
    flat = np.asarray(ests, dtype=object).ravel() if isinstance(ests, (list, np.ndarray)) else None
    if flat is None or flat.size == 0:
        raise _bad(f"{where}.estimators_", "is not a non-empty list of fitted trees")
    boosting = type(obj).__name__.endswith("GradientBoostingClassifier")
    forest = not boosting and ("Forest" in type(obj).__name__ or
                               "ExtraTrees" in type(obj).__name__)
    classes = obj.__dict__.get("classes_")
    n_cls = classes.size if isinstance(classes, np.ndarray) and classes.ndim == 1 else None
    for i, est in enumerate(flat):
        w = f"{where}.estimators_[{i}]"
        if not isinstance(est, BaseEstimator):
            raise _bad(w, f"is a {type(est).__name__}, not a fitted estimator")
        tree = est.__dict__.get("tree_")
        if (boosting or forest) and not isinstance(tree, Tree):
            raise _bad(w, "has no fitted tree (tree_)")
        if isinstance(tree, Tree):
            if int(tree.n_features) != nf or est.__dict__.get("n_features_in_", nf) != nf:
                raise _bad(w, f"reads {int(tree.n_features)} features but the ensemble reads "
                           f"{nf}")
            shape = np.asarray(tree.value).shape
            if boosting and (int(tree.n_outputs) != 1 or shape[1:] != (1, 1)):
                raise _bad(w, f"is a boosting stage whose leaf values have shape {shape}, not "
                           f"({shape[0]}, 1, 1) (one raw score per leaf)")
            if forest and n_cls is not None and (int(tree.n_outputs) != 1 or
                                                 shape[1:] != (1, n_cls)):
                raise _bad(w, f"has leaf values of shape {shape}, not ({shape[0]}, 1, {n_cls}) "
                           f"for the forest's {n_cls} classes")


#: hyperparameters the audit's reference models (and ``--retrain``) are refitted with: bounds
#: far above any genuine model, so a file cannot make the checker fit for ever
REFIT_BOUNDS = {"n_estimators": 20_000, "max_iter": 1_000_000, "n_iter_no_change": 1_000_000,
                "max_leaf_nodes": 10_000_000, "num_parallel_tree": 1_000}


def _check_refit_params(obj: Any, where: str) -> None:
    params = obj.__dict__
    for name, bound in REFIT_BOUNDS.items():
        value = params.get(name)
        if value is not None and _exact_int(value) and int(value) > bound:
            raise _bad(where, f"{name}={value} is above anonml's bound of {bound:,} (the audit "
                       "refits the model's copies with these parameters)")
    sizes = params.get("hidden_layer_sizes")
    if sizes is not None:
        units = np.atleast_1d(np.asarray(sizes, dtype=np.float64))
        if units.size > 1_000 or (units > 100_000).any() or (units < 1).any():
            raise _bad(where, f"hidden_layer_sizes {str(sizes)[:40]} is out of anonml's bounds "
                       "(at most 1,000 layers of at most 100,000 units)")


def _check_param_values(obj: Any, where: str) -> None:
    """A scikit-learn estimator's parameters must be values its own constraints accept (a
    criterion named by a 100 KB string, a random_state that is a list of rows: a parameter
    the predict path never reads could otherwise carry anything)."""
    validate = getattr(obj, "_validate_params", None)
    if not type(obj).__module__.startswith(("sklearn.", SAFE_WRAPPERS, SAFE_OPTIONAL)) or \
            not callable(validate) or not hasattr(type(obj), "_parameter_constraints"):
        return
    try:
        validate()
    except (ValueError, TypeError) as exc:
        raise _bad(where, f"a parameter is not one scikit-learn accepts "
                   f"({one_line(exc, 160)})") from None


def _check_dummy(obj: Any, where: str, n_classes: int | None = None) -> None:
    """A DummyClassifier (alone, or gradient boosting's ``init_``): its class count and priors
    decide the width of the probabilities it returns, which boosting adds into its own."""
    classes = obj.__dict__.get("classes_")
    k = obj.__dict__.get("n_classes_")
    prior = np.asarray(obj.__dict__.get("class_prior_", np.empty(0)))
    if not isinstance(classes, np.ndarray) or classes.ndim != 1 or not _exact_int(k) or \
            int(k) != classes.size or prior.shape != (classes.size,) or \
            obj.__dict__.get("n_outputs_") != 1 or not np.isfinite(prior).all() or \
            (n_classes is not None and classes.size != n_classes):
        raise _bad(where, "its classes, class count and priors disagree")
    if obj.__dict__.get("_strategy", obj.__dict__.get("strategy")) not in (
            "prior", "most_frequent", "stratified", "uniform"):
        raise _bad(where, "its strategy is not one anonml reads")


def _check_loss(obj: Any, where: str) -> None:
    """Boosting's loss decides how many raw-prediction columns are kept before the trees add
    ``n_trees_per_iteration_`` columns into them (without bounds checks): it must fit the
    classes."""
    loss = obj.__dict__["_loss"]
    k = np.asarray(obj.__dict__.get("classes_", [])).size
    kind = type(loss).__name__
    if k > 2:
        ok = kind == "HalfMultinomialLoss" and getattr(loss, "n_classes", None) == k
    else:
        ok = kind in ("HalfBinomialLoss", "ExponentialLoss")
    if not ok or bool(getattr(loss, "is_multiclass", k > 2)) != (k > 2):
        raise _bad(f"{where}._loss", f"the loss {kind} does not fit {k} classes")


def _check_onehot(obj: Any, where: str, strict: bool) -> None:
    """OneHotEncoder: the output offsets it writes at come from ``_n_features_outs``; recompute
    them from the categories (and what is dropped) and compare."""
    cats = obj.__dict__.get("categories_")
    if cats is None:
        return
    nf = _n_features(obj, where)
    if not isinstance(cats, list) or len(cats) != nf or any(
            not isinstance(c, np.ndarray) or c.ndim != 1 for c in cats):
        raise _bad(where, f"categories_ is not one 1-D array for each of the {nf} features")
    if obj.__dict__.get("_infrequent_enabled"):
        if strict:
            raise _bad(where, "infrequent-category grouping is not read without --trust-model")
        return
    drop = obj.__dict__.get("_drop_idx_after_grouping")
    if drop is not None:
        drop = list(drop)
        if len(drop) != nf or any(d is not None and not (_exact_int(d) and 0 <= d < len(c))
                                  for d, c in zip(drop, cats)):
            raise _bad(where, "the dropped categories lie outside the categories")
    expected = [len(c) - (1 if drop is not None and drop[i] is not None else 0)
                for i, c in enumerate(cats)]
    if list(obj.__dict__.get("_n_features_outs", expected)) != expected:
        raise _bad(where, "its output widths do not match its categories")


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and np.isnan(value))


def _check_categories(obj: Any, where: str) -> None:
    """OneHotEncoder and OrdinalEncoder: scikit-learn encodes numeric columns with
    ``np.searchsorted`` on each feature's categories, so they must be strictly increasing and
    finite (a final NaN for missing values); string categories must be unique, and sorted as
    scikit-learn sorts them unless the encoder was given its categories. ``_missing_indices``
    must point at a missing value."""
    cats = obj.__dict__.get("categories_")
    if cats is None:
        return
    nf = _n_features(obj, where)
    if not isinstance(cats, list) or len(cats) != nf or any(
            not isinstance(c, np.ndarray) or c.ndim != 1 or c.size < 1 for c in cats):
        raise _bad(where, f"categories_ is not one non-empty 1-D array for each of the {nf} "
                   "features")
    given = obj.__dict__.get("categories", "auto")
    for i, c in enumerate(cats):
        w = f"{where}.categories_[{i}]"
        if c.dtype.kind in "biuf" or (c.dtype == object and all(
                isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                for v in c.tolist())):
            vals = c.astype(np.float64)
            body = vals[:-1] if np.isnan(vals[-1]) else vals
            if not np.isfinite(body).all() or (np.diff(body) <= 0).any():
                raise _bad(w, "numeric categories are not strictly increasing and finite (a "
                           "missing value may only come last); scikit-learn looks values up "
                           "by binary search")
            continue
        if c.dtype.kind not in "OUS":
            raise _bad(w, f"categories of dtype {c.dtype} cannot be encoded")
        items = c.tolist()
        body = items[:-1] if _is_missing(items[-1]) else items
        if any(_is_missing(v) for v in body) or any(not isinstance(v, str) for v in body):
            raise _bad(w, "holds a missing value before the end, or a value that is neither "
                       "text nor a number")
        if len(set(body)) != len(body):
            raise _bad(w, "repeats a category")
        if isinstance(given, str) and given == "auto" and body != sorted(body):
            raise _bad(w, "string categories are not sorted as scikit-learn sorts them")
    missing = obj.__dict__.get("_missing_indices", {})
    if not isinstance(missing, dict) or any(
            not (_exact_int(f) and 0 <= int(f) < nf) or not (_exact_int(j) and
                                                            0 <= int(j) < cats[int(f)].size)
            or not _is_missing(cats[int(f)][int(j)]) for f, j in missing.items()):
        raise _bad(where, "_missing_indices does not point at the missing value of a feature")


def _check_scaler(obj: Any, where: str) -> None:
    """Scalers and the imputer: every per-feature array ``transform`` reads has one finite
    entry per input feature."""
    names = {"StandardScaler": ("mean_", "scale_", "var_"),
             "MinMaxScaler": ("min_", "scale_", "data_min_", "data_max_", "data_range_"),
             "MaxAbsScaler": ("scale_", "max_abs_"), "RobustScaler": ("center_", "scale_"),
             "SimpleImputer": ("statistics_",)}[type(obj).__name__]
    if not any(n in obj.__dict__ for n in names):
        return
    # the imputer's statistics_ may be NaN (a column with no observed value)
    per_feature(obj, where, names, finite=tuple(n for n in names if n != "statistics_"))


def _check_classifier_outputs(obj: Any, where: str) -> None:
    """A single tree, an MLP, HistGradientBoosting: the width of what ``predict_proba``
    computes must match ``classes_`` (``predict`` takes ``classes_[argmax]``)."""
    classes = obj.__dict__.get("classes_")
    if not isinstance(classes, np.ndarray) or classes.ndim != 1:
        return
    k = classes.size
    if k < 1:
        raise _bad(f"{where}.classes_", "is empty")
    name = type(obj).__name__
    n_cls = obj.__dict__.get("n_classes_")
    if n_cls is not None and not isinstance(n_cls, (list, np.ndarray)) and (
            not _exact_int(n_cls) or int(n_cls) != k):
        raise _bad(where, f"n_classes_ {str(n_cls)[:20]} does not match its {k} classes")
    tree = obj.__dict__.get("tree_")
    from sklearn.tree._tree import Tree

    if isinstance(tree, Tree) and "Regressor" not in name:
        if int(tree.n_outputs) != 1 or np.asarray(tree.n_classes).tolist() != [k] or \
                obj.__dict__.get("n_outputs_", 1) != 1:
            counts = np.asarray(tree.n_classes).tolist()[:5]
            raise _bad(f"{where}.tree_", f"has class counts {counts} but the classifier has "
                       f"{k} classes")
    coefs = obj.__dict__.get("coefs_")
    if isinstance(coefs, list) and coefs:
        out = np.asarray(coefs[-1]).shape[-1]
        want = 1 if k <= 2 else k
        if out != want or obj.__dict__.get("n_outputs_", out) != out or \
                obj.__dict__.get("n_layers_", len(coefs) + 1) != len(coefs) + 1:
            raise _bad(where, f"its last layer has {out} outputs (n_outputs_ "
                       f"{obj.__dict__.get('n_outputs_')}, n_layers_ "
                       f"{obj.__dict__.get('n_layers_')}) but {k} classes need {want}")
        if obj.__dict__.get("out_activation_") not in ("logistic", "softmax", "identity"):
            raise _bad(where, "its output activation is not one scikit-learn uses")
        binarizer = obj.__dict__.get("_label_binarizer")
        if binarizer is not None and not np.array_equal(
                np.asarray(getattr(binarizer, "classes_", [])).astype(str), classes.astype(str)):
            raise _bad(f"{where}._label_binarizer", "its classes differ from the model's")
    base = obj.__dict__.get("_baseline_prediction")
    if base is not None:
        k_trees = obj.__dict__.get("n_trees_per_iteration_")
        arr = np.asarray(base)
        if arr.shape != (1, k_trees) or not np.isfinite(arr).all():
            raise _bad(f"{where}._baseline_prediction", f"has shape {arr.shape}, not "
                       f"(1, {k_trees}), or is not finite")


def _check_rtree_routes(obj: Any, where: str) -> None:
    """RTreeAnonymizer's split tree (``_tree``): inner nodes route to later nodes only."""
    tree = obj.__dict__.get("_tree")
    if tree is None:
        return
    try:
        axis, thr, left, right, group = (np.asarray(tree[k]) for k in (
            "axis", "thr", "left", "right", "group"))
    except (TypeError, KeyError):
        raise _bad(where, "the split tree lacks its arrays") from None
    n = axis.shape[0] if axis.ndim == 1 else -1
    if n < 1 or any(a.shape != (n,) for a in (thr, left, right, group)):
        raise _bad(where, "the split tree's arrays differ in length")
    inner = np.flatnonzero(axis >= 0)
    for child in (left[inner], right[inner]):
        _forward(where, child, inner, n, "a split's child")
    n_qi = len(obj.__dict__.get("qi_") or ())
    if inner.size and axis[inner].max() >= n_qi:
        raise _bad(where, "a split reads a quasi-identifier the mapping does not have")


def _walk(obj: Any, where: str, seen: set[int], depth: int, strict: bool = True) -> None:
    from sklearn.base import BaseEstimator
    from sklearn.tree._tree import Tree

    if id(obj) in seen:
        return
    if depth > MAX_NESTING:
        raise _bad(where, f"the model is nested more than {MAX_NESTING} levels deep")
    seen.add(id(obj))
    if isinstance(obj, Tree):
        check_sklearn_tree(obj, where)
        return
    if isinstance(obj, np.ndarray) and obj.dtype == object and _plain_values(obj):
        return
    if isinstance(obj, (list, tuple)) or (isinstance(obj, np.ndarray) and obj.dtype == object):
        for i, item in enumerate(np.asarray(obj, dtype=object).ravel()
                                 if isinstance(obj, np.ndarray) else obj):
            _walk(item, f"{where}[{i}]", seen, depth + 1, strict)
        return
    if isinstance(obj, dict):
        for key, item in obj.items():
            _walk(item, f"{where}[{key!r}]", seen, depth + 1, strict)
        return
    ours = type(obj).__module__.startswith("anonml.")
    if isinstance(obj, BaseEstimator) or ours:
        _check_attributes(obj, where)
    if _is_xgboost(obj):
        from anonml.modelfile._validate_xgboost import validate_xgboost_model

        validate_xgboost_model(json.loads(bytes(obj.get_booster().save_raw("json"))))
        return
    if ours and type(obj).__name__ in ("HistTree", "_CutTree", "RoutingTree"):
        _check_anonml_tree(obj, where)
    if ours and type(obj).__name__ == "RTreeAnonymizer":
        _check_rtree_routes(obj, where)
    if ours and type(obj).__name__.endswith("Anonymizer") and "representatives_" in obj.__dict__:
        from anonml.modelfile._mapping import verify_mapping

        verify_mapping(obj, where=where, released=strict)  # counts >= k, group maps, representative table
    if ours and type(obj).__name__ == "HilbertAnonymizer" and "bits_" in obj.__dict__:
        bits = obj.__dict__["bits_"]
        if not _exact_int(bits) or not 1 <= int(bits) <= 64:
            raise _bad(where, f"bits_ {str(bits)[:20]} is not a curve order between 1 and 64")
    from anonml.modelfile._pipeline_types import check_part

    if check_part(obj, where) and not isinstance(obj, BaseEstimator):
        return  # a column selector: three plain settings, checked
    if not isinstance(obj, BaseEstimator):
        if ours:  # an anonymizer's plain-data parts
            for name, value in vars(obj).items():
                _walk(value, f"{where}.{name}", seen, depth + 1, strict)
        return
    fitted = any(n.endswith("_") and not n.startswith("_") for n in obj.__dict__)
    tree = obj.__dict__.get("tree_")
    needs_width = isinstance(tree, Tree) or "estimators_" in obj.__dict__ or \
        "_predictors" in obj.__dict__ or "coefs_" in obj.__dict__ or "coef_" in obj.__dict__
    nf = _n_features(obj, where) if fitted and needs_width else None
    if isinstance(tree, Tree):
        check_sklearn_tree(tree, f"{where}.tree_", nf)
    classes = obj.__dict__.get("classes_")
    if isinstance(classes, np.ndarray) and classes.ndim == 1 and \
            len(np.unique(classes.astype(str))) != len(classes):
        raise _bad(f"{where}.classes_", "repeats a class")
    if isinstance(classes, np.ndarray) and classes.size > MAX_CLASSES and strict:
        raise _bad(f"{where}.classes_", f"holds {classes.size:,} classes (anonml reads at most "
                   f"{MAX_CLASSES:,} from an untrusted file)")
    if strict:
        _check_refit_params(obj, where)
        _check_param_values(obj, where)
    name = type(obj).__name__
    if name == "DummyClassifier":
        _check_dummy(obj, where)
    if name == "OneHotEncoder":
        _check_onehot(obj, where, strict)
    if name in ("OneHotEncoder", "OrdinalEncoder"):
        _check_categories(obj, where)
    if name in ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler",
                "SimpleImputer") and type(obj).__module__.startswith("sklearn."):
        _check_scaler(obj, where)
    if hasattr(obj, "predict_proba") or "classes_" in obj.__dict__:
        _check_classifier_outputs(obj, where)
    if name.endswith("GradientBoostingClassifier") and "_loss" in obj.__dict__:
        _check_loss(obj, where)
    if name.endswith("GradientBoostingClassifier") and "init_" in obj.__dict__:
        init = obj.__dict__["init_"]
        if init != "zero":
            if type(init).__name__ != "DummyClassifier":
                raise _bad(f"{where}.init_", "is neither 'zero' nor a DummyClassifier")
            _check_dummy(init, f"{where}.init_", n_classes=np.asarray(classes).size)
    _check_hgb(obj, where, strict)
    if ours and "random_weights_" in obj.__dict__:
        _check_rff(obj, where, nf)  # coef_ reads the random features, not the inputs
    else:
        _check_weights(obj, where, nf)
    if nf is not None:
        _check_members(obj, where, nf)
    for name, value in obj.__dict__.items():
        if isinstance(value, Tree):
            continue  # checked above, with the estimator's n_features_in_
        if isinstance(value, (BaseEstimator, list, tuple, dict)) or (
                isinstance(value, np.ndarray) and value.dtype == object) or \
                type(value).__module__.startswith("anonml."):
            _walk(value, f"{where}.{name}", seen, depth + 1, strict)


def _plain_values(arr: np.ndarray) -> bool:
    """True when an object array holds only strings, numbers, booleans or missing values (a
    column of representatives, say): nothing in it to walk, checked at C speed."""
    import pandas as pd

    return pd.api.types.infer_dtype(arr.ravel(), skipna=True) in (
        "string", "bytes", "integer", "floating", "mixed-integer-float", "decimal", "boolean",
        "empty", "datetime", "date", "timedelta")


def _is_xgboost(obj: Any) -> bool:
    return any(c.__module__.startswith("xgboost.") and c.__name__ == "XGBModel"
               for c in type(obj).__mro__)


def validate_model(model: Any, where: str = "model", *, strict: bool = True) -> None:
    """Validate a loaded model's structure before anything calls it.

    Parameters
    ----------
    model : estimator
        A fitted scikit-learn, anonml or XGBoost estimator, or a pipeline of them.
    where : str
        How messages name the model (e.g. the file name).
    strict : bool, default True
        For an untrusted file: also refuse structures anonml cannot check to the end
        (categorical HistGradientBoosting). ``load_model(trust=True)`` passes False.

    Raises
    ------
    InputError
        One line naming the part that is wrong (``model.steps[1].estimators_[3].tree_: node 0's
        left child 1000000000 is out of range ...``).
    """
    try:
        _walk(model, where, set(), 0, strict)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a structure too odd to inspect is refused too
        raise _bad(where, f"its structure cannot be checked ({type(exc).__name__}: "
                   f"{one_line(exc, 200)})") from None
