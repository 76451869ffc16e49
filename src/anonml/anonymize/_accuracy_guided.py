"""Accuracy-guided anonymization (Goldsteen, Ezov, Shmelkin, Moffie & Farkash, 2022).

    A. Goldsteen et al., "Anonymizing Machine Learning Models", DPM 2021 / LNCS 13140,
    arXiv:2007.13086.

A decision tree with ``min_samples_leaf = k`` is fitted on the quasi-identifiers (QIs), with the
model's own predictions as the target. Each leaf is a group of at least k training records; the
QIs of every record in a group are replaced by its representative's: by default those of one real
record of the group (``representative="majority_medoid"``; other rules take a real value of the
group per QI), so the data keeps its domain and the model can be retrained and queried on raw
inputs. Fitted on the true
labels instead of predictions, the same method is the *workload-aware* variant (LeFevre et al.,
2008) used as a baseline in the paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from anonml._errors import InputError
from anonml._utils import check_int
from anonml.anonymize._base import BaseAnonymizer
from anonml.anonymize._hist_tree import HistTree
from anonml.privacy._k_anonymity import fold_codes

__all__ = ["AccuracyGuidedAnonymizer"]

_AUTO_HIST_ROWS = 100_000


class AccuracyGuidedAnonymizer(BaseAnonymizer):
    """k-anonymize training data along a tree fitted to the model's predictions.

    Parameters
    ----------
    k : int
        Smallest equivalence-class size, ``>= 2``. Every group (tree leaf) holds at least k rows.
    quasi_identifiers : list, optional
        QI columns (names for a DataFrame, positions for an array). None means every column.
    categorical_features : list, optional
        Categorical columns. None detects them from dtype: object, ``str``, category and bool
        columns are categorical. A missing value in a categorical column is a category of its
        own; a missing or infinite value in a numeric column read by the tree is an error.
    representative : {"majority_medoid", "medoid", "per_feature", "majority_per_feature", \
"per_feature_joint"}, default "majority_medoid"
        How a group's representative is chosen. With the default every released QI tuple is
        the whole QI tuple of one real record of its group.

        * ``"majority_medoid"`` (the default), the paper's rule (Goldsteen et al., Sec. 3.2):
          among the records whose label is the group's majority label, the one closest to the
          group's median (Euclidean on z-scored numeric and one-hot categorical QIs).
          ``"medoid"`` drops the label condition. Each is one whole real record of the group.
        * ``"per_feature"``: one real value of the group per QI, each from its own row (the
          paper's "an actual value from each range/group separately", and the rule of IBM's
          ai-privacy-toolkit): for a numeric QI the value closest to the group's median (ties
          to the smaller), for a categorical QI the most frequent value (ties to the first in
          sorted order). ``"majority_per_feature"`` computes the same on the records with the
          majority label. The tuple need not be any record: it can pair one record's sex with
          another's marital status, a person who does not exist.
        * ``"per_feature_joint"``: numeric QIs as in ``"per_feature"``; the categorical QIs
          together from one real record of the group, one with the group's most frequent
          combination of categorical values (ties to the most typical combination, then the
          first in sorted order). Every released combination of categorical values is held by
          a record of its own group; the numeric values, each a real value of the group, may
          come from other records.

        Every value of every rule is one of the group's own, and since the groups are
        axis-aligned product regions (tree leaves, Mondrian cuts) the tuple lies in its own
        group's region: ``transform`` maps it back to its group. For a regression target the
        majority rules equal their plain twins.

        ``"majority_medoid"`` is the default on evidence (issue 19,
        benchmarks/bench_representative_rule.py, docs/accuracy_guided.md): over Adult, Nursery
        and Lending Club, k = 10 and 100 (and 1000 on Adult), 5 seeds, with a logistic model
        retrained on the anonymized table, it had the smallest mean loss on raw test rows
        (1.97 points, against 2.10 for ``"per_feature_joint"`` and 2.16 for ``"per_feature"``)
        among the rules whose released categorical combinations all exist in the input; a
        criterion fixed before the run. With the paper's NN on Adult the per-value rules lost
        less (2.32 and 2.45 against 2.78 points, mostly at k = 1000): the accuracy order
        depends on the model, the real-record guarantee does not. It was also AG's default
        before issue 13; from issue 13 to issue 19 the default was ``"per_feature"``.
    tree : {"auto", "exact", "hist"}, default "auto"
        ``"exact"``: scikit-learn's decision tree on numeric plus one-hot categorical QIs, as in
        the paper. ``"hist"``: anonml's histogram tree, with quantile bins (``max_bins``) and
        native categorical splits, several times faster on large data. ``"auto"``: exact below
        100,000 rows, hist from there on.
    criterion : str, optional
        Split criterion: "gini" (default for classes), "entropy"/"log_loss", or "squared_error"
        (default for a regression target).
    max_depth : int, optional
        Depth limit of the tree; None grows it until leaves are pure or cannot be split into
        two parts of k rows. A smaller depth gives fewer, larger groups.
    refine : {"mondrian", "none"}, default "mondrian"
        ``"none"``: the groups are the tree's leaves (the paper). ``"mondrian"``: every leaf of at
        least 2k rows (the tree stopped there because the leaf is pure in ``y``) is cut further by
        strict median partitioning on the QIs (LeFevre et al., 2006) into parts of at least k
        rows. This keeps every group pure where the leaf was, but makes the groups smaller and
        tighter, so the anonymized data keep more of the QIs' information: on Adult (12 QI, NN)
        it roughly halves the accuracy loss on raw test rows at k = 10 ... 500 and changes
        nothing at k = 1000 (docs/results.md).
    features : {"qi", "all"}, default "qi"
        Columns the tree reads. ``"qi"`` (the paper): only the quasi-identifiers. ``"all"``:
        every column, so groups follow the model more closely; only the QIs are recoded and
        the output is k-anonymous either way (``train_only_QI=False`` in IBM's toolkit).
    task : {"auto", "classification", "regression"}, default "auto"
        Type of ``y``; "auto" decides with :func:`sklearn.utils.multiclass.type_of_target`.
    handle_unknown : {"error", "ignore"}, default "error"
        What :meth:`transform` does with a categorical value not seen in fit: raise, or route it by the routing tree ``route_``
        (the structure a released copy keeps): a split that names categories sends it to the
        side it does not name, a split on a range of categories places it by its text order.
    max_bins : int, default 255
        Quantile bins per numeric column for ``tree="hist"`` (2 to 65,535).
    random_state : int, Generator or None
        Seed of the exact tree's tie-breaking between equally good splits.
    sensitive, l, l_kind, c, t, t_distance, hierarchies, recoding, suppression
        The privacy model, recoding and suppression options shared by every anonymizer
        (:class:`~anonml.anonymize._base.BaseAnonymizer`). The tree cannot test l-diversity or
        t-closeness while it grows, so a leaf (or refined part) that breaks them is merged into
        its nearest group, by centroid distance on the z-scored numeric QIs and the category
        shares of the categorical QIs, round after round until every group satisfies the model
        (``n_merges_`` counts the merges). Merging keeps l and t (their monotonicity), and the
        whole table satisfies them, so this always ends.
    copy : bool, default True
        ``False``: :meth:`fit_transform` and :meth:`transform` write the recoded
        quasi-identifier columns into the DataFrame they are given, one column at a time, and
        return that DataFrame itself, so that the output needs no second copy of the QI columns
        (scikit-learn's ``copy`` convention, as in ``StandardScaler(copy=False)``). Everything
        that can fail (the checks, the fit, the independent privacy verification of the output's
        values, the casts) runs before the first column is written: if an error is raised, ``X``
        is unchanged. Only a pandas DataFrame is written into; any other input gets a new array
        back, as with ``True``. An old column's memory is freed only if nothing else holds it
        (a shallow copy or a column of ``X`` taken before keeps it). Release copies
        (``release_copy``, ``release_pipeline``) and ``AnonymizeThenFit`` always copy. See
        docs/accuracy_guided.md, "Memory".

    Attributes
    ----------
    groups_ : ndarray of shape (n_rows,)
        Group (leaf) of every training row, numbered 0 .. n_groups_-1.
    n_groups_ : int
        Number of groups.
    representatives_ : DataFrame
        One row per group (index ``group``): the QI values of its representative.
    representative_rows_ : ndarray
        Row positions, in the training data, of the representatives' values. Record rules
        (the default): shape (n_groups_,), the row of each group's representative. Per-feature
        rules: shape (n_groups_, len(qi_)), where ``[g, j]`` is a row of group ``g`` holding the
        value chosen for ``qi_[j]`` (the tuple is generally no single row; for
        ``"per_feature_joint"`` the categorical QIs share one row).
    min_class_size_ : int
        Smallest equivalence class of the anonymized training data, as verified independently
        (at least ``k``; classes can merge when two representatives are equal).
    tree_ : DecisionTreeClassifier, DecisionTreeRegressor or HistTree
        The fitted tree.
    tree_method_ : str
        "exact" or "hist", as resolved from ``tree``.
    qi_, categorical_ : list
        The QI columns and the categorical ones among them.
    task_ : str
        "classification" or "regression".
    encoder_ : anonml.encoding.TableEncoder
        Encoding of the columns the tree reads.
    refine_tree_ : HistTree or None
        The Mondrian refinement of the leaves (``refine="mondrian"``).
    timings_ : dict
        Seconds spent in each step of the last fit: ``check_and_encode``, ``partition`` (the
        tree), ``representatives``, ``recode`` and ``verify``.

    Examples
    --------
    >>> from anonml import AccuracyGuidedAnonymizer
    >>> from anonml.datasets import load_adult
    >>> data = load_adult()
    >>> X, y = data.X.iloc[:2000], data.y.iloc[:2000]
    >>> ag = AccuracyGuidedAnonymizer(k=50, quasi_identifiers=data.qi_sets["8"])
    >>> X_anon = ag.fit_transform(X, y)
    >>> ag.min_class_size_ >= 50
    True
    """

    def __init__(
        self,
        k: int = 10,
        quasi_identifiers: Sequence[Any] | None = None,
        *,
        categorical_features: Sequence[Any] | None = None,
        representative: str = "majority_medoid",
        tree: str = "auto",
        criterion: str | None = None,
        max_depth: int | None = None,
        refine: str = "mondrian",
        features: str = "qi",
        task: str = "auto",
        handle_unknown: str = "error",
        max_bins: int = 255,
        random_state: Any = None,
        sensitive: Any = None,
        l: float | None = None,
        l_kind: str = "distinct",
        c: float | None = None,
        t: float | None = None,
        t_distance: str = "auto",
        hierarchies: dict | None = None,
        recoding: str = "representative",
        suppression: float = 0.0,
        copy: bool = True,
    ):
        self.k = k
        self.quasi_identifiers = quasi_identifiers
        self.categorical_features = categorical_features
        self.representative = representative
        self.tree = tree
        self.criterion = criterion
        self.max_depth = max_depth
        self.refine = refine
        self.features = features
        self.task = task
        self.handle_unknown = handle_unknown
        self.max_bins = max_bins
        self.random_state = random_state
        self.sensitive = sensitive
        self.l = l
        self.l_kind = l_kind
        self.c = c
        self.t = t
        self.t_distance = t_distance
        self.hierarchies = hierarchies
        self.recoding = recoding
        self.suppression = suppression
        self.copy = copy

    @property
    def _tree_columns(self) -> str:  # type: ignore[override]
        if self.features not in ("qi", "all"):
            raise InputError(f"features={self.features!r}; use 'qi' or 'all'")
        return self.features

    _merge_violations = True

    def _max_bins(self) -> int:
        return check_int("max_bins", self.max_bins, low=2, high=65535, example=255)

    def _resolve(self, n_rows: int) -> tuple[str, str]:
        if self.tree not in ("auto", "exact", "hist"):
            raise InputError(f"tree={self.tree!r}; use 'auto', 'exact' or 'hist'")
        if self.refine not in ("none", "mondrian"):
            raise InputError(f"refine={self.refine!r}; use 'none' or 'mondrian'")
        method = self.tree
        if method == "auto":
            method = "hist" if n_rows >= _AUTO_HIST_ROWS else "exact"
        crit = self.criterion
        if self.task_ == "regression":
            crit = crit or "squared_error"
            allowed = ("squared_error",) if method == "hist" else (
                "squared_error", "friedman_mse", "absolute_error", "poisson"
            )
        else:
            crit = crit or "gini"
            allowed = ("gini", "entropy", "log_loss")
        if crit not in allowed:
            raise InputError(
                f"criterion={crit!r} does not fit a {self.task_} tree ({method}); use one of "
                f"{', '.join(allowed)}"
            )
        if self.max_depth is not None:
            check_int("max_depth", self.max_depth, example=8, why="or None for no limit")
        return method, crit

    def _partition(self, frame: pd.DataFrame, y_fit: np.ndarray) -> np.ndarray:
        method, crit = self._resolve(frame.shape[0])
        self.tree_method_ = method
        if method == "exact":
            self.tree_, leaves = self._fit_exact(y_fit, crit, frame)
            n_nodes = self.tree_.tree_.node_count
        else:
            B, is_cat, n_bins = self.encoder_.bins(frame)
            if self.features == "qi":  # the rows' value ranks were kept for these bins only
                self.encoder_.forget_ranks()
            hist_crit = "entropy" if crit == "log_loss" else crit
            self.tree_ = HistTree(self.k, self.max_depth, hist_crit)
            # routed on the column-major bins (no row-major copy while the tree grows)
            leaves = self.tree_.fit_apply(B, is_cat, n_bins, y_fit, narrow=True,
                                          route_on_columns=True)
            if self.refine == "mondrian" and self.features == "qi":
                # the refinement reads the rows row-major: that copy replaces the bins
                B_rows = np.ascontiguousarray(B)
            del B
            n_nodes = self.tree_.n_nodes_
        self.leaf_to_group_ = _compact(leaves, n_nodes)
        groups = self.leaf_to_group_[leaves]
        # each training row's leaves, for the routing tree built at the end of fit (which
        # takes them off the estimator): not held as arrays, but found from the rows'
        # groups by a table per group (a leaf is one group; a refined leaf one group of the
        # refinement, under one first-tree group), so only the groups are held meanwhile
        self._fit_leaves = LeavesOfGroups(groups, _narrow(np.flatnonzero(
            self.leaf_to_group_ >= 0), n_nodes))
        del leaves
        self.refine_tree_ = None
        if self.refine == "mondrian":
            if method == "hist" and self.features == "qi":
                # the tree's bins are the QIs' bins
                qB, q_cat, q_bins = B_rows, is_cat, n_bins
                del B_rows
            else:
                qB, q_cat, q_bins = self.encoder_.bins(frame, columns=self.qi_)
            self.refine_tree_ = HistTree(self.k, None, "mondrian")
            # the bins handed over (no reference kept here): released once copied
            handed = [qB]
            del qB
            leaves = self.refine_tree_.fit_apply(handed, q_cat, q_bins, None, init=groups,
                                                 narrow=True)
            self.refined_leaf_to_group_ = _compact(leaves, self.refine_tree_.n_nodes_)
            groups = self.refined_leaf_to_group_[leaves]
            del leaves
            self._fit_leaves = _refined_leaves_of_groups(self, groups)
        return groups

    def _fit_exact(self, y_fit: np.ndarray, crit: str,
                   frame: pd.DataFrame) -> tuple[Any, np.ndarray]:
        """scikit-learn's tree on the one-hot matrix of ``frame`` (finite float32, as the tree
        reads it, so not validated again), and each row's leaf.

        A classification tree is grown on the distinct (one-hot row, label) pairs, each
        weighted by its number of rows, with ``min_weight_leaf`` in (k - 1/2, k] for
        ``min_samples_leaf=k``: the same tree, from less work where rows repeat (on Adult's
        12 QIs one row in nine, on its 8 QIs three in four). Rows that are equal in every
        column the tree reads go to the same side of every split, so they cannot be parted;
        every count the criterion and the stopping rules read (the weighted class counts of
        a node and of each side, a leaf's size, "at least 2k rows to split") is an integer
        that the weights give exactly, so the same splits score the same in the same order,
        the random draws of the features are the same, and the stored tree differs only in
        ``n_node_samples`` (distinct rows), which is set back to the rows' counts. The
        estimator's parameters are set back to ``min_samples_leaf=k``. Regression trees (sums
        of real targets, whose rounding depends on the order) are grown on every row."""
        cls = DecisionTreeRegressor if self.task_ == "regression" else DecisionTreeClassifier
        if self.task_ != "regression":  # class codes as scikit-learn's tree gets them
            y_fit = np.asarray(y_fit, dtype=np.int64)
        tree = cls(criterion=crit, min_samples_leaf=self.k, max_depth=self.max_depth,
                   random_state=self.random_state)
        n = frame.shape[0]
        if self.task_ == "classification" and n >= 2 * self.k:
            first, inverse, counts = _distinct_rows(self.encoder_, frame, y_fit)
            if first.size < n:
                U = self.encoder_.onehot(frame, rows=first)  # (the distinct rows only)
                tree.set_params(min_samples_leaf=1,
                                min_weight_fraction_leaf=(self.k - 0.25) / n)
                tree.fit(U, y_fit.take(first), sample_weight=counts, check_input=False)
                tree.set_params(min_samples_leaf=self.k, min_weight_fraction_leaf=0.0)
                _counts_as_samples(tree)
                return tree, tree.apply(U, check_input=False).take(inverse)
        M = self.encoder_.onehot(frame)
        tree.fit(M, y_fit, check_input=False)
        return tree, tree.apply(M, check_input=False)

    def _assign(self, frame: pd.DataFrame) -> np.ndarray:
        if self.tree_method_ == "exact":
            leaves = self.tree_.apply(self.encoder_.onehot(frame, self.handle_unknown))
        else:
            leaves = self.tree_.apply(self.encoder_.bins(frame, self.handle_unknown)[0])
        groups = self.leaf_to_group_[leaves]
        if self.refine_tree_ is not None:
            B = self.encoder_.bins(frame, self.handle_unknown, columns=self.qi_)[0]
            groups = self.refined_leaf_to_group_[self.refine_tree_.apply(B, init=groups)]
        return groups


def _distinct_rows(encoder: Any, frame: pd.DataFrame,
                   y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (encoded row, label) pairs of the fit frame: the first row of each, each
    row's pair, and each pair's number of rows (float64, as sample weights).

    Rows are keyed by their numeric ranks and category codes (what the one-hot matrix is a
    function of), combined column by column into one integer
    (:func:`anonml.privacy._k_anonymity.fold_codes`, re-numbered before it could overflow)."""
    n = frame.shape[0]
    key = np.array(y, dtype=np.int64)  # (a copy: folded in place)
    card = int(key.max()) + 1 if n else 1
    cat = set(encoder.categorical)
    for c in encoder.columns:
        if c in cat:
            v, m = encoder.codes(frame, c), encoder.cats_[c].n_codes + 1
        else:  # the fit frame's values are all seen: whole ranks
            v, m = encoder.ranks(frame, c).astype(np.int64), encoder.values_[c].size
        key, card = fold_codes(key, card, v, m)
    inverse, uniques = pd.factorize(key)
    inverse = np.asarray(inverse, dtype=np.int64)
    first = np.empty(len(uniques), dtype=np.int64)
    first[inverse[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
    return first, inverse, np.bincount(inverse, minlength=len(uniques)).astype(np.float64)


def _counts_as_samples(tree: Any) -> None:
    """Set the fitted tree's ``n_node_samples`` to its (whole) weighted counts: the rows each
    node holds when the samples were distinct rows weighted by their counts."""
    cls, args, state = tree.tree_.__reduce__()
    nodes = state["nodes"].copy()
    nodes["n_node_samples"] = nodes["weighted_n_node_samples"].astype(
        nodes["n_node_samples"].dtype)
    new = cls(*args)
    new.__setstate__({**state, "nodes": nodes})
    tree.tree_ = new


class LeavesOfGroups:
    """Each training row's leaf in the first tree and in the refinement, as the fit found
    them, kept as the rows' groups (the array the fit holds anyway) and, per group, its
    first-tree leaf and its refinement leaf (``refined`` None without a refinement). What
    the routing tree's build reads (:func:`anonml.anonymize._routing_build._ag_spec`);
    :meth:`arrays` makes the two n-row arrays then, not at the partition."""

    def __init__(self, groups: np.ndarray, first: np.ndarray,
                 refined: np.ndarray | None = None) -> None:
        self.groups, self.first, self.refined = groups, first, refined

    def arrays(self) -> tuple[np.ndarray, np.ndarray | None]:
        first = self.first.take(self.groups)
        return first, None if self.refined is None else self.refined.take(self.groups)


def _refined_leaves_of_groups(m: Any, groups: np.ndarray) -> LeavesOfGroups:
    """:class:`LeavesOfGroups` after the refinement: a group is one refined leaf (the used
    refinement nodes in id order), under the refinement root it descends from, which is
    a first-tree group (the roots are numbered by the first tree's groups)."""
    r = m.refine_tree_
    refined = np.flatnonzero(m.refined_leaf_to_group_ >= 0)  # the leaf of each group
    left, right = np.asarray(r.children_left_), np.asarray(r.children_right_)
    root = np.arange(left.size)  # each node's parent, then (by pointer jumping) its root
    internal = np.flatnonzero(left >= 0)
    root[left[internal]] = internal
    root[right[internal]] = internal
    while True:
        up = root.take(root)
        if np.array_equal(up, root):
            break
        root = up
    first = np.flatnonzero(m.leaf_to_group_ >= 0).take(root.take(refined))
    return LeavesOfGroups(groups, _narrow(first, m.tree_.tree_.node_count if
                                          m.tree_method_ == "exact" else m.tree_.n_nodes_),
                          _narrow(refined, r.n_nodes_))


def _narrow(leaves: np.ndarray, n_nodes: int) -> np.ndarray:
    """Node ids ``leaves`` (0 .. n_nodes-1) as int32 when they fit (the same values)."""
    leaves = np.asarray(leaves)
    if leaves.dtype != np.int32 and n_nodes <= np.iinfo(np.int32).max:
        return leaves.astype(np.int32)
    return leaves


def _compact(leaves: np.ndarray, n_nodes: int) -> np.ndarray:
    """Map from node id to group id 0..G-1 over the nodes that hold rows (-1 elsewhere)."""
    mapping = np.full(n_nodes, -1, dtype=np.int64)
    used = np.flatnonzero(np.bincount(leaves, minlength=n_nodes))
    mapping[used] = np.arange(used.size)
    return mapping
