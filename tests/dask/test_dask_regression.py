"""A regression guide on the Dask engine (issue 21, item 4): floats that are not all whole grow a
regression tree by variance reduction, as ``AccuracyGuidedAnonymizer(tree="hist")`` does in
memory. A LocalCluster of two worker processes (tests/dask/conftest.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import dask.dataframe as dd  # noqa: E402

from anonml import AccuracyGuidedAnonymizer  # noqa: E402
from anonml._errors import InputError  # noqa: E402
from anonml.anonymize._accuracy_guided import _compact  # noqa: E402
from anonml.anonymize._hist_tree import HistTree  # noqa: E402
from anonml.cli import main  # noqa: E402
from anonml.datasets import load_adult  # noqa: E402
from anonml.encoding import TableEncoder  # noqa: E402
from anonml.engine import _kernels as K  # noqa: E402
from anonml.engine import _levels as LV  # noqa: E402
from anonml.engine import _local as L  # noqa: E402
from anonml.privacy import k_anonymity  # noqa: E402

import anonml.dask as ad  # noqa: E402
from anonml.dask._tree import compact, grow  # noqa: E402

N = 4000
QI = ["age", "education-num", "hours-per-week", "workclass", "marital-status", "occupation",
      "sex", "race"]


def _target(X: pd.DataFrame, seed: int = 0) -> np.ndarray:
    """A continuous target in quarters: floats not all whole, every sum of them exact in
    float64 whatever the order, so the two engines' sums agree to the bit."""
    rng = np.random.default_rng(seed)
    score = 0.5 * X["age"] + X["education-num"] * (X["sex"] == "Male") + 0.1 * X["hours-per-week"]
    return np.round(4 * (score.to_numpy(dtype=float) + rng.normal(0, 3, len(X)))) / 4


@pytest.fixture(scope="module")
def adult():
    X = load_adult().X.iloc[:N].reset_index(drop=True)
    return X, _target(X)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, adult):
    """The sample with its float target as 4 Parquet files of unequal sizes."""
    X, y = adult
    path = tmp_path_factory.mktemp("reg") / "data"
    path.mkdir()
    df = X.assign(price=y)
    cuts = [0, 500, 1700, 2900, N]
    for i in range(4):
        df.iloc[cuts[i]:cuts[i + 1]].to_parquet(path / f"part{i}.parquet", index=False)
    return path


def _in_memory(X, y, k, refine):
    cat = [c for c in QI if not pd.api.types.is_numeric_dtype(X[c])]
    enc = TableEncoder(QI, cat, 255).fit(X)
    B, is_cat, n_bins = enc.bins(X)
    t = HistTree(k, None, "squared_error")
    leaves = t.fit_apply(B, is_cat, n_bins, y)
    groups = _compact(leaves, t.n_nodes_)[leaves]
    if refine:
        rt = HistTree(k, None, "mondrian")
        leaves = rt.fit_apply(B, is_cat, n_bins, None, init=groups)
        groups = _compact(leaves, rt.n_nodes_)[leaves]
    return groups, enc


@pytest.mark.parametrize("refine,k,local,nparts", [
    (False, 20, None, 5),
    (True, 10, None, 3),
    (True, 10, {"local_rows": 600}, 5),  # level-wise first, then subtrees after the shuffle
    (False, 15, {"local_rows": 250}, 7),
    (False, 10, {"local_cells": 1}, 4),  # every splittable node finished locally
])
def test_same_groups_as_in_memory_hist_tree_regression(client, adult, refine, k, local, nparts):
    """Given the same bins, the distributed regression tree makes exactly the in-memory
    HistTree's groups (criterion squared_error), over several partitions; with ``local`` the
    deep levels are grown after Dask's shuffle by node: the same groups, numbered otherwise."""
    opts = {"local_cells": None, "local_rows": None, **(local or {})}
    X, y = adult
    expected, enc = _in_memory(X, y, k, refine)
    G_expected = expected.max() + 1
    assert G_expected > 20 and np.bincount(expected).min() >= k
    spec = K.BinSpec.from_encoder(enc)
    spec.regression = True
    parts = dd.from_pandas(X.assign(price=y), npartitions=nparts).to_delayed()
    states = client.compute([dask.delayed(K.bin_partition)(p, spec, p["price"]) for p in parts])
    tree, leaves = grow(client, states, spec.is_cat, spec.n_bins, spec.n_classes, k,
                        "squared_error", **opts)
    groups, G, _ = compact(client, leaves, tree.n_nodes_)
    if refine:
        rtree, leaves = grow(client, states, spec.is_cat, spec.n_bins, 1, k, "mondrian",
                             init=groups, n_roots=G, **opts)
        groups, G, _ = compact(client, leaves, rtree.n_nodes_)
    got = np.concatenate(client.gather(groups))
    assert G == G_expected
    if local is None:
        np.testing.assert_array_equal(got, expected)
    else:  # the same partition of the rows: the pairs (got, expected) are a bijection
        assert len(set(zip(got.tolist(), expected.tolist()))) == G
    assert np.bincount(got).min() >= k


