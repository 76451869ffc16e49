"""``anonml anonymize DATA --engine dask``: the command-line shell over :mod:`anonml.dask`.

Kept out of :mod:`anonml.cli` so that the in-memory command stays short. Like the rest of the
CLI it computes nothing: it checks the arguments and the Parquet dataset's metadata (never its
rows) before any work, starts or reaches a Dask cluster, calls
:func:`anonml.dask.anonymize_dataset` with a progress bar, and prints the summary. Every error
is one line (an :class:`~anonml._errors.InputError`), and nothing is written: the engine
writes to a temporary sibling folder, verifies it, and renames it into place.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable

from anonml._errors import InputError
from anonml.cli._common import check_privacy_flags

__all__ = ["add_dask_options", "run_dask", "parquet_files", "check_parquet_schema",
           "quiet_dask_logs"]

#: options of ``anonml anonymize`` that the Dask engine does not read, and their defaults
_UNSUPPORTED = {
    "predictions": None, "retrain": False, "test": None, "save_pipeline": None,
    "suppression": 0.0, "recoding": "representative",
    "na_values": None, "sep": None, "categorical": None,
    "representative": "majority_medoid",
}
_TREE_PARAMS = ("refine", "criterion", "max_depth")  # AG options the Dask engine reads too
_CONNECT_TIMEOUT = 10  # seconds to reach a --scheduler before giving up with one line


_ENGINE_HELP = {
    "anonymize": "memory (default): the table is read into this process; dask: read and "
                 "write partitioned Parquet on a Dask cluster, for tables larger than memory "
                 "(--method ag or mondrian; needs pip install 'anonml[dask]')",
    "transform": "memory (default): the table is read into this process; dask: map every "
                 "file of a Parquet folder or glob on a Dask cluster, one task per file, into "
                 "a partitioned Parquet folder (needs pip install 'anonml[dask]')",
}


def add_dask_options(parser: argparse.ArgumentParser, command: str = "anonymize") -> None:
    """The ``--engine`` group of ``anonml anonymize`` and ``anonml transform``
    (``command``: whose words the help uses)."""
    g = parser.add_argument_group(
        "engine (--engine dask: a Parquet folder or glob in, a partitioned Parquet folder out)")
    g.add_argument("--engine", choices=["memory", "dask"], default="memory",
                   help=_ENGINE_HELP[command])
    g.add_argument("--scheduler", metavar="ADDR", help="address of a running Dask scheduler, "
                   "e.g. tcp://host:8786 (default: start a local cluster sized to this machine)")
    g.add_argument("--workers", type=int, metavar="N", help="workers of the local cluster "
                   "(default: one per core)")
    g.add_argument("--worker-memory", metavar="SIZE", help="memory limit of each local worker, "
                   "e.g. 4GB (default: a safe share of this machine's memory)")
    g.add_argument("--no-workers-timeout", type=float, metavar="SECONDS", help="give up (one "
                   "line, nothing written) when the cluster has had no worker for this long "
                   "(default 60); a worker lost while others live is survived")


# ---------------------------------------------------------------------------- the dataset ----
# one reading of the dataset, shared with the engine: anonml/engine/_dataset.py
def parquet_files(source: str) -> list[str]:
    """The Parquet files of a folder, glob, file or URL, as the engine reads them."""
    from anonml.engine._dataset import list_files

    return list_files(source)


def check_parquet_schema(files: list[str], columns: list[str], source: str = "") -> dict[str, str]:
    """Every file's schema: each of ``columns`` and of the first file's columns in every
    file with one type; returns column -> type (one-line errors)."""
    from anonml.engine._dataset import check_schema

    return check_schema(files, columns, source)[1]


def _sample(files: list[Path], columns: list[str], n: int = 1000) -> Any:
    """Up to ``n`` first rows of the first file (to probe a model file before it is used)."""
    import pyarrow.parquet as pq

    batch = next(pq.ParquetFile(files[0]).iter_batches(batch_size=n, columns=columns), None)
    import pandas as pd

    return batch.to_pandas() if batch is not None else pd.DataFrame(columns=columns)


# ---------------------------------------------------------------------------- the cluster ----
def _require_dask() -> None:
    from anonml._install import install_hint

    try:
        import dask.dataframe  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise InputError(f"--engine dask needs dask and distributed ({exc.name} is not "
                         f"installed); fix: {install_hint('dask', ('dask[dataframe]', 'distributed'))}"
                         ) from None


def _worker_memory(text: str | None) -> Any:
    if text is None:
        return None
    from dask.utils import parse_bytes

    try:
        value = parse_bytes(text)
    except (ValueError, TypeError):
        raise InputError(f"--worker-memory {text!r} is not a size; fix: e.g. 4GB or 500MiB"
                         ) from None
    if value < 256 * 2**20:
        raise InputError(f"--worker-memory {text!r} is below 256 MiB, too little for a Dask "
                         "worker; fix: give e.g. 4GB")
    return value


def _check_cluster_args(scheduler: str | None, workers: int | None,
                        worker_memory: str | None) -> Any:
    """Check the cluster options before any work; returns the worker memory in bytes."""
    if scheduler is not None and (workers is not None or worker_memory is not None):
        raise InputError("--workers and --worker-memory size the local cluster; with "
                         "--scheduler the cluster is sized by whoever started it; fix: "
                         "leave them out")
    if workers is not None and workers < 1:
        raise InputError(f"--workers {workers} must be at least 1")
    if scheduler is not None:
        _check_address(scheduler)
    return _worker_memory(worker_memory)


def connect(scheduler: str | None, workers: int | None, worker_memory: str | None,
            timeout: float | None = None) -> tuple[Any, bool]:
    """A ``distributed.Client``: to ``scheduler``, or to a new local cluster. Returns it and
    whether the cluster is ours (to be closed at the end)."""
    memory = _check_cluster_args(scheduler, workers, worker_memory)
    timeout = _CONNECT_TIMEOUT if timeout is None else timeout
    if scheduler is not None:
        from distributed import Client

        try:
            return Client(scheduler, timeout=timeout, set_as_default=False), False
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, ValueError for the address
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"cannot reach the Dask scheduler {scheduler!r} within {timeout:g} s "
                             f"({why[:200]}); fix: check the address (e.g. tcp://host:8786) and "
                             "that the scheduler runs, or leave --scheduler out to start a local "
                             "cluster") from None
    from anonml.dask import local_cluster

    return local_cluster(n_workers=workers, memory_limit=memory, quiet=not _debug()), True


def _check_address(scheduler: str) -> None:
    """A malformed ``--scheduler`` is one line before any connection (a ``Client`` that fails
    on it hangs for 20 s at exit, then prints a traceback)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, loc = parse_address(scheduler, strict=False)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            host, port = parse_host_port(loc, default_port=8786)
            if not host:
                raise ValueError("no host")
            if not 0 < int(port) < 65536:
                raise ValueError(f"port {port} is not between 1 and 65535")
    except (ValueError, TypeError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"--scheduler {scheduler!r} is not a Dask scheduler address "
                         f"({why[:200]}); fix: give the address the scheduler prints, e.g. "
                         "tcp://host:8786") from None


