"""A released model with its mapping: ``Pipeline([("mapping", anonymizer), ("model", model)])``.

An anonymized model whose inputs go through the anonymizer first (each row replaced by its
group's representative, as the training rows were) is released as one scikit-learn pipeline.
This module makes the saved mapping hold no more than it must, and re-verifies a mapping read
from a file from the mapping alone.

* :func:`~anonml.anonymize._model.release_copy` is what :func:`~anonml.safemodel.save_model` writes for an anonymizer:
  only what routing needs (issue 19): the parameters, the representatives and a routing tree
  on raw values (``route_``: rounded thresholds that equal no training value, categorical
  splits that name only categories the anonymized table shows), with no encoder, fitted tree,
  per-node or per-group counts, and no per-row state. A file of the earlier form (every fitted
  attribute but the per-row ones) is still read and verified with its counts. A SaNGreeA
  mapping routes training rows by their exact QI vectors and so holds every distinct training
  QI vector; it is refused inside a released pipeline.
* :func:`verify_mapping` re-checks a mapping read from a file: its k, that every group's stored
  training count is at least k, that those counts agree with the tree's own leaf counts
  (scikit-learn's ``tree_.n_node_samples`` for the accuracy-guided exact tree), that the group
  maps and the representative table have the right shapes and types, that every
  representative maps to itself through ``transform``, and, for a pipeline, that its outputs
  equal ``model.predict(mapping.transform(X))``. A mapping that fails is refused in one line.
* :func:`check_routes` bounds every route ``transform`` follows (tree depth, node count, curve
  boundaries) before anything routes a row, so that no accepted mapping makes ``transform``
  slow.
* :func:`measure_mapping` maps the *training* rows through the mapping and compares what the
  file claims (its k, each group's training count, the tree's own leaf counts) with what the
  rows give, and checks that each representative is a value its own group's rows hold. A file
  whose k, counts and tree counts were all multiplied alike passes every check made from the
  mapping alone; only the training rows tell.

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
from anonml.anonymize._pipeline import PER_FEATURE_RULES
from anonml.modelfile._limits import exact_int as _exact_int
from anonml.modelfile._mapping_privacy import MAX_NAME as MAX_TEXT
from anonml.modelfile._mapping_privacy import check_privacy_params, measure_privacy, privacy_claim
from anonml.modelfile._mapping_routes import (
    _is_anonymizer,
    _refuse,
    check_routes,
    is_released_pipeline,
)

__all__ = ["check_routes", "is_released_pipeline", "measure_mapping", "release_copy",
           "release_pipeline", "verify_mapping"]

#: what releasing the mapping reveals (the report's "mapping" section and docs/release.md)
REVEALS = ("each group's representative (the same values as in the k-anonymous table, the only "
           "training values in the file); a routing tree on raw values: numeric thresholds "
           "rounded to the roundest number between the training values they separate (never "
           "a training value), categorical splits naming the categories of one side only; no "
           "encoder value lists, no per-node or per-group row counts (each group holds at "
           "least k training rows, re-derived from the training rows), no training rows, row "
           "indices or per-row arrays")
#: what a mapping saved before issue 19 (or without a routing tree) reveals
REVEALS_LEGACY = ("each group's representative (the same values as in the k-anonymous table) "
                  "and its training count (each at least k); the routing structure: split "
                  "thresholds, cut points or curve boundaries between groups, and the distinct "
                  "QI values and categories seen in training that the encoder routes by; no "
                  "training rows, row indices or per-row arrays")


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
                   released: bool = True, X_train: Any = None, labels: Any = None) -> dict:
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
    X_train : DataFrame, optional
        The training rows the mapping was fitted on. When given, they are mapped through the
        mapping and what the file claims is compared with what they give
        (:func:`measure_mapping`); the result is under ``"measured"``. A disagreement is not
        raised: it is reported (``measured["mismatches"]``) for the audit's rules to block on.
    labels : Series, optional
        The training rows' labels, named: for a mapping whose sensitive attribute is the label
        (``fit(X, y, sensitive_values=)``), whose l and t are then measured on them.

    Returns
    -------
    dict
        JSON-safe facts for the report: ``method``, ``k``, ``n_groups``, ``smallest_group``,
        ``n_training_rows`` (all as the file claims them), ``quasi_identifiers``,
        ``recoding``, ``checks`` (what was verified), ``reveals``, ``routes`` (each routing
        tree's depth and size, within :data:`MAX_ROUTE_DEPTH` and :data:`MAX_ROUTE_NODES`),
        and with ``X_train`` ``measured`` (see :func:`measure_mapping`).

    Raises
    ------
    InputError
        One line naming what failed.
    """
    try:
        facts = _verify(obj, X, where, released)
        if X_train is not None:
            m = obj.steps[0][1] if is_released_pipeline(obj) else obj
            try:
                facts["measured"] = _measure(m, X_train, where, labels=labels)
            except InputError as exc:
                if str(exc).startswith(f"{where} is refused"):
                    raise
                raise _refuse(where, "mapping the training rows through it failed "
                              f"({exc})") from None
            if facts["n_training_rows"] is None:  # not in the file: the rows give it
                facts["n_training_rows"] = facts["measured"]["n_rows"]
            if facts["measured"]["claims_match"]:
                facts["checks"].append(
                    f"the {facts['measured']['n_rows']:,} training rows mapped through it give "
                    "the file's k, group counts and tree counts")
        return facts
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a mapping too odd to check is refused too
        from anonml._errors import one_line

        raise _refuse(where, f"it cannot be checked ({type(exc).__name__}: "
                      f"{one_line(exc, 160)})") from None


