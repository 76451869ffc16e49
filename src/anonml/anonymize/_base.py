"""Base class of the anonymizers: input checks, then *partition → recode → verify*.

A subclass implements two methods and nothing else:

* ``_partition(frame, y_fit)`` returns the group id of every training row (0 .. G-1) and keeps
  what it needs to place new rows;
* ``_assign(frame)`` returns the group id of any rows, training or new.

Representatives, recoding and the independent k-anonymity check are shared
(:mod:`anonml.anonymize._pipeline`), so no subclass can return an unverified table.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin

from anonml._errors import InputError, NotFittedError
from anonml._state import pop_frames, push_frames
from anonml._threads import column_threads
from anonml._utils import (
    check_int,
    check_real,
    n_rows,
    release_free_memory,
    reuse_freed_memory,
)
from anonml.anonymize._generalize import (
    SUPPRESSED,
    generalize_labels,
    merge_to_model,
    select_suppressed,
)
from anonml.anonymize._pipeline import (
    REPRESENTATIVE_RULES,
    Recoding,
    recode_plan,
    representative_values,
    select_representatives,
    verify_recoding,
)
from anonml.anonymize._routing_build import anonymizer_routing, compact_codes
from anonml.encoding import (
    TableEncoder,
    _smallest_codes,
    as_frame,
    check_lookalike_columns,
    check_table,
    detect_categorical,
    from_frame,
    resolve_columns,
)
from anonml.privacy import build_privacy_model, ncp

__all__ = ["UNNAMED_CATEGORIES", "BaseAnonymizer", "routes_unnamed_categories"]

#: what a release copy does with a category it cannot name (one line; the CLI says it with
#: ``--handle-unknown ignore``)
UNNAMED_CATEGORIES = (
    "this released mapping holds no category lists (they would reveal values the anonymized "
    "table hides), so it cannot refuse a category unseen in fit: it routes categories it "
    "cannot name by each split's default branch, as handle_unknown='ignore' does")


def routes_unnamed_categories(anonymizer: Any) -> bool:
    """Whether ``anonymizer`` is a release copy (:func:`anonml.anonymize._model.release_copy`) with
    categorical columns: a routing tree and no encoder, so a category unseen in fit cannot be
    told from a training category the table does not show, and both follow each split's
    default branch whatever ``handle_unknown`` says."""
    d = getattr(anonymizer, "__dict__", {})
    route = d.get("route_")
    return bool(route is not None and d.get("encoder_") is None
                and len(getattr(route, "categorical", ())))


class BaseAnonymizer(TransformerMixin, BaseEstimator):
    """Shared fit/transform logic; see the module docstring. Not for direct use."""

    #: columns the partitioner reads, in addition to the QIs ("qi" or "all")
    _tree_columns = "qi"
    #: whether fit needs y (the accuracy-guided tree does; Mondrian, Hilbert, ... do not)
    _needs_target = True
    #: repair l/t violations after partitioning by merging groups (for partitioners that cannot
    #: test l or t while they build groups); others must honour ``self.model_`` themselves
    _merge_violations = False

    #: shared parameters every anonymizer accepts (declared in each subclass's __init__)
    _SHARED_DEFAULTS = {
        "sensitive": None,
        "l": None,
        "l_kind": "distinct",
        "c": None,
        "t": None,
        "t_distance": "auto",
        "hierarchies": None,
        "recoding": "representative",
        "suppression": 0.0,
        "copy": True,
    }

    def _param(self, name: str) -> Any:
        return getattr(self, name, self._SHARED_DEFAULTS[name])

    # -- state as plain data (pickle, and .skops files read without code) ----------------------
    def __getstate__(self) -> dict:
        return push_frames(super().__getstate__())

    def __setstate__(self, state: dict) -> None:
        state = pop_frames(state)
        if isinstance(state, dict):  # saved before ``copy`` existed: get_params needs it
            state.setdefault("copy", True)
        super().__setstate__(state)

    # -- scikit-learn plumbing ---------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._needs_target
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32", "int64"]
        return tags

    def fit(self, X: Any, y: Any = None, *, sensitive_values: Any = None) -> "BaseAnonymizer":
        """Learn the groups and their representatives from ``X`` and the labels ``y``.

        Parameters
        ----------
        X : DataFrame or 2-D array, shape (n_rows, n_columns)
            Training data; only the quasi-identifiers are changed.
        y : array-like, shape (n_rows,), optional for target-free partitioners
            The model's predictions on ``X`` (accuracy-guided) or the true labels
            (workload-aware). Class labels, or numbers for a regression target. Target-free
            partitioners (Mondrian, Hilbert, R+-tree, SaNGreeA) ignore it when building groups
            but use it, when given, to pick each group's representative by majority label.
        sensitive_values : array-like, shape (n_rows,), optional
            The values of the attribute ``sensitive`` names when it is not a column of ``X``:
            the true labels, to make the table l-diverse or t-close in its label (the textbook
            case: a diagnosis), when ``y`` is not those labels (the model's predictions
            guiding the accuracy-guided tree). Not needed when ``y`` is a pandas Series named
            ``sensitive``: then ``y`` is taken. The values are not stored.

        Returns
        -------
        self

        Examples
        --------
        l-diversity of the label, the labels guiding the tree (a Series named ``"class"``):

        >>> ag = AccuracyGuidedAnonymizer(k=10, quasi_identifiers=qi, sensitive="class", l=2)
        >>> ag.fit(X, y)  # doctest: +SKIP

        guided by a model's predictions, the true labels protected:

        >>> ag.fit(X, model.predict(X), sensitive_values=y)  # doctest: +SKIP
        """
        self._fit(X, y, sensitive_values, output="none")
        return self

    def fit_transform(self, X: Any, y: Any = None, *, sensitive_values: Any = None,
                      **fit_params: Any) -> Any:
        """Fit, then return the anonymized training table (verified k-anonymous).

        Parameters
        ----------
        X, y, sensitive_values
            As in :meth:`fit`.

        Returns
        -------
        X_anon : DataFrame or ndarray
            Same container, columns, dtypes and index as ``X``: with ``copy=True`` (the
            default) a new table; with ``copy=False`` and a DataFrame ``X``, ``X`` itself,
            its quasi-identifier columns replaced, once everything (fit, verification) has
            succeeded; if an error is raised, ``X`` is unchanged.
        """
        return self._fit_transform(X, y, sensitive_values)

    def _fit_transform(self, X: Any, y: Any, sensitive_values: Any,
                       before_write: Any = None) -> Any:
        """:meth:`fit_transform`; ``before_write()``, if given, runs once the fit has
        succeeded and before ``copy=False`` writes into ``X`` (the CLI measures the
        information loss there, on the original values)."""
        in_place = self._in_place(X)
        result = self._fit(X, y, sensitive_values, output="in_place" if in_place else "copy")
        if before_write is not None:
            before_write()
            release_free_memory(n_rows(X))  # (its temporaries, before the output's columns)
        t = time.perf_counter()
        if in_place:
            result.write_into(X)
            out = X
        else:  # the new table, built once the fit, its check and its routing tree are done
            plan, frame = result
            del result
            with column_threads() as threads:
                out = from_frame(plan.new_frame(frame, threads), X)
        self.timings_["write"] = time.perf_counter() - t
        return out

    def _in_place(self, X: Any) -> bool:
        """Whether to write into ``X`` (``copy=False`` and a DataFrame), with ``copy`` checked."""
        copy = self._param("copy")
        if not isinstance(copy, (bool, np.bool_)):
            raise InputError(f"copy={copy!r}; use True (return a new table) or False (recode X "
                             "in place)")
        return not copy and isinstance(X, pd.DataFrame)

    def transform(self, X: Any) -> Any:
        """Replace the quasi-identifiers of each row by those of its group's representative.

        Rows from the training data get exactly the values of :meth:`fit_transform`; new rows
        are routed the same way (the mapping the model was retrained for). With
        ``recoding="generalize"`` each row gets its group's generalized labels; a row routed to
        a suppressed group gets its QIs suppressed.

        With ``copy=False`` and a DataFrame ``X``, the QI columns of ``X`` are replaced and
        ``X`` itself is returned (every check, the routing and the casts run before the first
        column is written; if an error is raised, ``X`` is unchanged).
        """
        if not hasattr(self, "representatives_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, y) before transform"
            )
        frame, _ = as_frame(X)
        self._check_columns(frame)
        in_place = self._in_place(X)
        if frame.shape[0] == 0:
            return X if in_place else from_frame(frame.copy(), X)
        groups = self._groups(frame)
        # every check and cast happens here, before anything is written into X
        plan = recode_plan(frame, self.qi_, groups, self.representatives_,
                           cast=self.recoding_ == "representative")
        if in_place:
            return plan.write_into(X)
        return from_frame(plan.new_frame(frame), X)

    def _groups(self, frame: pd.DataFrame) -> np.ndarray:
        """Group of every row (after any merge): through the routing tree ``route_`` (splits on
        raw values, the structure a release copy keeps, so the fitted anonymizer and its
        released copy map every row alike), else through the fitted structures (SaNGreeA,
        or a mapping saved before routing trees).

        On the training rows both give the groups of the fit. A release copy holds no category
        lists, so it routes a category unseen in fit like ``handle_unknown="ignore"`` does
        (its recorded setting); set to ``"error"`` it warns that it cannot refuse one."""
        d = self.__dict__
        route = d.get("route_")
        if route is not None:
            check_table(frame, route.columns, route.categorical)
            encoder = d.get("encoder_")
            if encoder is not None and self.handle_unknown == "error":
                for c in encoder.categorical:  # a value unseen in fit is refused
                    encoder.codes(frame, c, "error")
            elif self.handle_unknown == "error" and routes_unnamed_categories(self):
                import warnings

                from anonml._errors import AnonmlWarning

                warnings.warn(UNNAMED_CATEGORIES, AnonmlWarning, stacklevel=3)
            return route.apply(frame)
        check_table(frame, self.encoder_.columns, self.encoder_.categorical)
        groups = self._assign(frame)
        if self.merge_map_ is not None:
            groups = self.merge_map_[groups]
        return groups

    # -- the pipeline ----------------------------------------------------------------------------
    def _sensitive_values(self, frame: pd.DataFrame, y: Any, given: Any) -> pd.Series | None:
        """The values of a sensitive attribute that is not a column of ``frame`` (the label):
        ``given`` (``fit(..., sensitive_values=)``), else ``y`` when it is a Series of that
        name; None when the attribute is a column (or there is none)."""
        sensitive = self._param("sensitive")
        if sensitive is None or sensitive in set(frame.columns):
            if given is not None:
                where = ("no sensitive= is set" if sensitive is None else
                         f"sensitive={sensitive!r} is a column of X")
                raise InputError(f"sensitive_values are given but {where}; fix: leave "
                                 "sensitive_values out, or name the label in sensitive=")
            return None
        if given is None:
            if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
                y = y.iloc[:, 0]
            if isinstance(y, pd.Series) and y.name == sensitive:
                given = y
            else:
                from anonml._errors import names_list

                raise InputError(
                    f"sensitive={sensitive!r} is neither a column of X (columns are: "
                    f"{names_list(frame.columns)}) nor the label y; fix: to protect the label, "
                    f"pass y as a pandas Series named {sensitive!r}, or fit(X, y, "
                    "sensitive_values=labels)")
        values = given.reset_index(drop=True) if isinstance(given, pd.Series) else pd.Series(
            np.asarray(given))
        if values.ndim != 1 or values.shape[0] != frame.shape[0]:
            raise InputError(f"the values of sensitive={sensitive!r} have {values.shape[0]} "
                             f"entries but X has {frame.shape[0]} rows; fix: one per row")
        n_missing = int(values.isna().sum())
        if n_missing:
            raise InputError(f"the values of sensitive={sensitive!r} have {n_missing} missing "
                             "entries; fix: drop those rows or fill them")
        return values

    def _fit(self, X: Any, y: Any, sensitive_values: Any = None, *,
             output: str = "copy") -> tuple | Recoding | None:
        """:meth:`_fit_columns`, its work column by column on the fit's threads
        (:mod:`anonml._threads`); with ``copy=False`` (``output="in_place"``, the mode that
        holds one column's work at a time) in the calling thread only: the threads' columns
        in flight raised its peak at 20M rows from 1.83 to 1.92-1.98 frames (BENCHMARKS.md,
        "Session 24")."""
        with column_threads(1 if output == "in_place" else None) as threads:
            return self._fit_columns(X, y, sensitive_values, output, threads)

    def _fit_columns(self, X: Any, y: Any, sensitive_values: Any, output: str,
                     threads: Any) -> tuple | Recoding | None:
        """The fit. The output's columns are checked one at a time (:func:`verify_recoding`,
        each built from the plan exactly as it will be written and dropped before the next),
        then the routing tree is built; no output table exists until then. ``output="copy"``:
        return the :class:`Recoding` and the input frame, from which the caller builds the
        new table (:meth:`Recoding.new_frame`) last, so that the fit's working memory is
        freed before the new columns are; ``"in_place"``: return the :class:`Recoding` that
        writes them into ``X`` (the caller writes, after everything here has succeeded; the
        routing tree reads ``X``'s original values); ``"none"`` (:meth:`fit`): the same
        check, nothing returned."""
        t0 = time.perf_counter()
        # until the new output passes verification, the estimator counts as not fitted
        self.__dict__.pop("representatives_", None)
        frame, _ = as_frame(X)
        # what the caller's process left freed in the allocators (reading the table: Arrow's
        # buffers of the columns converted to NumPy) goes back before the fit allocates
        release_free_memory(frame.shape[0])
        self._in_place(X)  # copy= checked before the work
        k = self._check_k(frame.shape[0])
        if self.representative not in REPRESENTATIVE_RULES:
            raise InputError(
                f"representative={self.representative!r} is not a rule; use one of "
                f"{', '.join(REPRESENTATIVE_RULES)}"
            )
        if self.handle_unknown not in ("error", "ignore"):
            raise InputError(
                f"handle_unknown={self.handle_unknown!r}; use 'error' or 'ignore'"
            )
        recoding = self._param("recoding")
        if recoding not in ("representative", "generalize"):
            raise InputError(f"recoding={recoding!r}; use 'representative' or 'generalize'")
        suppression = check_real("suppression", self._param("suppression"), high=1,
                                 closed="left", example=0.02,
                                 why="the share of rows that may be suppressed (0: none)")
        qi = resolve_columns(frame, self.quasi_identifiers)
        check_lookalike_columns(frame.columns, qi)
        tree_cols = qi if self._tree_columns == "qi" else list(frame.columns)
        categorical = detect_categorical(frame, tree_cols, self.categorical_features)
        check_table(frame, tree_cols, categorical)
        if y is None and not self._needs_target:
            y_fit, y_codes = None, None
            self.task_, self.classes_ = None, None
        else:
            y_fit, y_codes = self._check_target(y, frame.shape[0])
        hierarchies = self._check_hierarchies(frame)
        label_values = self._sensitive_values(frame, y, sensitive_values)
        model = build_privacy_model(
            frame,
            qi,
            k,
            sensitive=self._param("sensitive"),
            l=self._param("l"),
            l_kind=self._param("l_kind"),
            c=self._param("c"),
            t=self._param("t"),
            t_distance=self._param("t_distance"),
            hierarchies=hierarchies,
            sensitive_values=label_values,
        )

        self.n_features_in_ = frame.shape[1]
        if isinstance(X, pd.DataFrame) and all(isinstance(c, str) for c in frame.columns):
            self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.columns_ = list(frame.columns)
        self.qi_ = qi
        self.categorical_ = [c for c in categorical if c in set(qi)]
        self.model_ = model
        self.encoder_ = TableEncoder(tree_cols, categorical, max_bins=self._max_bins())
        with self.encoder_.memoize(frame) as factorized, reuse_freed_memory():
            self.encoder_.fit(frame, threads)
            t1 = time.perf_counter()
            groups = np.asarray(self._partition(frame, y_fit), dtype=np.int64)
            n_merges, merge_map = 0, None
            if self._merge_violations and not model.trivial:
                merged, n_merges = merge_to_model(groups, model, frame, self.encoder_, qi)
                merge_map = np.zeros(int(groups.max()) + 1, dtype=np.int64)
                merge_map[groups] = merged  # partition group -> merged group, for transform
                groups = merged
            n_groups = int(groups.max()) + 1
            t2 = time.perf_counter()
            if recoding == "representative":
                rep_rows = select_representatives(
                    frame, self.encoder_, qi, groups, n_groups, y_codes, self.representative,
                    threads=threads)
                representatives = representative_values(frame, qi, rep_rows)
            else:
                rep_rows = None
                representatives = generalize_labels(
                    frame, qi, self.categorical_, groups, n_groups, hierarchies
                )
        compact_codes(factorized)  # kept for the routing tree: 1-2 bytes a row, not 8
        # the partition's temporaries are freed: their pages go back before the output table
        # (Arrow memory for text columns, which cannot reuse them) is built
        release_free_memory()
        suppressed = np.zeros(n_groups, dtype=bool)
        if suppression > 0:
            # each group's Normalized Certainty Penalty averaged over the QIs, in [0, 1]
            loss = np.asarray(ncp(frame, groups, list(qi), categorical=list(self.categorical_),
                                  hierarchies=hierarchies), dtype=np.float64)[:n_groups]
            loss = loss / max(len(qi), 1)
            sizes = np.bincount(groups, minlength=n_groups)
            suppressed = select_suppressed(loss, sizes, int(np.floor(suppression * frame.shape[0])))
            if suppressed.any():
                representatives = representatives.astype(object)
                representatives.loc[suppressed, :] = (
                    SUPPRESSED if recoding == "generalize" else None
                )
        t3 = time.perf_counter()
        plan = recode_plan(frame, qi, groups, representatives, cast=recoding == "representative")
        t4 = time.perf_counter()
        # the check on the output's columns, each built from the plan exactly as it will be
        # written (or copied) and dropped before the next: no table is held while the check,
        # and then the routing tree, run; the output is made last, by the caller
        sensitive = None
        if model.l is not None or model.t is not None:
            sensitive = (label_values.to_numpy() if label_values is not None
                         else frame[model.sensitive])
        # the check's temporaries (up to 8 bytes a row each, column after column) reuse the
        # C heap's freed pages, not fresh ones: above ~4M rows glibc would map and fault
        # every one anew (system time that grows with the rows); trimmed at the block's end
        with reuse_freed_memory():
            self.min_class_size_, self.privacy_ = verify_recoding(
                plan, qi, k, model, hierarchies, sensitive, threads=threads)
        del sensitive
        # the ground distance of a t claim, resolved ("auto" -> ordered, equal, hierarchical):
        # a released file keeps it so the claim can be re-measured without the hierarchies
        self.t_distance_ = model.distance if model.t is not None else None
        t5 = time.perf_counter()
        self.groups_ = groups
        self.n_groups_ = n_groups
        # training rows per group: what a released mapping carries so that its k can be
        # re-verified from the mapping alone (anonml.safemodel.verify_mapping)
        self.group_sizes_ = np.bincount(groups, minlength=n_groups).astype(np.int64)
        self.n_merges_ = n_merges
        self.merge_map_ = merge_map
        self.recoding_ = recoding
        self.suppressed_ = suppressed[groups]
        self.n_suppressed_ = int(self.suppressed_.sum())
        self.suppressed_groups_ = suppressed
        self.representative_rows_ = rep_rows
        self.representatives_ = representatives  # set last: marks the estimator as fitted
        from anonml.anonymize._summary import few_groups_warning

        collapsed = few_groups_warning(self, frame)
        if collapsed:
            import warnings

            from anonml._errors import AnonmlWarning

            warnings.warn(collapsed, AnonmlWarning, stacklevel=3)
        # the routing a released copy keeps: splits on raw values with rounded thresholds
        # (its temporaries too reuse freed heap pages; the block's end gives them back
        # before the output's new columns are made: a table of Arrow text columns cannot
        # reuse the C heap's free pages)
        try:
            with reuse_freed_memory():
                self.route_ = anonymizer_routing(self, frame, groups, merge_map, factorized)
        except BaseException:  # not fitted after all (and no older routing tree kept)
            self.__dict__.pop("representatives_", None)
            self.__dict__.pop("route_", None)
            raise
        t6 = time.perf_counter()
        self.timings_ = {
            "check_and_encode": t1 - t0,
            "partition": t2 - t1,
            "representatives": t3 - t2,
            "recode": t4 - t3,
            "verify": t5 - t4,
            "routing": t6 - t5,
        }
        # a partitioner's own steps (``partition`` split further), kept by ``_partition``
        self.timings_.update(self.__dict__.pop("_partition_timings", {}))
        if output == "in_place":
            return plan
        if output == "copy":
            return plan, frame
        return None

    def _check_hierarchies(self, frame: pd.DataFrame) -> dict:
        """The ``hierarchies`` parameter as a dict of column -> Hierarchy, checked."""
        h = self._param("hierarchies")
        if h is None:
            return {}
        if not isinstance(h, dict):
            raise InputError(
                f"hierarchies must be a dict of column -> Hierarchy, got {type(h).__name__}; "
                "e.g. hierarchies=anonml.datasets.load_adult_hierarchies()"
            )
        for col, hier in h.items():
            if not hasattr(hier, "leaf_codes") or not hasattr(hier, "common_ancestor"):
                raise InputError(
                    f"hierarchies[{col!r}] is a {type(hier).__name__}, not a Hierarchy; build it "
                    "with anonml.hierarchies.Hierarchy (e.g. Hierarchy.read_arx(path))"
                )
        # only the columns present matter; a shared dict may hold hierarchies of other columns
        return {c: hier for c, hier in h.items() if c in set(frame.columns)}

    def _max_bins(self) -> int:
        return 255

    def _check_k(self, n_rows: int) -> int:
        k = check_int("k", self.k, low=2, example=10)
        if n_rows == 0:
            raise InputError("X has no rows; pass a table with at least k rows")
        if k > n_rows:
            raise InputError(
                f"k={k} is larger than the number of rows ({n_rows}); lower k to at most {n_rows}"
            )
        return int(k)

    def _check_target(self, y: Any, n_rows: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Return (y for the partitioner, class codes or None for regression)."""
        if y is None:
            raise InputError(
                "y is missing; pass the model's predictions on X (or the true labels) as y"
            )
        if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
            y = y.iloc[:, 0]
        if isinstance(y, pd.Series):
            y_ser = y.reset_index(drop=True)  # pandas ops on the Series: no object copy
        else:
            y_arr = np.asarray(y)
            if y_arr.ndim == 2 and y_arr.shape[1] == 1:
                y_arr = y_arr.ravel()
            if y_arr.ndim != 1:
                raise InputError(
                    f"y must be 1-D with one label per row, got shape {y_arr.shape}; pass "
                    "model.predict(X), not predict_proba"
                )
            y_ser = pd.Series(y_arr, copy=False)
        if y_ser.shape[0] != n_rows:
            raise InputError(
                f"y has {y_ser.shape[0]} values but X has {n_rows} rows; pass one label per row"
            )
        n_missing = int(y_ser.isna().sum())
        if n_missing:
            raise InputError(f"y has {n_missing} missing values; drop those rows or impute y")
        y_arr = y_ser.to_numpy() if pd.api.types.is_numeric_dtype(y_ser.dtype) else None
        task = getattr(self, "task", "auto")
        if task == "auto":
            # scikit-learn's rule (type_of_target): floats that are not all whole are continuous;
            # checked without its sort of y, which dominates on a million string labels
            is_float = y_arr is not None and y_arr.dtype.kind == "f"
            task = "regression" if is_float and np.any(y_arr != np.round(y_arr)) else "classification"
        if task not in ("classification", "regression"):
            raise InputError(f"task={task!r}; use 'auto', 'classification' or 'regression'")
        self.task_ = task
        if task == "regression":
            try:
                y_float = y_ser.to_numpy(dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError("task='regression' needs numeric y; pass numbers") from None
            if not np.isfinite(y_float).all():
                raise InputError("y has infinite values; a regression target must be finite")
            self.classes_ = None
            return y_float, None
        try:
            codes, classes = pd.factorize(y_ser, sort=True)
        except TypeError:
            kinds = sorted({type(v).__name__ for v in y_ser.iloc[:1000]})
            raise InputError(
                f"y mixes label types ({', '.join(kinds)}); cast the labels to one type"
            ) from None
        self.classes_ = np.asarray(classes)
        # in the smallest integer dtype that holds them (1 byte a row for up to 127 classes,
        # not 8: the codes are held through the whole fit)
        codes = _smallest_codes(np.asarray(codes), len(classes))
        return codes, codes

    def _check_columns(self, frame: pd.DataFrame) -> None:
        cols = list(frame.columns)
        if cols == self.columns_:
            return
        missing = [c for c in self.columns_ if c not in set(cols)]
        if missing:
            raise InputError(
                f"X lacks column {missing[0]!r} seen in fit ({len(missing)} missing); pass the "
                "same columns as in fit"
            )
        extra = [c for c in cols if c not in set(self.columns_)]
        if extra:
            raise InputError(
                f"X has column {extra[0]!r} not seen in fit; pass the same columns as in fit"
            )
        raise InputError("X has the columns of fit in another order; reorder them as in fit")

    # -- for subclasses ----------------------------------------------------------------------------
    def _partition(self, frame: pd.DataFrame, y_fit: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _assign(self, frame: pd.DataFrame) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError
