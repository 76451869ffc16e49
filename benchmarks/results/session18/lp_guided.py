"""Line profile of the in-memory guided tree (HistTree.fit, gini) on the inputs that
benchmarks/bench_guided_tree.py captures: PYTHONPATH=src python benchmarks/results/session18/lp_guided.py 20M
(session 18; line_profiler adds its own overhead)."""
import sys, time
sys.path.insert(0, "benchmarks")
from bench_guided_tree import _inputs
from bench_memory_scale import parse_size
from anonml.anonymize._hist_tree import HistTree
import anonml.anonymize._hist_tree as ht
from line_profiler import LineProfiler
n = parse_size(sys.argv[1])
inp = _inputs(n, 100)
print("inputs", inp["B"].shape, inp["n_bins"], inp["crit"], flush=True)
lp = LineProfiler(HistTree.fit, ht._route_level, ht.choose_splits)
t = HistTree(100, None, inp["crit"])
c0 = time.process_time()
lp.runcall(t.fit_apply, inp["B"], inp["is_cat"], inp["n_bins"], inp["y"], route_on_columns=inp["route_on_columns"])
print("cpu", time.process_time() - c0, "nodes", t.feature_.size)
lp.print_stats(output_unit=1.0)
