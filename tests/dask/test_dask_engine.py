"""The Dask engine (anonml.dask) on a LocalCluster of two worker processes (serialization is
exercised), with small data. One cluster (the session's, tests/dask/conftest.py); the whole
file takes well under a minute."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import dask.dataframe as dd  # noqa: E402

from anonml._errors import InputError, OutputError  # noqa: E402
from anonml.engine import _kernels as K  # noqa: E402
from anonml.engine import _levels as LV  # noqa: E402
from anonml.anonymize._accuracy_guided import _compact  # noqa: E402
from anonml.anonymize._hist_tree import HistTree  # noqa: E402
from anonml.datasets import load_adult  # noqa: E402
from anonml.encoding import TableEncoder  # noqa: E402
from anonml.privacy import k_anonymity, l_diversity, t_closeness  # noqa: E402

import anonml.dask as ad  # noqa: E402
from anonml.dask._tree import compact, grow  # noqa: E402
from anonml.dask._trim import HeapTrim  # noqa: E402

N = 4000


# The reference for the engine's local-subtree leaves: every row walked from its node down a
# grafted tree. The engine does not walk the rows (the leaves HistTree found are sent back,
# anonml.engine._local.assign_leaves); the test of the sent-back leaves checks them
# against this.
def descend(state: K.PartState, leaf: np.ndarray, tree: dict) -> np.ndarray:
    """Walk every row from its node ``leaf`` down ``tree`` (node arrays) to a leaf: rows that
    stopped at the root of a subtree grown later reach that subtree's leaves."""
    node = np.asarray(leaf, dtype=np.int64).copy()
    n = state.B.shape[0]
    Bf = state.B.ravel(order="F")
    feature, threshold, offset = tree["feature"], tree["threshold"], tree["offset"]
    flat = tree["flat"] if tree["flat"].size else np.zeros(1, dtype=bool)
    rows = np.arange(n)
    while rows.size:
        rows = rows[feature[node[rows]] >= 0]
        if not rows.size:
            break
        nd = node[rows]
        b = Bf[feature[nd] * n + rows].astype(np.int64)
        go_left = b <= threshold[nd]
        off = offset[nd]
        cat = off >= 0
        if cat.any():
            go_left = np.where(cat, flat[np.where(cat, off + b, 0)], go_left)
        node[rows] = np.where(go_left, tree["left"][nd], tree["right"][nd])
    return node.astype(np.int32) if node.size and node.max() < 2**31 - 1 else node


@pytest.fixture(scope="module")
def adult():
    d = load_adult()
    X = d.X.iloc[:N].reset_index(drop=True)
    y = d.y.iloc[:N].reset_index(drop=True)
    qi = ["age", "education-num", "hours-per-week", "workclass", "marital-status", "occupation",
          "sex", "race"]
    return X, y, qi


@pytest.fixture(scope="module")
def folder(tmp_path_factory, adult):
    """The Adult sample as 4 Parquet files of unequal sizes."""
    X, y, _ = adult
    path = tmp_path_factory.mktemp("src") / "data"
    path.mkdir()
    df = X.assign(label=y.to_numpy())
    cuts = [0, 500, 1700, 2900, N]
    for i in range(4):
        df.iloc[cuts[i] : cuts[i + 1]].to_parquet(path / f"part{i}.parquet", index=False)
    return path


def _in_memory_groups(X, y, qi, k, criterion, refine):
    cat = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    enc = TableEncoder(qi, cat, 255).fit(X)
    B, is_cat, n_bins = enc.bins(X)
    if criterion == "mondrian":
        t = HistTree(k, None, "mondrian")
        leaves = t.fit_apply(B, is_cat, n_bins, None)
        return _compact(leaves, t.n_nodes_)[leaves], enc, None
    classes = np.sort(y.unique())
    t = HistTree(k, None, criterion)
    leaves = t.fit_apply(B, is_cat, n_bins, np.searchsorted(classes, y.to_numpy()))
    groups = _compact(leaves, t.n_nodes_)[leaves]
    if refine:
        rt = HistTree(k, None, "mondrian")
        leaves = rt.fit_apply(B, is_cat, n_bins, None, init=groups)
        groups = _compact(leaves, rt.n_nodes_)[leaves]
    return groups, enc, classes


def _binned_states(client, X, y, qi, k, criterion, refine):
    """The in-memory groups, the bin spec, whether a guide is used, and the binned states of
    five uneven partitions (futures on ``client``)."""
    expected, enc, classes = _in_memory_groups(X, y, qi, k, criterion, refine)
    spec = K.BinSpec.from_encoder(enc, None if classes is None else classes.astype(object))
    parts = dd.from_pandas(X.assign(label=y.to_numpy()), npartitions=5).to_delayed()
    guide = criterion != "mondrian"
    states = client.compute([
        dask.delayed(K.bin_partition)(p, spec, p["label"] if guide else None) for p in parts
    ])
    return expected, spec, guide, states


@pytest.mark.parametrize(
    "criterion,refine,k,local",
    [("gini", True, 20, None), ("entropy", False, 40, None), ("mondrian", False, 25, None),
     ("gini", True, 10, {"local_rows": 600}), ("mondrian", False, 10, {"local_cells": 1}),
     ("entropy", False, 15, {"local_rows": 250}),
     # every refinement root finished in memory straight from the states (root_counts)
     ("gini", True, 10, {"local_cells": 1, "local_rows": "auto"})],
)
def test_same_groups_as_in_memory_hist_tree(client, adult, criterion, refine, k, local):
    """Given the same bins, the distributed tree makes exactly the in-memory HistTree's groups
    (and AG's refine='mondrian' step too), over uneven partitions. With ``local`` (a small
    budget of histogram cells), the deep levels are finished in memory after Dask's shuffle by
    node: the same groups, in the same numbers (the grafted tree is numbered level by level)."""
    opts = {"local_cells": None, "local_rows": None, **(local or {})}
    X, y, qi = adult
    expected, spec, guide, states = _binned_states(client, X, y, qi, k, criterion, refine)
    assert np.bincount(expected).min() >= k
    if guide:
        tree, leaves = grow(client, states, spec.is_cat, spec.n_bins, spec.n_classes, k, criterion,
                            **opts)
        groups, G, sizes = compact(client, leaves, tree.n_nodes_)
        if refine:
            rtree, leaves = grow(client, states, spec.is_cat, spec.n_bins, 1, k, "mondrian",
                                 init=groups, n_roots=G, root_counts=sizes, **opts)
            groups, G, _ = compact(client, leaves, rtree.n_nodes_)
    else:
        tree, leaves = grow(client, states, spec.is_cat, spec.n_bins, 1, k, "mondrian",
                            **opts)
        groups, G, _ = compact(client, leaves, tree.n_nodes_)
    got = np.concatenate(client.gather(groups))
    assert G == expected.max() + 1
    np.testing.assert_array_equal(got, expected)
    assert np.bincount(got).min() >= k


def test_anonymize_dataset_accuracy_guided(client, adult, folder, tmp_path):
    X, y, qi = adult
    k = 20
    seen = []
    res = ad.anonymize_dataset(
        folder, tmp_path / "out", k=k, quasi_identifiers=qi, label="label", client=client,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    out = pd.read_parquet(tmp_path / "out")
    assert res.n_rows == out.shape[0] == N
    assert res.min_class_size == k_anonymity(out, qi) >= k
    assert set(res.seconds) == {"bins", "tree", "representatives", "recode_write", "verify"}
    _stages_once_and_labelled(seen, "scan", "bins", "tree", "refine", "representatives",
                              "recode_write", "verify")
    assert ad._api.STAGES["predict"] not in {s for s, _, _ in seen}  # labels given: no model
    src = pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("*.parquet"))], ignore_index=True)
    # non-QI columns unchanged, row order kept
    # (dask reads text as its own string dtype; the values are compared)
    others = [c for c in src.columns if c not in qi]
    pd.testing.assert_frame_equal(out[others], src[others], check_dtype=False)
    # every class's QI values are those of a real record of that class, of its majority label
    key = out[qi].astype(str).agg("|".join, axis=1)
    src_key = src[qi].astype(str).agg("|".join, axis=1)
    for value, rows in key.groupby(key).groups.items():
        members = src_key.loc[rows]
        assert (members == value).any()
    assert res.n_groups >= key.nunique()
    assert not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def _stages_once_and_labelled(seen, *needed):
    """Each stage the callback hears is one run of calls (never back after another stage),
    named by its label (words saying what it does, not an internal key), and counts up."""
    S = ad._api.STAGES
    order = [s for i, (s, _, _) in enumerate(seen) if i == 0 or seen[i - 1][0] != s]
    assert len(order) == len(set(order)), f"a stage repeats: {order}"
    assert set(order) <= set(S.values()), f"unlabelled stage: {set(order) - set(S.values())}"
    assert all(len(s.split()) >= 3 for s in order), order
    for key in needed:
        assert S[key] in order, (key, order)
    for stage in order:
        mine = [(d, t) for s, d, t in seen if s == stage]
        assert [d for d, _ in mine] == sorted(d for d, _ in mine), (stage, mine)
        if mine[-1][1] is not None:
            assert mine[-1][0] == mine[-1][1], (stage, mine)  # a counted stage finishes


def test_anonymize_dataset_model_guide_equals_label(client, adult, folder, tmp_path):
    """The guide computed on the cluster by model.predict equals a label column of the same
    predictions."""
    from sklearn.tree import DecisionTreeClassifier

    X, y, qi = adult
    num = ["age", "education-num", "hours-per-week"]
    model = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X[num], y)
    pred = model.predict(X[num])
    data = tmp_path / "pred"
    data.mkdir()
    X.assign(label=pred).iloc[:1500].to_parquet(data / "a.parquet", index=False)
    X.assign(label=pred).iloc[1500:].to_parquet(data / "b.parquet", index=False)
    seen = []
    a = ad.anonymize_dataset(data, tmp_path / "a", k=15, quasi_identifiers=qi, model=model,
                             features=num, client=client,
                             progress=lambda stage, done, total: seen.append((stage, done, total)))
    _stages_once_and_labelled(seen, "predict", "scan", "bins")
    # the model predicts once per partition (2 files), in its own stage
    S = ad._api.STAGES
    mine = [(d, t) for s, d, t in seen if s == S["predict"]]
    assert mine[-1] == (2, 2) and {t for _, t in mine} == {2}
    b = ad.anonymize_dataset(data, tmp_path / "b", k=15, quasi_identifiers=qi, label="label",
                             client=client)
    assert a.n_groups == b.n_groups
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a"), pd.read_parquet(tmp_path / "b"))


def test_mondrian_and_dask_dataframe_source(client, adult, tmp_path):
    X, y, qi = adult
    ddf = dd.from_pandas(X.assign(label=y.to_numpy()), npartitions=3)
    res = ad.anonymize_dataset(ddf, tmp_path / "m", k=30, quasi_identifiers=qi, method="mondrian",
                               client=client)
    out = pd.read_parquet(tmp_path / "m")
    assert k_anonymity(out, qi) >= 30 == 30
    assert res.min_class_size >= 30
    expected, _, _ = _in_memory_groups(X, y, qi, 30, "mondrian", False)
    assert res.n_groups == expected.max() + 1


def test_l_and_t_verified_on_output(client, adult, folder, tmp_path):
    X, y, qi = adult
    qi4 = ["age", "sex", "race", "hours-per-week"]
    res = ad.anonymize_dataset(folder, tmp_path / "lt", k=50, quasi_identifiers=qi4,
                               label="label", sensitive="occupation", l=2, l_kind="entropy",
                               t=0.9, client=client)
    out = pd.read_parquet(tmp_path / "lt")
    assert res.achieved["l"] == pytest.approx(l_diversity(out, qi4, "occupation", kind="entropy"))
    assert res.achieved["t"] == pytest.approx(t_closeness(out, qi4, "occupation"))
    # l that the tree's groups break: groups are merged until every class satisfies it
    res = ad.anonymize_dataset(folder, tmp_path / "l6", k=10, quasi_identifiers=qi4,
                               label="label", sensitive="occupation", l=6, client=client)
    out = pd.read_parquet(tmp_path / "l6")
    assert res.n_merges > 0
    assert l_diversity(out, qi4, "occupation") >= 6 == 6
    assert res.achieved["l"] == l_diversity(out, qi4, "occupation")
    assert k_anonymity(out, qi4) >= 10
    # no grouping reaches l = 40 (fewer distinct values): refused before anything is written
    with pytest.raises(InputError, match="whole table fails"):
        ad.anonymize_dataset(folder, tmp_path / "bad", k=10, quasi_identifiers=qi4,
                             label="label", sensitive="occupation", l=40, client=client)
    assert not list(tmp_path.glob("*bad*"))


def test_global_bins_from_merged_summaries():
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"x": rng.normal(size=30000), "c": rng.choice(["u", "v"], 30000),
                      "s": rng.integers(0, 5, 30000)})
    b = pd.DataFrame({"x": rng.normal(3, 1, size=50000), "c": rng.choice(["v", "w", None], 50000),
                      "s": rng.integers(3, 9, 50000)})
    sa = K.column_summary(a, ["x", "s"], ["c"], None, 64)
    sb = K.column_summary(b, ["x", "s"], ["c"], None, 64)
    spec = K.finalize_bins(K.merge_summaries(sa, sb, 64), ["x", "c", "s"], ["c"], 64)
    both = pd.concat([a, b])
    np.testing.assert_array_equal(spec.categories["c"], np.array(["u", "v", "w"], dtype=object))
    np.testing.assert_allclose(spec.thresholds["s"], np.arange(8) + 0.5)  # distinct: midpoints
    q = np.quantile(both["x"], np.linspace(0, 1, 65)[1:-1])
    ranks = np.searchsorted(np.sort(both["x"]), spec.thresholds["x"]) / both.shape[0]
    assert np.abs(ranks - np.searchsorted(np.sort(both["x"]), q) / both.shape[0]).max() < 0.01
    assert spec.mean["x"] == pytest.approx(both["x"].mean())
    assert spec.scale["x"] == pytest.approx(both["x"].std(ddof=0))



def _old_propose(part, state, g, medians, spec):
    """The rule of propose_representatives written plainly: per group the finite smallest
    distance, ties by row (a sort by group, distance, row)."""
    dist = np.zeros(g.size)
    for j, c in enumerate(spec.columns):
        if c in set(spec.categorical):
            keys, m, sumsq = medians["cat"][j]
            key = g * int(spec.n_bins[j]) + state.B[:, j]
            mc = np.zeros(g.size)
            if keys.size:
                at = np.minimum(np.searchsorted(keys, key), keys.size - 1)
                mc = np.where(keys[at] == key, m[at], 0.0)
            dist += sumsq[g] - 2.0 * mc + 1.0
        else:
            z = (part[c].to_numpy(dtype=np.float64) - spec.mean[c]) / spec.scale[c]
            dist += (z - medians["num"][j][g]) ** 2
    dist = np.where(state.y == medians["majority"][g], dist, np.inf)
    rows = np.flatnonzero(np.isfinite(dist))
    rows = rows[np.lexsort((rows, dist[rows], g[rows]))]
    return rows[np.r_[True, g[rows][1:] != g[rows][:-1]]]


