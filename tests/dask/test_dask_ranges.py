"""The representatives by ranges of groups (anonml.engine._ranges, anonml.dask._reps): every
partition's rows sent to the range of their group, in any order, give the representatives of
the rule written plainly over the whole table: per group the medians of all its rows (at bin
resolution), then the record of the majority class (or of all rows) closest to them, ties to
the first place (partition, then row)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonml.dask._reps import range_count, range_starts
from anonml.encoding import TableEncoder
from anonml.engine import _kernels as K
from anonml.engine import _ranges as R


def _plain(X: pd.DataFrame, state: K.PartState, g: np.ndarray, spec: K.BinSpec, rule: str,
           n_groups: int) -> np.ndarray:
    """The winning row of each group over the whole table: medians from np.unique's counts,
    distances written out, ties by row (a lexsort by group, distance, row)."""
    counts = {j: np.unique(g * int(spec.n_bins[j]) + state.B[:, j], return_counts=True)
              for j in range(len(spec.columns))}
    counts = {j: (k.astype(np.int64), c.astype(np.int64)) for j, (k, c) in counts.items()}
    size = np.bincount(g, minlength=n_groups)
    if rule == "majority_medoid":
        yk, yc = np.unique(g * spec.n_classes + state.y, return_counts=True)
        counts["y"] = (yk.astype(np.int64), yc.astype(np.int64))
    med = K.group_medians(counts, spec, n_groups, rule, size)
    dist = np.zeros(g.size)
    for j, c in enumerate(spec.columns):
        if c in set(spec.categorical):
            keys, m, sumsq = med["cat"][j]
            key = g * int(spec.n_bins[j]) + state.B[:, j]
            lookup = dict(zip(keys.tolist(), m.tolist()))
            mc = np.array([lookup.get(v, 0.0) for v in key.tolist()])
            dist += sumsq[g] - 2.0 * mc + 1.0
        else:
            z = (X[c].to_numpy(dtype=np.float64) - spec.mean[c]) / spec.scale[c]
            dist += (z - med["num"][j][g]) ** 2
    if rule == "majority_medoid":
        dist = np.where(state.y == med["majority"][g], dist, np.inf)
    rows = np.flatnonzero(np.isfinite(dist))
    rows = rows[np.lexsort((rows, dist[rows], g[rows]))]
    return rows[np.r_[True, g[rows][1:] != g[rows][:-1]]]


@pytest.mark.parametrize("rule", ["majority_medoid", "medoid"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("coded", [False, True])
@pytest.mark.parametrize("in_place_order", [False, True])
def test_ranges_give_the_plain_rule_over_the_whole_table(rule, seed, coded,
                                                         in_place_order) -> None:
    rng = np.random.default_rng(seed)
    n, n_groups = 3000, 40
    X = pd.DataFrame({
        "a": rng.integers(18, 30, n).astype(np.int64),           # few values: exact bins, ties
        "w": rng.normal(0, 1e3, n).round(0),                      # many values: raw values read
        "c": rng.choice(["u", "v", "w", "x"], n),
        "k": np.full(n, 7.0),                                     # constant
    })
    X.loc[:40, ["a", "w", "c"]] = X.loc[0, ["a", "w", "c"]].to_numpy()  # identical records
    y = pd.Series(rng.choice(["<=50K", ">50K"], n, p=[0.7, 0.3]))
    qi = ["a", "w", "c", "k"]
    spec = K.BinSpec.from_encoder(TableEncoder(qi, ["c"], 16).fit(X),
                                  np.sort(y.unique()).astype(object))
    g = rng.integers(0, n_groups, n)
    g[40:][g[40:] == 5] = 6
    g[:40] = 5  # group 5: 40 identical records of one class, a tie broken by place
    y.iloc[:40] = y.iloc[0]
    exact = ("a",)  # its bins hold one value each; "w" and "k" travel as raw values
    raw = [c for c in spec.columns if c not in set(spec.categorical) and c not in exact]
    assert raw == ["w", "k"]
    # four partitions of unequal sizes, their rows sent to ranges and shuffled in each
    cuts = [0, 700, 701, 2100, n]
    sizes = np.bincount(g, minlength=n_groups)
    starts = range_starts(sizes, 6)
    stops = np.r_[starts[1:], n_groups]
    frames = []
    for i in range(4):
        part = X.iloc[cuts[i]:cuts[i + 1]].reset_index(drop=True)
        st = K.bin_partition(part, spec, y.iloc[cuts[i]:cuts[i + 1]].reset_index(drop=True))
        frames.append(R.group_rows(None if coded else part, st, g[cuts[i]:cuts[i + 1]],
                                   starts, n_groups, i, raw, rule == "majority_medoid",
                                   n_groups, coded=R.code_columns(part, raw) if coded else None))
    rows = pd.concat(frames, ignore_index=True)
    pd.testing.assert_frame_equal(
        rows.iloc[:0], R.group_rows_meta(spec.n_bins, raw, rule == "majority_medoid",
                                         n_groups), check_index_type=False)
    # a shuffle may deliver rows in any order; Dask's task shuffle delivers them in place
    # order (then they are not sorted again)
    rows = rows.iloc[rng.permutation(len(rows))]
    if in_place_order:
        rows = rows.sort_values("__at")
    got = R.concat_candidates(*[
        R.range_candidates(rows[rows["_partitions"] == r], starts[r], stops[r], spec,
                           sizes[starts[r]:stops[r]], rule, qi, raw, exact)
        for r in range(starts.size)])
    state = K.bin_partition(X, spec, y)
    want = _plain(X, state, g, spec, rule, n_groups)
    np.testing.assert_array_equal(got["group"], np.arange(n_groups))
    place = np.searchsorted(cuts, want, side="right") - 1
    np.testing.assert_array_equal(got["part"], place)
    np.testing.assert_array_equal(got["row"], want - np.asarray(cuts)[place])
    assert (got["part"][5], got["row"][5]) == (0, 0)  # the tie: the first place


def test_range_starts_cut_groups_of_about_equal_rows() -> None:
    sizes = np.array([5, 5, 5, 5, 100, 5, 5, 5, 5, 5])
    starts = range_starts(sizes, 4)
    assert starts[0] == 0 and (np.diff(starts) > 0).all() and starts[-1] < sizes.size
    np.testing.assert_array_equal(range_starts(sizes, 1), [0])
    np.testing.assert_array_equal(range_starts(np.array([3]), 8), [0])
    # every range holds whole groups; no range is empty
    assert set(range_starts(np.ones(10, np.int64), 5).tolist()) == {0, 2, 4, 6, 8}


def test_range_count_bounds_rows_and_pieces() -> None:
    """Ranges of at most MAX_RANGE_ROWS rows (the rows of 10M on 2 threads: 312,500 each),
    at most 32 a round, at least four a worker thread."""
    from anonml.dask._reps import MAX_RANGE_ROWS

    assert range_count(10_000_000, 2, 1) == 32  # 312,500 rows a range
    assert range_count(100_000_000, 2, 7) == 7 * 32  # not 250 of 400,000: 32 a round
    assert range_count(30_000_000, 2, 2) == 64
    assert -(-100_000_000 // range_count(100_000_000, 2, 40)) <= MAX_RANGE_ROWS
    assert range_count(1000, 2, 1) == 8  # four a thread, however few rows
    assert range_count(10_000_000, 64, 1) == 256  # a large cluster: every thread busy


def _adult_files(tmp_path):
    """3,000 Adult rows (with their label) in 3 Parquet files of unequal sizes, and 6 QIs."""
    from anonml.datasets import load_adult

    d = load_adult()
    X = d.X.iloc[:3000].reset_index(drop=True).assign(label=d.y.iloc[:3000].to_numpy())
    folder = tmp_path / "data"
    folder.mkdir()
    for i, (a, b) in enumerate([(0, 900), (900, 2000), (2000, 3000)]):
        X.iloc[a:b].to_parquet(folder / f"part-{i}.parquet")
    return folder, ["age", "education-num", "capital-gain", "hours-per-week", "workclass", "sex"]


@pytest.mark.parametrize("label", ["label", None])
def test_representatives_in_rounds_give_the_same_output(client, tmp_path, monkeypatch, label):
    """The ranges of groups shuffled in several rounds (data larger than Dask's in-memory
    shuffle budget), in each round only its own groups' rows: the same written files as in one
    round, with progress counting every range once."""
    pytest.importorskip("pyarrow")
    from dask.utils import key_split
    from distributed import get_task_stream

    import anonml.dask as ad
    import anonml.dask._balance as B

    folder, qi = _adult_files(tmp_path)
    outs, ticks = {}, {}
    for n in (1, 3):
        monkeypatch.setattr(B, "rounds", lambda client, nbytes, n=n: n)
        seen = []
        out = tmp_path / f"out_{n}"
        kw = {"label": label} if label else {"method": "mondrian"}
        with get_task_stream(client=client) as ts:
            # max_bins=16: age and capital-gain have more values than bins (raw values travel)
            ad.anonymize_dataset(str(folder), out, k=20, quasi_identifiers=qi, client=client,
                                 max_bins=16,
                                 progress=lambda s, d, t: seen.append((d, t))
                                 if s.startswith("choosing the representatives") else None,
                                 **kw)
        # past one round the raw columns are read once and kept as codes
        coded = sum(key_split(t["key"]) == "code_reading" for t in ts.data)
        assert coded == (0 if n == 1 else 3), coded
        outs[n] = {p.name: pd.read_parquet(p) for p in sorted(out.iterdir())}
        ticks[n] = seen
    assert outs[1].keys() == outs[3].keys() and len(outs[1]) == 3
    for name, frame in outs[1].items():
        pd.testing.assert_frame_equal(frame, outs[3][name])
    for n in (1, 3):
        total = ticks[n][-1][1]
        assert [d for d, _ in ticks[n]] == list(range(1, total + 1)), ticks[n]
        assert total >= 3


def test_code_columns_keep_every_value() -> None:
    """A raw column as codes into its values: the same float64 values row by row (a missing
    one stays missing; -0.0 may come back as 0.0, the same distance to any median), codes of
    one byte up to 256 values, two bytes up to MAX_CODED_VALUES, none past it."""
    rng = np.random.default_rng(3)
    n = 5000
    big = np.arange(n, dtype=np.float64) + 0.5
    part = pd.DataFrame({
        "few": rng.choice([0.0, -0.0, 1e308, -1e308, 5e-324, np.nan, np.inf, -np.inf, 2**63], n),
        "mid": rng.integers(0, 1000, n).astype(np.float64),
        "many": big,
        "ints": rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n),
    })
    raw = list(part.columns)
    out = R.code_columns(part, raw)
    assert out["few"][0].dtype == np.uint8 and out["mid"][0].dtype == np.uint16
    for c in raw:
        if out[c] is None:
            continue
        codes, values = out[c]
        np.testing.assert_array_equal(values[codes], part[c].to_numpy(dtype=np.float64))
    old = R.MAX_CODED_VALUES
    try:
        R.MAX_CODED_VALUES = 4000
        out = R.code_columns(part, raw)
        assert out["many"] is None and out["mid"] is not None
    finally:
        R.MAX_CODED_VALUES = old


def test_coded_rows_read_again_only_the_columns_too_varied_to_code(tmp_path) -> None:
    """group_rows_coded: the coded columns from their codes, a column with too many values
    (coded as None) read again from the file; the same frame as a plain read."""
    from anonml.dask._columns import Read, group_rows_coded

    rng = np.random.default_rng(4)
    n = 600
    X = pd.DataFrame({"a": rng.integers(0, 5, n).astype(np.float64),
                      "b": rng.normal(0, 1, n), "c": rng.choice(["x", "y"], n)})
    path = tmp_path / "part-0.parquet"
    X.to_parquet(path)
    spec = K.BinSpec.from_encoder(TableEncoder(["a", "b", "c"], ["c"], 8).fit(X), None)
    state = K.bin_partition(X, spec, None)
    g = rng.integers(0, 10, n)
    starts = np.array([2, 6])
    raw = ["a", "b"]
    want = R.group_rows(X, state, g, starts, 9, 3, raw, False, 10)
    coded = R.code_columns(X, raw)
    coded["b"] = None  # too many values: read again
    got = group_rows_coded(Read(str(path), raw, "part-0.parquet"), coded, state, g, starts,
                           9, 3, raw, False, 10)
    pd.testing.assert_frame_equal(got, want)
    assert len(got) == int(((g >= 2) & (g < 9)).sum())


def test_a_worker_killed_between_rounds_recomputes_its_codes(tmp_path, monkeypatch) -> None:
    """The raw columns kept as codes between the rounds are results with a recipe: a worker
    SIGKILLed after the first range (its codes and binned states lost) is replaced, Dask
    reads and codes its files again, and the written files are those of an undisturbed run."""
    pytest.importorskip("pyarrow")
    distributed = pytest.importorskip("distributed")
    import os
    import signal

    import anonml.dask as ad
    import anonml.dask._balance as B

    folder, qi = _adult_files(tmp_path)
    monkeypatch.setattr(B, "rounds", lambda client, nbytes: 3)
    outs = {}
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as lc, distributed.Client(lc) as client:
        for kill in (False, True):
            pids = list(client.run(os.getpid).values())
            fired = []

            def progress(stage, done, total, kill=kill, pids=pids, fired=fired):
                if kill and not fired and stage.startswith("choosing the representatives") \
                        and done == 1:
                    fired.append(done)
                    os.kill(pids[0], signal.SIGKILL)

            out = tmp_path / f"out_{kill}"
            ad.anonymize_dataset(str(folder), out, k=20, quasi_identifiers=qi, client=client,
                                 max_bins=16, label="label", progress=progress)
            assert fired == ([1] if kill else [])
            outs[kill] = {p.name: pd.read_parquet(p) for p in sorted(out.iterdir())}
    assert outs[True].keys() == outs[False].keys() and len(outs[True]) == 3
    for name, frame in outs[False].items():
        pd.testing.assert_frame_equal(frame, outs[True][name])
