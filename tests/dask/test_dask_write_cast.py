"""The write's representatives cast once for all the partitions (anonml.dask._partio
.cast_representatives): each partition's written file is the one the per-partition cast
gives, and a QI whose dtype a partition's own groups decide (a NumPy dtype with a missing
representative: its nullable twin only where such a group occurs) is cast per partition."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from anonml.dask._partio import _write_binned, cast_representatives  # noqa: E402


def _reps(n: int, rng) -> pd.DataFrame:
    return pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(np.int64),
        "job": pd.array(rng.choice(["a", "b", "c"], n), dtype="str"),
        "ok": rng.random(n) < 0.5,
        "w": rng.normal(size=n),
    })


def test_cast_once_writes_what_the_partition_cast_writes(tmp_path) -> None:
    rng = np.random.default_rng(0)
    reps = _reps(50, rng)
    qi_meta = reps.iloc[:0]
    per_group = cast_representatives(reps, qi_meta)
    assert per_group is not None and set(per_group) == set(reps.columns)
    for i, groups in enumerate([rng.integers(0, 50, 400), rng.integers(10, 20, 300),
                                np.zeros(5, np.int64)]):  # all, some, one group present
        rest = pd.DataFrame({"id": np.arange(groups.size), "y": rng.integers(0, 2, groups.size)})
        cols = ["age", "id", "job", "ok", "y", "w"]
        a, b = tmp_path / f"a{i}", tmp_path / f"b{i}"
        a.mkdir()
        b.mkdir()
        assert _write_binned(rest, groups, reps, qi_meta, str(a), i, cols) == groups.size
        assert _write_binned(rest, groups, reps, qi_meta, str(b), i, cols, per_group) == groups.size
        name = f"part.{i:05d}.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(a / name), pd.read_parquet(b / name))


def test_a_missing_representative_of_a_numpy_dtype_is_cast_per_partition() -> None:
    rng = np.random.default_rng(1)
    reps = _reps(20, rng)
    reps["ok"] = reps["ok"].astype(object)
    reps.loc[3, "ok"] = None  # a bool QI with a missing value: 'boolean' only where group 3 is
    qi_meta = reps.iloc[:0].astype({"ok": bool})
    assert cast_representatives(reps, qi_meta) is None
    reps2 = _reps(20, rng)
    reps2.loc[5, "w"] = np.nan
    assert cast_representatives(reps2, reps2.iloc[:0]) is None
    assert cast_representatives(reps2.drop(columns="w"), reps2.iloc[:0].drop(columns="w")) \
        is not None