@pytest.mark.parametrize("dense", [True, False])
def test_representative_kernels_dense_and_sorted_paths_agree(adult, monkeypatch, dense):
    """group_bin_counts equals np.unique's counts and propose_representatives picks the rows of
    the plain rule, whether the (group x bin) counts are dense arrays or sorted keys."""
    X, y, qi = adult
    cat = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    spec = K.BinSpec.from_encoder(TableEncoder(qi, cat, 255).fit(X),
                                  np.sort(y.unique()).astype(object))
    g = np.random.default_rng(0).integers(0, 150, X.shape[0])
    g[:7] = 3  # ties: the same record values in one group
    X = pd.concat([X.iloc[[7] * 7], X.iloc[7:]], ignore_index=True)
    state = K.bin_partition(X, spec, pd.concat([y.iloc[[7] * 7], y.iloc[7:]], ignore_index=True))
    monkeypatch.setattr(K, "_dense_ok", lambda cells, n: dense)
    counts = K.group_bin_counts(state, g, spec.n_bins, spec.n_classes)
    for j, (keys, cnt) in counts.items():
        width = spec.n_classes if j == "y" else int(spec.n_bins[j])
        ref = np.unique(g * width + (state.y if j == "y" else state.B[:, j]), return_counts=True)
        np.testing.assert_array_equal(keys, ref[0])
        np.testing.assert_array_equal(cnt, ref[1])
        assert keys.dtype == cnt.dtype == np.int64
    med = K.group_medians(counts, spec, 150, "majority_medoid")
    got = K.propose_representatives(X, state, g, med, spec, qi, 0)
    np.testing.assert_array_equal(got["row"], _old_propose(X, state, g, med, spec))
    np.testing.assert_array_equal(got["group"], g[got["row"]])


def test_route_histograms_is_route_then_class_histograms(adult):
    """One task per level (route, then count the new frontier) gives the two kernels' numbers."""
    X, y, qi = adult
    cat = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    spec = K.BinSpec.from_encoder(TableEncoder(qi, cat, 255).fit(X),
                                  np.sort(y.unique()).astype(object))
    state = K.bin_partition(X, spec, y).start(None)
    # one level: node 0 at position 0 splits on age <= bin 20 into positions 0, 1
    step = {"split": np.array([True]), "feature": np.array([0]), "threshold": np.array([20]),
            "offset": np.array([-1]), "flat": np.zeros(1, dtype=bool), "node": np.array([0]),
            "child": np.array([0])}
    side = np.array([1])
    a = LV.route(state, step)
    fused = LV.route_histograms(state, step, spec.n_bins, spec.n_classes, side, 2)
    np.testing.assert_array_equal(fused.local, a.local)
    np.testing.assert_array_equal(fused.leaf, a.leaf)
    for h, ref in zip(LV.state_histograms(fused),
                      LV.class_histograms(a, spec.n_bins, spec.n_classes, side, 2)):
        np.testing.assert_array_equal(h, ref)
    assert 0 < LV.state_histograms(fused)[0].sum() < X.shape[0]


@pytest.mark.parametrize("table", [True, False])
def test_route_two_levels_by_rows_one_by_one(adult, table):
    """Two levels routed (a category set, then a threshold with a node that stops): each row's
    frontier position and leaf are those found row by row from the bins, whether the rows go by
    the level's go-left table (``left_table``, as the driver adds it to the step) or by the
    node-by-node rule (a step without it: past the table's size); the second level reuses the
    active rows the first one recorded."""
    from anonml.anonymize._hist_tree import left_table

    X, y, qi = adult
    cat = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    spec = K.BinSpec.from_encoder(TableEncoder(qi, cat, 255).fit(X),
                                  np.sort(y.unique()).astype(object))
    state = K.bin_partition(X, spec, y).start(None)
    B = state.B
    fc = int(np.flatnonzero(spec.is_cat)[0])
    nb = spec.n_bins
    mask = np.zeros(int(nb[fc]), dtype=bool)
    mask[::2] = True

    def with_table(step):
        if table:
            step["table"] = left_table(step["feature"], step["threshold"], step["offset"],
                                       step["flat"], nb)
            assert step["table"] is not None
        return step

    step1 = with_table({"split": np.array([True]), "feature": np.array([fc]),
                        "threshold": np.array([-1]), "offset": np.array([0]), "flat": mask,
                        "node": np.array([0]), "child": np.array([0])})
    s1 = LV.route(state, step1)
    left1 = mask[B[:, fc]]
    np.testing.assert_array_equal(s1.local, np.where(left1, 0, 1))
    np.testing.assert_array_equal(s1.active, np.arange(B.shape[0]))
    # level 2: frontier nodes 1 (position 0) and 2 (position 1); node 1 splits on feature 0 at
    # bin 20 into positions 0, 1; node 2 stops
    f0 = int(np.flatnonzero(~spec.is_cat)[0])
    step2 = with_table({"split": np.array([True, False]), "feature": np.array([f0, -1]),
                        "threshold": np.array([20, -1]), "offset": np.array([-1, -1]),
                        "flat": mask, "node": np.array([1, 2]), "child": np.array([0, -1])})
    s2 = LV.route(s1, step2)
    want_local = np.where(left1, np.where(B[:, f0] <= 20, 0, 1), -1)
    np.testing.assert_array_equal(s2.local, want_local)
    np.testing.assert_array_equal(s2.leaf[~left1], 2)
    np.testing.assert_array_equal(s2.active, np.flatnonzero(left1))
    assert 0 < left1.sum() < B.shape[0]


