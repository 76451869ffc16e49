"""Validation of XGBoost model documents, decoded by anonml before XGBoost's parser reads them.

XGBoost's predictor follows node indices from the file without bounds checks and walks trees
recursively, so a crafted model can read out of bounds, loop or overflow the stack. This module
decodes the document itself (JSON, or UBJSON with a small bounded decoder: XGBoost's Python
package has none) and checks it before :class:`xgboost.XGBClassifier` sees the bytes: per-node
arrays of ``num_nodes`` entries, children in range, every node reached once from the root (no
cycle, no shared child) within :data:`~anonml.modelfile._limits.MAX_TREE_DEPTH` levels,
consistent parents, split indices below ``num_feature``, finite split values, the category
table, and the tree/class/iteration bookkeeping. The scikit-learn side is in
:mod:`anonml.modelfile._validate`.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import numpy as np

from anonml._errors import InputError
from anonml.modelfile._limits import MAX_CLASSES, MAX_TREE_DEPTH
from anonml.modelfile._limits import bad as _bad

__all__ = ["decode_xgboost_raw", "validate_xgboost_model"]

# ----------------------------------------------------------------------------- key sets
# The exact keys of every object in the documents XGBoost 2.x and 3.x write for classifiers
# (gbtree, dart, gblinear; binary and multiclass; categorical), read from what they write. A
# key outside them is refused: a model file holds the model and nothing else (an unknown key
# is ignored by XGBoost's parser, so it could carry anything). ``None`` is a value (a number,
# a string or an array of them); a one-element list is an array of objects of that shape.

_TREE = {k: None for k in (
    "base_weights", "categories", "categories_nodes", "categories_segments",
    "categories_sizes", "default_left", "id", "left_children", "loss_changes", "parents",
    "right_children", "split_conditions", "split_indices", "split_type", "sum_hessian")}
_TREE["tree_param"] = {"num_deleted": None, "num_feature": None, "num_nodes": None,
                       "size_leaf_vector": None}
_GBTREE_PARAM = {"num_parallel_tree": None, "num_trees": None}
_CATS = {"enc": [{"offsets": None, "values": None, "type": None}], "feature_segments": None,
         "sorted_idx": None}
_GBTREE_MODEL = {"gbtree_model_param": _GBTREE_PARAM, "trees": [_TREE], "tree_info": None,
                 "iteration_indptr": None, "cats": _CATS}
_GBTREE = {"name": None, "model": _GBTREE_MODEL}
_BOOSTERS = {
    "gbtree": _GBTREE,
    "dart": {"name": None, "gbtree": _GBTREE, "weight_drop": None},
    "gblinear": {"name": None, "model": {"boosted_rounds": None, "weights": None}},
}
_MODEL_PARAM = {k: None for k in ("base_score", "boost_from_average", "num_class",
                                  "num_feature", "num_target")}
_OBJECTIVE = {"name": None, "reg_loss_param": {"scale_pos_weight": None},
              "softmax_multiclass_param": {"num_class": None}}
_LEARNER = {"attributes": "attributes", "feature_names": None, "feature_types": None,
            "gradient_booster": "booster", "learner_model_param": _MODEL_PARAM,
            "objective": _OBJECTIVE}
_MODEL = {"version": None, "learner": _LEARNER}
#: the training configuration in a booster's memory snapshot (inside a ``.skops`` file):
#: short strings only
_TREE_TRAIN = {k: None for k in (
    "alpha", "colsample_bylevel", "colsample_bynode", "colsample_bytree", "eta", "gamma",
    "grow_policy", "interaction_constraints", "lambda", "learning_rate", "max_bin",
    "max_cat_threshold", "max_cat_to_onehot", "max_delta_step", "max_depth", "max_leaves",
    "min_child_weight", "min_split_loss", "monotone_constraints", "refresh_leaf", "reg_alpha",
    "reg_lambda", "sampling_method", "sparse_threshold", "subsample")}
_GBTREE_TRAIN = {k: None for k in ("process_type", "tree_method", "updater", "updater_seq")}
_UPDATER = {"name": None,
            "hist_train_param": {k: None for k in ("debug_synchronize", "max_cached_hist_node",
                                                   "extmem_single_page")},
            "colmaker_train_param": {"default_direction": None, "opt_dense_col": None}}
_CONFIG_GBTREE = {"name": None, "gbtree_model_param": _GBTREE_PARAM,
                  "gbtree_train_param": _GBTREE_TRAIN, "specified_updater": None,
                  "tree_train_param": _TREE_TRAIN, "updater": [_UPDATER]}
_CONFIG_BOOSTER = {
    **_CONFIG_GBTREE,
    "gbtree": _CONFIG_GBTREE,
    "dart_train_param": {k: None for k in ("normalize_type", "one_drop", "rate_drop",
                                           "sample_type", "skip_drop")},
    "gblinear_train_param": {"max_row_perbatch": None, "tolerance": None, "updater": None},
}
_LINEAR_UPDATER = {"linear_train_param": {k: None for k in (
    "alpha", "eta", "feature_selector", "lambda", "learning_rate", "reg_alpha", "reg_lambda")},
    "coordinate_param": {"top_k": None}}
_CONFIG = {"version": None, "learner": {
    "generic_param": {k: None for k in (
        "device", "fail_on_invalid_gpu_id", "n_jobs", "nthread", "random_state", "seed",
        "seed_per_iteration", "validate_parameters")},
    "gradient_booster": _CONFIG_BOOSTER, "learner_model_param": _MODEL_PARAM,
    "learner_train_param": {k: None for k in ("booster", "disable_default_eval_metric",
                                              "multi_strategy", "objective")},
    "metrics": [{"name": None}], "objective": _OBJECTIVE}}
#: the booster attributes XGBoost's scikit-learn wrapper sets (early stopping, its metadata)
_ATTRIBUTES = ("best_iteration", "best_score", "best_ntree_limit", "scikit_learn")
#: longest string a configuration value or attribute may be (constraints: per feature more)
MAX_CONFIG_TEXT = 256
MAX_NAME_TEXT = 1_000


def _unknown(path: str, key: Any) -> InputError:
    return _bad("XGBoost model", f"unknown key {str(key)[:60]!r} in {path or 'the document'} "
                "(XGBoost does not write it; a model file holds the model and nothing else); "
                "fix: save the booster again with XGBoost's save_model")


def _check_keys(doc: Any, spec: Any, path: str, config: bool, n_features: int) -> None:
    """Every object in ``doc`` has only the keys ``spec`` names (see the key sets above)."""
    if spec is None:
        if isinstance(doc, dict):
            raise _bad("XGBoost model", f"{path} is an object where XGBoost writes a value")
        if isinstance(doc, list) and any(isinstance(v, (dict, list)) for v in doc):
            raise _bad("XGBoost model", f"{path} nests values where XGBoost writes a flat array")
        if config:
            limit = MAX_CONFIG_TEXT + (32 * n_features if path.endswith("constraints") else 0)
            scalar = (str, int, float, bool)
            if isinstance(doc, list) and len(doc) <= 8 and all(isinstance(v, scalar) for v in doc):
                return  # the version, [major, minor, patch]
            if not isinstance(doc, scalar) or len(str(doc)) > limit:
                raise _bad("XGBoost model", f"{path} is not a short setting")
        return
    if spec == "attributes":
        _check_attributes(doc, path)
        return
    if spec == "booster":
        name = doc.get("name") if isinstance(doc, dict) else None
        spec = _BOOSTERS.get(name) if isinstance(name, str) else None
        if spec is None:
            raise _bad("XGBoost model", f"booster {str(name)[:30]!r} is not gbtree, dart or "
                       "gblinear")
    if path.endswith("gradient_booster/updater") and config and isinstance(doc, dict):
        spec = _LINEAR_UPDATER  # gblinear's updater settings: an object, not a list
    if isinstance(spec, list):
        if not isinstance(doc, list):
            raise _bad("XGBoost model", f"{path} is not an array of objects")
        for i, item in enumerate(doc):
            _check_keys(item, spec[0], f"{path}[{i}]", config, n_features)
        return
    if not isinstance(doc, dict):
        if path.endswith("updater") and isinstance(doc, str) and config:
            return  # gblinear's updater setting is a name
        raise _bad("XGBoost model", f"{path or 'the document'} is not an object")
    for key, value in doc.items():
        if key not in spec:
            raise _unknown(path, key)
        _check_keys(value, spec[key], f"{path}/{key}" if path else key, config, n_features)


def _check_attributes(attrs: Any, path: str) -> None:
    if not isinstance(attrs, dict):
        raise _bad("XGBoost model", f"{path} is not an object")
    for key, value in attrs.items():
        if key not in _ATTRIBUTES:
            raise _unknown(path, key)
        if not isinstance(value, str):
            raise _bad("XGBoost model", f"attribute {key!r} is not text")
        if key != "scikit_learn":
            if len(value) > MAX_CONFIG_TEXT:
                raise _bad("XGBoost model", f"attribute {key!r} is longer than a number")
            continue
        try:
            meta = json.loads(value)
        except ValueError:
            raise _bad("XGBoost model", "attribute 'scikit_learn' is not JSON") from None
        if not isinstance(meta, dict):
            raise _bad("XGBoost model", "attribute 'scikit_learn' is not an object")
        for k, v in meta.items():
            if k not in ("_estimator_type", "classes_", "n_classes_"):
                raise _unknown(f"{path}/scikit_learn", k)
            if k == "classes_" and (not isinstance(v, list) or len(v) > MAX_CLASSES or any(
                    isinstance(c, (dict, list)) or len(str(c)) > MAX_NAME_TEXT for c in v)):
                raise _bad("XGBoost model", "attribute 'scikit_learn' holds classes that are "
                           "not a short list of labels")
            if k != "classes_" and len(str(v)) > MAX_CONFIG_TEXT:
                raise _bad("XGBoost model", f"attribute 'scikit_learn' has a long {k!r}")


def _check_names(learner: dict, n_features: int) -> None:
    for key in ("feature_names", "feature_types"):
        names = learner.get(key)
        if names is None:
            continue
        if not isinstance(names, list) or len(names) not in (0, n_features) or any(
                not isinstance(v, str) or len(v) > MAX_NAME_TEXT for v in names):
            raise _bad("XGBoost model", f"{key} is not one short name per feature "
                       f"(num_feature={n_features})")


def check_xgboost_keys(doc: Any) -> None:
    """Refuse any key XGBoost does not write, at every level of a model document or of a
    booster's memory snapshot (``{"Config": ..., "Model": ...}``)."""
    if not isinstance(doc, dict):
        raise _bad("XGBoost model", "the document is not an object")
    if "learner" not in doc and "Model" in doc:
        for key in doc:
            if key not in ("Config", "Model"):
                raise _unknown("the booster snapshot", key)
        model = doc["Model"]
        nf = _n_features_of(model)
        if "Config" in doc:
            _check_keys(doc["Config"], _CONFIG, "Config", True, nf)
        _check_keys(model, _MODEL, "", False, nf)
        _check_names(model["learner"], nf)
        return
    nf = _n_features_of(doc)
    _check_keys(doc, _MODEL, "", False, nf)
    _check_names(doc["learner"], nf)