def _check_texts(m: Any, where: str) -> None:
    """A mapping's text parameters and column names are short printable names: a long text
    would be a place to carry data out in the file."""
    d = m.__dict__
    texts = [(k, v) for k, v in d.items() if isinstance(v, str)]
    for k in ("columns_", "qi_", "categorical_", "quasi_identifiers", "categorical_features"):
        v = d.get(k)
        if isinstance(v, (list, tuple)):
            texts += [(k, x) for x in v if isinstance(x, str)]
    for k, v in texts:
        if len(v) > MAX_TEXT or not v.isprintable():
            raise _refuse(where, f"its {k} holds a text of {len(v):,} characters (at most "
                          f"{MAX_TEXT} printable ones: a name, not data)")


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
    minimal = sizes is None and d.get("route_") is not None and "encoder_" not in d
    if minimal:  # a minimal release copy: no counts; each group holds >= k by its claim
        sizes = np.full(n_groups, k, dtype=np.int64)
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
    route = d.get("route_")
    if recoding == "representative" and (encoder is not None or route is not None):
        numeric = set(getattr(encoder, "numeric", ())) if encoder is not None else \
            set(route.columns) - set(route.categorical)
        for c in qi:
            col = reps[c]
            live = col[~suppressed]
            if c in numeric and not (pd.api.types.is_numeric_dtype(col.dtype) or
                                     pd.api.types.is_numeric_dtype(live.infer_objects().dtype)):
                raise _refuse(where, f"its representatives of numeric column {c!r} are not "
                              f"numbers (dtype {col.dtype})")
    check_privacy_params(m, lambda text: _refuse(where, text))
    _check_texts(m, where)
    routes = check_routes(m, where)  # before anything routes a row
    checks = [f"k={k} is a whole number >= 2",
              (f"the file holds no group sizes (each of its {n_groups} groups holds at least "
               "k training rows by its claim; the training rows re-derive them)") if minimal
              else f"all {n_groups} groups hold at least k training rows (smallest "
              f"{int(sizes.min())})",
              "representative table is groups x quasi-identifiers",
              "no per-node counts in this mapping's routing tree" if minimal
              else _check_tree_counts(m, sizes, where)]
    claim = privacy_claim(m)
    if claim:
        checks.append(f"the file claims {claim}; the sensitive values are not in the file, so "
                      "only the training rows (--train) can confirm it")
    if X is not None and isinstance(X, pd.DataFrame) and len(X):
        rows = X.iloc[:1000]
        try:
            checks += _check_calls(pipe, m, reps, suppressed, rows, where)
        except InputError as exc:
            if str(exc).startswith(f"{where} is refused"):
                raise
            raise _refuse(where, f"calling it on the given rows failed ({exc})") from None
    return {"method": type(m).__name__, "k": k, "n_groups": n_groups,
            "smallest_group": int(sizes.min()),
            "n_training_rows": None if minimal else int(sizes.sum()),
            "quasi_identifiers": [str(c) for c in qi], "recoding": str(recoding),
            "privacy_claim": claim,
            "checks": checks, "reveals": REVEALS if minimal else REVEALS_LEGACY,
            "routes": routes}


def _check_calls(pipe: Any, m: Any, reps: pd.DataFrame, suppressed: np.ndarray,
                 rows: pd.DataFrame, where: str) -> list:
    """The checks that call the mapping (after its structure passed validation on load)."""
    out = []
    live = np.flatnonzero(~suppressed)
    # A whole real record routes to its own group under every method. A per-feature
    # representative (each QI's value from its own row) stays inside its group's region only
    # where the regions are products over the columns (trees, Mondrian cuts, R+-tree boxes);
    # a Hilbert run or a SaNGreeA cluster is not, so there the check does not apply.
    per_feature = getattr(m, "representative", None) in PER_FEATURE_RULES
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


