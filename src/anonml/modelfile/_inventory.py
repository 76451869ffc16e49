"""What a released mapping (or pipeline) holds, member by member, and which training values.

:func:`inventory` walks a fitted anonymizer, a released ``Pipeline([("mapping", ...),
("model", ...)])`` or any scikit-learn estimator, and lists every member it holds: each
attribute path down to arrays and scalars (a DataFrame of representatives per column, a
scikit-learn tree per node field, a routing tree per array). Given the training table and the
anonymized table, it counts in each member the values that are training values the anonymized
table does not show: a number equal to a training value of a quasi-identifier that is not among
the anonymized table's values of that quasi-identifier, a category likewise. Those values are
what the file reveals beyond the k-anonymous table; a released mapping should have none.

Attribution: a member tied to one column (a representative column, a routing split's
threshold, an encoder's value list keyed by column) is compared with that column's hidden
values; a member of floats or text tied to no column is compared with the hidden values of
every quasi-identifier (numbers with numbers, text with categories). Integer arrays and
scalars tied to no column are indices, node ids and counts (children, features, group ids,
``k``): their size is listed, their values are not compared (``checked`` is 0), since small
integers would match ages and the like by coincidence.

The output is plain JSON-safe data (lists, dicts, str, int, float, bool, None), so that it can
be computed inside the audit's sandbox worker.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["inventory", "leaked_total"]

#: deepest nesting walked (a fitted estimator is far shallower)
_MAX_DEPTH = 40
_SKLEARN_NODE_FIELDS = ("left_child", "right_child", "feature", "threshold", "impurity",
                        "n_node_samples", "weighted_n_node_samples", "missing_go_to_left")
_WHAT = {
    "representatives_": "each group's representative values (the k-anonymous table's values)",
    "route_.threshold_": "routing splits: rows with x <= threshold go left (rounded thresholds)",
    "route_.categories_": "routing splits: the categories each categorical split names",
    "route_.feature_": "routing splits: column read by each split (-1 at a leaf)",
    "route_.left_": "routing tree: left child of each split",
    "route_.right_": "routing tree: right child of each split",
    "route_.group_": "routing tree: group of each leaf",
    "route_.cat_offset_": "routing tree: start of each categorical split's named categories",
    "route_.cat_count_": "routing tree: how many categories each categorical split names",
    "route_.cat_missing_": "routing tree: whether a categorical split names the missing value",
    "route_.named_left_": "routing tree: whether the named categories go left",
    "route_.columns": "routing tree: the columns its splits read",
    "route_.categorical": "routing tree: the categorical ones among them",
    "route_.text_index_": "routing tree: text split of each node (-1 elsewhere)",
    "route_.text_thresholds_": "text splits: categories as text <= threshold go left (the "
                               "shortest strings between them, never a category)",
    "n_groups_": "number of groups",
    "qi_": "quasi-identifier columns",
    "categorical_": "the categorical ones among them",
    "columns_": "columns of the input",
    "feature_names_in_": "column names of the input",
    "n_features_in_": "number of input columns",
    "recoding_": "how groups are recoded",
    "tree_method_": "which tree was fitted (exact or hist)",
    "suppressed_groups_": "whether each group is suppressed",
    "merge_map_": "partition group -> merged group",
    "t_distance_": "ground distance of the t-closeness claim (None without t)",
    "tree_.value": "per-node class counts or means of the fitted target",
    "tree_.n_node_samples": "training rows reaching each node",
    "tree_.weighted_n_node_samples": "weighted training rows reaching each node",
    "tree_.threshold": "split thresholds",
    "tree_.impurity": "impurity of each node",
    "group_sizes_": "training rows per group",
    "encoder_.values_": "every distinct training value of a numeric column",
    "encoder_.thresholds_": "bin edges between training values",
    "encoder_.cats_": "every category seen in training",
}


class _Hidden:
    """Per quasi-identifier, the training values the anonymized table does not show."""

    def __init__(self, X_train: Any, anonymized: Any, qi: list | None):
        self.numeric: dict[Any, np.ndarray] = {}
        self.text: dict[Any, set] = {}
        self.active = X_train is not None and anonymized is not None
        if not self.active:
            return
        train = X_train if isinstance(X_train, pd.DataFrame) else pd.DataFrame(X_train)
        anon = anonymized if isinstance(anonymized, pd.DataFrame) else pd.DataFrame(anonymized)
        cols = [c for c in (qi if qi else list(train.columns)) if c in train.columns and
                c in anon.columns]
        for c in cols:
            t, a = train[c], anon[c]
            if pd.api.types.is_numeric_dtype(t.dtype) and not pd.api.types.is_bool_dtype(t.dtype):
                tv = np.unique(t.to_numpy(dtype=np.float64))
                av = pd.to_numeric(a, errors="coerce").to_numpy(dtype=np.float64)
                self.numeric[c] = np.setdiff1d(tv, av[np.isfinite(av)])
            else:
                shown = {_plain(v) for v in a.dropna().tolist()}
                self.text[c] = {_plain(v) for v in t.dropna().unique().tolist()} - shown
        self.all_numeric = (np.unique(np.concatenate(list(self.numeric.values())))
                            if self.numeric else np.zeros(0))
        self.all_text = set().union(*self.text.values()) if self.text else set()

    def count(self, values: Any, column: Any = None) -> tuple[int, int]:
        """(values compared, values that are hidden training values)."""
        if not self.active:
            return 0, 0
        arr = np.asarray(values, dtype=object).ravel() if not isinstance(values, np.ndarray) \
            else values.ravel()
        if arr.size == 0:
            return 0, 0
        if arr.dtype.kind in "fiu" and arr.dtype.kind != "b":
            num = arr.astype(np.float64)
            num = num[np.isfinite(num)]
            ref = self.numeric.get(column, np.zeros(0)) if column is not None and (
                column in self.numeric or column in self.text) else self.all_numeric
            return int(num.size), int(np.isin(num, ref).sum())
        items = [_plain(v) for v in arr.tolist() if v is not None and not (
            isinstance(v, float) and v != v)]
        if column is not None and column in self.text:
            ref_t = self.text[column]
        elif column is not None and column in self.numeric:
            nums = np.array([v for v in items if isinstance(v, numbers.Real) and not
                             isinstance(v, bool)], dtype=np.float64)
            return len(items), int(np.isin(nums, self.numeric[column]).sum())
        else:
            ref_t = self.all_text
        hits = 0
        for v in items:
            try:
                hits += v in ref_t
            except TypeError:
                continue
        nums = np.array([v for v in items if isinstance(v, numbers.Real) and not
                         isinstance(v, bool)], dtype=np.float64)
        if column is None and nums.size:
            hits += int(np.isin(nums, self.all_numeric).sum())
        return len(items), int(hits)


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _generic_path(path: str) -> str:
    """``steps[0].route_.threshold_`` -> ``route_.threshold_`` (for the descriptions)."""
    parts = path.split(".")
    while parts and (parts[0].startswith("steps[") or parts[0] in ("mapping", "model")):
        parts = parts[1:]
    text = ".".join(parts)
    for key in sorted(_WHAT, key=len, reverse=True):
        if text.startswith(key) or text.endswith(key):
            return key
    return text


class _Walker:
    def __init__(self, hidden: _Hidden):
        self.hidden = hidden
        self.rows: list[dict] = []
        self.seen: set[int] = set()

    def row(self, path: str, part: str, value: Any, what: str | None = None, *,
            column: Any = None, compare: bool | None = None, values: Any = None) -> None:
        arr = value if isinstance(value, np.ndarray) else None
        if arr is None and isinstance(value, (list, tuple)):
            try:
                arr = np.asarray(value, dtype=object)
            except Exception:  # noqa: BLE001 - a ragged list: listed by its length
                arr = None
        shape = list(arr.shape) if arr is not None else []
        size = int(arr.size) if arr is not None else 1
        if isinstance(value, np.ndarray):
            dtype = str(value.dtype)
        elif isinstance(value, (list, tuple)):
            dtype = "list"
        else:
            dtype = type(value).__name__
        if compare is None:
            kind = arr.dtype.kind if arr is not None else None
            if arr is None:
                compare = isinstance(value, (float, np.floating, str)) and \
                    not isinstance(value, bool)
            elif kind in "fU" or kind == "O":
                compare = True
            else:
                compare = column is not None and kind in "iu"
        checked, leaked = (0, 0)
        if compare and self.hidden.active:
            data = values if values is not None else (arr if arr is not None else [value])
            checked, leaked = self.hidden.count(data, column)
        self.rows.append({
            "path": path, "part": part,
            "what": what or _WHAT.get(_generic_path(path), ""),
            "type": dtype, "shape": shape, "size": size,
            "column": None if column is None else str(column),
            "values_checked": checked,
            "training_values_not_shown": leaked if self.hidden.active else None,
        })

    def walk(self, obj: Any, path: str, part: str, depth: int = 0) -> None:
        from sklearn.base import BaseEstimator
        from sklearn.tree._tree import Tree

        if depth > _MAX_DEPTH:
            self.row(path, part, None, "nested too deeply to list", compare=False)
            return
        if isinstance(obj, (BaseEstimator, Tree)) or type(obj).__module__.startswith("anonml."):
            if id(obj) in self.seen:
                return
            self.seen.add(id(obj))
        if obj is None or isinstance(obj, (bool, np.bool_)):
            self.row(path, part, obj, compare=False)
            return
        if isinstance(obj, (numbers.Number, str, np.generic)):
            self.row(path, part, _plain(obj))
            return
        if isinstance(obj, np.ndarray):
            if obj.dtype == object and obj.size and not _scalars(obj):
                for i, item in enumerate(obj.ravel()[:10_000]):
                    self.walk(item, f"{path}[{i}]", part, depth + 1)
                return
            self.row(path, part, obj)
            return
        if isinstance(obj, pd.DataFrame):
            for c in obj.columns:
                self.row(f"{path}[{c!r}]", part, obj[c].to_numpy(),
                         _WHAT.get(_generic_path(path)), column=c)
            return
        if isinstance(obj, pd.Series):
            self.row(path, part, obj.to_numpy())
            return
        if isinstance(obj, (list, tuple)):
            if all(isinstance(v, (numbers.Number, str, bool, type(None), np.generic))
                   for v in obj):
                self.row(path, part, list(obj))
                return
            for i, item in enumerate(obj):
                self.walk(item, f"{path}[{i}]", part, depth + 1)
            return
        if isinstance(obj, dict):
            for key, item in obj.items():
                self.walk_keyed(item, f"{path}[{key!r}]", part, key, depth + 1)
            return
        if isinstance(obj, Tree):
            self.tree(obj, path, part)
            return
        if type(obj).__name__ == "RoutingTree":
            self.routing(obj, path, part)
            return
        if type(obj).__name__ == "Pipeline" and hasattr(obj, "steps"):
            from anonml.modelfile._mapping import is_released_pipeline

            released = is_released_pipeline(obj)
            for i, (name, step) in enumerate(obj.steps):
                sub = "mapping" if released and i == 0 else "model"
                self.walk(step, f"{path}.steps[{i}]" if path else f"steps[{i}]", sub, depth + 1)
            return
        state = getattr(obj, "__dict__", None)
        if state is None:
            self.row(path, part, repr(obj)[:60], compare=False)
            return
        for key in sorted(state, key=str):
            self.walk(state[key], f"{path}.{key}" if path else str(key), part, depth + 1)

    def walk_keyed(self, item: Any, path: str, part: str, key: Any, depth: int) -> None:
        """A dict entry keyed by a quasi-identifier is that column's (encoders' value lists)."""
        column = key if (key in self.hidden.numeric or key in self.hidden.text) else None
        if column is not None and isinstance(item, np.ndarray) and (item.dtype.kind in "fiuO"):
            self.row(path, part, item, column=column, compare=True)
            return
        if column is not None and hasattr(item, "categories"):  # an encoder's category spec
            self.row(f"{path}.categories", part, np.asarray(item.categories, dtype=object),
                     "every category seen in training", column=column, compare=True)
            return
        self.walk(item, path, part, depth)

    def tree(self, t: Any, path: str, part: str) -> None:
        """A scikit-learn tree, one row per node field (thresholds compared per feature only
        when the tree reads raw columns; a mapping's exact tree reads ranks and indicators)."""
        state = t.__getstate__()
        nodes = state["nodes"]
        for name in _SKLEARN_NODE_FIELDS:
            if name in (nodes.dtype.names or ()):
                self.row(f"{path}.{name}", part, np.asarray(nodes[name]),
                         compare=name == "threshold")
        self.row(f"{path}.value", part, np.asarray(state["values"]), compare=True)

    def routing(self, rt: Any, path: str, part: str) -> None:
        feature = np.asarray(rt.feature_, dtype=np.int64)
        columns = list(rt.columns)
        thr = np.asarray(rt.threshold_, dtype=np.float64)
        for j, c in enumerate(columns):
            sel = feature == j
            if c in set(rt.categorical) or not sel.any():
                continue
            self.row(f"{path}.threshold_[{c!r}]", part, thr[sel],
                     "routing splits on this column: rows with x <= threshold go left "
                     "(rounded thresholds)", column=c, compare=True)
        cats = np.asarray(rt.categories_, dtype=object).tolist()
        off = np.asarray(rt.cat_offset_, dtype=np.int64)
        cnt = np.asarray(rt.cat_count_, dtype=np.int64)
        for j, c in enumerate(columns):
            if c not in set(rt.categorical):
                continue
            named = [v for i in np.flatnonzero((feature == j) & (off >= 0))
                     for v in cats[off[i]: off[i] + cnt[i]]]
            if not named and not ((feature == j).any()):
                continue
            self.row(f"{path}.categories_[{c!r}]", part, np.asarray(named, dtype=object),
                     "categories named by the routing splits on this column (others follow "
                     "each split's default side)", column=c, compare=True)
        for name in ("feature_", "left_", "right_", "group_", "cat_offset_", "cat_count_",
                     "cat_missing_", "named_left_"):
            self.row(f"{path}.{name}", part, np.asarray(getattr(rt, name)), compare=False)
        self.row(f"{path}.columns", part, [str(c) for c in columns], compare=False)
        self.row(f"{path}.categorical", part, [str(c) for c in rt.categorical], compare=False)
        extra = set(vars(rt)) - {"feature_", "threshold_", "left_", "right_", "group_",
                                 "cat_offset_", "cat_count_", "cat_missing_", "named_left_",
                                 "categories_", "columns", "categorical"}
        for name in sorted(extra):
            self.walk(getattr(rt, name), f"{path}.{name}", part)


def _scalars(arr: np.ndarray) -> bool:
    return all(isinstance(v, (numbers.Number, str, bool, type(None), np.generic))
               for v in arr.ravel()[:1000])


def _first_anonymizer(obj: Any) -> Any:
    from anonml.anonymize._base import BaseAnonymizer

    if isinstance(obj, BaseAnonymizer):
        return obj
    for _, step in getattr(obj, "steps", []) or []:
        if isinstance(step, BaseAnonymizer):
            return step
    return None


def inventory(obj: Any, X_train: Any = None, anonymized: Any = None) -> list[dict]:
    """Everything a released mapping or pipeline holds, member by member.

    Parameters
    ----------
    obj : fitted anonymizer, Pipeline or estimator
        What the file holds (e.g. ``anonml.safemodel.load_model(path)``).
    X_train : DataFrame, optional
        The training table the mapping was fitted on.
    anonymized : DataFrame, optional
        The k-anonymous table (``fit_transform``'s output). With ``X_train``, each member's
        values are compared with the training values the anonymized table does not show.

    Returns
    -------
    list of dict
        One dict per member, plain JSON-safe data: ``path`` (attribute path, e.g.
        ``"steps[0].route_.threshold_['age']"``), ``part`` (``"mapping"`` or ``"model"``),
        ``what`` (a description, where known), ``type`` (dtype, ``"list"`` or the Python
        type), ``shape`` (list of ints; ``[]`` for a scalar), ``size``, ``column`` (the
        quasi-identifier the member belongs to, or None), ``values_checked`` (values compared)
        and ``training_values_not_shown`` (how many of them equal training values of that
        quasi-identifier, or of any when the member has no column, that the anonymized table
        does not show; None without ``X_train`` and ``anonymized``).
    """
    m = _first_anonymizer(obj)
    qi = list(getattr(m, "qi_", []) or []) if m is not None else None
    hidden = _Hidden(X_train, anonymized, qi)
    walker = _Walker(hidden)
    from anonml.anonymize._base import BaseAnonymizer

    part = "mapping" if isinstance(obj, BaseAnonymizer) else "model"
    walker.walk(obj, "", part)
    if m is not None:  # the anonymizer's constructor parameters, named as such
        params = set(m.get_params(deep=False))
        for row in walker.rows:
            last = row["path"].split(".")[-1].split("[")[0]
            if row["part"] == "mapping" and not row["what"] and last in params:
                row["what"] = "constructor parameter"
    return walker.rows


def leaked_total(rows: list[dict], part: str | None = "mapping") -> int:
    """Sum of ``training_values_not_shown`` over an inventory's rows (of one part)."""
    return int(sum(r["training_values_not_shown"] or 0 for r in rows
                   if part is None or r["part"] == part))
