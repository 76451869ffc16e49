"""``transform`` of 1,000,000 rows through every method's mapping, and through the worst
routes a mapping may hold (issue 18, item 4: a 200,000-level route made ``transform`` run for
many minutes; routes are now bounded by ``MAX_ROUTE_DEPTH``).

The mappings are fitted on Adult's training split (32,561 rows, 12 quasi-identifiers) at
k = 5 (small k: deep trees); the 1,000,000 rows are drawn with replacement from all of Adult
(48,842 rows). For each mapping: its routes (depth, nodes), seconds of ``check_routes``, of
``transform`` on the 1M rows, and of ``measure_mapping`` on its training rows. Then the worst
accepted cases: a histogram tree, an R+-tree split tree and a Mondrian cut tree made into one
chain exactly ``MAX_ROUTE_DEPTH`` levels deep, which every row descends to the end; and the
time to refuse a 200,000-level chain.

Prints and records benchmarks/results/mapping_transform.json.

    PYTHONPATH=src python benchmarks/bench_mapping_transform.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from anonml import (
    AccuracyGuidedAnonymizer,
    HilbertAnonymizer,
    MondrianAnonymizer,
    RTreeAnonymizer,
)
from anonml._errors import InputError
from anonml.anonymize._model import release_copy
from anonml.datasets import load_adult
from anonml.modelfile._mapping import measure_mapping
from anonml.modelfile._mapping_routes import MAX_ROUTE_DEPTH, check_routes

K = 5

METHODS = {
    "ag_exact_refined": lambda qi: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=qi,
                                                           tree="exact", refine="mondrian"),
    "ag_hist_refined": lambda qi: AccuracyGuidedAnonymizer(k=K, quasi_identifiers=qi,
                                                          tree="hist", refine="mondrian"),
    "mondrian": lambda qi: MondrianAnonymizer(k=K, quasi_identifiers=qi),
    "hilbert": lambda qi: HilbertAnonymizer(k=K, quasi_identifiers=qi),
    "rtree": lambda qi: RTreeAnonymizer(k=K, quasi_identifiers=qi),
    "rtree_min_fill_0": lambda qi: RTreeAnonymizer(k=K, quasi_identifiers=qi, min_fill=0.0),
}


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t0, 3)


def _chain(depth: int):
    """Node arrays of one chain ``depth`` levels deep: inner node 2j has the leaf 2j+1 on the
    left and the next inner node 2j+2 on the right."""
    n = 2 * depth + 1
    inner = np.arange(0, n - 1, 2)
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    left[inner], right[inner] = inner + 1, inner + 2
    return n, inner, left, right


def _hist_chain(m, depth: int) -> None:
    """Every row goes right (its bin is above every threshold) to the bottom of the chain."""
    t = m.tree_
    n, inner, left, right = _chain(depth)
    t.feature_ = np.full(n, -1, dtype=np.int64)
    t.feature_[inner] = 0
    t.threshold_ = np.full(n, -1, dtype=np.int64)
    t.children_left_, t.children_right_ = left, right
    t.offset_ = np.full(n, -1, dtype=np.int64)
    t.n_nodes_ = n
    t.leaves_ = np.flatnonzero(t.feature_ < 0)
    m.leaf_to_group_ = np.where(t.feature_ < 0, 0, -1)
    m.refine_tree_ = None


def _rtree_chain(m, depth: int) -> None:
    n, inner, left, right = _chain(depth)
    axis = np.full(n, -1, dtype=np.int64)
    axis[inner] = 0
    m._tree = {"axis": axis, "thr": np.full(n, -10, dtype=np.int64), "left": left,
               "right": right, "group": np.where(axis < 0, 0, -1)}


def _mondrian_chain(m, depth: int) -> None:
    t = m.tree_
    n, inner, left, right = _chain(depth)
    t.feature_ = np.full(n, -1, dtype=np.int64)
    t.feature_[inner] = 0
    t.kind_ = np.full(n, -1, dtype=np.int64)
    t.kind_[inner] = 0  # a threshold cut
    t.threshold_ = np.full(n, -np.inf)
    t.child_offset_ = np.full(n, -1, dtype=np.int64)
    t.child_offset_[inner] = np.arange(inner.size) * 2
    t.child_nodes_ = np.column_stack([left[inner], right[inner]]).ravel()
    t.largest_ = np.full(n, -1, dtype=np.int64)
    t.largest_[inner] = right[inner]
    t.lca_start_ = np.zeros(n, dtype=np.int64)
    t.lca_size_ = np.zeros(n, dtype=np.int64)
    t.relaxed_ref_ = np.full(n, -1, dtype=np.int64)
    t.n_nodes_ = n
    t.depth_ = depth
    m.leaf_to_group_ = np.where(t.feature_ < 0, 0, -1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    d = load_adult()
    qi = list(d.qi_sets["12"])
    Xtr, _, ytr, _ = d.train_test_split()
    rng = np.random.default_rng(0)
    big = d.X.iloc[rng.integers(0, len(d.X), args.rows)].reset_index(drop=True)
    print(f"{args.rows:,} rows resampled from Adult; mappings fitted on {len(Xtr):,} rows, "
          f"k = {K}", flush=True)
    rows = []
    fitted = {}
    for name, make in METHODS.items():
        a, fit_s = _timed(lambda: make(qi).fit(Xtr, ytr))
        m = release_copy(a)
        m.handle_unknown = "ignore"
        fitted[name] = m
        routes, check_s = _timed(lambda: check_routes(m))
        _, transform_s = _timed(lambda: m.transform(big))
        got, measure_s = _timed(lambda: measure_mapping(m, Xtr))
        row = {"mapping": name, "n_groups": int(m.n_groups_), "routes": routes,
               "seconds_fit": fit_s, "seconds_check_routes": check_s,
               "seconds_transform_1M": transform_s, "rows_per_second": int(args.rows /
                                                                          transform_s),
               "seconds_measure_training_rows": measure_s,
               "claims_match": got["claims_match"], "k_measured": got["k_measured"]}
        print(row, flush=True)
        rows.append(row)
    worst = []
    for name, base, make_chain in (("hist_tree_chain", "ag_hist_refined", _hist_chain),
                                   ("rtree_chain", "rtree", _rtree_chain),
                                   ("mondrian_cut_chain", "mondrian", _mondrian_chain)):
        m = release_copy(fitted[base])
        make_chain(m, MAX_ROUTE_DEPTH)
        routes = check_routes(m)
        _, transform_s = _timed(lambda: m.transform(big))
        m2 = release_copy(fitted[base])
        make_chain(m2, 200_000)
        t0 = time.perf_counter()
        try:
            check_routes(m2)
            refused = "accepted"
        except InputError as exc:
            refused = str(exc)[:120]
        refuse_s = round(time.perf_counter() - t0, 3)
        row = {"route": name, "depth": MAX_ROUTE_DEPTH, "routes": routes,
               "seconds_transform_1M_every_row_to_the_bottom": transform_s,
               "seconds_refuse_200000_levels": refuse_s, "refusal": refused}
        print(row, flush=True)
        worst.append(row)
    out = Path(__file__).parent / "results" / "mapping_transform.json"
    out.write_text(json.dumps({
        "dataset": "adult (fit on the 32,561 training rows; transform rows resampled from "
                   "all 48,842)", "qi": 12, "k": K, "n_rows_transformed": args.rows,
        "max_route_depth": MAX_ROUTE_DEPTH, "machine": platform.platform(),
        "mappings": rows, "worst_accepted_routes": worst}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