def test_levels_keep_only_the_growing_rows_and_never_write_their_input(adult):
    """A level's state holds arrays of the rows still growing (``active``, ``pos``) and one
    piece of stopped rows a level over the shared roots: no array of every row is copied or
    written, and the state a level starts from is left as it was (a task's input, which Dask
    may hand to a rerun). ``finish`` then gives every row the node found row by row, and
    ``node_class_counts``, ``class_histograms`` and ``active_rows`` read the growing rows."""
    from anonml.engine._local import active_rows

    X, y, qi = adult
    cat = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    spec = K.BinSpec.from_encoder(TableEncoder(qi, cat, 255).fit(X),
                                  np.sort(y.unique()).astype(object))
    n = X.shape[0]
    roots = (np.arange(n) % 3).astype(np.int64)  # three roots, rows interleaved
    s0 = K.bin_partition(X, spec, y).start(roots)
    B = s0.B
    f0 = int(np.flatnonzero(~spec.is_cat)[0])
    # level 1: root 0 splits on f0 at bin 20 (children 3, 4 at positions 0, 1); roots 1, 2 stop
    step1 = {"split": np.array([True, False, False]), "feature": np.array([f0, -1, -1]),
             "threshold": np.array([20, -1, -1]), "offset": np.array([-1, -1, -1]),
             "flat": np.zeros(1, dtype=bool), "node": np.array([0, 1, 2]),
             "child": np.array([0, -1, -1])}
    # a fresh state's positions are its roots (one array, counted once; B and y are shared)
    assert s0.pos is s0.base and s0.__sizeof__() == object.__sizeof__(s0) + s0.base.nbytes
    before = {k: np.array(getattr(s0, k)) for k in ("base", "pos", "local", "leaf")}
    s1 = LV.route_histograms(s0, step1, spec.n_bins, spec.n_classes, None, 2)
    for k, v in before.items():  # the input state is unchanged
        np.testing.assert_array_equal(getattr(s0, k), v)
    grow1 = np.flatnonzero(roots == 0)
    np.testing.assert_array_equal(s1.active, grow1)
    assert s1.pos.size == grow1.size and s1.base is s0.base
    assert len(s1.stops) == 1 and s1.stops[0][0].size == n - grow1.size
    left = B[:, f0] <= 20
    # level 2: node 3 (position 0) stops, node 4 (position 1) splits on f0 at bin 40
    step2 = {"split": np.array([False, True]), "feature": np.array([-1, f0]),
             "threshold": np.array([-1, 40]), "offset": np.array([-1, -1]),
             "flat": np.zeros(1, dtype=bool), "node": np.array([3, 4]),
             "child": np.array([-1, 0])}
    s2 = LV.route(s1, step2)
    np.testing.assert_array_equal(s1.active, grow1)  # level 1's state unchanged too
    want = np.where(roots != 0, roots, np.where(left, 3, np.where(B[:, f0] <= 40, 5, 6)))
    np.testing.assert_array_equal(LV.finish(s2, np.array([5, 6])), want)
    np.testing.assert_array_equal(s2.leaf, np.where((roots == 0) & ~left, roots, want))
    grow2 = np.flatnonzero((roots == 0) & ~left)
    np.testing.assert_array_equal(s2.local, np.where((roots == 0) & ~left,
                                                     (B[:, f0] > 40).astype(int), -1))
    counts = LV.node_class_counts(s2, 2, spec.n_classes)
    yc = K.bin_partition(X, spec, y).y
    for p in (0, 1):
        rows = grow2[(B[grow2, f0] > 40) == bool(p)]
        np.testing.assert_array_equal(counts[p], np.bincount(yc[rows], minlength=spec.n_classes))
    H = LV.class_histograms(s2, spec.n_bins, spec.n_classes, None, 2)
    assert H[0].sum() == grow2.size
    frame = active_rows(s2, np.array([False, True]))
    np.testing.assert_array_equal(frame["__at"].to_numpy(), grow2[B[grow2, f0] > 40])
    assert sys.getsizeof(s2) >= sum(a.nbytes for piece in s2.stops for a in piece)


