"""CPU seconds of the Mondrian refinement alone at several chunk sizes (``_CHUNK_ROWS``), in one
process, alternating, on the refinement's input of the in-memory AG fit (the table of
``bench_memory_scale.py``, 12 QI, k=100; captured by ``bench_mondrian_refinement._inputs``).
A chunk size above the rows is one chunk: the code before chunking, level for level. Every
run's tree and leaves must give the same digest.

It ran on a change that was not kept: ``fit_mondrian`` growing the frontier in chunks of whole
roots of ``_hist_mondrian._CHUNK_ROWS`` rows, level by level, one chunk after the other (the
same tree). It gave no gain (``chunk_sweep_20M.txt``; BENCHMARKS.md, "Session 24"), so the
module has no ``_CHUNK_ROWS`` and this script does not run on main.

Usage: PYTHONPATH=src python benchmarks/results/session24/chunk_sweep.py ROWS REPS SIZE...
(SIZE: rows a chunk, e.g. 262144 524288 1048576; 0 = one chunk)
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench_memory_scale import parse_size  # noqa: E402
from bench_mondrian_refinement import _digest, _inputs  # noqa: E402

import anonml.anonymize._hist_mondrian as HM  # noqa: E402
from anonml._utils import reuse_freed_memory  # noqa: E402
from anonml.anonymize._hist_tree import HistTree  # noqa: E402

n, reps = parse_size(sys.argv[1]), int(sys.argv[2])
sizes = [int(s) for s in sys.argv[3:]]
d = _inputs(n, 100)
print(f"rows {n:,}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
print("| rep | chunk rows | CPU s | CPU s per 1M rows | digest |")
print("|---:|---:|---:|---:|---|")
for rep in range(1, reps + 1):
    for size in (sizes if rep % 2 else sizes[::-1]):
        HM._CHUNK_ROWS = size or (1 << 62)
        with reuse_freed_memory():  # as in the fit
            t0 = time.process_time()
            tree = HistTree(100, None, "mondrian")
            leaves = tree.fit_apply(d["B"], d["is_cat"], d["n_bins"], None, init=d["init"])
            cpu = time.process_time() - t0
        print(f"| {rep} | {size or 'one chunk'} | {cpu:.2f} | {cpu / n * 1e6:.3f} | "
              f"{_digest(tree, leaves)} |", flush=True)
print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
