"""The verification's merges in one process: the tree's merge_classes of N synthetic files
(2M rows each from 576,143 classes of 12 QIs) against the buckets of class_sizes.
Usage: PYTHONPATH=src python benchmarks/results/session20/merge_bench.py 8"""
import time, numpy as np, pandas as pd, sys
from anonml.dask._classes import _distinct, merge_classes
rng = np.random.default_rng(0)
n_cls, n_files, rows = 576_143, int(sys.argv[1]) if len(sys.argv)>1 else 8, 2_000_000
card = [70, 9, 16, 16, 7, 15, 6, 5, 2, 120, 90, 95]
text = [1, 2, 4, 5, 6, 7, 8]
cls = [rng.integers(0, c, n_cls) for c in card]
vals = [np.array([f"value-{j}-{v}" for v in range(c)], dtype=object) if j in text else np.arange(c, dtype=np.int64) * 7 for j, c in enumerate(card)]
parts = []
for f in range(n_files):
    r = rng.integers(0, n_cls, rows)
    codes, values = [], []
    for j in range(12):
        col = cls[j][r]
        c, u = pd.factorize(col)
        codes.append(c.astype(np.int64)); values.append(vals[j][u])
    parts.append(_distinct(codes, [v.size + 1 for v in values], None, values))
print("tuples per file", parts[0]["counts"].size)
t = time.process_time(); m = merge_classes(*parts); dt = time.process_time() - t
tot = sum(p["counts"].size for p in parts)
print(f"merge of {n_files}: {dt:.2f} s, {dt/tot*1e9:.0f} ns/tuple, classes {m['counts'].size}")
t = time.process_time(); merge_classes(*parts); dt = time.process_time() - t
print(f"merge of {n_files} again: {dt:.2f} s, {dt/tot*1e9:.0f} ns/tuple")
from anonml.dask._classes import join_value_lists, bucket_keys, bucket_sizes
# the buckets as class_sizes makes them, the shuffle replaced by a concatenation and a
# selection per bucket (the cluster's shuffle moves the pairs instead)
for rep in range(2):
    t = time.process_time()
    joined = join_value_lists(*[{"values": p["values"], "tuples": p["counts"].size} for p in parts])
    bits = 1
    keyed = pd.concat([bucket_keys(p, joined, bits) for p in parts], ignore_index=True)
    t1 = time.process_time()
    got = [bucket_sizes(keyed[keyed["_partitions"] == b]).to_numpy()[0] for b in range(1 << bits)]
    dt = time.process_time() - t
    print(f"buckets: keys {t1-t:.2f} s, total {dt:.2f} s, {dt/tot*1e9:.0f} ns/tuple", got)
print("merge check", m["counts"].sum(), m["counts"].min(), m["counts"].size)
