"""Released mappings route by a tree on raw values whose thresholds are the roundest numbers
between the training values they separate (issue 19)."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from anonml.anonymize._routing import _roundest, _threshold_avoiding, roundest_in_gap


def _digits(x: float) -> int:
    """Significant digits of the shortest decimal that reads back as ``x``."""
    if x == 0:
        return 0
    d = Decimal(repr(float(x))).normalize()
    return len(d.as_tuple().digits)


def test_examples():
    got = roundest_in_gap([22040.0, 22.0, -3.7, 0.5, 15.0, 95.0], [25000.0, 23.0, 1.2, 1.5, 25.0,
                                                                   1005.0])
    assert got.tolist() == [24000.0, 22.5, 0.0, 1.0, 20.0, 1000.0]
    assert roundest_in_gap(-25000.0, -22040.0) == -24000.0
    assert roundest_in_gap(22040.0, 25000.0, closed="right") == 24000.0
    assert roundest_in_gap(22000.0, 23000.0, closed="right") == 23000.0  # the end, allowed
    assert roundest_in_gap(22000.0, 23000.0) == 22500.0  # open: neither end
    assert roundest_in_gap(22000.0, 23000.0, closed="left") == 22000.0
    assert roundest_in_gap(-np.inf, 7.0) < 7.0 and roundest_in_gap(7.0, np.inf) > 7.0
    with pytest.raises(ValueError):
        roundest_in_gap(0.0, 1.0, closed="both")


floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
special = st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308,
                           1e-300, 0.1, 1.0, 1e15, 2.0**53, 1e300, 1.7976931348623157e308,
                           -1e300, -1.7976931348623157e308, -0.1, 12345.678])


def _pair(a: float, b: float, d: int) -> tuple[float, float]:
    lo, hi = min(a, b), max(a, b)
    if d:  # equal-ish: a few doubles apart
        hi = lo
        for _ in range(d):
            hi = float(np.nextafter(hi, np.inf))
    return lo, hi


@settings(max_examples=400, deadline=None)
@given(st.one_of(floats, special), st.one_of(floats, special), st.integers(0, 3),
       st.sampled_from(["neither", "right", "left"]))
def test_roundest_lies_in_the_gap_and_is_roundest(a, b, d, closed):
    lo, hi = _pair(a, b, d)
    assume(lo < hi and math.isfinite(hi))
    got = float(roundest_in_gap(lo, hi, closed=closed))
    if closed == "right":
        assert lo < got <= hi
    elif closed == "left":
        assert lo <= got < hi
    else:
        below = float(np.nextafter(lo, np.inf))
        if below < hi:  # the open interval holds a double: the result is inside it
            assert lo < got < hi
        else:
            assert got == lo
    # no number of fewer significant digits lies in the gap: check the decimal candidates
    g = _digits(got)
    if g <= 1 or g >= 17:
        return
    lead = math.floor(math.log10(max(abs(lo), abs(hi)))) if max(abs(lo), abs(hi)) else 0
    for p in range(lead + 1, lead - 20, -1):
        step = Decimal(10) ** p
        m_lo = (Decimal(repr(lo)) / step).to_integral_value(rounding="ROUND_FLOOR")
        for m in (m_lo, m_lo + 1):
            c = float(m * step)
            ok = (lo < c < hi) or (closed == "right" and c == hi) or (closed == "left" and
                                                                        c == lo)
            if ok and math.isfinite(c) and c != got:
                assert _digits(c) >= g, (lo, hi, got, c)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10**6, 10**6), min_size=2, max_size=30, unique=True))
def test_integer_gaps_are_split_by_a_round_non_member(values):
    v = np.sort(np.asarray(values, dtype=np.float64))
    got = roundest_in_gap(v[:-1], v[1:])
    assert ((got > v[:-1]) & (got < v[1:])).all()
    assert not np.isin(got, v).any()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=40, unique=True),
       st.data())
def test_threshold_avoids_every_training_value(values, data):
    v = np.unique(np.asarray(values))
    i = data.draw(st.integers(0, v.size - 2))
    j = data.draw(st.integers(i + 1, v.size - 1))
    seg = v[i:j + 1]
    assume((np.nextafter(seg[:-1], np.inf) < seg[1:]).any())  # some double lies between
    got = _threshold_avoiding(np.array([v[i]]), np.array([v[j]]), v)
    assert v[i] < got[0] < v[j] and got[0] not in set(v.tolist())


def test_digits_are_reported():
    values, digits = _roundest([22040.0, 22.0, -3.7, 0.1], [25000.0, 23.0, 1.2, 0.1000001])
    assert digits.tolist() == [2, 3, 0, 8]  # 24000, 22.5, 0, 0.10000005
    assert digits[2] == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=8), min_size=2, max_size=12, unique=True))
def test_text_thresholds_separate_without_naming_a_category(names):
    from anonml.anonymize._routing import _text_between

    v = sorted(names)
    avoid = set(v)
    for a, b in zip(v, v[1:]):
        t = _text_between(a, b, avoid)
        assert a < t < b or t == a + "\x01"
        if a < t < b:
            assert t not in avoid and not t.endswith("\x00")


def test_threshold_avoiding_in_runs_equals_one_pass(monkeypatch):
    # gaps whose own roundest number is a training value are cut into pieces, taken in runs
    # of pieces (bounded memory on millions of distinct values): the thresholds are those of
    # one pass over all of them, including infinite ends, empty gaps and one gap holding
    # more pieces than a run
    import anonml.anonymize._routing as routing

    rng = np.random.default_rng(3)
    values = np.unique(np.round(rng.normal(0, 1000, 5000), 1))
    lo = np.sort(rng.choice(values, 300))
    hi = lo + rng.exponential(40, lo.size)
    lo[:3], hi[3:6] = -np.inf, np.inf
    lo[6], hi[6] = values[10], values[4000]  # ~4000 sub-gaps
    one = routing._pieces(lo, hi, values)
    monkeypatch.setattr(routing, "_SUB_GAPS_PER_PASS", 64)
    runs = routing._pieces(lo, hi, values)
    np.testing.assert_array_equal(runs, one)
    assert not np.isin(runs, values).any()
    assert ((runs > lo) & (runs < hi)).all()


def test_threshold_is_the_gaps_own_roundest_unless_it_is_a_training_value():
    from anonml.anonymize._routing import _pieces as routing_pieces

    # the rule both engines follow: the gap's roundest number when no training value equals
    # it (other nodes' values inside the gap do not move it), else the roundest of the pieces
    values = np.array([0.7, 3.0, 10.0, 15.0, 22.0, 22.9])
    lo = np.array([0.01, 2.0, 9.0, 22.0])
    hi = np.array([1.05, 20.0, 16.0, 23.0])
    got = _threshold_avoiding(lo, hi, values)
    # (0.01, 1.05): 1, though 0.7 inside cuts off a piece whose roundest is 0.4; (22, 23):
    # 22.5, not the 22.4 of the piece (22, 22.9); (2, 20): its roundest, 10, is a training
    # value, so the pieces: (3, 10) gives the only one-digit number, 6; (9, 16): 10 and 15
    # are training values, so the piece (10, 15) gives 12
    assert got.tolist() == [1.0, 6.0, 12.0, 22.5]
    np.testing.assert_array_equal(got[[1, 2]], routing_pieces(lo[[1, 2]], hi[[1, 2]], values))
    assert not np.isin(got, values).any()
    np.testing.assert_array_equal(_threshold_avoiding(lo, hi, np.array([np.inf])),
                                  roundest_in_gap(lo, hi))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False).map(lambda v: round(v, 1)), min_size=2,
                max_size=60, unique=True), st.data())
def test_one_rule_whether_the_training_values_are_known_or_found_in_passes(values, data):
    # the in-memory engine knows every distinct training value; the Dask engine, on a column of
    # many, first takes each gap's roundest number, then collects the training values inside
    # the gaps whose number is one, and chooses those again: the same thresholds
    v = np.unique(np.asarray(values))
    n = data.draw(st.integers(1, 8))
    i = np.array(data.draw(st.lists(st.integers(0, v.size - 2), min_size=n, max_size=n)))
    j = np.array([data.draw(st.integers(a + 1, v.size - 1)) for a in i])
    lo, hi = v[i], v[j]
    known = _threshold_avoiding(lo, hi, v)
    passes = _threshold_avoiding(lo, hi, np.array([np.inf]))
    redo = np.flatnonzero(np.isin(passes, v))
    inside = v[((v[:, None] > lo[redo]) & (v[:, None] < hi[redo])).any(axis=1)]
    passes[redo] = _threshold_avoiding(lo[redo], hi[redo], inside)
    np.testing.assert_array_equal(known, passes)


def _pieces_reference(lo: float, hi: float, values: np.ndarray) -> float:
    """One gap, cut at the training values inside it: each piece's roundest number, the one of
    fewest digits, then nearest the gap's middle, then the first piece."""
    cuts = values[(values > lo) & (values < hi)]
    ends = np.r_[lo, cuts], np.r_[cuts, hi]
    c, digits = _roundest(*ends)
    mid = lo / 2 + hi / 2 if np.isfinite(lo) and np.isfinite(hi) else 0.0
    dist = [abs(x - mid) if np.isfinite(abs(x - mid)) else np.inf for x in c]
    best = min(range(c.size), key=lambda i: (digits[i], dist[i], i))
    return float(c[best])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(-300, 300).map(float),
                          st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: round(v, 2))),
                min_size=2, max_size=80, unique=True), st.data())
def test_pieces_pick_the_roundest_piece(values, data):
    # the pieces between two training values are searched once per value and shared by the
    # gaps that hold them: the same winner as searching every gap's pieces on their own
    from anonml.anonymize._routing import _pieces

    v = np.unique(np.asarray(values))
    n = data.draw(st.integers(1, 10))
    i = np.array(data.draw(st.lists(st.integers(-1, v.size - 2), min_size=n, max_size=n)))
    j = np.array([data.draw(st.integers(a + 1, v.size)) for a in i])
    lo = np.where(i < 0, -np.inf, v[np.clip(i, 0, None)])
    hi = np.where(j >= v.size, np.inf, v[np.clip(j, None, v.size - 1)])
    got = _pieces(lo, hi, v)
    want = [_pieces_reference(a, b, v) for a, b in zip(lo, hi)]
    np.testing.assert_array_equal(got, want)