# -- bad input: one line, nothing written -------------------------------------------------------
def test_missing_folder_and_existing_target(client, folder, tmp_path, adult):
    _, _, qi = adult
    with pytest.raises(InputError, match="does not exist"):
        ad.anonymize_dataset(tmp_path / "nope", tmp_path / "o", k=5, quasi_identifiers=qi,
                             label="label", client=client)
    (tmp_path / "exists").mkdir()
    with pytest.raises(OutputError, match="already exists"):
        ad.anonymize_dataset(folder, tmp_path / "exists", k=5, quasi_identifiers=qi,
                             label="label", client=client)
    with pytest.raises(InputError, match="label"):
        ad.anonymize_dataset(folder, tmp_path / "o", k=5, quasi_identifiers=qi, client=client)
    with pytest.raises(InputError, match="k=1"):
        ad.anonymize_dataset(folder, tmp_path / "o", k=1, quasi_identifiers=qi, label="label",
                             client=client)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exists"]


def test_column_missing_from_some_files(client, adult, tmp_path):
    X, y, qi = adult
    data = tmp_path / "d"
    data.mkdir()
    X.assign(label=y.to_numpy()).iloc[:100].to_parquet(data / "a.parquet", index=False)
    X.assign(label=y.to_numpy()).iloc[100:200].drop(columns=["age"]).to_parquet(data / "b.parquet", index=False)
    with pytest.raises(InputError, match="'age' is missing from 'b.parquet'"):
        ad.anonymize_dataset(data, tmp_path / "o", k=5, quasi_identifiers=qi, label="label",
                             client=client)
    assert not (tmp_path / "o").exists()


def test_mixed_dtypes_across_files(client, adult, tmp_path):
    X, y, qi = adult
    data = tmp_path / "d"
    data.mkdir()
    X.assign(label=y.to_numpy()).iloc[:100].to_parquet(data / "a.parquet", index=False)
    X.assign(label=y.to_numpy(), age=X["age"].astype(str)).iloc[100:200].to_parquet(data / "b.parquet", index=False)
    with pytest.raises(InputError, match="'age' is int64 in 'a.parquet' but string in 'b.parquet'"):
        ad.anonymize_dataset(data, tmp_path / "o", k=5, quasi_identifiers=qi, label="label",
                             client=client)
    # the same through a dask DataFrame: caught by the per-partition summaries
    parts = [X.iloc[:100], X.iloc[100:200].assign(age=X["age"].iloc[100:200].astype(str))]
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=X.iloc[:0], verify_meta=False)
    with pytest.raises(InputError, match="'age'"):
        ad.anonymize_dataset(ddf, tmp_path / "o", k=5, quasi_identifiers=qi, method="mondrian",
                             client=client)
    assert not (tmp_path / "o").exists()
    assert not list(tmp_path.glob(".o*"))


def test_import_anonml_does_not_import_dask():
    code = "import sys, anonml, anonml.anonymize; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_mondrian_labels_choose_majority_representatives(client, adult, folder, tmp_path):
    """As MondrianAnonymizer.fit(X, y) (representative="majority_medoid" by default): the
    labels do not cut the groups, but each group's representative is a record of its
    majority class (without labels: the medoid)."""
    X, y, qi = adult
    a = ad.anonymize_dataset(folder, tmp_path / "a", k=25, quasi_identifiers=qi,
                             method="mondrian", label="label", client=client)
    b = ad.anonymize_dataset(folder, tmp_path / "b", k=25, quasi_identifiers=qi,
                             method="mondrian", client=client)
    assert a.n_groups == b.n_groups  # the same cuts
    src = pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("*.parquet"))],
                    ignore_index=True)
    out = pd.read_parquet(tmp_path / "a")
    key = out[qi].astype(str).agg("|".join, axis=1)
    src_key = src[qi].astype(str).agg("|".join, axis=1)
    n_checked = 0
    for value, rows in key.groupby(key).groups.items():
        counts = src.loc[rows, "label"].value_counts()
        majority = set(counts.index[counts == counts.max()])
        # the representative is a real record of the class with a majority label
        assert set(src.loc[rows][src_key.loc[rows] == value]["label"]) & majority, value
        n_checked += 1
    assert n_checked > 20


def test_a_task_that_kills_its_workers_is_one_line(adult, folder, tmp_path):
    """A task that kills every worker it runs on (here a model whose predict exits the
    process) ends in Dask's KilledWorker: one ClusterError line, nothing at the target. The
    client is not the default one."""
    _, _, qi = adult

    class Killer:  # defined here: pickled by value, so the workers need not import this file
        def predict(self, frame):
            import os

            os._exit(1)

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                                           dashboard_address=None, memory_limit="1GB")
        c = distributed.Client(cluster, set_as_default=False)
        try:
            with pytest.raises(ad.ClusterError) as err:
                ad.anonymize_dataset(folder, tmp_path / "out", k=10, quasi_identifiers=qi,
                                     model=Killer(), features=["age"], client=c)
        finally:
            c.close()
            cluster.close()
    line = str(err.value)
    assert "\n" not in line and "KilledWorker" in line and "fix:" in line
    assert line.startswith("a Dask worker was lost and the work could not be recomputed")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("criterion,refine", [("gini", True), ("mondrian", False)])
