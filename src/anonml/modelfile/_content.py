"""Does the model carry its training records? A check on content, not on the model family.

``model.stores_training_records`` used to be read from the family alone (kNN and SVMs keep
their training rows), so a well-behaved tree that carried the whole table as extra data passed
it. The ``.skops`` vetting now refuses attributes a class does not set
(:mod:`anonml.modelfile._attributes`), but a genuine attribute can hold per-row data too (a
forest's ``oob_decision_function_``, a weight vector, a mapping's training points), and models
read with ``--trust-model`` are not vetted. :func:`training_records_in_model` therefore looks
at every numeric array reachable from the model and reports it when:

* an array has as many rows as the training table, the test table, or both together (a
  per-row array), unless its length is fixed by the model's structure (a tree's nodes, a
  layer's units, per-iteration scores); or
* an array outside a saved anonymizer (whose representatives are, by design, the k-anonymous
  table's rows: :func:`~anonml.modelfile._mapping.verify_mapping` checks those) holds rows
  of the training (or test) table's numeric matrix, exactly: rows are
  compared as raw bytes (``np.isin`` on a void view), as stored (``n x d``), flattened
  (``n * d`` values in row order) or transposed (``d x n``), in float64 and float32; at least
  :data:`MIN_MATCHED_ROWS` distinct rows must match, over all arrays together (rows spread one
  per list count too), so that one coincidental row (all zeros in a table of flags) does not
  count.

The cost is bounded: at most :data:`MAX_VALUES` values are compared in all (a genuine model is
far smaller; beyond it the rest is skipped and said so). An XGBoost booster's trees live in its
C++ memory and are not walked (the note says so): their values are split points and leaf
weights, which the file validation bounds per node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from anonml._utils import n_rows as _n_rows

__all__ = ["MAX_VALUES", "MIN_MATCHED_ROWS", "training_records_in_model"]

#: fewest distinct table rows an array must hold to count as storing records
MIN_MATCHED_ROWS = 5
#: most array values compared in one check
MAX_VALUES = 50_000_000
MAX_DEPTH = 60

#: attributes whose length is set by the model's structure or its hyperparameters, not by the
#: number of training rows (a per-iteration score list as long as the table is a coincidence)
STRUCTURAL = frozenset({
    "train_score_", "validation_score_", "validation_scores_", "loss_curve_",
    "oob_improvement_", "oob_scores_", "coefs_", "intercepts_", "_best_coefs",
    "_best_intercepts", "ms", "vs", "params", "bin_thresholds_", "n_bins_non_missing_",
    "weight_drop", "classes_", "n_iter_", "feature_names_in_",
})


def _matrix(X: Any) -> np.ndarray | None:
    """The table's numeric columns as a float64 matrix (None without any)."""
    if X is None:
        return None
    try:
        import pandas as pd

        if isinstance(X, pd.DataFrame):
            num = X.select_dtypes(include=["number", "bool"])
            if num.shape[1] == 0:
                return None
            return num.to_numpy(dtype=np.float64, na_value=np.nan)
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf" or arr.ndim != 2:
            return None
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        return None


