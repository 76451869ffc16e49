"""``anonml transform DATA --engine dask``: the command-line shell over
:func:`anonml.dask._transform.transform_dataset` (a Parquet folder or glob in, a partitioned
Parquet folder out). Every check is made before the cluster is reached; errors are one line."""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

from anonml._errors import InputError

__all__ = ["run_dask_transform"]


def run_dask_transform(args: argparse.Namespace, say: Any, mapping: Any, fitted: list,
                       drop: list, keep: list) -> int:
    """The body of ``anonml transform --engine dask`` (the mapping opened and checked)."""
    from anonml.cli._dask import (_check_cluster_args, _check_output, _require_dask, close,
                                  connect, quiet_dask_logs)

    if args.no_workers_timeout is not None and not args.no_workers_timeout > 0:
        raise InputError(f"--no-workers-timeout {args.no_workers_timeout:g} must be more than 0 "
                         "seconds; fix: e.g. --no-workers-timeout 60")
    _require_dask()
    _check_cluster_args(args.scheduler, args.workers, args.worker_memory)
    from anonml.engine._dataset import check_schema, list_files

    files = list_files(args.input)
    target = _check_output(args.output, args.input)
    names, _ = check_schema(files, fitted, args.input)
    for flag, cols in (("--drop", drop), ("--keep", keep)):
        missing = [c for c in cols if c not in set(names)]
        if missing:
            raise InputError(f"{flag} {missing[0]!r} is not a column; columns are: "
                             f"{', '.join(map(str, list(names)[:12]))}")
    extra = [c for c in names if c not in set(fitted) | set(keep) | set(drop)]
    if extra:
        raise InputError(f"column {extra[0]!r} is not one the mapping was fitted on "
                         f"({len(extra)} such); fix: --drop it, or --keep it to pass it "
                         "through unchanged")
    quiet_dask_logs()
    say(f"{'connecting to ' + args.scheduler if args.scheduler else 'starting a local cluster'}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*already in use", category=UserWarning)
        client, ours = connect(args.scheduler, args.workers, args.worker_memory)
    try:
        from anonml.dask._transform import transform_dataset

        t = time.perf_counter()
        n_files, rows = transform_dataset(
            args.input, target, mapping, fitted=fitted, client=client, drop=drop, keep=keep,
            progress=say, no_workers_timeout=60.0 if args.no_workers_timeout is None
            else args.no_workers_timeout)
        seconds = time.perf_counter() - t
    finally:
        close(client, ours)
    if not args.quiet:
        print(f"wrote {target} ({rows:,} rows from {n_files} Parquet files, "
              f"{len(mapping.info['quasi_identifiers'])} quasi-identifiers mapped by "
              f"{mapping.info['class']}) in {seconds:.1f} s")
    return 0