def _debug() -> bool:
    return bool(os.environ.get("ANONML_DEBUG"))


def quiet_dask_logs() -> None:
    """The bar and one-line errors, not Dask's logs: a failed task, a lost worker or scheduler
    is reported once, by the engine, with the fix. ``distributed``'s loggers of this process
    are silenced here, and those of the local cluster's worker processes by
    ``local_cluster(quiet=True)``; ``ANONML_DEBUG=1`` (the CLI's switch for the details) keeps
    them all. With ``--scheduler`` the workers log where they were started."""
    if _debug():
        return
    import distributed  # noqa: F401 - its loggers (dask's config gives some their own level)

    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name == "distributed" or name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.CRITICAL)


# ---------------------------------------------------------------------------- the command ----
def _check_args(args: argparse.Namespace, method_params: dict) -> None:
    if args.method not in ("ag", "mondrian"):
        raise InputError(f"--engine dask runs --method ag or mondrian, not {args.method}; fix: "
                         "choose one of them, or --engine memory")
    flags = {"tree": "--tree", "features": "--features", "refine": "--refine",
             "criterion": "--tree-criterion", "max_depth": "--max-depth"}
    for param in method_params:
        if param not in _TREE_PARAMS:
            raise InputError(f"--engine dask does not take {flags.get(param, param)}; fix: "
                             "leave it out (the Dask engine grows a histogram tree on the "
                             "quasi-identifiers)")
    if method_params.get("criterion") not in (None, "gini", "entropy", "log_loss",
                                              "squared_error"):
        raise InputError(f"--tree-criterion {method_params['criterion']} is not one the Dask "
                         "engine grows; fix: gini, entropy or squared_error")
    for dest, default in _UNSUPPORTED.items():
        value = getattr(args, dest, default)
        if value not in (default, None):
            flag = "--" + dest.replace("_", "-")
            raise InputError(f"{flag} is not read by --engine dask; fix: leave it out, or use "
                             "--engine memory")
    if args.method == "ag" and not (args.labels or args.model):
        raise InputError("--method ag with --engine dask needs what guides the tree: --labels "
                         "(with --target) or --model FILE (its predictions are computed on the "
                         "cluster)")
    if args.labels and args.target is None:
        raise InputError("--labels needs --target COLUMN, the column of true labels")
    if args.method == "mondrian" and args.model is not None:
        raise InputError("--model is read by --method ag only; --method mondrian groups by the "
                         "quasi-identifiers; fix: leave --model out")
    check_privacy_flags(args)
    if args.l_kind == "recursive" and args.c is None:
        raise InputError("--l-kind recursive needs --c, e.g. --c 3")
    if args.hierarchies is not None and args.t is None:
        raise InputError("--hierarchies is read by --engine dask for --t-distance hierarchical "
                         "only (the hierarchy of --sensitive); fix: add --t, or leave it out, "
                         "or use --engine memory to generalize with hierarchies")