def _void(rows: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(rows + 0.0)  # -0.0 and 0.0 alike
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


class _Table:
    def __init__(self, name: str, M: np.ndarray):
        self.name = name
        self.n, self.d = M.shape
        self.keys = {np.float64: np.unique(_void(M.astype(np.float64)))}
        with np.errstate(over="ignore", invalid="ignore"):
            self.keys[np.float32] = np.unique(_void(M.astype(np.float32)))

    def matches(self, arr: np.ndarray) -> list:
        """The distinct table rows found in ``arr`` (as stored, flattened or transposed), as
        row keys."""
        if self.d < 1 or arr.size < self.d:
            return []
        shapes = []
        if arr.ndim == 2 and arr.shape[1] == self.d:
            shapes.append(arr)
        if arr.ndim == 2 and arr.shape[0] == self.d and arr.shape[1] != self.d:
            shapes.append(arr.T)
        if arr.size % self.d == 0 and not (arr.ndim == 2 and arr.shape[1] == self.d):
            shapes.append(arr.reshape(-1, self.d))
        best: list = []
        for rows in shapes:
            kind = np.float32 if rows.dtype == np.float32 else np.float64
            keys = np.unique(_void(rows.astype(kind)))
            hit = keys[np.isin(keys, self.keys[kind])]
            if hit.size > len(best):
                best = [bytes(k) for k in hit[:100_000]]
        return best


def _numbers_or_items(values: Any, items: Any, numeric: bool, path: str, out: list, seen: set,
                      depth: int, notes: list, structural: bool, mapping: bool) -> None:
    """``values`` as one array of numbers when ``numeric`` and it converts, else each of the
    first 100,000 ``items`` walked by :func:`_arrays`."""
    if numeric:
        try:
            out.append((path, np.asarray(values, dtype=np.float64), structural, mapping))
            return
        except (TypeError, ValueError):
            pass
    for i, item in enumerate(items[:100_000]):
        _arrays(item, f"{path}[{i}]", out, seen, depth + 1, notes, structural, mapping)


def _arrays(obj: Any, path: str, out: list, seen: set, depth: int, notes: list,
            structural: bool = False, mapping: bool = False) -> None:
    """Every numeric array reachable from ``obj``: ``(path, array, length_is_structural,
    in_mapping)``."""
    if depth > MAX_DEPTH or id(obj) in seen:
        return
    if isinstance(obj, np.ndarray):
        if obj.dtype.names:  # a record array (tree nodes): its numeric fields
            for name in obj.dtype.names:
                if obj.dtype[name].kind in "biuf":
                    out.append((f"{path}[{name!r}]", obj[name], True, mapping))
            return
        if obj.dtype.kind in "biuf" and obj.size:
            out.append((path, obj, structural, mapping))
            return
        if obj.dtype == object:
            seen.add(id(obj))
            flat = obj.ravel()
            numeric = bool(flat.size) and all(isinstance(v, (int, float, np.number)) and
                                              not isinstance(v, bool) for v in flat[:1000])
            _numbers_or_items(obj, flat, numeric, path, out, seen, depth, notes, structural,
                              mapping)
        return
    seen.add(id(obj))
    if isinstance(obj, (list, tuple)):
        numeric = all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                      for v in obj[:1000])
        rows = obj and all(isinstance(v, (list, tuple, np.ndarray)) for v in obj[:1000])
        # numbers, or equal-length rows of numbers: one array
        _numbers_or_items(obj, obj, bool(obj) and bool(numeric or rows), path, out, seen, depth,
                          notes, structural, mapping)
        return
    if isinstance(obj, dict):
        for key, item in list(obj.items())[:100_000]:
            _arrays(item, f"{path}[{str(key)[:40]!r}]", out, seen, depth + 1, notes,
                    structural or key in STRUCTURAL, mapping)
        return
    if isinstance(obj, (str, bytes, bytearray, int, float, bool, type(None), np.generic)):
        return
    import pandas as pd

    if isinstance(obj, (pd.DataFrame, pd.Series)):
        frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
        M = _matrix(frame)
        if M is not None and M.size:
            out.append((path, M, structural, mapping))
        return
    module = type(obj).__module__
    if module.startswith("xgboost.") and type(obj).__name__ == "Booster":
        notes.append(f"{path}: an XGBoost booster's trees are not walked (split points and "
                     "leaf weights, bounded per node by the file validation)")
        return
    from sklearn.tree._tree import Tree

    if isinstance(obj, Tree):
        state = obj.__getstate__()
        for key in ("nodes", "values"):
            if isinstance(state.get(key), np.ndarray):
                _arrays(state[key], f"{path}.{key}", out, seen, depth + 1, notes, True, mapping)
        return
    try:
        attrs = vars(obj)
    except TypeError:
        return
    mapping = mapping or module.startswith("anonml.anonymize.")
    for name, value in attrs.items():
        _arrays(value, f"{path}.{name}", out, seen, depth + 1, notes,
                structural or name in STRUCTURAL, mapping)


def training_records_in_model(model: Any, X_train: Any, X_test: Any = None, *,
                              min_rows: int = MIN_MATCHED_ROWS) -> dict:
    """Look for training (or test) records in every numeric array reachable from ``model``.

    Parameters
    ----------
    model : fitted estimator or pipeline
    X_train : DataFrame or array
        The training table; its numeric columns are what stored rows are compared with.
    X_test : DataFrame or array, optional
        The held-out table, checked the same way.
    min_rows : int
        Fewest distinct table rows an array must hold to count.

    Returns
    -------
    dict
        ``stores_training_records`` (bool), ``evidence`` (one sentence naming the array, or
        None), ``n_arrays`` (arrays examined), ``notes`` (what was skipped).
    """
    arrays: list = []
    notes: list = []
    _arrays(model, "model", arrays, set(), 0, notes)
    tables = []
    lengths: dict[int, str] = {}
    for name, X in (("training", X_train), ("test", X_test)):
        M = _matrix(X)
        n = _n_rows(X)
        if n:
            lengths.setdefault(n, f"the {name} table ({n:,} rows)")
        if M is not None and M.shape[0]:
            tables.append(_Table(name, M))
    n_train, n_test = _n_rows(X_train), _n_rows(X_test)
    if n_train and n_test:
        lengths.setdefault(n_train + n_test, f"the training and test tables together "
                           f"({n_train + n_test:,} rows)")
    budget = MAX_VALUES
    evidence = None
    found: dict = {t.name: set() for t in tables}  # rows met so far, over all arrays
    where: dict = {t.name: [] for t in tables}
    for path, arr, structural, mapping in arrays:
        if not structural and arr.ndim >= 1 and arr.shape[0] in lengths and arr.shape[0] > 1:
            evidence = (f"{path} is a per-row array: it has as many rows as "
                        f"{lengths[arr.shape[0]]}")
            break
        if arr.size > budget:
            notes.append(f"stopped comparing rows at {path}: more than {MAX_VALUES:,} values")
            break
        if mapping:
            continue  # a mapping's representatives are the k-anonymous rows (checked apart)
        budget -= arr.size
        for table in tables:
            hits = table.matches(arr)
            if not hits:
                continue
            found[table.name].update(hits)
            where[table.name].append(path)
            if len(found[table.name]) >= min(min_rows, table.n):
                paths = where[table.name]
                evidence = (f"{paths[0]} holds {len(hits):,} rows of the {table.name} table "
                            "exactly" if len(paths) == 1 else
                            f"{len(paths)} arrays ({paths[0]}, ...) hold "
                            f"{len(found[table.name]):,} rows of the {table.name} table "
                            "exactly")
                break
        if evidence:
            break
    return {"stores_training_records": evidence is not None, "evidence": evidence,
            "n_arrays": len(arrays), "notes": notes}


