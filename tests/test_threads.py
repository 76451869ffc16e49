"""The fit's column threads (anonml._threads): the count, the order of the results, errors,
and the same output with one thread as with several."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

from anonml._errors import InputError
from anonml._threads import ENV, MAX_THREADS, column_threads, fit_threads, in_order


def test_thread_count_from_the_environment(monkeypatch):
    monkeypatch.setenv(ENV, "3")
    assert fit_threads() == 3
    monkeypatch.setenv(ENV, " 1 ")
    assert fit_threads() == 1
    monkeypatch.delenv(ENV)
    assert 1 <= fit_threads() <= MAX_THREADS
    for bad in ("0", "-2", "two", "1.5", "1_000", "\u0663", "99999"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(InputError, match=rf"^{ENV}=.{bad}. must be a whole number from 1 to 9999"):
            fit_threads()


def test_one_thread_is_no_pool(monkeypatch):
    with column_threads(1) as pool:
        assert pool is None
    monkeypatch.setenv(ENV, "1")
    with column_threads() as pool:
        assert pool is None
    with column_threads(2) as pool:
        assert pool is not None


@pytest.mark.parametrize("n", [1, 2, 3])
def test_results_in_the_items_order_with_a_bounded_lead(n):
    """Items finishing out of order are still yielded in order; no more than ``n`` are
    started ahead of the one the caller holds."""
    started, lock = [], threading.Lock()
    running = [0]
    most = [0]

    def fn(i):
        with lock:
            started.append(i)
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.002 * ((7 * i) % 5))  # finish out of order
        with lock:
            running[0] -= 1
        return i * i

    with column_threads(n) as pool:
        got = []
        for i, r in enumerate(in_order(pool, fn, range(12))):
            with lock:  # held by the caller: at most n more started
                assert len(started) <= i + 1 + (n if pool is not None else 0)
            got.append(r)
    assert got == [i * i for i in range(12)]
    assert most[0] <= n


def test_an_error_is_raised_at_its_item_and_the_rest_is_not_started():
    started = []

    def fn(i):
        started.append(i)
        if i == 2:
            raise ValueError("column 2 is bad")
        return i

    with column_threads(2) as pool:
        got = []
        with pytest.raises(ValueError, match="column 2 is bad"):
            for r in in_order(pool, fn, range(50)):
                got.append(r)
    assert got == [0, 1]
    assert max(started) <= 4  # (the lead, not the 50 items)


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    words = np.array(["Private", "Self-emp", "State-gov", "Local-gov", "Never-worked"])
    return pd.DataFrame({
        "age": rng.integers(17, 91, n),
        "hours": rng.integers(1, 99, n).astype(np.float64),
        "work": pd.Series(words[rng.integers(0, 5, n)], dtype="str"),
        "edu": pd.Series(rng.choice(["HS", "BSc", "MSc", "PhD"], n), dtype="str"),
        "sex": pd.Series(rng.choice(["F", "M"], n)).astype("category"),
        "other": rng.normal(size=n),
    }), pd.Series(rng.integers(0, 2, n))


@pytest.mark.parametrize("copy, rule", [(True, "majority_medoid"), (True, "medoid"),
                                         (False, "majority_medoid")])
def test_the_same_fit_on_one_thread_and_on_several(monkeypatch, copy, rule):
    """Above 65,536 rows (text columns gathered through their distinct values), the fitted
    encoder (its dicts in column order), the groups, the check's result and the output are
    the same whatever the number of threads."""
    from anonml import AccuracyGuidedAnonymizer

    X, y = _table(70_000)
    qi = ["age", "hours", "work", "edu", "sex"]
    fits = []
    for threads in ("1", "3"):
        monkeypatch.setenv(ENV, threads)
        ag = AccuracyGuidedAnonymizer(k=50, quasi_identifiers=qi, tree="hist", copy=copy,
                                      representative=rule, random_state=0)
        Xc = X.copy()
        out = ag.fit_transform(Xc, y)
        fits.append((ag, out))
    (a, out_a), (b, out_b) = fits
    pd.testing.assert_frame_equal(out_a, out_b)
    assert np.array_equal(a.groups_, b.groups_)
    assert np.array_equal(a.representative_rows_, b.representative_rows_)
    assert a.min_class_size_ == b.min_class_size_ >= 50
    ea, eb = a.encoder_, b.encoder_
    for name in ("mean_", "scale_", "exponent_", "thresholds_", "values_", "cats_"):
        da, db = getattr(ea, name), getattr(eb, name)
        assert list(da) == list(db)  # the same columns, in the same order
        for c in da:
            va, vb = da[c], db[c]
            if name == "cats_":
                va, vb = (list(va.categories), va.has_missing), (list(vb.categories),
                                                                  vb.has_missing)
            assert np.array_equal(va, vb) if isinstance(va, np.ndarray) else va == vb
    assert a.transform(X.head(500)).equals(b.transform(X.head(500)))


def test_copy_false_fits_in_the_calling_thread(monkeypatch):
    """``copy=False`` (the mode that holds one column's work at a time) starts no threads;
    ``copy=True`` and ``fit`` do, when more than one is asked for."""
    import anonml._threads as T
    from anonml import AccuracyGuidedAnonymizer

    made = []
    real = T.ThreadPoolExecutor

    class Spy(real):
        def __init__(self, *args, **kwargs):
            made.append(kwargs.get("max_workers"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(T, "ThreadPoolExecutor", Spy)
    monkeypatch.setenv(ENV, "2")
    X, y = _table(2_000)
    qi = ["age", "work", "sex"]
    AccuracyGuidedAnonymizer(k=20, quasi_identifiers=qi, copy=False).fit_transform(X.copy(), y)
    assert made == []
    AccuracyGuidedAnonymizer(k=20, quasi_identifiers=qi).fit_transform(X, y)
    assert made and set(made) == {2}  # the fit's, then the new table's
    made.clear()
    AccuracyGuidedAnonymizer(k=20, quasi_identifiers=qi).fit(X, y)
    assert made == [2]


@pytest.mark.parametrize("direct_cells", [0, 1 << 20])
def test_distances_to_the_median_equal_bit_for_bit(monkeypatch, direct_cells):
    """The record rules' distances, a column a thread and summed in column order, equal the
    one-thread sum to the bit, the categorical counts taken in row order (a small table) or
    in group order (``_DIRECT_CELLS`` 0: every table counted walking the groups)."""
    from anonml.anonymize import _pipeline
    from anonml.encoding import TableEncoder

    monkeypatch.setattr(_pipeline, "_DIRECT_CELLS", direct_cells)
    X, _ = _table(5_000, seed=3)
    qi = ["age", "hours", "work", "edu", "sex", "other"]
    cat = ["work", "edu", "sex"]
    groups = np.random.default_rng(1).integers(0, 40, len(X))
    groups = np.unique(groups, return_inverse=True)[1]
    enc = TableEncoder(qi, cat)
    with enc.memoize(X):
        enc.fit(X)
        one = _pipeline._distance_to_median(X, enc, qi, groups, int(groups.max()) + 1)
        with column_threads(3) as pool:
            many = _pipeline._distance_to_median(X, enc, qi, groups, int(groups.max()) + 1,
                                                 threads=pool)
    assert one.dtype == many.dtype == np.float64
    assert np.array_equal(one.view(np.int64), many.view(np.int64))


def test_a_bad_thread_count_is_refused_in_every_mode(monkeypatch):
    """``copy=False`` fits in one thread, yet a bad ``ANONML_NUM_THREADS`` is still refused
    before the work, and the table is left as it was."""
    from anonml import AccuracyGuidedAnonymizer

    X, y = _table(500)
    before = X.copy()
    monkeypatch.setenv(ENV, "0")
    for copy in (True, False):
        with pytest.raises(InputError, match=rf"^{ENV}='0' must be a whole number"):
            AccuracyGuidedAnonymizer(k=20, quasi_identifiers=["age", "work"],
                                     copy=copy).fit_transform(X, y)
    pd.testing.assert_frame_equal(X, before)
