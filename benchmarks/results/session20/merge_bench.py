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
import cProfile, pstats
cProfile.run("merge_classes(*parts)", "/tmp/s20/m.prof")
pstats.Stats("/tmp/s20/m.prof").sort_stats("tottime").print_stats(12)
from anonml.dask._classes import joined_values, bucket_keys, bucket_sizes
for rep in range(2):
    t = time.process_time()
    joined = joined_values([p["values"] for p in parts])
    bits = 1
    keyed = [bucket_keys(p, joined, bits) for p in parts]
    t1 = time.process_time()
    got = [bucket_sizes(*[k[b] for k in keyed]) for b in range(1 << bits)]
    dt = time.process_time() - t
    print(f"buckets: keys {t1-t:.2f} s, total {dt:.2f} s, {dt/tot*1e9:.0f} ns/tuple", got)
print("merge check", m["counts"].sum(), m["counts"].min(), m["counts"].size)
