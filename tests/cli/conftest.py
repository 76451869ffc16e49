"""Fixtures of the command-line tests: a 600-row Adult table and its CSV file."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def adult_small() -> pd.DataFrame:
    from anonml.datasets import load_adult

    return load_adult().frame.iloc[:600].reset_index(drop=True)


@pytest.fixture
def csv_in(tmp_path, adult_small):
    path = tmp_path / "train.csv"
    adult_small.to_csv(path, index=False)
    return path
