"""Per size: the guided tree's leaves (the refinement's roots), the share of rows in roots the
Mondrian refinement may cut (at least 2k rows), the rows summed over the levels they pass per
row, and the refinement's CPU per 1M rows.

Usage: PYTHONPATH=src python benchmarks/results/session24/refinement_levels.py 1M 5M 20M
"""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench_memory_scale import parse_size
from bench_mondrian_refinement import _inputs, _row_levels
import numpy as np
from anonml.anonymize._hist_tree import HistTree
for s in sys.argv[1:]:
    n = parse_size(s); d = _inputs(n, 100)
    init = d["init"]; cnt = np.bincount(init)
    t0 = time.process_time()
    tree = HistTree(100, None, "mondrian"); leaves = tree.fit_apply(d["B"], d["is_cat"], d["n_bins"], None, init=init)
    cpu = time.process_time() - t0
    can = cnt >= 200
    print(s, "roots", cnt.size, "rows in refinable roots %.3f" % (cnt[can].sum() / n),
          "mean root rows %.0f" % cnt.mean(), "median refinable root rows", np.median(cnt[can]),
          "row-levels/row %.2f" % (_row_levels(tree, leaves, init) / n), "cpu/1M %.3f" % (cpu / n * 1e6))
