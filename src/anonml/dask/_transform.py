"""``anonml transform DATA --engine dask``: a saved mapping applied to a Parquet dataset on a
Dask cluster, one partition (file) per task.

The mapping's ``transform`` is a function of each row alone (its routing tree and its
representatives), so the dataset's mapping is the in-memory mapping of every file: each task
reads one file, maps it with the same mapping object (opened in a sandbox by each worker
process, as the model of ``--engine dask``), and writes ``part.NNNNN.parquet`` to a hidden
sibling folder of the target, renamed into place when every file is written. Any error
removes the folder: nothing is left at the target.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

from anonml._errors import InputError

__all__ = ["transform_dataset"]

#: what ``progress(stage, done, total)`` hears, once per file mapped (total = files)
STAGE = "mapping the files with the saved mapping"


def _map_file(path: str, mapping: Any, fitted: list, drop: list, keep: list, folder: str,
              i: int, name: str | None = None) -> int:
    """Map file ``path`` (absolute when local), listed as ``name``, into ``folder``."""
    from anonml._output import write_parquet
    from anonml.dask._partio import _read_file

    name = path if name is None else name
    frame = _read_file(path, None, name)
    frame = frame.drop(columns=[c for c in drop if c in frame.columns])
    extra = [c for c in frame.columns if c not in set(fitted) and c not in set(keep)]
    if extra:
        raise InputError(f"column {extra[0]!r} of {name!r} is not one the mapping was fitted on; "
                         "fix: --drop it, or --keep it to pass it through unchanged")
    mapped = mapping.transform(frame[fitted]) if len(frame) else frame[fitted]
    out = frame.copy()
    for c in fitted:  # column by column: each takes the mapped dtype
        out[c] = mapped[c].to_numpy() if len(frame) else out[c]
    write_parquet(out, os.path.join(folder, f"part.{i:05d}.parquet"))
    return int(out.shape[0])


def transform_dataset(source: Any, target: Any, mapping: Any, *, fitted: Sequence[Any],
                      client: Any, drop: Sequence[Any] = (), keep: Sequence[Any] = (),
                      progress: Callable[[str, int, int | None], None] | None = None,
                      no_workers_timeout: float = 60.0) -> tuple[int, int]:
    """Map every file of ``source`` with ``mapping``; write ``target``. Returns (files, rows).

    ``fitted``: the mapping's columns (every file must hold them); ``drop``: columns left out;
    ``keep``: columns not in the mapping passed through unchanged (any other is refused)."""
    import dask

    from anonml.dask._partio import worker_path
    from anonml.dask._cluster import Watched, lost_types
    from anonml.engine._dataset import check_schema, list_files

    files = list_files(source)
    names, _ = check_schema(files, list(fitted), os.fspath(source))
    target = Path(os.fspath(target))
    if target.exists():
        raise InputError(f"output {str(target)!r} exists; fix: choose a new folder, or remove it "
                         "first")
    missing = [c for c in list(drop) + list(keep) if c not in set(names)]
    if missing:
        raise InputError(f"column {missing[0]!r} of --drop/--keep is not in the dataset; columns "
                         f"are: {', '.join(map(str, list(names)[:12]))}")
    client = Watched(client, float(no_workers_timeout))
    # absolute: the workers write there, each from its own working folder
    tmp = Path(os.path.abspath(target.parent)) / f".{target.name}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        tmp.mkdir()
        futures = client.compute([  # absolute paths: a worker's working folder is its own
            dask.delayed(_map_file, pure=False)(worker_path(f), mapping, list(fitted), list(drop),
                                                list(keep), str(tmp), i, f)
            for i, f in enumerate(files)])
        client.wait(futures, tick=lambda done, total: progress and progress(STAGE, done, total))
        rows = sum(client.gather(futures))
        os.replace(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, lost_types()):
            raise client.lost(exc) from None
        raise
    return len(files), rows