# ----------------------------------------------------------------------------- measured claims
#: most mismatch lines listed one by one (the rest are counted in one more line)
MAX_MISMATCH_LINES = 5


def _listed(lines: list, n_more: int, what: str) -> list:
    if n_more > 0:
        lines.append(f"and {n_more:,} more {what}")
    return lines


def _column_codes(train: pd.Series, reps: pd.Series) -> tuple[np.ndarray, np.ndarray, int]:
    """Shared codes of a column's training values and representative values (missing values a
    code of their own; numbers compared as numbers)."""
    numeric = pd.api.types.is_numeric_dtype(train.dtype) and not pd.api.types.is_bool_dtype(
        train.dtype)
    if numeric:
        a = train.to_numpy(dtype=np.float64)
        b = pd.to_numeric(reps, errors="coerce").to_numpy(dtype=np.float64)
    else:
        a = np.asarray(train.astype(object), dtype=object)
        b = np.asarray(reps.astype(object), dtype=object)
    codes, uniques = pd.factorize(np.concatenate([a, b]), use_na_sentinel=False)
    return codes[:a.size].astype(np.int64), codes[a.size:].astype(np.int64), max(len(uniques), 1)


def _representatives_held(m: Any, frame: pd.DataFrame, groups: np.ndarray,
                          live: np.ndarray) -> dict:
    """Whether each live group's representative is a value its own training rows hold: the
    whole QI combination (record rules), each QI value (per-feature rules), or each QI value
    and the combination of the categorical QIs (``"per_feature_joint"``)."""
    reps = m.representatives_
    qi = list(m.qi_)
    rule = str(getattr(m, "representative", "") or "")
    per_feature = rule in PER_FEATURE_RULES
    if m.recoding_ != "representative" or not qi:
        return {"rule": rule, "checked": 0, "not_in_group": None,
                "note": "generalized labels, not values: nothing to compare"}
    if not per_feature:
        joint_cols = set(qi)
    elif rule == "per_feature_joint":
        joint_cols = set(getattr(m, "categorical_", None) or ()) & set(qi)
    else:
        joint_cols = set()
    G = reps.shape[0]
    ok_rows = (groups >= 0) & (groups < G)
    g = groups[ok_rows]
    held = np.ones(G, dtype=bool)
    first_col = np.full(G, -1, dtype=np.int64)
    joint_t = np.zeros(g.size, dtype=np.int64)
    joint_r = np.zeros(G, dtype=np.int64)
    for j, c in enumerate(qi):
        tc, rc, u = _column_codes(frame[c][ok_rows], reps[c])
        if per_feature:
            has = np.isin(np.arange(G, dtype=np.int64) * u + rc, g * u + tc)
            first_col[(first_col < 0) & ~has] = j
            held &= has
        if c in joint_cols:  # one combined key per row, re-coded after each column to stay small
            both = np.concatenate([joint_t, joint_r]) * u + np.concatenate([tc, rc])
            both = pd.factorize(both)[0].astype(np.int64)
            joint_t, joint_r = both[:g.size], both[g.size:]
    if joint_cols:
        u = int(max(joint_t.max(initial=0), joint_r.max(initial=0))) + 1
        held &= np.isin(np.arange(G, dtype=np.int64) * u + joint_r, g * u + joint_t)
    bad = np.flatnonzero(~held & live)
    if not per_feature:
        note = ("each representative is the whole QI combination of one of its group's "
                "training rows")
    elif joint_cols:
        note = ("each value of a representative is one its group's training rows hold, and its "
                "combination of categorical QIs is that of one of them")
    else:
        note = "each value of a representative is one its group's training rows hold"
    out = {"rule": rule or "unknown", "checked": int(live.sum()), "not_in_group": int(bad.size),
           "first_group": int(bad[0]) if bad.size else None, "note": note}
    if bad.size and per_feature and first_col[bad[0]] >= 0:
        out["first_column"] = str(qi[int(first_col[bad[0]])])
    return out


