"""``anonymize_dataset``: a Parquet dataset (or dask DataFrame) in, a verified k-anonymous
partitioned Parquet dataset out, on a Dask cluster. See docs/dask.md for the design."""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from anonml._errors import InputError, OutputError, names_list
from anonml._install import install_hint
from anonml._methods import METHODS as _REGISTRY
from anonml._methods import check_method
from anonml._utils import check_int
from anonml.dask._guide import (check_guide, guide_summary, is_continuous, merge_guide,
                                resolve_criterion)
from anonml.dask._identifiers import (merge_flags, refuse_identifiers,
                                      unique_flags)
from anonml.dask._merge import merge_for_model
from anonml.dask._columns import (Read, _hold_qi, pick_binned_reading, pick_reading,
                                  write_binned_reading, write_reading)
from anonml.dask._reps import ReadPlan, _reps_table, representatives
from anonml.dask._partio import _read_file, cast_representatives, worker_path
from anonml.dask._tree import _put, compact, grow, tree_reduce
from anonml.engine import _kernels as K

__all__ = ["anonymize_dataset", "local_cluster", "DaskAnonymization"]

METHODS = tuple(name for name, spec in _REGISTRY.items() if spec.dask)  # ("ag", "mondrian")


def _require() -> tuple[Any, Any, Any]:
    try:
        import dask
        import dask.dataframe as dd
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise InputError(
            f"the Dask engine needs dask[dataframe] and distributed ({exc.name} is missing); "
            f"install them: {install_hint('dask', ('dask[dataframe]', 'distributed'))}"
        ) from None
    return dask, dd, distributed


@dataclass
class DaskAnonymization:
    """What :func:`anonymize_dataset` did (no records in here).

    Attributes
    ----------
    n_rows, n_groups : int
        Rows written and groups (tree leaves) made.
    min_class_size : int
        Smallest equivalence class of the *written* table, counted by a distributed groupby.
    achieved : dict
        Verified l ("l") and t ("t") of the written table, where asked.
    seconds : dict
        Wall seconds per stage: bins, tree, representatives, recode_write, verify.
    target : Path
        The output folder.
    n_levels : dict
        Tree levels grown ("tree", and "refine" for AG's Mondrian refinement).
    n_merges : int
        Groups merged into their nearest group to reach l or t.
    n_files : int
        Parquet files read (0 for a dask DataFrame source): the files listed by
        :func:`anonml.engine._dataset.list_files`, hidden and ``_`` files skipped.
    mapping : Path or None
        The saved mapping file (``save_mapping=``).
    """

    n_rows: int
    n_groups: int
    min_class_size: int
    achieved: dict
    seconds: dict
    target: Path
    n_levels: dict = field(default_factory=dict)
    n_merges: int = 0
    n_files: int = 0
    mapping: Path | None = None


