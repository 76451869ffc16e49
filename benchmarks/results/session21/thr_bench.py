"""The numeric thresholds' rule (``_threshold_avoiding``) of two code versions on the gaps of a
real fit: AG (k=100, 12 QI) on Adult resampled with jitter (``bench_memory_scale.build_table``),
the gaps and distinct values recorded from the fit, then each version timed on the same
arguments, alternately.

Usage: PYTHONPATH=src python thr_bench.py ROWS OLD_SRC [REPEATS]
"""
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench_memory_scale import build_table  # noqa: E402

from anonml import AccuracyGuidedAnonymizer  # noqa: E402
from anonml.anonymize import _routing, _routing_build  # noqa: E402

n, old_src = int(float(sys.argv[1])), sys.argv[2]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
spec = importlib.util.spec_from_file_location(
    "old_routing", Path(old_src) / "anonml" / "anonymize" / "_routing.py")
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
calls = []
new_fn = _routing_build._threshold_avoiding


def record(lo, hi, values):
    calls.append((np.array(lo), np.array(hi), np.array(values)))
    return new_fn(lo, hi, values)


_routing_build._threshold_avoiding = record
X, y, qi = build_table(n)
AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0).fit(X, y)
gaps = sum(c[0].size for c in calls)
inside = sum(int(np.maximum(np.searchsorted(v, h, "left") - np.searchsorted(v, lo, "right"),
                            0).sum()) for lo, h, v in calls)
print(f"rows {n:,}: {len(calls)} columns, {gaps:,} gaps, {inside:,} training values inside "
      f"them, {sum(c[2].size for c in calls):,} distinct values")
same = all(np.array_equal(old._threshold_avoiding(*c), _routing._threshold_avoiding(*c))
           for c in calls)
moved = sum(int((old._threshold_avoiding(*c) != _routing._threshold_avoiding(*c)).sum())
            for c in calls)
print(f"thresholds that differ: {moved:,} of {gaps:,} (identical: {same})")
# the pieces alone (every gap cut): the old search and the new one give the same numbers
same_pieces = all(np.array_equal(old._threshold_avoiding(*c), _routing._pieces(*c))
                  for c in calls)
print(f"every gap cut into pieces, old and new search identical: {same_pieces}")
for r in range(reps):
    for name, fn in (("old", old._threshold_avoiding), ("new", _routing._threshold_avoiding),
                     ("new pieces only", _routing._pieces)):
        t = time.process_time()
        for c in calls:
            fn(*c)
        dt = time.process_time() - t
        print(f"rep {r} {name}: {dt:.3f} CPU s ({dt / n * 1e6:.4f} per 1M rows)", flush=True)
