"""CPU seconds of the Mondrian refinement alone (``HistTree(k, None, "mondrian").fit_apply`` from
the guided tree's leaves), two code versions alternating in one process, with a digest of the
tree and the leaves of each (they must be equal).

The input is that of an in-memory AccuracyGuidedAnonymizer(tree="hist") fit on the table of
``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100): the fit runs with this
worktree's code until the refinement's call, whose arguments are kept. "before" is the
``_hist_tree.py`` under ``--before`` (a ``src`` folder, e.g. from ``git archive``), loaded by
path; "after" is this worktree's. Also printed: the rows that go through each level summed over
the levels (from the tree's leaves' depths), i.e. the passes over the rows the level-wise growth
makes.

Usage::

    PYTHONPATH=src python benchmarks/bench_mondrian_refinement.py --rows 1M 5M \\
        --before /tmp/before/src --reps 2
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

from bench_memory_scale import build_table, parse_size


def capture_fit_apply(n: int, k: int, pick) -> dict:
    """The arguments of one ``HistTree.fit_apply`` call in the AG fit of ``n`` rows (the table
    of ``bench_memory_scale.py``): ``pick(tree, B, is_cat, n_bins, y, init, kwargs)`` returns
    them as a dict for the call wanted, None for the others (which run); the fit stops there."""
    import anonml.anonymize._hist_tree as ht
    from anonml import AccuracyGuidedAnonymizer

    X, y, qi = build_table(n)
    orig = ht.HistTree.fit_apply
    kept: dict = {}

    class _Stop(Exception):
        pass

    def catch(self, B, is_cat, n_bins, y, init=None, *args, **kwargs):
        got = None if kept else pick(self, B, is_cat, n_bins, y, init, kwargs)
        if got is not None:
            kept.update(got)
            raise _Stop
        return orig(self, B, is_cat, n_bins, y, init, *args, **kwargs)

    ht.HistTree.fit_apply = catch
    try:
        AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, tree="hist", random_state=0).fit(X, y)
    except _Stop:
        pass
    finally:
        ht.HistTree.fit_apply = orig
    if not kept:
        raise SystemExit("the fit made no such HistTree call: is tree='hist' still its path?")
    return kept


def _inputs(n: int, k: int):
    def refinement(tree, B, is_cat, n_bins, y, init, kwargs):
        if tree.criterion != "mondrian":
            return None
        bins = B[0] if isinstance(B, list) else B  # (handed over in a list by the fit)
        return {"B": np.ascontiguousarray(bins), "is_cat": is_cat, "n_bins": n_bins,
                "init": init}

    return capture_fit_apply(n, k, refinement)


def _digest(t, leaves) -> str:
    h = hashlib.sha256()
    for a in [leaves, t.feature_, t.threshold_, t.children_left_, t.children_right_, t.offset_,
              t.flat_]:
        h.update(str(a.dtype).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _row_levels(t, leaves, init) -> int:
    """Sum over the rows of the depth of their leaf below their root (the levels they pass)."""
    depth = np.zeros(t.n_nodes_, dtype=np.int64)
    for node in range(t.n_nodes_):  # children have larger ids than their parent
        if t.children_left_[node] >= 0:
            depth[t.children_left_[node]] = depth[t.children_right_[node]] = depth[node] + 1
    return int(depth[leaves].sum()) + len(leaves)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=["1M", "5M"])
    parser.add_argument("--before", required=True, help="a src folder of the other version")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()
    import anonml.anonymize._hist_tree as after
    from anonml._utils import reuse_freed_memory

    spec = importlib.util.spec_from_file_location(
        "before_hist_tree", Path(args.before) / "anonml" / "anonymize" / "_hist_tree.py")
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    # the contiguous Mondrian lives in its own module (session 11 on): the before tree must call
    # the before module's, not the one its import found (this worktree's)
    hm_path = Path(args.before) / "anonml" / "anonymize" / "_hist_mondrian.py"
    if hm_path.exists():
        spec = importlib.util.spec_from_file_location("before_hist_mondrian", hm_path)
        before_hm = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before_hm)
        before.fit_mondrian = before_hm.fit_mondrian
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| rows | rep | version | CPU s | CPU s per 1M rows | nodes | row-levels per row | digest |")
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    for size in args.rows:
        n = parse_size(size)
        d = _inputs(n, args.k)
        for rep in range(1, args.reps + 1):
            for name, mod in (("before", before), ("after", after)):
                with reuse_freed_memory():  # as in the fit (``_base.py``)
                    t0 = time.process_time()
                    tree = mod.HistTree(args.k, None, "mondrian")
                    leaves = tree.fit_apply(d["B"], d["is_cat"], d["n_bins"], None,
                                            init=d["init"])
                    cpu = time.process_time() - t0
                levels = _row_levels(tree, leaves, d["init"]) / n
                print(f"| {n:,} | {rep} | {name} | {cpu:.2f} | {cpu / n * 1e6:.3f} | "
                      f"{tree.n_nodes_:,} | {levels:.2f} | {_digest(tree, leaves)} |", flush=True)


if __name__ == "__main__":
    main()