def _tree_leaf_counts(m: Any, frame: pd.DataFrame, lines: list, n_rows: int) -> dict | None:
    """The accuracy-guided exact tree's stored per-node counts against the training rows
    routed through it."""
    tree = m.__dict__.get("tree_")
    inner = getattr(tree, "tree_", None)
    if inner is None or not hasattr(inner, "n_node_samples") or \
            m.__dict__.get("tree_method_") != "exact":
        return None
    stored = np.asarray(inner.n_node_samples, dtype=np.int64)
    leaf = np.asarray(inner.children_left) == -1
    chosen = m.handle_unknown
    try:
        m.handle_unknown = "ignore"
        got = np.bincount(tree.apply(m.encoder_.onehot(frame, "ignore")),
                          minlength=stored.size).astype(np.int64)
    finally:
        m.handle_unknown = chosen
    if int(stored[0]) != n_rows:
        lines.append(f"the file's tree claims it was fitted on {int(stored[0]):,} rows; the "
                     f"training table has {n_rows:,}")
    leaves = np.flatnonzero(leaf)
    differ = leaves[stored[leaves] != got[leaves]]
    for i in differ[:MAX_MISMATCH_LINES]:
        lines.append(f"tree leaf {int(i)}: the file claims {int(stored[i]):,} rows; the "
                     f"training rows give {int(got[i]):,}")
    _listed(lines, differ.size - MAX_MISMATCH_LINES, "tree leaves whose claimed rows differ")
    live = got[leaves]
    live = live[live > 0]
    return {"n_leaves": int(leaves.size), "rows_claimed": int(stored[0]),
            "smallest_leaf_claimed": int(stored[leaves].min()) if leaves.size else 0,
            "smallest_leaf_measured": int(live.min()) if live.size else 0,
            "leaves_differing": int(differ.size)}


def _size_summary(sizes: np.ndarray) -> dict:
    if sizes.size == 0:
        return {"min": 0, "median": 0.0, "max": 0, "mean": 0.0}
    return {"min": int(sizes.min()), "median": float(np.median(sizes)),
            "max": int(sizes.max()), "mean": round(float(sizes.mean()), 3)}


def _measure(m: Any, X_train: Any, where: str, hierarchies: dict | None = None,
             labels: Any = None) -> dict:
    """See :func:`measure_mapping` (``m`` verified already)."""
    from anonml.encoding import as_frame, check_table

    frame, _ = as_frame(X_train)
    n_rows = int(frame.shape[0])
    if n_rows == 0:
        raise _refuse(where, "the training table has no rows to measure it on")
    m._check_columns(frame)
    k = int(m.k)
    G = int(m.n_groups_)
    minimal = m.__dict__.get("group_sizes_") is None and "encoder_" not in m.__dict__
    sizes_claimed = np.full(G, k, dtype=np.int64) if minimal else \
        np.asarray(m.group_sizes_, dtype=np.int64)
    chosen = m.handle_unknown
    try:  # a value the mapping never saw routes like a new row's (the released setting)
        m.handle_unknown = "ignore"
        if minimal:
            groups = np.asarray(m._groups(frame), dtype=np.int64)
        else:
            check_table(frame, m.encoder_.columns, m.encoder_.categorical)
            groups = np.asarray(m._assign(frame), dtype=np.int64)
    finally:
        m.handle_unknown = chosen
    if m.merge_map_ is not None and not minimal:
        merge = np.asarray(m.merge_map_, dtype=np.int64)
        inside = (groups >= 0) & (groups < merge.size)
        groups = np.where(inside, merge[np.clip(groups, 0, max(merge.size - 1, 0))], -1)
    if groups.shape != (n_rows,):
        raise _refuse(where, "its group assignment does not give one group per row")
    outside = int(((groups < 0) | (groups >= G)).sum())
    sizes = np.bincount(groups[(groups >= 0) & (groups < G)], minlength=G).astype(np.int64)
    filled = sizes[sizes > 0]
    k_measured = int(filled.min()) if filled.size else 0
    lines: list = []
    if k_measured < k:
        lines.append(f"the file claims k = {k:,}; the training rows give k = {k_measured:,}")
    total = int(sizes_claimed.sum())
    if total != n_rows and not minimal:
        lines.append(f"the file claims {total:,} training rows; the training table has "
                     f"{n_rows:,}")
    if outside:
        lines.append(f"the file claims every training row lies in one of its {G:,} groups; "
                     f"the training rows give {outside:,} rows in none")
    if int(filled.size) != G:
        lines.append(f"the file claims {G:,} groups; the training rows fill {int(filled.size):,}")
    smallest_claimed = int(sizes_claimed.min()) if sizes_claimed.size else 0
    if smallest_claimed != k_measured and not minimal:
        lines.append(f"the file claims its smallest group holds {smallest_claimed:,} rows; the "
                     f"training rows give {k_measured:,}")
    differ = np.flatnonzero(sizes != sizes_claimed) if not minimal else np.zeros(0, np.int64)
    for g in differ[:MAX_MISMATCH_LINES]:
        lines.append(f"group {int(g)}: the file claims {int(sizes_claimed[g]):,} rows; the "
                     f"training rows give {int(sizes[g]):,}")
    _listed(lines, differ.size - MAX_MISMATCH_LINES, "groups whose claimed rows differ")
    tree = _tree_leaf_counts(m, frame, lines, n_rows)
    suppressed = np.asarray(m.__dict__.get("suppressed_groups_", np.zeros(G, dtype=bool)))
    reps = _representatives_held(m, frame, groups, ~suppressed & (sizes > 0))
    if reps["not_in_group"]:
        col = f", column {reps['first_column']!r}" if "first_column" in reps else ""
        lines.append(f"{reps['not_in_group']:,} of {reps['checked']:,} groups have a "
                     "representative that is not a value of their own training rows (first: "
                     f"group {reps['first_group']}{col}); the file claims every one is")
    privacy = measure_privacy(m, frame, groups, lines, hierarchies, labels)
    return {
        "k_measured": k_measured,
        "n_groups_measured": int(filled.size),
        "n_rows": n_rows,
        "rows_in_no_group": outside,
        "group_sizes_measured": _size_summary(filled),
        "groups_below_k": int((filled < k).sum()),
        "representatives": reps,
        "tree_counts": tree,
        "privacy": privacy,
        "claims": {"k": k, "n_groups": G, "n_training_rows": None if minimal else total,
                   "smallest_group": smallest_claimed,
                   "group_sizes": None if minimal else _size_summary(sizes_claimed),
                   "groups_differing": int(differ.size),
                   "tree_rows": tree["rows_claimed"] if tree else None},
        "mismatches": lines,
        "claims_match": not lines,
    }