def _tree_params(method_params: dict) -> dict:
    """--refine, --tree-criterion, --max-depth as the engine's keywords (log_loss = entropy)."""
    out = dict(method_params)
    if out.get("criterion") == "log_loss":
        out["criterion"] = "entropy"
    return out


def _check_output(path: str, source: str) -> Path:
    from anonml._output import check_output_folder

    out = Path(path)
    if out.exists():
        raise InputError(f"output {path!r} exists; fix: choose a new folder, or remove it first "
                         "(the Dask engine never writes into an existing folder)")
    check_output_folder(out)
    from anonml.engine._dataset import _local_path

    local = _local_path(source)
    src = Path(local) if local is not None else None
    if src is not None and src.is_dir() and (out.resolve() == src.resolve() or src.resolve() in out.resolve().parents):
        raise InputError(f"output {path!r} is inside the input dataset {source!r}; fix: write "
                         "it elsewhere")
    return out


def close(client: Any, ours: bool) -> None:
    """Say goodbye to the scheduler, and stop the cluster if this command started it."""
    cluster = getattr(client, "cluster", None) if ours else None
    try:
        client.close(timeout=5)
    except Exception:  # noqa: BLE001 - a scheduler that is gone cannot be said goodbye to
        pass
    if cluster is not None:
        cluster.close()