def test_regression_kernels_match_the_in_memory_layout(adult):
    """Width-2 histograms (count, sum of y) per (node, bin) and node totals (count, sum, sum
    of squares) of a partition, against the same numbers counted plainly."""
    X, y = adult
    cat = [c for c in QI if not pd.api.types.is_numeric_dtype(X[c])]
    spec = K.BinSpec.from_encoder(TableEncoder(QI, cat, 255).fit(X))
    spec.regression = True
    state = K.bin_partition(X, spec, pd.Series(y)).start(None)
    assert state.y.dtype == np.float64
    H = LV.class_histograms(state, spec.n_bins, 2, None, 1)
    for f, h in enumerate(H):
        assert h.shape == (1, spec.n_bins[f], 2)
        b = state.B[:, f].astype(np.int64)
        np.testing.assert_array_equal(h[0, :, 0], np.bincount(b, minlength=spec.n_bins[f]))
        np.testing.assert_allclose(h[0, :, 1],
                                   pd.Series(y).groupby(b).sum().reindex(range(spec.n_bins[f]),
                                                                         fill_value=0))
    T = LV.node_class_counts(state, 1, 2)
    np.testing.assert_allclose(T, [[N, y.sum(), (y * y).sum()]])


def _medoid_distance(X: pd.DataFrame, groups: np.ndarray) -> np.ndarray:
    """The Dask engine's medoid distance written plainly: each row's squared distance to its
    group's median, on z-scored numeric QIs (population std; the lower middle value, the
    median at bin resolution when every value is a bin) and one-hot categorical QIs (1 above
    half, 0.5 at half); no class condition."""
    dist = np.zeros(len(X))
    size = np.bincount(groups)
    for c in QI:
        x = X[c]
        if pd.api.types.is_numeric_dtype(x):
            v = x.to_numpy(dtype=float)
            z = (v - v.mean()) / v.std()
            order = np.lexsort((z, groups))
            start = np.r_[0, np.cumsum(size)[:-1]]
            med = z[order][start + (size - 1) // 2]
            dist += (z - med[groups]) ** 2
        else:
            cat = x.astype(object).where(x.notna(), "<missing>").astype(str).to_numpy()
            share = pd.crosstab(groups, cat).to_numpy() / size[:, None]
            m = np.where(share > 0.5, 1.0, np.where(share == 0.5, 0.5, 0.0))
            codes = pd.Index(np.unique(cat)).get_indexer(cat)
            dist += (m ** 2).sum(1)[groups] - 2 * m[groups, codes] + 1
    return dist


def test_anonymize_dataset_regression_guide(client, adult, folder, tmp_path):
    """The API end to end: k verified on the written table; the groups are those of the
    in-memory AccuracyGuidedAnonymizer(tree="hist") on the same rows (regression tree, then the
    Mondrian refinement); each representative is its group's medoid, as in memory for a
    regression target (no majority class; the Dask engine's medians at bin resolution)."""
    X, y = adult
    k = 25
    res = ad.anonymize_dataset(folder, tmp_path / "out", k=k, quasi_identifiers=QI,
                               label="price", client=client)
    out = pd.read_parquet(tmp_path / "out")
    assert res.n_rows == len(out) == N
    assert res.min_class_size == k_anonymity(out, QI) >= k
    np.testing.assert_array_equal(out["price"].to_numpy(), y)  # the guide column unchanged
    mem = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=QI, tree="hist").fit(X, y)
    assert mem.task_ == "regression" and res.n_groups == mem.n_groups_
    key = out[QI].astype(str).agg("|".join, axis=1).to_numpy()
    assert len(set(zip(key.tolist(), mem.groups_.tolist()))) == mem.n_groups_  # same groups
    # each group's representative is a record of the group at the smallest distance (ties:
    # equal distances up to rounding, e.g. ages 34 and 36 about a median of 35)
    dist = _medoid_distance(X, mem.groups_)
    best = pd.Series(dist).groupby(mem.groups_).min().to_numpy()
    is_rep = (X[QI].astype(str).agg("|".join, axis=1).to_numpy() == key) & (
        dist <= best[mem.groups_] + 1e-9)
    assert np.unique(mem.groups_[is_rep]).size == mem.n_groups_
    # not the majority-class rule: a group whose medoid is not of its most frequent target
    top = pd.Series(y).groupby(mem.groups_).agg(lambda v: v.value_counts().index[0]).to_numpy()
    assert (y[is_rep] != top[mem.groups_[is_rep]]).any()


