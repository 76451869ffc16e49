"""A released model with its mapping: ``Pipeline([("mapping", anonymizer), ("model", model)])``.

An anonymized model whose inputs go through the anonymizer first (each row replaced by its
group's representative, as the training rows were) is released as one scikit-learn pipeline.
This module makes the saved mapping hold no more than it must, and re-verifies a mapping read
from a file from the mapping alone.

* :func:`~anonml.anonymize._model.release_copy` is what :func:`~anonml.safemodel.save_model` writes for an anonymizer:
  the fitted anonymizer without its per-row state (``groups_``, ``suppressed_``,
  ``representative_rows_``, the privacy model's per-row sensitive codes, timings). A SaNGreeA
  mapping routes training rows by their exact QI vectors and so holds every distinct training
  QI vector; it is refused inside a released pipeline.
* :func:`verify_mapping` re-checks a mapping read from a file: its k, that every group's stored
  training count is at least k, that those counts agree with the tree's own leaf counts
  (scikit-learn's ``tree_.n_node_samples`` for the accuracy-guided exact tree), that the group
  maps and the representative table have the right shapes and types, that every
  representative maps to itself through ``transform``, and, for a pipeline, that its outputs
  equal ``model.predict(mapping.transform(X))``. A mapping that fails is refused in one line.

References
----------
Goldsteen, A., Ezov, G., Shmelkin, R., Moffie, M., & Farkash, A. (2022). Anonymizing machine
learning models. *DPM 2021*, LNCS 13140, 121-136 (the mapped model).
Sweeney, L. (2002). k-anonymity: a model for protecting privacy. *IJUFKS* 10(5), 557-570.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from anonml._errors import InputError
from anonml.anonymize._model import PER_ROW_ATTRIBUTES, release_copy, release_pipeline

__all__ = ["is_released_pipeline", "release_copy", "release_pipeline", "verify_mapping"]

#: what releasing the mapping reveals (the report's "mapping" section and docs/release.md)
REVEALS = ("each group's representative (the same values as in the k-anonymous table) and "
           "its training count (each at least k); the routing structure: split thresholds, "
           "cut points or curve boundaries between groups, and the distinct QI values and "
           "categories seen in training that the encoder routes by; no training rows, row "
           "indices or per-row arrays")


def _is_anonymizer(obj: Any) -> bool:
    from anonml.anonymize._base import BaseAnonymizer

    return isinstance(obj, BaseAnonymizer)


def is_released_pipeline(obj: Any) -> bool:
    """True for a scikit-learn ``Pipeline`` whose first step is an anonml anonymizer."""
    from sklearn.pipeline import Pipeline

    return isinstance(obj, Pipeline) and len(obj.steps) >= 2 and _is_anonymizer(obj.steps[0][1])


def _refuse(where: str, text: str) -> InputError:
    return InputError(f"{where} is refused: {text}; fix: save the pipeline again from the "
                      "result of anonml.anonymize_model (its .pipeline)")


def _exact_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_tree_counts(m: Any, sizes: np.ndarray, where: str) -> str:
    """The accuracy-guided exact tree's own leaf counts against the stored group counts."""
    tree = m.__dict__.get("tree_")
    inner = getattr(tree, "tree_", None)
    if inner is None or not hasattr(inner, "n_node_samples"):
        return "no per-leaf counts in this mapping's tree"
    leaf = np.asarray(inner.children_left) == -1
    counts = np.asarray(inner.n_node_samples, dtype=np.int64)
    if int(counts[0]) != int(sizes.sum()):
        raise _refuse(where, f"its groups count {int(sizes.sum())} training rows but its tree "
                      f"was fitted on {int(counts[0])}")
    l2g = np.asarray(m.__dict__.get("leaf_to_group_"))
    if l2g.shape != (counts.size,):
        raise _refuse(where, "its leaf-to-group map does not match its tree's nodes")
    leaves = np.flatnonzero(leaf)
    k = int(m.k)
    small = leaves[counts[leaves] < k]
    if small.size:
        raise _refuse(where, f"tree leaf {int(small[0])} holds {int(counts[small[0]])} training "
                      f"rows, fewer than k={k}")
    if m.__dict__.get("merge_map_") is not None:
        return "total and every leaf's count checked against the tree"
    g = l2g[leaves]
    n_first = int(g.max()) + 1 if g.size else 0  # groups of the tree, before any refinement
    if (g < 0).any() or (m.__dict__.get("refine_tree_") is None and n_first > sizes.size):
        raise _refuse(where, "its leaf-to-group map points outside the groups")
    per_first = np.bincount(g, weights=counts[leaves], minlength=n_first).astype(np.int64)
    claimed = sizes
    refine = m.__dict__.get("refine_tree_")
    if refine is not None:  # each refined group descends from one tree group (nodes 0..G0-1)
        left = np.asarray(refine.children_left_, dtype=np.int64)
        right = np.asarray(refine.children_right_, dtype=np.int64)
        inner = np.flatnonzero(np.asarray(refine.feature_) >= 0)
        parent = np.full(left.size, -1, dtype=np.int64)
        parent[left[inner]] = inner
        parent[right[inner]] = inner
        root = np.arange(left.size)
        for _ in range(left.size):  # children lie after parents (validated): this ends
            up = (root >= n_first) & (parent[root] >= 0)
            if not up.any():
                break
            root[up] = parent[root[up]]
        r2g = np.asarray(m.__dict__.get("refined_leaf_to_group_"))
        used = np.flatnonzero(r2g >= 0)
        if r2g.shape != left.shape or (root[used] >= n_first).any() or \
                (r2g[used] >= sizes.size).any():
            raise _refuse(where, "its refined group map does not match its refinement tree")
        claimed = np.bincount(root[used], weights=sizes[r2g[used]],
                              minlength=n_first).astype(np.int64)
    bad = np.flatnonzero(per_first != claimed[:n_first]) if claimed.size >= n_first else \
        np.array([n_first - 1])
    if bad.size or claimed.size != n_first:
        i = int(bad[0]) if bad.size else n_first
        raise _refuse(where, f"tree group {i} holds {int(per_first[i]) if i < n_first else 0} "
                      f"training rows by its leaves but its groups claim "
                      f"{int(claimed[i]) if i < claimed.size else 0}")
    return "group counts equal the tree's leaf counts"


