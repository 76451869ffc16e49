"""One Dask write task's work in one process (session 19): a 2M-row partition of the 100M
Adult table recoded by random groups (the recoding's gathers, ``Recoding.column``) and written
(``write_parquet``), with 66,791 groups (10M rows' count) and 576,143 (100M's), twice each.

    PYTHONPATH=src python benchmarks/results/session19/write_groups.py /work/bigdata/adult_100M
"""
import glob
import os
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from anonml._output import write_parquet
from anonml.anonymize._pipeline import Recoding

df = pd.read_parquet(sorted(glob.glob(os.path.join(sys.argv[1], "*.parquet")))[0])
n = len(df)
rng = np.random.default_rng(0)
QI = [c for c in df.columns if c != "income"][:12]
for G in [66_791, 576_143]:
    groups = rng.integers(0, G, n).astype(np.int64)
    pick = rng.integers(0, n, G)
    per_group = {c: df[c].array.take(pick) for c in QI}
    for rep in range(2):
        plan = Recoding(groups, df.index, per_group)
        t = time.perf_counter()
        out = pd.DataFrame({c: plan.column(c) if c in QI else df[c] for c in df.columns},
                           index=df.index, copy=False)
        t1 = time.perf_counter() - t
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            write_parquet(out, os.path.join(d, "x.parquet"))
            t2 = time.perf_counter() - t
        print(f"{G} groups: recode {t1:.3f} s, write {t2:.3f} s, both {t1 + t2:.3f} s")