def test_local_subtrees_in_rounds_make_the_same_groups(client, adult, criterion, refine,
                                                       monkeypatch):
    """Rows gathered for the local subtrees and their leaves sent back in several rounds
    (as when they do not fit Dask's in-memory shuffle at once): the in-memory groups."""
    import anonml.dask._tree as T

    monkeypatch.setattr(T, "rounds", lambda client, nbytes: 3)
    X, y, qi = adult
    k = 10
    expected, spec, guide, states = _binned_states(client, X, y, qi, k, criterion, refine)
    opts = {"local_cells": 1, "local_rows": "auto"}
    tree, leaves = grow(client, states, spec.is_cat, spec.n_bins,
                        spec.n_classes if guide else 1, k, criterion, **opts)
    groups, G, sizes = compact(client, leaves, tree.n_nodes_)
    if refine:
        rtree, leaves = grow(client, states, spec.is_cat, spec.n_bins, 1, k, "mondrian",
                             init=groups, n_roots=G, root_counts=sizes, **opts)
        groups, G, _ = compact(client, leaves, rtree.n_nodes_)
    np.testing.assert_array_equal(np.concatenate(client.gather(groups)), expected)


@pytest.mark.parametrize("criterion,k,local", [
    ("gini", 10, {"local_rows": 600, "local_cells": None}),
    ("mondrian", 10, {"local_cells": 1, "local_rows": None}),
    ("entropy", 15, {"local_rows": 250, "local_cells": None}),
])
def test_local_subtree_leaves_sent_back_are_the_routed_leaves(client, adult, criterion, k, local):
    """The leaves that the local subtrees send back to the rows' partitions (HistTree's own,
    after a shuffle by partition) are exactly the nodes found by routing every row from its
    root down the grafted tree (``descend``, the engine's earlier way): the same node ids."""
    X, y, qi = adult
    _, spec, guide, states = _binned_states(client, X, y, qi, k, criterion, False)
    C = spec.n_classes if guide else 1
    tree, leaves = grow(client, states, spec.is_cat, spec.n_bins, C, k, criterion, **local)
    arrays = {"feature": tree.feature_, "threshold": tree.threshold_, "offset": tree.offset_,
              "flat": tree.flat_, "left": tree.children_left_, "right": tree.children_right_}
    assert (tree.feature_ >= 0).sum() > 1  # a tree, not a stump
    for st, lf in zip(client.gather(states), client.gather(leaves)):
        np.testing.assert_array_equal(lf, descend(st, np.zeros(st.y.size, np.int64), arrays))


def test_write_joins_the_qi_read_and_the_other_columns_in_order():
    """The write takes the QIs from the representatives' read and the other columns from its
    own: the dataset's column order and the first read's index, with or without other columns."""
    from anonml.dask._partio import _join_columns

    full = pd.DataFrame({"a": [1, 2, 3], "q1": ["x", "y", "x"], "b": [0.5, 1.5, 2.5],
                         "q2": [7, 8, 9]}, index=[5, 5, 6])  # a repeated index label
    qi = ["q2", "q1"]
    got = _join_columns(full[qi], full[["a", "b"]].reset_index(drop=True), qi, list(full.columns))
    pd.testing.assert_frame_equal(got, full)
    only = _join_columns(full[qi], None, qi, ["q1", "q2"])
    pd.testing.assert_frame_equal(only, full[["q1", "q2"]])
    with pytest.raises(RuntimeError, match="differ in length"):
        _join_columns(full[qi], full[["a"]].iloc[:2], qi, ["a", "q1", "q2"])


def test_qi_columns_held_or_read_again_give_the_same_output(client, adult, folder, tmp_path,
                                                            monkeypatch):
    """When the QI columns would not fit in the workers' memory, each task reads what it needs
    (the proposals, the picking, the write) instead of keeping them: the same written files."""
    import anonml.dask._api as api

    _, _, qi = adult
    outs = {}
    for hold in (True, False):
        monkeypatch.setattr(api, "_hold_qi", lambda *a, hold=hold: hold)
        out = tmp_path / f"out_{hold}"
        ad.anonymize_dataset(str(folder), out, k=20, quasi_identifiers=qi, label="label",
                             client=client)
        outs[hold] = {p.name: pd.read_parquet(p) for p in sorted(out.iterdir())}
    assert outs[True].keys() == outs[False].keys() and len(outs[True]) == 4
    for name, frame in outs[True].items():
        pd.testing.assert_frame_equal(frame, outs[False][name])


def test_qi_columns_held_only_when_they_fit():
    """Held when 16 bytes per QI value and row, spread over the workers, is at most a third of
    the smallest worker's memory limit; held when the cluster tells no limit."""
    from types import SimpleNamespace

    from anonml.dask._columns import _hold_qi

    def cluster(limits):
        workers = {f"w{i}": {"memory_limit": m} for i, m in enumerate(limits)}
        return SimpleNamespace(client=SimpleNamespace(
            nthreads=lambda: dict.fromkeys(workers, 1),
            scheduler_info=lambda: {"workers": workers}))

    four_gb = cluster([4 * 10**9, 4 * 10**9])
    assert _hold_qi(four_gb, 10_000_000, 12)  # 0.96 GB a worker <= 1.33
    assert not _hold_qi(four_gb, 30_000_000, 12)  # 2.9 GB a worker
    assert _hold_qi(cluster([0, 0]), 10**9, 12)  # no limit known