def run_dask(args: argparse.Namespace, say: Any, method_params: dict,
             split_names: Callable[[str, str], list[str]]) -> int:
    """The body of ``anonml anonymize --engine dask``."""
    _check_args(args, method_params)
    if args.no_workers_timeout is not None and not args.no_workers_timeout > 0:
        raise InputError(f"--no-workers-timeout {args.no_workers_timeout:g} must be more than 0 "
                         "seconds; fix: e.g. --no-workers-timeout 60")
    qi = split_names(args.qi, "qi")
    _require_dask()
    _check_cluster_args(args.scheduler, args.workers, args.worker_memory)
    files = parquet_files(args.input)
    target = _check_output(args.output, args.input)
    needed = list(dict.fromkeys(qi + [c for c in (args.target, args.sensitive) if c]))
    if args.target in qi:
        raise InputError(f"target {args.target!r} is also listed in --qi; remove it from --qi")
    from anonml.encoding import check_lookalike_columns
    from anonml.engine._dataset import check_schema

    # every column, since every one is written; the needed ones named first
    all_columns, _ = check_schema(files, needed, args.input)
    check_lookalike_columns(all_columns, qi, where=f"the dataset {args.input!r}")
    drop = split_names(args.drop, "drop") if args.drop else []
    keep = split_names(args.keep, "keep") if args.keep else []
    for flag, names in (("--drop", drop), ("--keep", keep)):
        missing = [n for n in names if n not in set(all_columns)]
        if missing:
            raise InputError(f"{flag} {missing[0]!r} is not a column; columns are: "
                             f"{', '.join(map(str, all_columns[:12]))}")
    for name in drop:
        if name in set(needed):
            raise InputError(f"--drop {name!r} is also the --target, the --sensitive column or a "
                             "quasi-identifier; fix: drop it from one of them")
    hierarchies = _sensitive_hierarchy(args)
    if args.save_mapping is not None:  # a .skops file, skops installed, a new file
        from anonml.cli._common import _check_mapping_path
        from anonml.dask._mapping import check_mapping_path

        _check_mapping_path(args.save_mapping, [args.model])
        check_mapping_path(args.save_mapping, target)
    model, features = None, None
    if args.model is not None:
        from anonml.safemodel import open_model

        features = [c for c in all_columns if c != args.target and c not in set(drop)]
        say(f"reading the model {args.model} in the sandbox")
        # each Dask worker process opens a sandbox of its own on the file's hashed bytes
        model = open_model(args.model, trust=bool(args.trust_model))
    quiet_dask_logs()
    say(f"{'connecting to ' + args.scheduler if args.scheduler else 'starting a local cluster'}")
    with warnings.catch_warnings():  # a busy dashboard port is no business of this command
        warnings.filterwarnings("ignore", message=".*already in use", category=UserWarning)
        client, ours = connect(args.scheduler, args.workers, args.worker_memory)
    try:
        from anonml.dask import anonymize_dataset
        from anonml.dask._identifiers import IdentifierColumnError

        info = client.scheduler_info()
        n_workers = len(info.get("workers", {}))
        say(f"anonymizing {len(files)} Parquet files on {n_workers} Dask workers "
            f"({'AccuracyGuided' if args.method == 'ag' else 'Mondrian'}, k={args.k}, "
            f"{len(qi)} quasi-identifiers)")
        t = time.perf_counter()
        try:
            result = _anonymize(anonymize_dataset, args, client, target, qi, model, features,
                                drop, keep, method_params, say, hierarchies)
        except IdentifierColumnError as exc:  # the in-memory CLI's words, with its flags
            names = ",".join(map(str, exc.columns))
            shown = ", ".join(repr(c) for c in exc.columns[:5])
            raise InputError(f"column {shown} has a different value on every row and is not a "
                             "quasi-identifier: it would name every person in the output; fix: "
                             f"--drop {names} (or --keep it if it must stay, or add it to --qi); "
                             "nothing was written") from None
        seconds = time.perf_counter() - t
    finally:
        close(client, ours)
    return _print_summary(args, result, seconds, n_workers)


