"""cProfile of one in-memory AG fit_transform (k=100, 12 QI, the table of bench_memory_scale.py),
printed by internal and cumulative time and saved to OUT.

Usage: PYTHONPATH=src python benchmarks/results/session24/cprof_fit.py ROWS OUT.prof
"""
import sys, time, cProfile, pstats
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench_memory_scale import build_table, settle
from anonml import AccuracyGuidedAnonymizer
n = int(float(sys.argv[1]))
X, y, qi = build_table(n); settle()
ag = AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0)
pr = cProfile.Profile(); t = time.process_time(); pr.enable()
ag.fit_transform(X, y)
pr.disable(); print("cpu", time.process_time() - t, {k: round(v, 3) for k, v in ag.timings_.items()})
pr.dump_stats(sys.argv[2]); st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(35)
st.sort_stats("cumtime").print_stats(60)