def _n_features_of(model: Any) -> int:
    try:
        nf = int(model["learner"]["learner_model_param"]["num_feature"])
    except (TypeError, KeyError, ValueError):
        raise _bad("XGBoost model", "there is no learner with a num_feature") from None
    if nf < 1 or nf > 10**8:
        raise _bad("XGBoost model", f"num_feature={nf} is out of range")
    return nf


_UBJ_NUM = {b"i": (">b", 1), b"U": (">B", 1), b"I": (">h", 2), b"l": (">i", 4),
            b"L": (">q", 8), b"d": (">f", 4), b"D": (">d", 8)}
_UBJ_NP = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4",
           b"D": ">f8"}


class _UBJ:
    """A small, bounded UBJSON decoder (the subset XGBoost writes), for validation only.

    XGBoost's Python package has no UBJSON reader of its own, and the point is to read the
    model *without* XGBoost's C++ parser; typed arrays decode with ``np.frombuffer``.
    """

    def __init__(self, data: bytes):
        self.b = memoryview(data)
        self.i = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.i + n > len(self.b):
            raise InputError("the UBJSON model ends early or declares a length past its end")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def marker(self) -> bytes:
        return bytes(self.take(1))

    def number(self, m: bytes) -> Any:
        fmt, n = _UBJ_NUM[m]
        return struct.unpack(fmt, self.take(n))[0]

    def length(self) -> int:
        m = self.marker()
        if m not in _UBJ_NUM or m in (b"d", b"D"):
            raise InputError(f"the UBJSON model has a bad length marker {m!r}")
        n = self.number(m)
        if n < 0 or n > len(self.b):
            raise InputError("the UBJSON model declares an impossible length")
        return int(n)

    def value(self, m: bytes, depth: int) -> Any:
        if depth > 64:
            raise InputError("the UBJSON model is nested too deeply")
        if m in _UBJ_NUM:
            return self.number(m)
        if m == b"S" or m == b"H":
            return bytes(self.take(self.length())).decode("utf-8", "replace")
        if m == b"C":
            return bytes(self.take(1)).decode("latin-1")
        if m in (b"T", b"F"):
            return m == b"T"
        if m == b"Z":
            return None
        if m == b"[":
            return self.array(depth)
        if m == b"{":
            return self.obj(depth)
        raise InputError(f"the UBJSON model has an unknown marker {m!r}")

    def array(self, depth: int) -> Any:
        if bytes(self.b[self.i:self.i + 1]) == b"$":
            self.i += 1
            t = self.marker()
            if self.marker() != b"#" or t not in _UBJ_NP:
                raise InputError("the UBJSON model has a malformed typed array")
            n = self.length()
            dt = np.dtype(_UBJ_NP[t])
            return np.frombuffer(self.take(n * dt.itemsize), dtype=dt).astype(dt.newbyteorder("="))
        out = []
        if bytes(self.b[self.i:self.i + 1]) == b"#":
            self.i += 1
            for _ in range(self.length()):
                out.append(self.value(self.marker(), depth + 1))
            return out
        while True:
            m = self.marker()
            if m == b"]":
                return out
            out.append(self.value(m, depth + 1))

    def obj(self, depth: int) -> dict:
        out: dict = {}
        while True:
            if bytes(self.b[self.i:self.i + 1]) == b"}":
                self.i += 1
                return out
            key = bytes(self.take(self.length())).decode("utf-8", "replace")
            out[key] = self.value(self.marker(), depth + 1)


