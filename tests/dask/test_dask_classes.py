"""The verification's class sizes (anonml.dask._classes): the sizes of pandas' own
``groupby(qi, dropna=False).size()`` over all the files, from each file's distinct tuples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from anonml.dask._classes import (bucket_keys, bucket_sizes, file_classes,  # noqa: E402
                                  join_value_lists, joined_values, merge_classes)


def _files(tmp_path, n_files=4, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    paths, frames = [], []
    for i in range(n_files):
        text = rng.choice(np.array(["a", "b", "c", "é", ""], dtype=object), n)
        text[rng.random(n) < 0.05] = None  # missing text
        num = rng.choice([0.0, -1.5, 2.0, np.nan], n)  # missing floats
        frame = pd.DataFrame({
            "t": pd.Series(text, dtype=object),
            "i": rng.integers(-3, 3, n),  # ints, some files with values others lack
            "f": num,
            "b": rng.random(n) < 0.5,
            "other": rng.random(n),
        })
        if i == 1:
            frame["i"] += 100
        path = tmp_path / f"part.{i:05d}.parquet"
        frame.to_parquet(path, row_group_size=1000)  # several row groups: several dictionaries
        paths.append(str(path))
        frames.append(frame)
    return paths, pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("qi", [["t", "i", "f", "b"], ["t"], ["i", "f"]])
def test_class_sizes_are_those_of_a_groupby(tmp_path, qi):
    paths, whole = _files(tmp_path)
    expected = np.sort(whole.groupby(qi, dropna=False).size().to_numpy())
    one = [file_classes(p, qi) for p in paths]
    for got in (merge_classes(*one), merge_classes(merge_classes(*one[:3]), one[3])):
        np.testing.assert_array_equal(np.sort(got["counts"]), expected)
    # each file alone, too
    np.testing.assert_array_equal(
        np.sort(file_classes(paths[0], qi)["counts"]),
        np.sort(pd.read_parquet(paths[0]).groupby(qi, dropna=False).size().to_numpy()))



def _by_buckets(parts, bits):
    """class_sizes without a cluster: the value lists joined in two steps (as its tree
    reduction may join them), each file's pairs keyed, then grouped by bucket as Dask's
    shuffle groups them; one row per bucket: rows, smallest, classes."""
    lists = [{"values": p["values"], "tuples": p["counts"].size} for p in parts]
    joined = join_value_lists(join_value_lists(*lists[:1]), join_value_lists(*lists[1:]))
    assert joined["tuples"] == sum(p["counts"].size for p in parts)
    assert all(len(v) == len(w) for v, w in
               zip(joined["values"], joined_values([p["values"] for p in parts])))
    keyed = pd.concat([bucket_keys(p, joined, bits) for p in parts], ignore_index=True)
    assert keyed["_partitions"].between(0, (1 << bits) - 1).all()
    return np.array([bucket_sizes(keyed[keyed["_partitions"] == b]).to_numpy()[0]
                     for b in range(1 << bits)])


def test_bucket_counts():
    import anonml.dask._classes as C

    assert [C.n_buckets(t) for t in (0, 1, C.BUCKET_TUPLES, C.BUCKET_TUPLES + 1,
                                     29_000_000, 3 * 10**9)] == [1, 1, 1, 2, 8, 1024]


@pytest.mark.parametrize("bits", [0, 1, 3, 6])
@pytest.mark.parametrize("qi", [["t", "i", "f", "b"], ["t"], ["i", "f"]])
def test_bucketed_sizes_are_those_of_a_groupby(tmp_path, qi, bits):
    """The buckets of class_sizes: every class in exactly one bucket (its rows from every
    file added there), whatever the number of buckets, some of them empty."""
    paths, whole = _files(tmp_path)
    sizes = whole.groupby(qi, dropna=False).size().to_numpy()
    got = _by_buckets([file_classes(p, qi) for p in paths], bits)
    held = got[got[:, 2] > 0]
    assert (got[:, 0].sum(), held[:, 1].min(), got[:, 2].sum()) == \
        (len(whole), sizes.min(), sizes.size)
    assert (got[got[:, 2] == 0] == 0).all()  # an empty bucket: nothing, smallest 0


def test_bucketed_sizes_with_a_class_of_one_row_split_from_its_look_alikes(tmp_path):
    """Values equal as values but of different files' dtypes (1 and 1.0), missing values,
    and a single-row class: the smallest is found in whichever bucket holds it."""
    a = pd.DataFrame({"x": [1.0, 1.0, np.nan, 2.0], "t": ["a", "a", None, "b"]})
    b = pd.DataFrame({"x": [1.0, np.nan, 2.0, 3.0], "t": ["a", None, "b", "b"]})
    paths = []
    for i, frame in enumerate((a, b)):
        path = tmp_path / f"part.{i:05d}.parquet"
        frame.to_parquet(path)
        paths.append(str(path))
    expected = pd.concat([a, b]).groupby(["x", "t"], dropna=False).size()
    for bits in (0, 2):
        got = _by_buckets([file_classes(p, ["x", "t"]) for p in paths], bits)
        held = got[got[:, 2] > 0]
        assert (got[:, 0].sum(), held[:, 1].min(), got[:, 2].sum()) == (8, 1, expected.size)

def test_many_columns_past_the_radix_limit(tmp_path):
    """Enough distinct values per column that the tuple key is renumbered on the way."""
    rng = np.random.default_rng(1)
    n = 4000
    frame = pd.DataFrame({f"c{j}": rng.integers(0, 3000, n) for j in range(8)})
    frame.iloc[: n // 2] = frame.iloc[n // 2:].to_numpy()  # every tuple twice
    path = tmp_path / "part.00000.parquet"
    frame.to_parquet(path)
    got = file_classes(str(path), list(frame.columns))
    np.testing.assert_array_equal(
        np.sort(got["counts"]), np.sort(frame.groupby(list(frame.columns)).size().to_numpy()))


def test_verify_counts_the_written_files_and_refuses_a_small_class(client, tmp_path):
    """verify() on written files: the smallest class over all files (a class split across
    files counts once), and a class below k refused in one line."""
    import dask.dataframe as dd

    from anonml._errors import PrivacyViolationError
    from anonml.dask._verify import verify

    paths, whole = _files(tmp_path)
    qi = ["t", "b"]
    sizes = whole.groupby(qi, dropna=False).size()
    smallest, achieved = verify(dd, client, str(tmp_path), qi, int(sizes.min()),
                                n_rows=len(whole))
    assert smallest == int(sizes.min()) and achieved == {}
    with pytest.raises(PrivacyViolationError, match="equivalence class of"):
        verify(dd, client, str(tmp_path), qi, int(sizes.min()) + 1)
    with pytest.raises(PrivacyViolationError, match="rows, not"):
        verify(dd, client, str(tmp_path), qi, 2, n_rows=len(whole) + 1)


class _Spy:
    """A client that records the functions submitted to it, with their last argument."""

    calls: list = []

    def __init__(self, client):
        self.client = client
        _Spy.calls = []

    def submit(self, func, *args, **kwargs):
        _Spy.calls.append((getattr(func, "__name__", ""), args[-1] if args else None))
        return self.client.submit(func, *args, **kwargs)

    def gather(self, *args, **kwargs):
        return self.client.gather(*args, **kwargs)

    def compute(self, *args, **kwargs):
        return self.client.compute(*args, **kwargs)


@pytest.mark.parametrize("per_bucket", [None, 10, 10**9])
def test_class_sizes_on_the_cluster_by_buckets_or_by_the_tree(client, tmp_path, monkeypatch,
                                                           per_bucket):
    """class_sizes on a cluster: by 1 or several buckets, and by the tree of merges when the
    joined key would overflow an int64 (forced here on the client)."""
    import anonml.dask._classes as C

    paths, whole = _files(tmp_path)
    qi = ["t", "i", "f", "b"]
    sizes = whole.groupby(qi, dropna=False).size().to_numpy()
    if per_bucket is None:
        monkeypatch.setattr(C, "_joined_span", lambda widths: None)  # as if it overflowed
    else:
        monkeypatch.setattr(C, "BUCKET_TUPLES", per_bucket)
    got = C.class_sizes(_Spy(client), paths, qi)
    assert got == (len(whole), int(sizes.min()), sizes.size)
    names = [name for name, _ in _Spy.calls]
    assert names.count("join_value_lists") == 1  # 4 files: one join
    assert (names.count("merge_classes") > 0) == (per_bucket is None)
    bits = {last for name, last in _Spy.calls if name == "bucket_keys"}
    assert names.count("bucket_keys") == (0 if per_bucket is None else 4)
    if per_bucket is not None:  # the files' tuples, 10 a bucket (about 128 buckets) or all in one
        tuples = sum(pd.read_parquet(p).groupby(qi, dropna=False).ngroups for p in paths)
        assert bits == {C.n_buckets(tuples).bit_length() - 1}
        assert bits == ({0} if per_bucket > tuples else {int(np.ceil(np.log2(tuples / 10)))})
    assert C.class_sizes(client, [], qi) == (0, 0, 0)


@pytest.mark.parametrize("damage", ["missing", "damaged"])
def test_a_written_file_not_read_back_is_one_output_line(tmp_path, damage):
    """A worker that cannot read a written file back (not on storage it shares with the one
    that wrote it, or damaged since) fails the verification with one line naming the file."""
    from anonml._errors import OutputError

    path = tmp_path / "part.00000.parquet"
    if damage == "damaged":
        pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}).to_parquet(path)
        raw = bytearray(path.read_bytes())
        raw[-8:-4] = b"\xff\xff\xff\x7f"  # a footer length past the file
        path.write_bytes(bytes(raw))
    with pytest.raises(OutputError) as err:
        file_classes(str(path), ["a", "b"])
    line = str(err.value)
    assert "\n" not in line and str(path) in line and "could not be read back" in line, line
    assert "fix:" in line
