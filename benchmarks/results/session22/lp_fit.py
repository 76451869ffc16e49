"""Line profile of one step of an in-memory AG fit (k=100, 12 QI, the table of
bench_memory_scale.py), in milliseconds per 1M rows (the timer unit is scaled by the rows).

WHAT is the functions profiled:

* ``reps21``: the representatives step of session 21's code (``numeric_group_medians``,
  ``_middle_bins``; run with PYTHONPATH set to an export of ``5db4cb3``);
* ``reps``: the representatives step of session 22's code (``in_group_order``,
  ``group_block_counts``);
* ``part``: the partition step (``HistTree.fit``, ``fit_mondrian``, ``_route_level``,
  ``choose_splits``);
* ``mond`` (session 24): the Mondrian refinement (``fit_mondrian``, ``_spreads``, ``_values``,
  ``_cuts``, ``group_order``).

Usage: PYTHONPATH=src python benchmarks/results/session22/lp_fit.py ROWS WHAT > out.txt
Compare two outputs line by line: python benchmarks/results/session22/cmp.py A.txt B.txt [ms]
(session 22's outputs: ``lp_reps_*`` = reps21, ``lp_reps3_*`` = reps, ``lp_part_*`` = part)
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from line_profiler import LineProfiler  # noqa: E402

from bench_memory_scale import build_table, settle  # noqa: E402

import anonml.anonymize._hist_mondrian as HM  # noqa: E402
import anonml.anonymize._hist_tree as H  # noqa: E402
import anonml.anonymize._medians as M  # noqa: E402
import anonml.anonymize._pipeline as P  # noqa: E402
from anonml import AccuracyGuidedAnonymizer  # noqa: E402

n, what = int(float(sys.argv[1])), sys.argv[2]
funcs = {
    "reps21": lambda: [P.select_representatives, P._distance_to_median, M.numeric_group_medians,
                       M._middle_bins],
    "reps": lambda: [P.select_representatives, P._distance_to_median, M.numeric_group_medians,
                     M.in_group_order, M.group_block_counts],
    "part": lambda: [H.HistTree.fit, HM.fit_mondrian, H._route_level, H.choose_splits],
    "mond": lambda: [HM.fit_mondrian, HM._spreads, HM._values, HM._cuts, M.group_order],
}[what]()
X, y, qi = build_table(n)
settle()
lp = LineProfiler()
for f in funcs:
    lp.add_function(f)
lp.enable_by_count()
ag = AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0)
t = time.process_time()
ag.fit_transform(X, y)
print("cpu", time.process_time() - t,
      {k: round(v / (n / 1e6), 3) for k, v in ag.timings_.items()})
lp.disable_by_count()
lp.print_stats(output_unit=1e-3 * n / 1e6, stripzeros=True)
