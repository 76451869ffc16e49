"""The representatives' merges (anonml.engine._kernels.merge_sparse, merge_candidates) give
what the sorts they replaced gave: np.unique with summed counts, and the first row of a
lexsort by (group, distance, partition, row), ties included, parts in any order."""

from __future__ import annotations

import numpy as np

from anonml.engine import _kernels as K


def _unique_sums(*parts: dict) -> dict:
    out = {}
    for key in parts[0]:
        k = np.concatenate([p[key][0] for p in parts])
        c = np.concatenate([p[key][1] for p in parts])
        uk, inv = np.unique(k, return_inverse=True)
        out[key] = (uk, np.bincount(inv, weights=c, minlength=uk.size).astype(np.int64))
    return out


def _lexsort_first(*parts: dict) -> dict:
    both = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    order = np.lexsort((both["row"], both["part"], both["dist"], both["group"]))
    g = both["group"][order]
    keep = order[np.r_[True, g[1:] != g[:-1]]] if g.size else order
    return {key: v[keep] for key, v in both.items()}


def test_merges_equal_the_sorts_they_replaced():
    rng = np.random.default_rng(0)
    for _ in range(60):
        parts = []
        for _ in range(int(rng.integers(1, 9))):
            keys = np.unique(rng.integers(0, 300, int(rng.integers(0, 500))))
            parts.append({0: (keys, rng.integers(1, 5, keys.size)),
                          "y": (keys[:3], np.ones(min(3, keys.size), np.int64))})
        want, got = _unique_sums(*parts), K.merge_sparse(*parts)
        for key in want:
            np.testing.assert_array_equal(got[key][0], want[key][0])
            np.testing.assert_array_equal(got[key][1], want[key][1])
            assert got[key][1].dtype == np.int64
        cands = []
        for i in rng.permutation(8)[: int(rng.integers(1, 8))]:
            g = np.unique(rng.integers(0, 50, 40))
            cands.append({"group": g, "dist": rng.choice([0.0, 1.0, 2.0], g.size),
                          "part": np.full(g.size, i, np.int64),
                          "row": rng.integers(0, 100, g.size)})
        want, got = _lexsort_first(*cands), K.merge_candidates(*cands)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
            assert got[key].dtype == want[key].dtype
