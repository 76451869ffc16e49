"""Fitted anonymizers as plain data: exact DataFrame round trips, pickle and .skops files."""

from __future__ import annotations

import json
import pickle
import zipfile

import numpy as np
import pandas as pd
import pytest

from anonml._state import frame_from_state, frame_to_state
from anonml.anonymize import (
    AccuracyGuidedAnonymizer,
    HilbertAnonymizer,
    MondrianAnonymizer,
    RTreeAnonymizer,
    SaNGreeAAnonymizer,
)


def _frame() -> pd.DataFrame:
    f = pd.DataFrame({
        "i": np.array([1, -2, 3], dtype=np.int64),
        "u8": np.array([0, 255, 7], dtype=np.uint8),
        "f": [0.5, np.nan, -0.0],
        "b": [True, False, True],
        "obj": pd.Series(["a", None, "c"], dtype=object),
        "obj_nan": pd.Series(["a", np.nan, "é\u2603"], dtype=object),
        "mixed": pd.Series([1, "x", 2.5], dtype=object),
        "Int": pd.array([1, None, 3], dtype="Int64"),
        "bool_na": pd.array([True, None, False], dtype="boolean"),
        "Float": pd.array([1.5, None, 2.0], dtype="Float64"),
        "string": pd.array(["x", None, "z"], dtype="string"),
        "cat": pd.Categorical(["p", "q", None], categories=["q", "p", "r"], ordered=True),
        "dt": pd.to_datetime(["2020-01-01", None, "2021-05-05"]),
        7: [1, 2, 3],
    })
    f.index = pd.RangeIndex(3, name="group")
    return f


def test_frame_round_trip_keeps_dtypes_values_and_missing_kinds():
    f = _frame()
    back = frame_from_state(frame_to_state(f))
    pd.testing.assert_frame_equal(back, f)
    assert back["obj"].iloc[1] is None
    assert isinstance(back["obj_nan"].iloc[1], float)
    assert [type(v) for v in back["mixed"]] == [int, str, float]


def test_frames_that_cannot_be_expressed_are_left_alone():
    f = _frame()
    assert frame_to_state(f.set_index("i")) is None
    assert frame_to_state(pd.DataFrame({("a", "b"): [1]})) is None
    assert frame_to_state(pd.DataFrame({"o": [object()]})) is None
    tz = pd.DataFrame({"t": pd.to_datetime(["2020-01-01"]).tz_localize("UTC")})
    assert frame_to_state(tz) is None


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "age": rng.integers(17, 90, n),
        "sex": rng.choice(["F", "M"], n),
        "zip": rng.choice(["a", "b", "c", "d"], n),
        "hours": rng.normal(40, 8, n).round(1),
    })
    y = (X["age"] + rng.normal(0, 10, n) > 45).map({True: ">50K", False: "<=50K"})
    return X, y


def _walk(state, out):
    if isinstance(state, list):
        for item in state:
            _walk(item, out)
    elif isinstance(state, dict):
        if "__loader__" in state:
            out.add((state["__module__"], state["__class__"], state["__loader__"]))
        for value in state.values():
            if isinstance(value, (dict, list)):
                _walk(value, out)


METHODS = {
    "ag": lambda: AccuracyGuidedAnonymizer(k=10, quasi_identifiers=["age", "sex", "zip"]),
    "ag_hist": lambda: AccuracyGuidedAnonymizer(k=10, quasi_identifiers=["age", "sex", "zip"],
                                                tree="hist"),
    "mondrian": lambda: MondrianAnonymizer(k=10, quasi_identifiers=["age", "sex", "zip"],
                                           recoding="generalize", suppression=0.05),
    "hilbert": lambda: HilbertAnonymizer(k=10, quasi_identifiers=["age", "sex", "zip"],
                                         sensitive="hours", t=0.6),
    "rtree": lambda: RTreeAnonymizer(k=10, quasi_identifiers=["age", "sex", "zip"]),
    "sangreea": lambda: SaNGreeAAnonymizer(k=10, quasi_identifiers=["age", "sex", "zip"]),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_fitted_anonymizer_pickles_and_skops_round_trip(name, tmp_path):
    sio = pytest.importorskip("skops.io")
    X, y = _data()
    a = METHODS[name]().set_params(handle_unknown="ignore").fit(X, y)
    new = _data(60, seed=1)[0]
    for b in (pickle.loads(pickle.dumps(a)), None):
        if b is None:
            path = tmp_path / f"{name}.skops"
            sio.dump(a, path)
            b = sio.load(path, trusted=sio.get_untrusted_types(file=path))
            schema = json.loads(zipfile.ZipFile(path).read("schema.json"))
            found: set = set()
            _walk(schema, found)
            loaders = {t[2] for t in found}
            # data only: nothing a vetted reader would refuse as code
            assert not loaders & {"FunctionNode", "MethodNode", "PartialNode",
                                  "OperatorFuncNode", "ConstructorFromReduceNode"}
            assert not any(m.startswith("pandas") for m, _, _ in found)
        pd.testing.assert_frame_equal(b.representatives_, a.representatives_)
        pd.testing.assert_frame_equal(b.transform(new), a.transform(new))
        pd.testing.assert_frame_equal(b.transform(X), a.fit_transform(X, y))
