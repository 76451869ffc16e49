"""Write Adult resampled with jitter (12 QI + label) to partitioned Parquet folders.

The data for the scale benchmarks of the Dask engine (issue 12): Adult train (32,561 rows)
resampled with replacement, with the integer quasi-identifiers jittered exactly as in
``benchmarks/bench_accuracy_guided.py`` (``resample``), written chunk by chunk so that memory
stays constant whatever the size (one chunk of ``--rows-per-file`` rows at a time).

Each dataset is written to a temporary sibling folder and renamed into place when complete,
so a folder that exists is whole; an existing folder is kept (delete it to rewrite it).

Usage::

    python benchmarks/make_big_adult.py                       # 10M, 30M, 100M under /work/bigdata
    python benchmarks/make_big_adult.py /data/adult --sizes 10M 30M --rows-per-file 2M

Writes ``<folder>/adult_<size>/part-00000.parquet ...`` and prints rows, files and bytes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from bench_accuracy_guided import resample  # noqa: E402

from anonml.datasets import load_adult  # noqa: E402


def parse_size(text: str) -> int:
    """'10M' -> 10_000_000, '500k' -> 500_000, '123' -> 123."""
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in "kmg" else text
    try:
        value = int(float(number) * mult)
    except ValueError:
        raise SystemExit(f"error: size {text!r} is not a number like 10M, 500k or 1000") from None
    if value <= 0:
        raise SystemExit(f"error: size {text!r} must be positive")
    return value


def size_name(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n}"


def write_dataset(X: pd.DataFrame, y: pd.Series, n: int, folder: Path, rows_per_file: int,
                  seed: int) -> dict:
    """Write ``n`` resampled rows to ``folder`` in files of ``rows_per_file`` rows."""
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    t0 = time.perf_counter()
    written, part = 0, 0
    schema = None
    while written < n:
        m = min(rows_per_file, n - written)
        # one independent stream per file: reproducible and chunk-size independent per seed
        Xc, yc = resample(X, y, m, seed=seed * 1_000_003 + part)
        Xc[y.name] = yc.to_numpy()
        table = pa.Table.from_pandas(Xc, preserve_index=False)
        if schema is None:
            schema = table.schema
        else:  # identical schema in every file (a string column never becomes null-typed)
            table = table.cast(schema)
        pq.write_table(table, tmp / f"part-{part:05d}.parquet", compression="snappy")
        written += m
        part += 1
    tmp.rename(folder)
    nbytes = sum(p.stat().st_size for p in folder.glob("*.parquet"))
    return {"rows": n, "files": part, "bytes": nbytes, "seconds": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="/work/bigdata")
    parser.add_argument("--sizes", nargs="+", default=["10M", "30M", "100M"])
    parser.add_argument("--rows-per-file", default="2M")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rows_per_file = parse_size(args.rows_per_file)
    data = load_adult()
    X, _, y, _ = data.train_test_split()
    qi = list(data.qi_sets["12"])
    X = X[qi]
    root = Path(args.folder)
    root.mkdir(parents=True, exist_ok=True)
    print("| dataset | rows | files | GB on disk | seconds |")
    print("|---|---:|---:|---:|---:|")
    for text in args.sizes:
        n = parse_size(text)
        folder = root / f"adult_{size_name(n)}"
        if folder.exists():
            nbytes = sum(p.stat().st_size for p in folder.glob("*.parquet"))
            print(f"| {folder} | {n:,} | (exists) | {nbytes / 1e9:.2f} | - |", flush=True)
            continue
        r = write_dataset(X, y, n, folder, rows_per_file, args.seed)
        print(f"| {folder} | {r['rows']:,} | {r['files']} | {r['bytes'] / 1e9:.2f} | "
              f"{r['seconds']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