def test_regressor_model_guide_and_saved_mapping(client, adult, folder, tmp_path):
    """A regressor's predictions (computed on the workers) guide the tree as a label column of
    the same predictions does; the saved mapping maps the training rows as the run did."""
    pytest.importorskip("skops")
    from sklearn.tree import DecisionTreeRegressor

    from anonml.safemodel import load_model

    X, y = adult
    num = ["age", "education-num", "hours-per-week"]
    model = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X[num], y)
    pred = model.predict(X[num])
    assert np.any(pred != np.round(pred))  # a continuous guide
    a = ad.anonymize_dataset(folder, tmp_path / "a", k=20, quasi_identifiers=QI, model=model,
                             features=num, client=client, save_mapping=tmp_path / "m.skops")
    data = tmp_path / "pred"
    data.mkdir()
    df = X.assign(price=y, pred=pred)
    cuts = [0, 500, 1700, 2900, N]  # the partitions of `folder`: the same sums, in one order
    for i in range(4):
        df.iloc[cuts[i]:cuts[i + 1]].to_parquet(data / f"part{i}.parquet", index=False)
    b = ad.anonymize_dataset(data, tmp_path / "b", k=20, quasi_identifiers=QI, label="pred",
                             client=client)
    out = pd.read_parquet(tmp_path / "a")
    assert a.n_groups == b.n_groups and a.min_class_size >= 20
    pd.testing.assert_frame_equal(out[QI], pd.read_parquet(tmp_path / "b")[QI])
    mapped = load_model(tmp_path / "m.skops").transform(X.assign(price=y))
    pd.testing.assert_frame_equal(mapped[QI].reset_index(drop=True), out[QI],
                                  check_dtype=False)


def test_criterion_squared_error_for_classes_is_refused(client, adult, tmp_path):
    X, _ = adult
    data = tmp_path / "cls"
    data.mkdir()
    X.assign(cls=(X["age"] > 40).astype(float)).to_parquet(data / "a.parquet", index=False)
    with pytest.raises(InputError, match="'squared_error' does not fit the guide 'cls'"):
        ad.anonymize_dataset(data, tmp_path / "o", k=20, quasi_identifiers=QI, label="cls",
                             criterion="squared_error", client=client)


def test_rerun_gives_the_same_output(client, tmp_path):
    """Float sums are reduced in partition order (and the local subtrees' rows sorted), so a
    rerun grows the same tree: a target of arbitrary floats, several partitions, and nodes
    finished locally after the shuffle."""
    X = load_adult().X.iloc[:3000].reset_index(drop=True)
    rng = np.random.default_rng(1)
    y = X["age"].to_numpy() * np.pi + rng.normal(0, 5, len(X))  # sums depend on their order
    ddf = dd.from_pandas(X.assign(score=y), npartitions=6)
    outs = []
    for i in range(2):
        ad.anonymize_dataset(ddf, tmp_path / f"o{i}", k=10, quasi_identifiers=QI, label="score",
                             refine="none", client=client)
        outs.append(pd.read_parquet(tmp_path / f"o{i}"))
    assert k_anonymity(outs[0], QI) >= 10
    pd.testing.assert_frame_equal(outs[0], outs[1])


