"""range_candidates alone on ranges of 312,500 / 446,000 / 2M rows from 5 or 50 partitions
(Adult resampled, groups of about 170 rows, random groups).
Usage: PYTHONPATH=src python benchmarks/results/session20/rc_bench.py"""
import sys, time, numpy as np, pandas as pd
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench_accuracy_guided import resample
from anonml.datasets import load_adult
from anonml.encoding import TableEncoder
from anonml.engine import _kernels as K
from anonml.engine import _ranges as R

data = load_adult()
X, _, y, _ = data.train_test_split()
qi = list(data.qi_sets["12"])
X = X[qi]
cat = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
enc = TableEncoder(qi, cat, 64).fit(X)
spec = K.BinSpec.from_encoder(enc, np.sort(y.unique()).astype(object))
raw = ["capital-gain", "capital-loss"]
exact = tuple(c for c in qi if c not in cat and c not in raw)

def build(range_rows, n_parts, per_group=170, seed=0):
    rng = np.random.default_rng(seed)
    Xr, yr = resample(X, y, range_rows, seed)
    n_groups = range_rows // per_group
    g = rng.integers(0, n_groups, range_rows)
    frames = []
    cuts = np.linspace(0, range_rows, n_parts + 1).astype(int)
    for i in range(n_parts):
        part = Xr.iloc[cuts[i]:cuts[i+1]].reset_index(drop=True)
        st = K.bin_partition(part, spec, yr.iloc[cuts[i]:cuts[i+1]].reset_index(drop=True))
        frames.append(R.group_rows(part, st, g[cuts[i]:cuts[i+1]], np.array([0]), n_groups, i, raw, True, 600000))
    rows = pd.concat(frames, ignore_index=True)
    sizes = np.bincount(g, minlength=n_groups)
    return rows, n_groups, sizes

for range_rows, n_parts in [(312_500, 5), (446_000, 50), (312_500, 50), (446_000, 5), (2_000_000, 50)]:
    rows, n_groups, sizes = build(range_rows, n_parts)
    ts = []
    for rep in range(4):
        t = time.process_time()
        R.range_candidates(rows, 0, n_groups, spec, sizes, "majority_medoid", qi, raw, exact)
        ts.append(time.process_time() - t)
    print(f"range {range_rows} rows from {n_parts} parts: {min(ts[1:])/range_rows*1e6:.3f} s per 1M (runs {[round(t,3) for t in ts]})", flush=True)
