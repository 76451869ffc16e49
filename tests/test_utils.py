"""The private utilities layer (anonml._utils): the one JSON conversion and the scalar checks."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonml._errors import InputError
from anonml._utils import check_int, check_n_jobs, check_real, json_safe


@dataclasses.dataclass
class _Point:
    k: int
    auc: float


def test_json_safe_makes_strict_json_of_what_the_summaries_hold():
    value = {
        1: np.int64(3), "f": np.float32(0.5), "nan": float("nan"), "inf": -np.inf,
        "b": np.bool_(False), "arr": np.array([[1, 2], [3, 4]]), "t": (np.int8(1), None),
        "path": Path("out") / "a.csv", "point": _Point(np.int64(5), np.nan),
        "na": pd.NA, "nat": pd.NaT, "series": pd.Series([1.5, np.nan]), "obj": object,
    }
    out = json_safe(value)
    text = json.dumps(out, allow_nan=False)  # strict JSON: no NaN, no numpy type left
    assert json.loads(text) == {
        "1": 3, "f": 0.5, "nan": None, "inf": None, "b": False, "arr": [[1, 2], [3, 4]],
        "t": [1, None], "path": str(Path("out") / "a.csv"), "point": {"k": 5, "auc": None},
        "na": None, "nat": None, "series": [1.5, None], "obj": str(object),
    }
    assert type(out["1"]) is int and type(out["b"]) is bool


def test_json_safe_is_the_one_the_attacks_export():
    from anonml.attacks import _core

    assert _core.json_safe is json_safe


@pytest.mark.parametrize("value", [0, 1.5, True, "3", None])
def test_check_int_refuses_in_the_house_wording(value):
    with pytest.raises(InputError, match=r"^n=.* must be a positive integer, e\.g\. n=4$"):
        check_int("n", value, example=4)


def test_check_real_refuses_in_the_house_wording():
    for value in (0, -1.0, float("inf"), float("nan"), True, "1"):
        with pytest.raises(InputError, match=r"must be a positive finite number"):
            check_real("epsilon", value)
    assert check_real("epsilon", np.float32(0.5)) == 0.5


def test_check_n_jobs_takes_none_minus_one_or_a_count_up_to_the_cap():
    assert [check_n_jobs(v) for v in (None, -1, np.int64(-1), 1, np.int64(8))] == [
        None, -1, -1, 1, 8]
    assert type(check_n_jobs(np.int64(8))) is int
    for value in (0, -2, 1.0, True, "2"):
        with pytest.raises(InputError, match=r"^n_jobs=.* must be None, -1 \(all cores\) or a "
                           r"positive integer, e\.g\. n_jobs=1$"):
            check_n_jobs(value)
    assert check_n_jobs(256, high=256) == 256
    with pytest.raises(InputError, match=r"^n_jobs=257 must be None, -1 \(all cores\) or an "
                       r"integer from 1 to 256"):
        check_n_jobs(257, high=256)


def test_release_free_memory_finds_malloc_trim_on_glibc():
    import platform
    import sys

    from anonml import _utils
    from anonml._utils import release_free_memory

    freed = [np.ones(1000 + i) for i in range(2000)]  # small arrays: on the C heap
    del freed
    got = release_free_memory()
    assert isinstance(got, bool)
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert _utils._LIBC is not False  # the call reached malloc_trim
    else:
        assert got is False


def _glibc_only():
    import platform
    import sys

    if not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"):
        pytest.skip("glibc's mallopt only")


def test_reuse_freed_memory_recycles_a_large_freed_array():
    """Outside the block a freed 64 MB array is unmapped and the next one is faulted in anew;
    inside, the next one reuses its pages."""
    import resource

    from anonml._utils import reuse_freed_memory

    _glibc_only()

    def faults_of_second_array() -> int:
        a = np.ones(8_000_000)  # 64 MB: above glibc's largest dynamic mmap threshold
        del a
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        b = np.ones(8_000_000)  # written in full: every page is touched
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        del b
        return faults

    outside = faults_of_second_array()
    with reuse_freed_memory():
        inside = faults_of_second_array()
    assert outside >= 16  # at least one fault per 4 MB even with 2 MB huge pages
    assert inside < outside / 4
    assert faults_of_second_array() >= 16  # the thresholds are back after the block


def test_reuse_freed_memory_nests_and_restores_after_an_error():
    from anonml import _utils
    from anonml._utils import reuse_freed_memory

    _glibc_only()
    with pytest.raises(ValueError), reuse_freed_memory(), reuse_freed_memory():
        assert _utils._HEAP_DEPTH == 2
        raise ValueError("inside")
    assert _utils._HEAP_DEPTH == 0


def _thp_flag():
    import ctypes

    from anonml._utils import _glibc

    prctl = _glibc("prctl")
    zero = ctypes.c_ulong(0)
    return (lambda: prctl(42, zero, zero, zero, zero)) if prctl else None  # PR_GET_THP_DISABLE


def test_small_pages_sets_the_flag_for_the_block_only_and_nests():
    from anonml import _utils
    from anonml._utils import small_pages

    _glibc_only()
    flag = _thp_flag()
    if flag() < 0:
        pytest.skip("the kernel lacks PR_GET_THP_DISABLE")
    assert flag() == 0
    with pytest.raises(ValueError), small_pages():
        assert flag() == 1
        with small_pages(10**6):
            assert flag() == 1
        assert flag() == 1  # the inner block does not clear it
        raise ValueError("inside")
    assert flag() == 0 and _utils._THP_DEPTH == 0
    with small_pages(10):  # a few rows: nothing is done
        assert flag() == 0


def test_small_pages_leaves_a_flag_the_program_set():
    import ctypes

    from anonml._utils import _glibc, small_pages

    _glibc_only()
    flag = _thp_flag()
    if flag() < 0:
        pytest.skip("the kernel lacks PR_GET_THP_DISABLE")
    prctl, zero = _glibc("prctl"), ctypes.c_ulong(0)
    assert prctl(41, ctypes.c_ulong(1), zero, zero, zero) == 0
    try:
        with small_pages():
            assert flag() == 1
        assert flag() == 1  # still the program's
    finally:
        prctl(41, zero, zero, zero, zero)
    assert flag() == 0


def test_new_frame_and_write_into_run_with_small_pages(monkeypatch):
    """The output's columns are built inside :func:`small_pages` (for tables of at least
    RELEASE_MIN_ROWS rows), and the same values come out."""
    import pandas as pd

    from anonml._utils import RELEASE_MIN_ROWS
    from anonml.anonymize import _pipeline

    _glibc_only()
    flag = _thp_flag()
    if flag() < 0:
        pytest.skip("the kernel lacks PR_GET_THP_DISABLE")
    n = RELEASE_MIN_ROWS
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 5, n), "b": pd.Series(
        rng.choice(["x", "yy", "zzz"], n), dtype="str"), "c": np.arange(n)})
    groups = np.repeat(np.arange(n // 4), 4)
    reps = frame.iloc[np.arange(0, n, 4), :2].reset_index(drop=True)
    seen = []
    column = _pipeline.Recoding.column

    def spy(self, c):
        seen.append(flag())
        return column(self, c)

    monkeypatch.setattr(_pipeline.Recoding, "column", spy)
    plan = _pipeline.recode_plan(frame, ["a", "b"], groups, reps)
    out = plan.new_frame(frame)
    assert seen == [1, 1] and flag() == 0
    expected = frame.iloc[np.repeat(np.arange(0, n, 4), 4)].set_axis(frame.index)
    pd.testing.assert_frame_equal(out, expected.assign(c=frame["c"]))
    plan.write_into(frame)
    assert seen == [1, 1, 1, 1] and flag() == 0
    pd.testing.assert_frame_equal(frame, out)