def _anonymize(anonymize_dataset: Any, args: argparse.Namespace, client: Any, target: Path,
               qi: list, model: Any, features: Any, drop: list, keep: list, method_params: dict,
               say: Any, hierarchies: dict | None = None) -> Any:
    """The engine's call, with the command's options."""
    return anonymize_dataset(
        args.input, target, k=args.k, quasi_identifiers=qi,
        method=args.method,
        # --method mondrian: the --target labels choose the representatives, as in memory
        label=args.target if (args.labels or args.method == "mondrian") else None,
        model=model, features=features,
        sensitive=args.sensitive, l=args.l, l_kind=args.l_kind or "distinct", c=args.c,
        t=args.t, t_distance=args.t_distance or "auto", hierarchies=hierarchies, client=client,
        progress=say, **_tree_params(method_params),
        no_workers_timeout=60.0 if args.no_workers_timeout is None else
        args.no_workers_timeout, drop=drop, keep=keep, save_mapping=args.save_mapping,
        target_column=args.target,
    )


def _sensitive_hierarchy(args: argparse.Namespace) -> dict | None:
    """--hierarchies DIR as the engine's ``hierarchies``: the --sensitive column's file only
    (hierarchical t-closeness); a file for another column is refused in one line."""
    if args.hierarchies is None:
        return None
    from anonml.hierarchies import read_arx_folder

    folder = Path(args.hierarchies)
    if not folder.is_dir():
        raise InputError(f"--hierarchies {args.hierarchies!r} is not a folder; fix: give the "
                         "folder holding the ARX .csv file of the --sensitive column")
    from anonml.engine._dataset import check_schema, list_files

    _, kinds = check_schema(list_files(args.input), [args.sensitive], args.input)
    numeric = [c for c, kind in kinds.items() if kind not in ("string", "bool", "null")]
    found = read_arx_folder(folder, list(kinds), numeric=numeric)
    others = [c for c in found if c != args.sensitive]
    if others:
        raise InputError(f"--hierarchies {args.hierarchies!r} holds a hierarchy of {others[0]!r}; "
                         "--engine dask reads the hierarchy of the --sensitive column only "
                         "(for --t-distance hierarchical); fix: a folder with that file alone, "
                         "or --engine memory to generalize with hierarchies")
    if args.sensitive not in found:
        raise InputError(f"--hierarchies {args.hierarchies!r} holds no file for the --sensitive "
                         f"column {args.sensitive!r} (<column>.csv or <dataset>_<column>.csv)")
    return found


def _print_summary(args: argparse.Namespace, result: Any, seconds: float, n_workers: int) -> int:
    summary = {
        "engine": "dask", "method": args.method, "k": args.k, "rows": int(result.n_rows),
        "groups": int(result.n_groups), "min_class_size": int(result.min_class_size),
        **{k: v for k, v in dict(result.achieved or {}).items()},
        "seconds": round(seconds, 3),
        "stage_seconds": {s: round(float(v), 3) for s, v in dict(result.seconds).items()},
        "files_in": int(result.n_files), "output": str(result.target), "workers": n_workers,
    }
    if getattr(result, "mapping", None) is not None:
        summary["mapping"] = str(result.mapping)
    if hasattr(result, "n_levels"):  # tree levels by where they were grown
        summary["levels"] = {str(s): int(v) for s, v in dict(result.n_levels).items()}
    if hasattr(result, "n_merges"):
        summary["merges"] = int(result.n_merges)
    if args.json:
        from anonml._utils import json_safe

        print(json.dumps(json_safe(summary)))
    else:
        stages = ", ".join(f"{s} {v:.1f} s" for s, v in summary["stage_seconds"].items())
        print(f"wrote {summary['output']}{os.sep} ({summary['rows']:,} rows, "
              f"{summary['groups']:,} groups, smallest {summary['min_class_size']} >= k="
              f"{args.k}; verified) in {seconds:.1f} s ({stages})"
              + (f"; mapping {summary['mapping']}" if "mapping" in summary else ""))
    return 0