def measure_mapping(obj: Any, X_train: Any, *, where: str = "the mapping",
                    hierarchies: dict | None = None, labels: Any = None) -> dict:
    """Map the training rows through a mapping and compare with what its file claims.

    The checks of :func:`verify_mapping` use the mapping alone, so a file whose k, group
    counts and tree counts were all multiplied by 10 passes them. This maps the *training*
    rows through the mapping's own group assignment (the tree's ``apply``, the cuts, the curve
    boundaries: vectorized, no loop over rows) and counts.

    Parameters
    ----------
    obj : fitted anonymizer or Pipeline
        A mapping, or ``Pipeline([("mapping", anonymizer), ("model", model)])``.
    X_train : DataFrame
        The training rows the mapping was fitted on (the original rows, with its columns).
    where : str
        How messages name the mapping.
    hierarchies : dict, optional
        Column -> Hierarchy: only for a t-closeness claim made with the hierarchical distance
        (a released file holds no hierarchies).
    labels : Series, optional
        The training rows' labels, named: for a claim on the label (a mapping fitted with
        ``sensitive`` naming it).

    Returns
    -------
    dict
        Plain JSON-safe data (ints, floats, strings, lists, dicts; no numpy objects):
        ``k_measured`` (the smallest group on the training rows, over groups that receive
        rows), ``n_groups_measured``, ``n_rows``, ``rows_in_no_group``,
        ``group_sizes_measured`` (min, median, max, mean), ``groups_below_k``,
        ``representatives`` (how many live groups were checked and ``not_in_group``, the
        number whose representative is not a value of their own training rows), ``tree_counts``
        (the exact tree's stored leaf counts against the measured ones, or None),
        ``privacy`` (None, or the l and t the file claims for its sensitive attribute against
        those of the table the training rows become: see
        :func:`anonml.modelfile._mapping_privacy.measure_privacy`),
        ``claims`` (what the file says: k, groups, training rows, smallest group, group-size
        summary, tree rows), ``mismatches`` (one line per disagreement, naming both numbers:
        ``"the file claims k = 400; the training rows give k = 40"``) and ``claims_match``.

    Raises
    ------
    InputError
        One line, when the mapping fails :func:`verify_mapping`'s structural checks (route
        bounds included) or cannot be called on the rows.
    """
    try:
        _verify(obj, None, where, False)
        m = obj.steps[0][1] if is_released_pipeline(obj) else obj
        return _measure(m, X_train, where, hierarchies, labels)
    except InputError as exc:
        if str(exc).startswith(f"{where} is refused"):
            raise
        raise _refuse(where, f"mapping the training rows through it failed ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - a mapping too odd to measure is refused too
        from anonml._errors import one_line

        raise _refuse(where, f"it cannot be measured on the training rows "
                      f"({type(exc).__name__}: {one_line(exc, 160)})") from None