def test_local_cluster_workers_start_with_raised_malloc_thresholds(monkeypatch):
    """Workers of anonml's local cluster keep freed arrays for reuse (glibc's thresholds set
    before they start), not Dask's 64 kB trim threshold, and Arrow allocates from the same
    heap; Dask's other variables are kept; they run no statistical profiler."""
    import os

    import dask

    from anonml.dask._cluster import worker_malloc_env

    assert worker_malloc_env(4 * 10**9) == {"MALLOC_MMAP_THRESHOLD_": 32 * 2**20,
                                            "MALLOC_TRIM_THRESHOLD_": 64 * 2**20,
                                            "ARROW_DEFAULT_MEMORY_POOL": "system"}
    assert worker_malloc_env(2**28) == {"MALLOC_MMAP_THRESHOLD_": 2**25,
                                        "MALLOC_TRIM_THRESHOLD_": 2**25,  # an eighth at most
                                        "ARROW_DEFAULT_MEMORY_POOL": "system"}
    assert worker_malloc_env(10)["MALLOC_TRIM_THRESHOLD_"] == 128 * 1024  # never below default
    assert worker_malloc_env(0) == worker_malloc_env(4 * 10**9)  # no limit known: glibc's own
    before = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    # as an earlier Nanny of this process leaves it (the environment wins over Dask's config)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    client = ad.local_cluster(n_workers=1, memory_limit="1GB")
    try:
        env = client.run(lambda: {k: os.environ.get(k) for k in
                                  ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                                   "ARROW_DEFAULT_MEMORY_POOL", "OMP_NUM_THREADS")})
        # Arrow's reads allocate from glibc's heap on the worker, not from mimalloc
        (pool,) = client.run(lambda: __import__("pyarrow").default_memory_pool().backend_name
                             ).values()
        assert pool == "system"
        # the heap-trimming plugin runs on the worker; with a threshold every worker passes,
        # it trims (at most once per pause)
        (watching,) = client.run(lambda dask_worker: "anonml-heap-trim" in
                                 dask_worker.periodic_callbacks).values()
        assert watching
        # no dashboard, so no statistical profiler sampling the worker's threads every 10 ms
        (profiling,) = client.run(lambda dask_worker: (
            "profile" in dask_worker.periodic_callbacks,
            dask.config.get("distributed.worker.profile.enabled"))).values()
        assert profiling == (False, False)
        client.register_plugin(HeapTrim(fraction=1e-9, every=0.02, pause=0.05))
        time.sleep(0.5)
        (trims,) = client.run(
            lambda dask_worker: dask_worker.plugins["anonml-heap-trim"].trims).values()
        assert trims >= 2
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    (got,) = env.values()
    want = worker_malloc_env(dask.utils.parse_bytes("1GB"))
    assert got["MALLOC_TRIM_THRESHOLD_"] == str(want["MALLOC_TRIM_THRESHOLD_"])
    assert got["MALLOC_MMAP_THRESHOLD_"] == str(want["MALLOC_MMAP_THRESHOLD_"])
    assert got["ARROW_DEFAULT_MEMORY_POOL"] == "system"
    assert got["OMP_NUM_THREADS"] == "1"  # Dask's own pre-spawn variables still set
    assert dask.config.get("distributed.nanny.pre-spawn-environ") == before  # config restored
    assert dask.config.get("distributed.worker.profile.enabled")  # (this process's own)
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"  # and this process's environment
    assert "ARROW_DEFAULT_MEMORY_POOL" not in os.environ


def test_heap_trim_is_due_above_its_fraction_and_pause():
    """The plugin trims above its fraction of the memory limit, not twice within its pause,
    and never without a limit."""
    t = HeapTrim(fraction=0.65, pause=1.0)
    assert t.due(rss=70, limit=100, now=10.0, last=0.0)
    assert not t.due(rss=60, limit=100, now=10.0, last=0.0)
    assert not t.due(rss=70, limit=100, now=10.5, last=10.0)
    assert not t.due(rss=70, limit=0, now=10.0, last=0.0)
    assert not t.due(rss=70, limit=100, now=13.0, last=10.0, wait=4.0)
    assert t.due(rss=70, limit=100, now=14.0, last=10.0, wait=4.0)


def test_heap_trim_backs_off_while_trims_give_back_little():
    """A trim that frees less than ``gain`` of the limit doubles the wait (up to
    ``max_pause``); one that frees more brings it back to ``pause``."""
    t = HeapTrim(pause=1.0, max_pause=16.0, gain=0.02)
    limit = 4 * 2**30
    wait = 1.0
    for want in (2.0, 4.0, 8.0, 16.0, 16.0):
        wait = t.next_wait(freed=10 * 2**20, limit=limit, wait=wait)
        assert wait == want
    assert t.next_wait(freed=200 * 2**20, limit=limit, wait=wait) == 1.0
    assert HeapTrim(pause=2.0, max_pause=1.0).next_wait(0, limit, 2.0) == 2.0