def decode_xgboost_raw(raw: bytes) -> dict:
    """Decode an XGBoost model (JSON text or UBJSON bytes) without XGBoost.

    Raises
    ------
    InputError
        The bytes are neither.
    """
    head = bytes(raw[:1])
    try:
        if head == b"{" and bytes(raw[1:2]) in (b'"', b"\n", b" ", b"\r", b"\t", b"}"):
            doc = json.loads(bytes(raw))
        elif head == b"{":
            r = _UBJ(bytes(raw))
            r.i = 1
            doc = r.obj(0)
        else:
            raise InputError("the bytes are neither XGBoost JSON nor UBJSON")
    except InputError:
        raise
    except (ValueError, RecursionError, struct.error, KeyError) as exc:
        raise InputError(f"the model cannot be decoded ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise InputError("the model is not an XGBoost document")
    return doc


def _int(value: Any, what: str) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise _bad("XGBoost model", f"{what} is not an integer ({str(value)[:40]!r})") from None
    return out


def _arr(tree: dict, key: str, n: int, where: str, dtype: Any = np.int64) -> np.ndarray:
    value = tree.get(key)
    try:
        arr = np.asarray(value if value is not None else [], dtype=dtype)
    except (TypeError, ValueError):
        raise _bad(where, f"{key} is not an array of numbers") from None
    if arr.ndim != 1 or arr.shape[0] != n:
        raise _bad(where, f"{key} has {arr.size} entries, not num_nodes={n}")
    return arr


def _check_xgb_tree(tree: Any, where: str, n_features: int) -> None:
    if not isinstance(tree, dict):
        raise _bad(where, "is not an object")
    param = tree.get("tree_param") or {}
    n = _int(param.get("num_nodes"), f"{where}.num_nodes")
    if n < 1 or n > 2**31 - 2:
        raise _bad(where, f"num_nodes {n} is out of range")
    if _int(param.get("size_leaf_vector", 1), "size_leaf_vector") > 1:
        raise _bad(where, "vector-leaf (multi-target) trees are not supported")
    left = _arr(tree, "left_children", n, where)
    right = _arr(tree, "right_children", n, where)
    parents = _arr(tree, "parents", n, where)
    split = _arr(tree, "split_indices", n, where)
    cond = _arr(tree, "split_conditions", n, where, np.float64)
    split_type = _arr(tree, "split_type", n, where) if "split_type" in tree else np.zeros(n, int)
    _arr(tree, "default_left", n, where)
    for key in ("base_weights", "loss_changes", "sum_hessian"):  # per-node statistics
        if key in tree:
            _arr(tree, key, n, where, np.float64)
    cat_keys = ("categories", "categories_nodes", "categories_segments", "categories_sizes")
    if not (split_type == 1).any() and any(len(_seq(tree.get(k))) for k in cat_keys):
        raise _bad(where, "category arrays in a tree without categorical splits")
    leaf = left == -1
    if not np.array_equal(leaf, right == -1):
        raise _bad(where, f"node {int(np.flatnonzero(leaf != (right == -1))[0])} has one child")
    inner = np.flatnonzero(~leaf)
    for side, child in (("left", left[inner]), ("right", right[inner])):
        bad = (child < 1) | (child >= n)
        if bad.any():
            raise _bad(where, f"node {int(inner[np.argmax(bad)])}'s {side} child "
                       f"{int(child[np.argmax(bad)])} is outside 1..{n - 1}")
    # walk from the root level by level: a node reached twice means a cycle or a shared child
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    frontier = np.array([0], dtype=np.int64)
    level = 0
    while frontier.size:
        level += 1
        if level > MAX_TREE_DEPTH:
            raise _bad(where, f"the tree is deeper than {MAX_TREE_DEPTH:,} levels")
        frontier = frontier[~leaf[frontier]]
        kids = np.concatenate([left[frontier], right[frontier]])
        if parents[kids].tolist() != np.concatenate([frontier, frontier]).tolist():
            raise _bad(where, "a node's parent entry does not name the node that points at it")
        if seen[kids].any() or np.unique(kids).size != kids.size:
            raise _bad(where, f"node {int(kids[np.argmax(seen[kids])])} is reached twice from "
                       "the root (a cycle or a shared child)")
        seen[kids] = True
        frontier = kids
    reach_inner = seen & ~leaf
    if (split[reach_inner] < 0).any() or (split[reach_inner] >= n_features).any():
        raise _bad(where, f"a split reads a feature outside 0..{n_features - 1}")
    if not np.isfinite(cond[seen]).all():
        raise _bad(where, "a split condition or leaf value is not finite")
    if (split_type[reach_inner] == 1).any():
        cats = _arr(tree, "categories", len(_seq(tree.get("categories"))), where)
        m = len(_seq(tree.get("categories_nodes")))
        nodes_c = _arr(tree, "categories_nodes", m, where)
        seg = _arr(tree, "categories_segments", m, where)
        size = _arr(tree, "categories_sizes", m, where)
        if ((nodes_c < 0) | (nodes_c >= n)).any() or ((seg < 0) | (size < 0) |
                                                       (seg + size > cats.size)).any() \
                or int(size.sum()) != cats.size:
            raise _bad(where, "a categorical split points outside the category array")
        if not np.isin(np.flatnonzero(reach_inner & (split_type == 1)), nodes_c).all():
            raise _bad(where, "a categorical split has no categories")


def _seq(value: Any) -> Any:
    """A JSON list or a decoded UBJSON typed array; ``[]`` for a missing one."""
    return [] if value is None else value


def _check_xgb_cats(cats: Any, n_features: int) -> None:
    """XGBoost 3's category table: one encoding per feature, segments that partition
    ``sorted_idx``, and within each segment a permutation of its categories (XGBoost indexes
    through it without bounds checks)."""
    if cats is None:
        return
    if not isinstance(cats, dict):
        raise _bad("XGBoost model", "the category table is not an object")
    enc = _seq(cats.get("enc"))
    seg = np.asarray(_seq(cats.get("feature_segments")), dtype=np.int64)
    idx = np.asarray(_seq(cats.get("sorted_idx")), dtype=np.int64)
    if not len(enc) and not seg.size and not idx.size:
        return
    if not isinstance(enc, (list, np.ndarray)) or len(enc) != n_features or seg.shape != (n_features + 1,) \
            or seg[0] != 0 or (np.diff(seg) < 0).any() or seg[-1] != idx.size:
        raise _bad("XGBoost model", "the category table's segments do not match its features")
    for j in np.flatnonzero(np.diff(seg) > 0):
        s, e = int(seg[j]), int(seg[j + 1])
        if not np.array_equal(np.sort(idx[s:e]), np.arange(e - s)):
            raise _bad("XGBoost model", f"feature {j}'s category order is not a permutation")
        item = enc[j] if isinstance(enc[j], dict) else {}
        values = _seq(item.get("values"))
        offsets = np.asarray(_seq(item.get("offsets")), dtype=np.int64)
        if offsets.size:
            ok = offsets.size == e - s + 1 and offsets[0] == 0 and \
                not (np.diff(offsets) < 0).any() and offsets[-1] == len(values)
        else:
            ok = len(values) == e - s
        if not ok:
            raise _bad("XGBoost model", f"feature {j}'s category encoding does not match its "
                       f"{e - s} categories")


def validate_xgboost_model(doc: Any) -> None:
    """Validate a decoded XGBoost model document (see the module docstring).

    Raises
    ------
    InputError
        One line naming the tree and node that are wrong.
    """
    try:
        _validate_xgboost(doc)
    except InputError:
        raise
    except (OverflowError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise _bad("XGBoost model", f"a field has an impossible value ({type(exc).__name__})"
                   ) from None


def _validate_xgboost(doc: Any) -> None:
    check_xgboost_keys(doc)
    if isinstance(doc, dict) and "learner" not in doc and isinstance(doc.get("Model"), dict):
        doc = doc["Model"]  # a pickled booster's memory snapshot: {"Config": ..., "Model": ...}
    if not isinstance(doc, dict) or not isinstance(doc.get("learner"), dict):
        raise _bad("XGBoost model", "there is no 'learner' object")
    learner = doc["learner"]
    mp = learner.get("learner_model_param") or {}
    n_features = _int(mp.get("num_feature"), "num_feature")
    n_class = _int(mp.get("num_class", 0), "num_class")
    if n_features < 1 or n_features > 10**8 or n_class < 0 or n_class > 10**6:
        raise _bad("XGBoost model", f"num_feature={n_features} or num_class={n_class} is out "
                   "of range")
    if n_class > MAX_CLASSES:
        raise _bad("XGBoost model", f"num_class={n_class:,} is above anonml's bound of "
                   f"{MAX_CLASSES:,}")
    if _int(mp.get("num_target", 1), "num_target") != 1:
        raise _bad("XGBoost model", "multi-target models are not supported")
    for v in str(mp.get("base_score", "0")).strip("[]").split(","):
        try:
            if v.strip() and not math.isfinite(float(v)):
                raise ValueError
        except ValueError:
            raise _bad("XGBoost model", "base_score is not a finite number") from None
    gb = learner.get("gradient_booster") or {}
    name = gb.get("name")
    if name == "gblinear":
        weights = np.asarray((gb.get("model") or {}).get("weights", []), dtype=np.float64)
        if weights.size != (n_features + 1) * max(n_class, 1) or not np.isfinite(weights).all():
            raise _bad("XGBoost model", "the linear booster's weights do not match num_feature")
        return
    weight_drop = None
    if name == "dart":
        weight_drop = gb.get("weight_drop")
        gb = gb.get("gbtree") or {}
    elif name != "gbtree":
        raise _bad("XGBoost model", f"booster {str(name)[:30]!r} is not gbtree, dart or gblinear")
    model = gb.get("model") or {}
    trees = model.get("trees")
    if not isinstance(trees, list):
        raise _bad("XGBoost model", "there is no list of trees")
    n_trees = _int((model.get("gbtree_model_param") or {}).get("num_trees", len(trees)),
                   "num_trees")
    info = np.asarray(model.get("tree_info", []), dtype=np.int64)
    if n_trees != len(trees) or info.shape != (len(trees),):
        raise _bad("XGBoost model", f"num_trees={n_trees}, {len(trees)} trees and "
                   f"{info.size} tree_info entries disagree")
    if info.size and (info.min() < 0 or info.max() >= max(n_class, 1)):
        raise _bad("XGBoost model", "tree_info names an output group outside the classes")
    if len(trees) and np.unique(info).size != max(n_class, 1):
        raise _bad("XGBoost model", f"num_class={n_class} but the trees feed "
                   f"{np.unique(info).size} output group(s)")
    if weight_drop is not None and len(weight_drop) != len(trees):
        raise _bad("XGBoost model", "dart's weight_drop does not have one weight per tree")
    _check_xgb_cats(model.get("cats"), n_features)
    indptr = model.get("iteration_indptr")
    if indptr is not None:
        ip = np.asarray(indptr, dtype=np.int64)
        if ip.ndim != 1 or ip.size < 1 or ip[0] != 0 or ip[-1] != len(trees) or \
                (np.diff(ip) < 0).any():
            raise _bad("XGBoost model", "iteration_indptr does not partition the trees")
    for i, tree in enumerate(trees):
        _check_xgb_tree(tree, f"XGBoost tree {i}", n_features)