def verify_mapping(obj: Any, X: Any = None, *, where: str = "the mapping",
                   released: bool = True) -> dict:
    """Re-verify a fitted mapping (or a released pipeline's) from the mapping alone.

    Parameters
    ----------
    obj : fitted anonymizer or Pipeline
        A mapping, or ``Pipeline([("mapping", anonymizer), ("model", model)])``.
    X : DataFrame, optional
        Rows with the mapping's columns (e.g. the test rows), for the checks that call the
        mapping: representatives map to themselves, and the pipeline's outputs equal
        ``model.predict(mapping.transform(X))``. Only up to 1,000 rows are used.
    where : str
        How messages name the mapping (e.g. the file).
    released : bool, default True
        Refuse per-row state (a file that leaves the holder); ``False`` for a trusted pickle.

    Returns
    -------
    dict
        JSON-safe facts for the report: ``method``, ``k``, ``n_groups``, ``smallest_group``,
        ``n_training_rows``, ``quasi_identifiers``, ``recoding``, ``checks`` (what was
        verified), ``reveals``.

    Raises
    ------
    InputError
        One line naming what failed.
    """
    try:
        return _verify(obj, X, where, released)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a mapping too odd to check is refused too
        from anonml._errors import one_line

        raise _refuse(where, f"it cannot be checked ({type(exc).__name__}: "
                      f"{one_line(exc, 160)})") from None


