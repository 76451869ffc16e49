"""CPU seconds of the accuracy-guided tree alone (``HistTree(k, None, "gini").fit_apply``), two
code versions alternating in one process, with a digest of each tree and its leaves (they must
be equal).

The input is that of an in-memory ``AccuracyGuidedAnonymizer(tree="hist")`` fit on the table
of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100, the true label as the
guide): the fit runs with this worktree's code until the guided tree's call, whose arguments
are kept. "before" is the ``_hist_tree.py`` under ``--before`` (a ``src`` folder, e.g. from
``git archive``), loaded by path; "after" is this worktree's. Each fit runs inside
``reuse_freed_memory()``, as in the anonymizer's fit (freed arrays reused, not faulted in
again). Session 14 (BENCHMARKS.md) measured its change with it.

Usage::

    PYTHONPATH=src python benchmarks/bench_guided_tree.py --rows 1M 20M \\
        --before /tmp/before/src --reps 3
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory_scale import parse_size  # noqa: E402


def _inputs(n: int, k: int) -> dict:
    """The guided tree's arguments in the fit of ``n`` rows."""
    from bench_mondrian_refinement import capture_fit_apply

    def guided(tree, B, is_cat, n_bins, y, init, kwargs):
        if tree.criterion == "mondrian":
            return None
        return {"B": np.asfortranarray(B), "is_cat": np.asarray(is_cat),
                "n_bins": np.asarray(n_bins), "y": np.asarray(y), "crit": tree.criterion,
                "route_on_columns": kwargs.get("route_on_columns", False)}

    return capture_fit_apply(n, k, guided)


def _digest(t, leaves: np.ndarray) -> str:
    h = hashlib.sha256(np.asarray(leaves, dtype=np.int64).tobytes())
    for a in (t.feature_, t.threshold_, t.children_left_, t.offset_, t.flat_):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=["1M"])
    parser.add_argument("--before", required=True, help="src folder of the 'before' code")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()

    from anonml._utils import reuse_freed_memory
    from anonml.anonymize import _hist_tree as after

    path = Path(args.before) / "anonml" / "anonymize" / "_hist_tree.py"
    spec = importlib.util.spec_from_file_location("before_hist_tree", path)
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    versions = {"before": before, "after": after}
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("| rows | code | CPU s per 1M rows (each fit) | digest |")
    print("|---:|---|---|---|")
    for text in args.rows:
        n = parse_size(text)
        a = _inputs(n, args.k)
        times: dict = {v: [] for v in versions}
        digests: dict = {v: set() for v in versions}
        for _ in range(args.reps):
            for name, mod in versions.items():
                t = mod.HistTree(args.k, None, a["crit"])
                with reuse_freed_memory():
                    t0 = time.process_time()
                    leaves = t.fit_apply(a["B"], a["is_cat"], a["n_bins"], a["y"], narrow=True,
                                         route_on_columns=a["route_on_columns"])
                    cpu = time.process_time() - t0
                times[name].append(cpu / n * 1e6)
                digests[name].add(_digest(t, leaves))
                del t, leaves
        for name in versions:
            shown = ", ".join(f"{v:.3f}" for v in times[name])
            print(f"| {n:,} | {name} | {shown} | {', '.join(sorted(digests[name]))} |")
        if digests["before"] != digests["after"]:
            raise SystemExit(f"the trees differ at {n:,} rows")
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
