"""Is the Mondrian refinement (AG, k=100, 12 QI, Adult resampled) cheaper per row when its roots are grown in chunks of
about CHUNK rows, whose copies fit the cache? Usage: PYTHONPATH=src python chunk_mondrian.py ROWS CHUNK

The chunks' time includes their grouping (a sort of the roots) and the copy of their bins.
"""
import sys, time
import numpy as np
sys.path.insert(0, "/work/main/benchmarks")
from bench_memory_scale import build_table
from anonml import AccuracyGuidedAnonymizer
from anonml.anonymize import _hist_tree
from anonml.anonymize._hist_tree import TreeBuilder
from anonml.anonymize._hist_mondrian import fit_mondrian
n = int(float(sys.argv[1])); chunk = int(float(sys.argv[2]))
cap = {}
real = _hist_tree.HistTree.fit
def fit(self, B, is_cat, n_bins, y, init=None, *a, **kw):
    if self.criterion == "mondrian":
        cap.update(B=np.ascontiguousarray(B[0] if isinstance(B, list) else B).copy(), is_cat=is_cat, n_bins=n_bins, init=np.asarray(init).copy(), k=self.min_samples_leaf)
    return real(self, B, is_cat, n_bins, y, init, *a, **kw)
_hist_tree.HistTree.fit = fit
X, y, qi = build_table(n)
AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0).fit(X, y)
B, init, k = cap["B"], cap["init"], cap["k"]
R = int(init.max()) + 1
del X, y
def whole():
    b = TreeBuilder(R)
    return fit_mondrian(B, cap["is_cat"], cap["n_bins"], init, k, None, b), len(b.feature)
def chunked():
    sizes = np.bincount(init, minlength=R)
    cuts = np.searchsorted(np.cumsum(sizes), np.arange(chunk, n, chunk), side="right")
    bounds = np.r_[0, cuts, R]
    order = np.argsort(init, kind="stable")
    starts = np.r_[0, np.cumsum(sizes)]
    nodes = 0
    for a, b_ in zip(bounds[:-1], bounds[1:]):
        if a >= b_: continue
        rows = order[starts[a]:starts[b_]]
        sub = B.take(rows, axis=0)
        bl = TreeBuilder(int(b_ - a))
        fit_mondrian(sub, cap["is_cat"], cap["n_bins"], init.take(rows) - a, k, None, bl)
        nodes += len(bl.feature)
    return nodes
for rep in range(2):
    t = time.process_time(); _, nw = whole(); tw = time.process_time() - t
    t = time.process_time(); nc = chunked(); tc = time.process_time() - t
    print(f"rows {n:,} roots {R:,}: whole {tw / n * 1e6:.3f} s per 1M rows ({nw} nodes), chunks of {chunk:,} rows {tc / n * 1e6:.3f} ({nc} nodes)", flush=True)
