"""The verification's class sizes (anonml.dask._classes): the sizes of pandas' own
``groupby(qi, dropna=False).size()`` over all the files, from each file's distinct tuples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from anonml.dask._classes import file_classes, merge_classes  # noqa: E402


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
