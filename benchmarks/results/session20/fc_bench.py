"""file_classes on one synthetic 2M-row Parquet file of 12 QIs (7 text) drawn from N classes.
Usage: PYTHONPATH=src python benchmarks/results/session20/fc_bench.py 66791   (or 576143)"""
import tempfile
import time, numpy as np, pandas as pd, sys, os
from anonml.dask._classes import file_classes
rng = np.random.default_rng(0)
n_cls = int(sys.argv[1]); rows = 2_000_000
card = [70, 9, 16, 16, 7, 15, 6, 5, 2, 120, 90, 95]
text = [1, 2, 4, 5, 6, 7, 8]
cls = [rng.integers(0, c, n_cls) for c in card]
r = rng.integers(0, n_cls, rows)
cols = {}
for j, c in enumerate(card):
    v = cls[j][r]
    cols[f"c{j}"] = pd.Series(np.array([f"value-{j}-{x}" for x in range(c)], dtype=object)[v], dtype="str") if j in text else v * 7
path = os.path.join(tempfile.gettempdir(), f"anonml_fc_{n_cls}.parquet")
if not os.path.exists(path):
    pd.DataFrame(cols).to_parquet(path)
qi = [f"c{j}" for j in range(12)]
for rep in range(3):
    t = time.process_time(); out = file_classes(path, qi); dt = time.process_time() - t
    print(n_cls, f"{dt:.3f} s", out["counts"].size)
import cProfile, pstats
cProfile.run("file_classes(path, qi)", os.path.join(tempfile.gettempdir(), "anonml_fc.prof"))
pstats.Stats(os.path.join(tempfile.gettempdir(), "anonml_fc.prof")).sort_stats("tottime").print_stats(10)