def _verify(obj: Any, X: Any, where: str, released: bool) -> dict:
    pipe = obj if is_released_pipeline(obj) else None
    m = obj.steps[0][1] if pipe is not None else obj
    if not _is_anonymizer(m):
        raise _refuse(where, f"it is a {type(m).__name__}, not an anonml mapping")
    d = m.__dict__
    leaked = [a for a in PER_ROW_ATTRIBUTES if a in d] + (
        ["_train_points"] if "_train_points" in d and pipe is not None else [])
    codes = getattr(d.get("model_"), "codes", None)
    if released and codes is not None and np.size(codes):
        leaked.append("model_.codes (per-row sensitive codes)")
    if leaked and released:
        raise _refuse(where, f"it holds the per-row attribute {leaked[0]} (training rows or "
                      "their order must not be released)")
    k = d.get("k")
    if not _exact_int(k) or int(k) < 2:
        raise _refuse(where, f"its k {str(k)[:20]!r} is not a whole number >= 2")
    k = int(k)
    reps = d.get("representatives_")
    qi = d.get("qi_")
    n_groups = d.get("n_groups_")
    if not isinstance(reps, pd.DataFrame) or not isinstance(qi, list) or not _exact_int(n_groups):
        raise _refuse(where, "it has no representative table, quasi-identifiers or group count")
    n_groups = int(n_groups)
    if reps.shape != (n_groups, len(qi)) or list(reps.columns) != qi:
        raise _refuse(where, f"its representative table has shape {reps.shape} and columns "
                      f"{[str(c) for c in reps.columns][:4]}, not ({n_groups}, {len(qi)}) on "
                      "its quasi-identifiers")
    sizes = d.get("group_sizes_")
    if not isinstance(sizes, np.ndarray) or sizes.shape != (n_groups,) or \
            sizes.dtype.kind not in "iu":
        raise _refuse(where, f"it has no training count per group (group_sizes_ of "
                      f"{n_groups} whole numbers)")
    if (sizes < k).any():
        g = int(np.argmin(sizes))
        raise _refuse(where, f"group {g} holds {int(sizes[g])} training rows, fewer than its "
                      f"k={k}")
    suppressed = np.asarray(d.get("suppressed_groups_", np.zeros(n_groups, dtype=bool)))
    if suppressed.shape != (n_groups,) or suppressed.dtype != bool:
        raise _refuse(where, "its suppressed-group flags do not match its groups")
    merge = d.get("merge_map_")
    if merge is not None:
        merge = np.asarray(merge)
        if merge.ndim != 1 or merge.dtype.kind not in "iu" or (merge < 0).any() or \
                (merge >= n_groups).any():
            raise _refuse(where, "its merge map points outside the groups")
    for name in ("leaf_to_group_", "refined_leaf_to_group_"):
        gm = d.get(name)
        if gm is not None:
            gm = np.asarray(gm)
            top = n_groups if merge is None else merge.size  # groups before any merge
            if gm.ndim != 1 or gm.dtype.kind not in "iu" or (gm < -1).any() or \
                    (gm >= top).any():
                raise _refuse(where, f"its group map {name} points outside the groups")
    recoding = d.get("recoding_")
    encoder = d.get("encoder_")
    if recoding == "representative" and encoder is not None:
        numeric = set(getattr(encoder, "numeric", ()))
        for c in qi:
            col = reps[c]
            live = col[~suppressed]
            if c in numeric and not (pd.api.types.is_numeric_dtype(col.dtype) or
                                     pd.api.types.is_numeric_dtype(live.infer_objects().dtype)):
                raise _refuse(where, f"its representatives of numeric column {c!r} are not "
                              f"numbers (dtype {col.dtype})")
    checks = [f"k={k} is a whole number >= 2",
              f"all {n_groups} groups hold at least k training rows (smallest "
              f"{int(sizes.min())})",
              "representative table is groups x quasi-identifiers",
              _check_tree_counts(m, sizes, where)]
    if X is not None and isinstance(X, pd.DataFrame) and len(X):
        rows = X.iloc[:1000]
        try:
            checks += _check_calls(pipe, m, reps, suppressed, rows, where)
        except InputError as exc:
            if str(exc).startswith(f"{where} is refused"):
                raise
            raise _refuse(where, f"calling it on the given rows failed ({exc})") from None
    return {"method": type(m).__name__, "k": k, "n_groups": n_groups,
            "smallest_group": int(sizes.min()), "n_training_rows": int(sizes.sum()),
            "quasi_identifiers": [str(c) for c in qi], "recoding": str(recoding),
            "checks": checks, "reveals": REVEALS}


def _check_calls(pipe: Any, m: Any, reps: pd.DataFrame, suppressed: np.ndarray,
                 rows: pd.DataFrame, where: str) -> list:
    """The checks that call the mapping (after its structure passed validation on load)."""
    out = []
    live = np.flatnonzero(~suppressed)
    # A whole real record routes to its own group under every method. A per-feature
    # representative (each QI's value from its own row) stays inside its group's region only
    # where the regions are products over the columns (trees, Mondrian cuts, R+-tree boxes);
    # a Hilbert run or a SaNGreeA cluster is not, so there the check does not apply.
    per_feature = getattr(m, "representative", None) in ("per_feature", "majority_per_feature")
    product = type(m).__name__ not in ("HilbertAnonymizer", "SaNGreeAAnonymizer")
    if per_feature and not product:
        out.append("representatives not re-routed: a per-feature representative need not lie "
                   f"inside its group's region for {type(m).__name__}")
    elif m.recoding_ == "representative" and m._tree_columns == "qi" and live.size:
        probe = rows.iloc[np.zeros(live.size, dtype=np.int64)].reset_index(drop=True)
        for c in reps.columns:
            probe[c] = reps[c].iloc[live].to_numpy()
            probe[c] = probe[c].astype(rows[c].dtype) if rows[c].dtype != probe[c].dtype \
                else probe[c]
        chosen = m.handle_unknown
        try:
            mapped = m.set_params(handle_unknown="ignore").transform(probe)
        finally:
            m.set_params(handle_unknown=chosen)
        same = np.ones(live.size, dtype=bool)
        for c in reps.columns:
            a, b = mapped[c].to_numpy(), probe[c].to_numpy()
            same &= (a == b) | (pd.isna(a) & pd.isna(b))
        if not same.all():
            g = int(live[np.argmin(same)])
            raise _refuse(where, f"the representative of group {g} does not map to itself "
                          "through transform (the mapping routes it to another group)")
        out.append("every representative maps to itself through transform")
    if pipe is not None:
        got = np.asarray(pipe.predict(rows))
        want = np.asarray(pipe.steps[-1][1].predict(pipe[:-1].transform(rows)))
        if got.shape != want.shape or not (got == want).all():
            raise _refuse(where, "the pipeline's predictions differ from model.predict("
                          "mapping.transform(X))")
        out.append(f"pipeline outputs equal model.predict(mapping.transform(X)) on "
                   f"{len(rows):,} rows")
    return out