def local_cluster(
    n_workers: int | None = None, memory_limit: str | int | None = None, threads_per_worker: int = 1,
    *, quiet: bool = False,
) -> Any:
    """A :class:`distributed.Client` on a new ``LocalCluster`` of worker processes.

    Parameters
    ----------
    n_workers : int, optional
        Worker processes; default the number of cores.
    memory_limit : str or int, optional
        Per worker (e.g. "4GB"); default 80 % of the RAM divided among the workers, leaving the
        rest to the client and the system.
    threads_per_worker : int, default 1
    quiet : bool, default False
        Silence the worker processes' ``distributed`` logs (their task errors and
        tracebacks, written to this process's standard error): the command line reports a
        failed run in one line of its own. Default: distributed's own level (warnings).

    The workers start with glibc's own trim and mmap thresholds instead of Dask's 64 kB trim
    threshold (:func:`anonml.dask._cluster.worker_malloc_env`): freed partition-sized arrays
    are reused instead of handed back to the system and faulted in again, and Arrow allocates
    from the same heap (not its own mimalloc pool, whose freed pages no array could reuse and
    no trim could give back); and with the
    :class:`~anonml.dask._trim.HeapTrim` plugin, which gives the free heap back when a worker's
    memory passes 65 % of its limit. The cluster has no dashboard, and its workers run no
    statistical profiler (the dashboard's only reader). A cluster started otherwise keeps its
    own settings (docs/dask.md).
    """
    _, _, distributed = _require()
    n = int(n_workers or os.cpu_count() or 1)
    if n < 1:
        raise InputError(f"n_workers={n_workers!r}; pass an integer >= 1")
    if memory_limit is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover
            total = 8 * 2**30
        memory_limit = int(0.8 * total / n)
    import dask

    from anonml.dask._cluster import worker_malloc_env

    try:  # Dask's own spellings ("4GB", "auto", 0: no limit) stay Dask's to accept or refuse
        limit = dask.utils.parse_bytes(memory_limit) if isinstance(memory_limit, str) \
            else int(memory_limit)
    except (ValueError, TypeError):
        limit = 0
    ours = {k: str(v) for k, v in worker_malloc_env(limit).items()}
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **ours}
    # each Nanny reads these as it is made, and this process's environment wins over the
    # config: an earlier Nanny of this process has left Dask's 64 kB there
    saved = {k: os.environ.get(k) for k in ours}
    os.environ.update(ours)
    try:
        # no dashboard, so no statistical profiler either: its stack samples every 10 ms
        # serve only the dashboard's Profile page (its cost is within this machine's noise:
        # BENCHMARKS.md, "Session 21")
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ,
                              "distributed.worker.profile.enabled": False}):
            cluster = distributed.LocalCluster(
                n_workers=n, threads_per_worker=int(threads_per_worker), processes=True,
                memory_limit=memory_limit, dashboard_address=None,
                **({"silence_logs": logging.CRITICAL} if quiet else {}),
            )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    client = distributed.Client(cluster)
    from anonml.dask._trim import HeapTrim

    client.register_plugin(HeapTrim())  # free heap back to the system when memory is high
    return client


# -- input checks ------------------------------------------------------------------------------
# -- per-partition wrappers (run on the workers) -------------------------------------------------
#: what ``progress(stage, done, total)`` is told, in order, each stage once: the label of each
#: internal step (the key of :attr:`DaskAnonymization.seconds` it is timed under in brackets)
STAGES = {
    "predict": "predicting the guide labels with the model",  # [bins], with model= only
    "scan": "scanning the columns for the bins",  # [bins]
    "bins": "binning the partitions",  # [bins]
    "tree": "growing the tree (levels)",  # [tree]
    "tree (local)": "growing the tree: subtrees finished in memory",
    "refine": "refining the leaves by Mondrian (levels)",  # [tree]
    "refine (local)": "refining the leaves: subtrees finished in memory",
    "representatives": "choosing the representatives (ranges of groups)",  # [representatives]
    "mapping": "summarising the groups for the saved mapping",  # [mapping], save_mapping= only
    "recode_write": "recoding and writing the partitions",  # [recode_write]
    "verify": "verifying the written dataset",  # [verify]
}


def _predict_task(part: pd.DataFrame, model: Any, features: list) -> np.ndarray:
    """The model's guide labels for one partition (once per run; kept on the worker)."""
    return np.asarray(model.predict(part[features]))


def _guide(part: pd.DataFrame, label: Any, pred: Any) -> Any:
    if pred is not None:
        return pred
    if label is not None:
        return part[label]
    return None


def _summary_task(part, numeric, categorical, label, pred, max_bins, needed, sensitive,
                  check=()):
    missing = [c for c in needed if c not in part.columns]
    if missing:
        raise InputError(
            f"column {missing[0]!r} is missing from a partition; every partition needs the same "
            "columns"
        )
    out = K.column_summary(part, numeric, categorical, None, max_bins)
    out["guide"] = guide_summary(_guide(part, label, pred))  # counts, or continuous
    if sensitive is not None:
        vc = part[sensitive].value_counts(dropna=False)
        vc.index = pd.Index(np.asarray(vc.index, dtype=object), dtype=object)
        out["sensitive"] = vc
    out["unique"] = unique_flags(part, list(check)) if check else None
    return out


def _merge_task(max_bins, *parts):
    acc = parts[0]
    for p in parts[1:]:
        sens = K._add_counts(acc.get("sensitive"), p.get("sensitive"))
        flags = merge_flags(acc.get("unique"), p.get("unique"))
        guide = merge_guide(acc.get("guide"), p.get("guide"))
        acc = K.merge_summaries(acc, p, max_bins)
        acc["sensitive"], acc["unique"], acc["guide"] = sens, flags, guide
    return acc


