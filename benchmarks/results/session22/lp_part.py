"""Line profile of the partition step (HistTree.fit, fit_mondrian, _route_level, choose_splits) of an in-memory AG fit (k=100, 12 QI, the table of
bench_memory_scale.py), in milliseconds per 1M rows (the timer unit is scaled by the rows).

Usage: PYTHONPATH=src python benchmarks/results/session22/lp_part.py ROWS > out.txt
Compare two outputs line by line: python benchmarks/results/session22/cmp.py A.txt B.txt [ms]
"""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from line_profiler import LineProfiler
from bench_memory_scale import build_table, settle
import anonml.anonymize._pipeline as P
import anonml.anonymize._medians as M
from anonml import AccuracyGuidedAnonymizer
n = int(float(sys.argv[1]))
X, y, qi = build_table(n); settle()
lp = LineProfiler()
import anonml.anonymize._hist_tree as H, anonml.anonymize._hist_mondrian as HM
for f in [H.HistTree.fit, HM.fit_mondrian, H._route_level, H.choose_splits]:
    lp.add_function(f)
lp.enable_by_count()
ag = AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0)
t = time.process_time()
ag.fit_transform(X, y)
print('cpu', time.process_time() - t, {k: round(v / (n / 1e6), 3) for k, v in ag.timings_.items()})
lp.disable_by_count()
lp.print_stats(output_unit=1e-3 * n / 1e6, stripzeros=True)