def test_rerun_of_the_tree_with_local_subtrees_is_identical(client):
    """The grown tree itself (node arrays), twice, with a small ``local_rows``."""
    X = load_adult().X.iloc[:3000].reset_index(drop=True)
    y = np.random.default_rng(2).normal(0, 1, len(X)) + X["age"].to_numpy() / 7
    cat = [c for c in QI if not pd.api.types.is_numeric_dtype(X[c])]
    spec = K.BinSpec.from_encoder(TableEncoder(QI, cat, 255).fit(X))
    spec.regression = True
    parts = dd.from_pandas(X.assign(y=y), npartitions=5).to_delayed()
    trees = []
    for _ in range(2):
        states = client.compute([dask.delayed(K.bin_partition)(p, spec, p["y"]) for p in parts])
        tree, _ = grow(client, states, spec.is_cat, spec.n_bins, 1, 10, "squared_error",
                       local_cells=None, local_rows=400)
        trees.append(tree)
    a, b = trees
    assert a.n_nodes_ > 50
    for name in ("feature_", "threshold_", "children_left_", "children_right_", "offset_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_missing_or_infinite_target_is_one_line_naming_the_column(client, adult, tmp_path):
    X, y = adult
    for bad, words in ((np.nan, "missing"), (np.inf, "infinite")):
        data = tmp_path / f"d{words}"
        data.mkdir()
        yy = y.copy()
        yy[3000] = bad
        df = X.assign(price=yy)
        df.iloc[:2000].to_parquet(data / "a.parquet", index=False)
        df.iloc[2000:].to_parquet(data / "b.parquet", index=False)
        with pytest.raises(InputError, match=f"'price' has 1 {words} values") as info:
            ad.anonymize_dataset(data, tmp_path / f"o{words}", k=20, quasi_identifiers=QI,
                                 label="price", client=client)
        assert "\n" not in str(info.value) and "guide" not in str(info.value)
        assert not (tmp_path / f"o{words}").exists()


def test_criterion_that_does_not_fit_the_guide(client, folder, tmp_path):
    with pytest.raises(InputError, match="criterion 'gini' does not fit the guide 'price'"):
        ad.anonymize_dataset(folder, tmp_path / "o", k=20, quasi_identifiers=QI, label="price",
                             criterion="gini", client=client)
    assert not (tmp_path / "o").exists()


def test_cli_regression_guide(client, adult, folder, tmp_path, capsys):
    """``anonml anonymize DIR --engine dask --labels --target <float column>``."""
    out = tmp_path / "cli"
    code = main(["anonymize", str(folder), "--engine", "dask", "--k", "25", "--qi",
                 ",".join(QI), "--target", "price", "--labels", "--scheduler",
                 client.scheduler.address, "-o", str(out), "--json"])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(stdout.strip().splitlines()[-1])
    written = pd.read_parquet(out)
    assert summary["rows"] == len(written) == N
    assert summary["min_class_size"] == k_anonymity(written, QI) >= 25
    # the same table as the API (and so as in memory)
    ad.anonymize_dataset(folder, tmp_path / "api", k=25, quasi_identifiers=QI, label="price",
                         client=client)
    pd.testing.assert_frame_equal(written, pd.read_parquet(tmp_path / "api"))
    code = main(["anonymize", str(folder), "--engine", "dask", "--k", "25", "--qi",
                 ",".join(QI), "--target", "price", "--labels", "--tree-criterion", "entropy",
                 "--scheduler", client.scheduler.address, "-o", str(tmp_path / "bad")])
    _, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("anonml: error")]
    assert code == 1 and len(lines) == 1 and "--tree-criterion squared_error" in lines[0], err
    assert not (tmp_path / "bad").exists()


def test_local_subtree_does_not_depend_on_the_order_of_its_rows():
    """The engine's shuffle may deliver a node's rows in any order; float sums depend on the
    order of their terms (here grossly: targets of 1e16 and -1e16 beside small ones), so the
    in-memory tree on the rows as delivered changes with their order, and ``local_subtree``,
    which sorts them by (node, y) first, does not."""
    rng = np.random.default_rng(0)
    n = 2000
    B = rng.integers(0, 8, (n, 3)).astype(np.uint8)
    y = rng.choice([1e16, -1e16, 0.5, 1.25, 3.0], n) + rng.normal(0, 1, n)
    node = rng.integers(0, 3, n)
    rows = pd.DataFrame({"__node": node, "__y": y, "__at": np.arange(n, dtype=np.int64),
                         **{f"__b{j}": B[:, j] for j in range(3)}})
    is_cat, n_bins = np.array([False, True, False]), np.array([8, 8, 8])
    ref = L.local_subtree(rows, is_cat, n_bins, 10, "squared_error", None)
    t_ref = HistTree(10, None, "squared_error").fit(B, is_cat, n_bins, y, init=node)
    assert ref["feature"].size > 50
    raw_changed = 0
    for seed in range(1, 6):
        perm = np.random.default_rng(seed).permutation(n)
        got = L.local_subtree(rows.iloc[perm], is_cat, n_bins, 10, "squared_error", None)
        for name in ("feature", "threshold", "left", "offset", "flat"):
            np.testing.assert_array_equal(got[name], ref[name])
        # every row keeps its leaf, whatever the order it came in
        leaf_of = np.empty(n, np.int64)
        leaf_of[got["at"]] = got["leaf"]
        ref_of = np.empty(n, np.int64)
        ref_of[ref["at"]] = ref["leaf"]
        np.testing.assert_array_equal(leaf_of, ref_of)
        t = HistTree(10, None, "squared_error").fit(B[perm], is_cat, n_bins, y[perm],
                                                    init=node[perm])
        raw_changed += not np.array_equal(t.feature_, t_ref.feature_)
    assert raw_changed  # the sort is what makes the subtree reproducible