def _bin_task(part, spec, label, pred):
    return K.bin_partition(part, spec, _guide(part, label, pred))


# -- the driver --------------------------------------------------------------------------------
def anonymize_dataset(
    source: Any,
    target: Any,
    *,
    k: int,
    quasi_identifiers: Sequence[Any],
    method: str = "ag",
    label: Any = None,
    model: Any = None,
    features: Sequence[Any] | None = None,
    sensitive: Any = None,
    l: float | None = None,
    l_kind: str = "distinct",
    c: float | None = None,
    t: float | None = None,
    t_distance: str = "auto",
    hierarchies: dict | None = None,
    max_bins: int = 255,
    refine: str = "mondrian",
    criterion: str | None = None,
    max_depth: int | None = None,
    client: Any = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    no_workers_timeout: float = 60.0,
    drop: Sequence[Any] | None = None,
    keep: Sequence[Any] | None = None,
    save_mapping: Any = None,
    target_column: Any = None,
) -> DaskAnonymization:
    """k-anonymize a partitioned dataset on a Dask cluster; write a verified Parquet dataset.

    The groups are those of the in-memory anonymizers: accuracy-guided anonymization
    (Goldsteen et al., 2022, arXiv:2007.13086; a histogram tree on the guide labels with
    ``min_samples_leaf=k``, then the large pure leaves cut by strict Mondrian, LeFevre et al.,
    2006), or strict Mondrian alone. Given the same bins the groups are exactly those of
    :class:`~anonml.anonymize._hist_tree.HistTree` (tests/dask/test_dask_engine.py). Every group's QIs
    are replaced by those of one real record of the group (the majority-class record closest to
    the group's median, Goldsteen et al. Sec. 3.2; medians at bin resolution; the closest
    record of all for a regression guide, which has no majority class). Nothing but
    histograms, counts and the tree reaches the client.

    Parameters
    ----------
    source : str, Path or dask DataFrame
        A folder of Parquet files, a glob, one file, or a dask DataFrame.
    target : str or Path
        Output folder; must not exist. Written to a hidden sibling folder, verified, renamed.
        On a multi-machine cluster it must be on storage every worker and the client share.
    k : int
        Smallest equivalence class, >= 2.
    quasi_identifiers : list
        QI columns. Text, bool and category columns are categorical, others numeric.
    method : {"ag", "mondrian"}
    label : str, optional
        Column holding the guide labels (the model's predictions, or the true labels): classes,
        or a regression target (floats not all whole: a regression tree, ``criterion``). With
        ``method="mondrian"`` the labels do not cut the groups; they choose each group's
        representative among its majority class, as ``MondrianAnonymizer.fit(X, y)``.
    model, features : fitted estimator and its input columns, optional
        Instead of ``label``: the guide is ``model.predict(part[features])`` on the workers.
    sensitive, l, l_kind, c, t, t_distance, hierarchies
        l-diversity (``l_kind`` "distinct", "entropy" or "recursive" with ``c``) and
        t-closeness (``t_distance`` "auto": equal distance for a categorical, ordered for a
        numeric sensitive column, hierarchical when ``hierarchies`` holds the sensitive
        column's :class:`~anonml.hierarchies.Hierarchy`) of ``sensitive``, verified on the
        written table (:mod:`anonml.dask._privacy`). As in memory, a group that breaks them is
        merged into its nearest group (centroid distance, from group-level sums reduced on the
        cluster) until all satisfy them; a whole table that fails them is refused.
    max_bins : int, default 255
        Bins per numeric QI (distinct values while there are at most this many, else quantiles
        of a mergeable sketch).
    refine : {"mondrian", "none"}, default "mondrian"
        AG's refinement of the pure leaves (as ``AccuracyGuidedAnonymizer``).
    criterion : {"gini", "entropy", "squared_error"}, optional
        As in memory: "gini" by default for a guide of classes, "squared_error" (a regression
        tree, variance reduction) for a continuous guide, i.e. floats not all whole
        (:mod:`anonml.dask._guide`); its representatives are then medoids, as in memory.
    max_depth : int, optional
    client : distributed.Client, optional
        The cluster to run on: every task is submitted and awaited through this client (it
        need not be the default one). Default: the current default client; use
        :func:`local_cluster` to start one.
    progress : callable, optional
        ``progress(stage, done, total)`` (:mod:`anonml._progress`), each stage once, named by
        its label in :data:`STAGES`: predicting the guide labels (with ``model``), scanning the
        columns, binning, the saved mapping's summaries (with ``save_mapping``) and the
        writing count partitions (total = partitions); the representatives count ranges of
        groups; the tree and its refinement count levels (total None until the last call),
        their subtrees finished in memory count batches; then the verification.
    no_workers_timeout : float, default 60
        Seconds the run waits while the cluster has no worker at all before it gives up with
        :class:`~anonml.dask._cluster.ClusterError`. A worker that dies while others live is
        survived: Dask recomputes what it held (every task has a recipe; nothing is scattered).

    drop : list, optional
        Columns not written to the output (e.g. record ids).
    keep : list, optional
        Columns with a different value on every row written on purpose. Any other such column
        (not a QI, not dropped) is refused, as by the in-memory CLI: it would name every person
        in the output (:mod:`anonml.dask._identifiers`; checked in the first pass).
    save_mapping : str or Path, optional
        A ``.skops`` file to save the run's mapping to, as ``anonml anonymize --save-mapping``
        does in memory: ``anonml transform`` (or the loaded anonymizer's ``transform``) maps new
        rows exactly as this run mapped its training rows (:mod:`anonml.dask._mapping`: the
        routing tree on raw values, the representatives; no training value the output does
        not show). Written only when the output is, after the verification.
    target_column : str, optional
        A label column written unchanged that the mapping does not read (the true labels
        beside a ``model`` guide); ``label`` is never one of the mapping's columns either.

    Returns
    -------
    DaskAnonymization

    Raises
    ------
    InputError
        A bad parameter, a missing source, a column missing from a file or partition, a column
        numeric in some files and text in others, missing values in a numeric QI, no client,
        a damaged file (named), a column unique per row that is neither dropped nor kept
        (:class:`~anonml.dask._identifiers.IdentifierColumnError`, with ``.columns``).
    OutputError
        The target exists, or its folder does not.
    PrivacyViolationError
        The independent check of the written table failed (nothing is left at the target).
    ClusterError
        The cluster lost work it could not recompute (a task killed its workers
        ``allowed-failures`` times, the scheduler forgot results, no worker for
        ``no_workers_timeout`` s); one line, nothing is left at the target.

    Notes
    -----
    Additions to the contract with the CLI: ``refine``, ``criterion`` and ``max_depth`` (as in
    ``AccuracyGuidedAnonymizer``); ``DaskAnonymization.n_levels`` and ``.n_merges``; the progress
    stages of the subtrees finished in memory. Each Parquet file is one partition.
    """
    dask, dd, distributed = _require()
    seconds: dict = {}
    # ---- parameters and paths, before any work
    check_method(method, dask=True, what="method")
    k = check_int("k", k, low=2)
    max_bins = check_int("max_bins", max_bins, low=2)
    if max_bins > 65535:
        raise InputError(f"max_bins={max_bins!r}; pass an integer from 2 to 65535 (e.g. 255)")
    if max_depth is not None:
        max_depth = check_int("max_depth", max_depth, low=1)
    if refine not in ("mondrian", "none"):
        raise InputError(f"refine={refine!r}; use 'mondrian' or 'none'")
    if criterion not in (None, "gini", "entropy", "log_loss", "squared_error"):
        raise InputError(f"criterion={criterion!r}; use 'gini', 'entropy' or 'squared_error'")
    if isinstance(quasi_identifiers, (str, bytes)) or quasi_identifiers is None:
        raise InputError("quasi_identifiers must be a list of column names, e.g. ['age', 'zip']")
    qi = list(quasi_identifiers)
    if not qi or len(set(qi)) != len(qi):
        raise InputError(f"quasi_identifiers={qi!r}; pass a non-empty list of distinct columns")
    if method == "ag" and (label is None) == (model is None):
        raise InputError(
            "accuracy-guided anonymization needs a guide: pass label='<column>' or "
            "model=<fitted estimator> with features=[...] (exactly one of them)"
        )
    if model is not None and (features is None or not list(features)):
        raise InputError("model=... needs features=[...], the columns the model reads")
    if model is not None and not hasattr(model, "predict"):
        raise InputError(f"model={type(model).__name__} has no predict method; pass a fitted estimator")
    features = list(features) if features is not None else None
    if method == "mondrian":  # labels choose the representatives only (as in memory)
        model = None
    if label is not None and label in set(qi):
        raise InputError(f"label={label!r} is also a quasi-identifier; remove it from the QIs")
    if (l is not None or t is not None) and sensitive is None:
        raise InputError("l or t needs a sensitive attribute; pass sensitive='<column>'")
    if sensitive is not None:
        if sensitive in set(qi):
            raise InputError(f"sensitive={sensitive!r} is also a quasi-identifier; remove it from the QIs")
        if l is None and t is None:
            raise InputError(f"sensitive={sensitive!r} is given without l=<number> or t=<number>")
    if l is not None:
        if isinstance(l, bool) or not isinstance(l, (int, float, np.number)) or not l >= 1:
            raise InputError(f"l={l!r}; pass a number >= 1")
        if l_kind not in ("distinct", "entropy", "recursive"):
            raise InputError(f"l_kind={l_kind!r}; use 'distinct', 'entropy' or 'recursive'")
        if l_kind == "recursive":
            from anonml.privacy._diversity import check_c

            c = check_c(c)
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float, np.number)) or not 0 <= t <= 1):
        raise InputError(f"t={t!r}; pass a number from 0 to 1")
    from anonml.dask._privacy import check_hierarchies

    hierarchy = check_hierarchies(hierarchies, sensitive, t, t_distance)
    target = Path(os.fspath(target))
    if target.exists():
        raise OutputError(f"target {str(target)!r} already exists; choose a new folder or remove it")
    if not target.parent.is_dir():
        raise OutputError(f"the folder of target {str(target)!r} does not exist; create {str(target.parent)!r} first")
    mapping_path = mapping_tmp = None
    if save_mapping is not None:
        from anonml.dask._mapping import check_mapping_path

        mapping_path = check_mapping_path(save_mapping, target)
    if client is None:
        try:
            client = distributed.default_client()
        except ValueError:
            raise InputError(
                "no Dask client; pass client=distributed.Client('tcp://host:8786') or "
                "client=anonml.dask.local_cluster()"
            ) from None
    if isinstance(no_workers_timeout, bool) or not isinstance(
            no_workers_timeout, (int, float, np.number)) or not no_workers_timeout > 0:
        raise InputError(f"no_workers_timeout={no_workers_timeout!r}; pass a number of seconds > 0")
    from anonml.dask._cluster import Watched, lost_types

    client = Watched(client, float(no_workers_timeout))  # never a default client from here on
    needed = list(dict.fromkeys(
        qi + ([label] if label is not None else []) + (features or [])
        + ([sensitive] if sensitive is not None else [])
    ))
    if isinstance(source, (str, os.PathLike)):
        from anonml.encoding import check_lookalike_columns
        from anonml.engine._dataset import check_schema, list_files, read_schema

        # the files and schemas the CLI checked too (one module): hidden and _ files skipped
        files = list_files(source)
        names, _ = check_schema(files, needed, source)
        names = list(names)
        check_lookalike_columns(names, qi, where=repr(os.fspath(source)))
        meta = read_schema(files[0]).empty_table().to_pandas()  # every column, no row
        n_files = len(files)

        def parts_of(columns: list | None) -> list:  # one partition per file, read by pandas
            return [dask.delayed(_read_file, pure=False)(worker_path(f), columns, f)
                    for f in files]

        def reads_of(columns: list | None) -> list:  # the reads made inside run_reading
            return [Read(worker_path(f), columns, f) for f in files]
    elif hasattr(source, "to_delayed") and hasattr(source, "npartitions"):
        from anonml.encoding import check_lookalike_columns

        check_lookalike_columns(list(source.columns), qi, where="the dask DataFrame")
        missing = [c for c in needed if c not in set(source.columns)]
        if missing:
            raise InputError(
                f"column {missing[0]!r} is not in the dataset; columns are: "
                f"{names_list(source.columns)}"
            )
        meta = source._meta
        delayed_parts = source.to_delayed()
        n_files, files = 0, []
        names = list(source.columns)

        def parts_of(columns: list | None) -> list:
            return delayed_parts
        reads_of = parts_of
    else:
        raise InputError(
            f"source of type {type(source).__name__}; pass a Parquet folder, a glob or a dask DataFrame"
        )
    categorical = [
        col for col in qi
        if not pd.api.types.is_numeric_dtype(meta[col]) or pd.api.types.is_bool_dtype(meta[col])
    ]
    numeric = [col for col in qi if col not in set(categorical)]
    drop = _column_list("drop", drop, names)
    keep = _column_list("keep", keep, names)
    for name in drop:
        if name in set(needed):
            raise InputError(f"drop={name!r} is a quasi-identifier, the label, a model feature "
                             "or the sensitive column; remove it from one of them")
    # columns that must not be unique per row (as unique_columns in memory: not the QIs)
    check = [c for c in names if c not in set(qi) | set(keep) | set(drop)]
    written = [c for c in names if c not in set(drop)]
    parts = parts_of(needed)  # the columns the engine reads

    def tick(stage: str, done: int, total: int | None) -> None:
        if progress is not None:
            progress(STAGES.get(stage, stage), done, total)

    def run_parts(stage: str, futures: list) -> list:
        """Wait for every future, checked (a failed or cancelled one raises here)."""
        return client.wait(futures, tick=lambda done, total: tick(stage, done, total))

    # absolute: the workers write there, each from its own working folder
    tmp = Path(os.path.abspath(target.parent)) / f".{target.name}.tmp-{uuid.uuid4().hex[:12]}"
    # Dask picks "disk" (files local to each worker) when there is no default client; the
    # engine's client may not be the default, so the shuffle method is named
    try:
        import pyarrow  # noqa: F401

        shuffle_method = "p2p"
    except ImportError:  # pragma: no cover
        shuffle_method = "tasks"
    config = dask.config.set({"dataframe.shuffle.method": shuffle_method})
    try:
        config.__enter__()
        # ---- 1. global bins and codes, binned partitions kept on the workers
        t0 = time.perf_counter()
        read = list(dict.fromkeys(needed + check))
        preds = [None] * len(parts)
        if model is not None:  # predicted once, kept on the workers for both passes
            preds = client.compute([dask.delayed(_predict_task)(p, model, features)
                                    for p in parts_of(features)])
            run_parts("predict", preds)
        summaries = client.compute([
            dask.delayed(_summary_task)(p, numeric, categorical, label, g, max_bins, needed,
                                        sensitive, check)
            for p, g in zip(parts_of(read) if check else parts, preds)
        ])
        run_parts("scan", summaries)
        import functools

        summary = client.gather(tree_reduce(client, summaries, functools.partial(_merge_task, max_bins)))
        del summaries
        guide_name = label if label is not None else (
            "the model's predictions" if model is not None else None)
        regression = is_continuous(summary["guide"])  # a regression target (dask._guide)
        if regression and method == "ag":
            check_guide(summary["guide"], guide_name)  # missing or infinite: one line
        elif regression:  # Mondrian: the plain medoid, as in memory
            target_column = label if target_column is None else target_column
            label = guide_name = None
        summary["label"] = None if regression or summary["guide"] is None else (
            summary["guide"]["counts"])
        if method == "ag":
            criterion = resolve_criterion(criterion, regression, guide_name)
        spec = K.finalize_bins(summary, qi, categorical, max_bins, label=guide_name)
        spec.regression = regression and method == "ag"  # float targets in the PartStates
        n_rows = int(summary["n"])
        if n_rows < k:
            raise InputError(f"the dataset has {n_rows} rows, fewer than k={k}; lower k or add data")
        refuse_identifiers(client, dd, parts_of, meta, summary.get("unique"), n_rows)
        spec_f = _put(client, spec)
        states = client.compute([
            dask.delayed(_bin_task)(p, spec_f, label, g) for p, g in zip(parts, preds)
        ])
        run_parts("bins", states)
        del preds
        seconds["bins"] = time.perf_counter() - t0

        # ---- 2. the tree (and AG's Mondrian refinement)
        t0 = time.perf_counter()
        levels: dict = {}

        def count_levels(stage: str, done: int, total: int | None) -> None:
            if total is None or stage in ("tree", "refine"):
                levels[stage] = done
            tick(stage, done, total)

        is_cat, n_bins = spec.is_cat, spec.n_bins
        if method == "ag":
            tree, leaves = grow(client, states, is_cat, n_bins, spec.n_classes, k, criterion,
                                max_depth, progress=count_levels, stage="tree")
            groups, n_groups, sizes = compact(client, leaves, tree.n_nodes_)
            leaves = None  # (the groups hold them now: not kept through the refinement)
            trees, first = [tree], None  # the grown trees, for a saved mapping
            if refine == "mondrian":  # the AG groups are kept for a saved mapping only
                trees, first = [tree, None], groups if mapping_path is not None else None
                rtree, leaves = grow(client, states, is_cat, n_bins, 1, k, "mondrian", None,
                                     init=groups, n_roots=n_groups, progress=count_levels,
                                     stage="refine", root_counts=sizes)
                del groups
                groups, n_groups, sizes = compact(client, leaves, rtree.n_nodes_)
                trees[1] = rtree
        else:
            tree, leaves = grow(client, states, is_cat, n_bins, 1, k, "mondrian", None,
                                progress=count_levels, stage="tree")
            groups, n_groups, sizes = compact(client, leaves, tree.n_nodes_)
            trees, first = [tree], None
        del leaves
        n_merges = 0
        if l is not None or t is not None:  # merge the groups that break l or t
            groups, n_groups, sizes, n_merges = merge_for_model(
                client, dask, parts, states, groups, n_groups, sizes, spec, spec_f, summary,
                meta, k, sensitive, l, l_kind, c, t, t_distance, hierarchy,
            )
        if int(sizes.min()) < k:
            raise RuntimeError(f"internal error: a group of {int(sizes.min())} < k={k} rows; please report")
        seconds["tree"] = time.perf_counter() - t0

        # ---- 3. representatives, by ranges of groups
        t0 = time.perf_counter()
        # the in-memory default: the majority class's medoid when there are labels (AG's guide,
        # Mondrian's label=), else the medoid
        # (a regression guide has no majority class: the medoid, as in memory)
        rule = "majority_medoid" if (label is not None or model is not None) and not \
            spec.regression else "medoid"
        # when they fit (_hold_qi), the QI columns are read once per partition and kept on the
        # workers (a lost one is read again) for the representatives (numeric QIs; the
        # categorical ones are the bins), the picking of the winners' values and the write;
        # else each of these tasks reads the columns it needs
        # with a ReadPlan (anonml.dask._reps), the QIs the bins give are not read at all
        other = [col for col in written if col not in set(qi)]
        plan = ReadPlan.make(files, spec, summary, qi, categorical, other)
        hold = plan is None and _hold_qi(client, n_rows, len(qi))
        exact = () if plan is None else tuple(plan.exact)
        if hold:
            qi_parts = prop_parts = client.compute(parts_of(qi))
        elif plan is not None:
            prop_parts = reads_of(plan.propose) if plan.propose else [None] * len(states)
        else:  # the representatives read the numeric QIs only (the categorical ones are the bins)
            prop_parts = reads_of([c for c in qi if c not in set(categorical)] or qi[:1])
        # each group's medians and closest record from all its rows, by ranges of groups
        winners = representatives(client, states, groups, prop_parts, spec, spec_f, sizes,
                                  rule, qi, exact,
                                  tick=lambda done, total: tick("representatives", done, total))
        if plan is not None:
            picked = client.compute([
                dask.delayed(pick_binned_reading, pure=False)(p, s, winners, i, qi, spec_f,
                                                              plan.exact)
                for i, (p, s) in enumerate(zip(reads_of(plan.pick) if plan.pick else
                                               [None] * len(states), states))])
        else:
            picked = client.compute([dask.delayed(pick_reading, pure=False)(p, winners, i, qi)
                                     for i, p in enumerate(qi_parts if hold else reads_of(qi))])
        del prop_parts
        reps = client.submit(_reps_table, n_groups, qi, *picked, pure=False)
        client.wait([reps])
        del winners, picked  # qi_parts: kept for the write
        seconds["representatives"] = time.perf_counter() - t0
        if mapping_path is not None:  # the routing of the training rows, for new rows
            from anonml.dask._mapping import build_mapping, save_mapping as _save
            from anonml.privacy._diversity import resolve_distance

            t0 = time.perf_counter()
            mapping = build_mapping(
                client, parts_of, states, first, groups, trees, spec, summary,
                client.gather(reps), method=method, columns=[
                    col for col in written if col not in {label, target_column}],
                params=_mapping_params(method, k, qi, categorical, sensitive, l, l_kind, c, t,
                                       t_distance, refine, criterion, max_depth, max_bins),
                distance=None if t is None else resolve_distance(
                    t_distance, meta[sensitive], hierarchy),
                tick=lambda done, total: tick("mapping", done, total))
            mapping_tmp = mapping_path.parent / f".{mapping_path.stem}.tmp-{uuid.uuid4().hex[:12]}.skops"
            _save(mapping, mapping_tmp)
            del mapping
            seconds["mapping"] = time.perf_counter() - t0

        # ---- 4. recode and write to the temporary folder
        t0 = time.perf_counter()
        tmp.mkdir()
        del states
        # the QIs as the representatives stage read them; only the other columns read here
        cast = None
        if plan is not None:  # the QIs from the representatives alone (_write_binned), their
            # values cast once for all the partitions when no partition's groups decide a dtype
            qi_parts, rest = [None] * len(groups), reads_of(other)
            cast = client.submit(cast_representatives, reps, plan.qi_meta, pure=False)
        elif not hold:
            qi_parts, rest = [None] * len(groups), reads_of(written)  # one read of each file
        else:
            rest = parts_of(other) if other else [None] * len(qi_parts)
        written = client.compute([
            dask.delayed(write_binned_reading)(r, g, reps, plan.qi_meta, str(tmp), i, written,
                                               cast)
            if plan is not None else
            dask.delayed(write_reading)(qp, r, g, reps, qi, str(tmp), i, written)
            for i, (qp, r, g) in enumerate(zip(qi_parts, rest, groups))
        ])
        del qi_parts, rest
        run_parts("recode_write", written)
        n_written = sum(client.gather(written))
        del groups, reps, written
        if n_written != n_rows:
            raise RuntimeError(f"internal error: wrote {n_written} rows of {n_rows}; please report")
        seconds["recode_write"] = time.perf_counter() - t0

        # ---- 5. independent verification on the written table, then rename
        t0 = time.perf_counter()
        from anonml.dask._verify import verify

        smallest, achieved = verify(
            dd, client, str(tmp), qi, k, sensitive=sensitive, l=l, l_kind=l_kind, t=t,
            n_rows=n_rows, c=c, t_distance=t_distance, hierarchy=hierarchy,
        )
        tick("verify", 1, 1)
        os.replace(tmp, target)
        if mapping_tmp is not None:
            try:
                os.replace(mapping_tmp, mapping_path)
            except OSError as exc:  # both files or neither
                shutil.rmtree(target, ignore_errors=True)
                raise OutputError(f"the mapping could not be written to {str(mapping_path)!r} "
                                  f"({exc.strerror or exc}); nothing was written; fix: check "
                                  "the folder's permissions and free space") from None
        seconds["verify"] = time.perf_counter() - t0
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if mapping_tmp is not None:
            Path(mapping_tmp).unlink(missing_ok=True)
        if isinstance(exc, lost_types()):
            raise client.lost(exc) from None
        raise
    finally:
        config.__exit__(None, None, None)
    return DaskAnonymization(
        n_rows=n_rows, n_groups=int(n_groups), min_class_size=int(smallest), achieved=achieved,
        seconds=seconds, target=target, n_levels=levels, n_merges=n_merges, n_files=n_files,
        mapping=mapping_path,
    )


def _mapping_params(method, k, qi, categorical, sensitive, l, l_kind, c, t, t_distance, refine,
                    criterion, max_depth, max_bins) -> dict:
    """The in-memory anonymizer's parameters that describe this run (a saved mapping's)."""
    params = dict(k=k, quasi_identifiers=list(qi), categorical_features=list(categorical),
                  sensitive=sensitive, l=l, l_kind=l_kind, c=c, t=t, t_distance=t_distance)
    if method == "ag":
        params.update(tree="hist", refine=refine, criterion=criterion, max_depth=max_depth,
                      max_bins=max_bins)
    return params


def _column_list(name: str, value: Any, names: list) -> list:
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        raise InputError(f"{name}={value!r}; pass a list of column names, e.g. {name}=['id']")
    cols = list(value)
    missing = [c for c in cols if c not in set(names)]
    if missing:
        raise InputError(f"{name}={missing[0]!r} is not a column; columns are: "
                         f"{', '.join(map(str, names[:12]))}")
    return cols
