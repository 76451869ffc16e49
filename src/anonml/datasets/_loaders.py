"""The :class:`Dataset` container and the loaders of the bundled datasets.

The data files live in ``anonml/datasets/data`` and are read with :mod:`importlib.resources`;
their origin, licences and checksums are in ``data/ATTRIBUTION.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

import pandas as pd
from sklearn.model_selection import train_test_split as _sk_train_test_split

from anonml._errors import InputError

__all__ = ["Dataset", "load_adult", "load_nursery", "load_loan"]

_UCI_LICENSE = "CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/)"


@dataclass(frozen=True, eq=False)
class Dataset:
    """A bundled tabular dataset with its target, quasi-identifier sets and provenance.

    Returned by the ``load_*`` functions, each call with a fresh, independent ``frame``.
    Frozen (fields cannot be re-assigned); instances compare by identity.

    Attributes
    ----------
    name : str
        Short name of the dataset, e.g. ``"adult"``.
    frame : pandas.DataFrame
        The feature columns and the target column, with the original row index ``0..n-1``.
    target : str
        Name of the target column in ``frame``.
    feature_names : tuple of str
        The feature columns, in order.
    categorical_features : tuple of str
        Those of ``feature_names`` whose dtype is not numeric (strings).
    qi_sets : Mapping[str, tuple of str]
        Read-only mapping from a name to a set of quasi-identifier columns.
    split : pandas.Series or None
        ``"train"``/``"test"`` per row, same index as ``frame``; ``None`` when the data have
        no published train/test split.
    missing_quasi_identifiers : tuple of str
        Quasi-identifiers used in the literature that are absent from this data.
    description, citation, license : str
        What the data are, how to cite them, and their licence or terms of use.
    """

    name: str
    frame: pd.DataFrame
    target: str
    feature_names: tuple[str, ...]
    categorical_features: tuple[str, ...]
    qi_sets: Mapping[str, tuple[str, ...]]
    split: pd.Series | None
    missing_quasi_identifiers: tuple[str, ...]
    description: str
    citation: str
    license: str

    def __post_init__(self) -> None:
        columns = set(self.frame.columns)
        unknown = [c for c in (*self.feature_names, self.target) if c not in columns]
        for qis in self.qi_sets.values():
            unknown += [c for c in qis if c not in self.feature_names]
        if unknown:
            raise InputError(
                f"Dataset {self.name!r}: columns {unknown} are not features of the frame; "
                "list only columns of the frame."
            )
        if not isinstance(self.qi_sets, MappingProxyType):
            frozen = MappingProxyType({k: tuple(v) for k, v in self.qi_sets.items()})
            object.__setattr__(self, "qi_sets", frozen)

    @property
    def X(self) -> pd.DataFrame:  # noqa: N802 - the scikit-learn convention
        """pandas.DataFrame: the feature columns, ``frame[list(feature_names)]``."""
        return self.frame[list(self.feature_names)]

    @property
    def y(self) -> pd.Series:
        """pandas.Series: the target column, ``frame[target]``."""
        return self.frame[self.target]

    def train_test_split(
        self, test_size: float | int = 0.25, random_state: int | None = None
    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series]:
        """Split into train and test parts.

        When the dataset has a published split (``split`` is not ``None``), that split is
        returned and ``test_size`` and ``random_state`` are ignored. Otherwise the rows are
        split at random, stratified by the target, with
        :func:`sklearn.model_selection.train_test_split`.

        Parameters
        ----------
        test_size : float or int, default 0.25
            Fraction of rows (float in (0, 1)) or number of rows (int) in the test part.
            Ignored when there is a published split.
        random_state : int or None, default None
            Seed of the random split. Ignored when there is a published split.

        Returns
        -------
        X_train, X_test : pandas.DataFrame
            Feature columns of the train and test rows; the original row index is kept.
        y_train, y_test : pandas.Series
            Target of the train and test rows.

        Raises
        ------
        InputError
            If ``test_size`` or ``random_state`` is not accepted by scikit-learn, or the
            test part would be too small or too large for every class to be in both parts.
        """
        X, y = self.X, self.y
        if self.split is not None:
            is_test = (self.split == "test").to_numpy()
            return X[~is_test], X[is_test], y[~is_test], y[is_test]
        if isinstance(test_size, bool):
            raise InputError(f"test_size={test_size!r} is a bool; pass a float in (0, 1).")
        try:
            parts = _sk_train_test_split(
                X, y, test_size=test_size, random_state=random_state, stratify=y
            )
        except ValueError as exc:  # bad test_size or random_state, or too few test rows
            raise InputError(
                f"test_size={test_size!r}, random_state={random_state!r} cannot give a "
                f"stratified split of {self.name!r} ({exc}); pass a float in (0, 1) or a row "
                "count that leaves every class in both parts."
            ) from exc
        return tuple(parts)  # type: ignore[return-value]


@functools.lru_cache(maxsize=None)
def _read(filename: str) -> pd.DataFrame:
    """Parse a bundled CSV once; use :func:`_load`, which returns a copy, instead.

    Only empty fields become NaN: the data's own missing-value markers (``?`` in Adult,
    ``n/a`` in LendingClub's ``emp_length``) are kept as categories.
    """
    with (resources.files("anonml.datasets") / "data" / filename).open("rb") as f:
        return pd.read_csv(f, compression="gzip", keep_default_na=False, na_values=[""])


def _load(filename: str) -> pd.DataFrame:
    return _read(filename).copy(deep=True)


def _categorical(frame: pd.DataFrame, features: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The columns among ``features`` (default: all) whose dtype is not numeric."""
    columns = frame.columns if features is None else features
    return tuple(c for c in columns if not pd.api.types.is_numeric_dtype(frame[c]))


ADULT_FEATURES = (
    "age", "workclass", "education-num", "marital-status", "occupation", "relationship",
    "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
)  # fmt: skip


def _every_column_dataset(name: str, frame: pd.DataFrame, target: str, *,
                          qi_sets: dict | None = None,
                          missing_quasi_identifiers: tuple[str, ...] = (),
                          **about: str) -> Dataset:
    """A dataset without a published split whose features are every column but ``target``
    (categorical by dtype); ``qi_sets`` gains ``"all"`` (every feature) after its own sets.
    ``about`` holds the description, citation and license."""
    features = tuple(c for c in frame.columns if c != target)
    return Dataset(
        name=name,
        frame=frame,
        target=target,
        feature_names=features,
        categorical_features=_categorical(frame, features),
        qi_sets=MappingProxyType({**(qi_sets or {}), "all": features}),
        split=None,
        missing_quasi_identifiers=missing_quasi_identifiers,
        **about,
    )


def load_adult() -> Dataset:
    """Load UCI Adult (census income), 48,842 rows, with its published train/test split.

    The 12 features are those used by Goldsteen et al. (``fnlwgt`` and ``education`` are
    dropped; ``education-num`` encodes education). The target ``income`` has exactly two
    values, ``"<=50K"`` and ``">50K"``: the trailing ``"."`` of the test labels is stripped.
    Numeric columns are int64; categorical ones keep the string dtype pandas gives them.
    Missing values are **not** NaN: they stay the original ``"?"`` category (workclass,
    occupation, native-country), so treat ``"?"`` as an ordinary value or filter it out.

    ``qi_sets``: ``"12"`` (all features), ``"10"`` (without capital-gain and capital-loss)
    and ``"8"`` (workclass, marital-status, occupation, relationship, race, sex,
    native-country, education-num). ``split`` holds 32,561 ``"train"`` rows (``adult.data``)
    and 16,281 ``"test"`` rows (``adult.test``).

    Returns
    -------
    Dataset
        A fresh dataset; modifying it does not affect later calls.
    """
    raw = _load("adult.csv.gz")
    frame = raw[[*ADULT_FEATURES, "income"]].copy()
    frame["income"] = frame["income"].str.rstrip(".")
    frame = frame.astype({c: "int64" for c in ADULT_FEATURES if c not in _categorical(frame)})
    no_capital = tuple(c for c in ADULT_FEATURES if c not in ("capital-gain", "capital-loss"))
    eight = (
        "workclass", "marital-status", "occupation", "relationship", "race", "sex",
        "native-country", "education-num",
    )  # fmt: skip
    return Dataset(
        name="adult",
        frame=frame,
        target="income",
        feature_names=ADULT_FEATURES,
        categorical_features=_categorical(frame, ADULT_FEATURES),
        qi_sets=MappingProxyType({"12": ADULT_FEATURES, "10": no_capital, "8": eight}),
        split=raw["split"].rename("split"),
        missing_quasi_identifiers=(),
        description="UCI Adult census income: predict whether income exceeds 50K a year.",
        citation="Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning "
        "Repository. https://doi.org/10.24432/C5XW20",
        license=_UCI_LICENSE,
    )


def load_nursery() -> Dataset:
    """Load UCI Nursery, 12,960 rows, 8 categorical features, target ``class``.

    All 8 features are strings (``children`` is ``"1"``, ``"2"``, ``"3"`` or ``"more"``); no
    missing values, no published split. ``qi_sets`` has one entry, ``"all"`` (all 8
    features). In Goldsteen et al. the attribute-inference attack targets ``social``.

    Returns
    -------
    Dataset
        A fresh dataset; modifying it does not affect later calls.
    """
    return _every_column_dataset(
        "nursery",
        _load("nursery.csv.gz"),
        "class",
        description="UCI Nursery: rank applications to nursery schools (5 classes).",
        citation="Rajkovic, V. (1989). Nursery [Dataset]. UCI Machine Learning Repository. "
        "https://doi.org/10.24432/C5P88W",
        license=_UCI_LICENSE,
    )


LOAN_PAPER_QIS = (
    "emp_length", "home_ownership", "annual_inc", "zip_code", "delinq_2yrs",
    "inq_last_6mths", "open_acc", "total_acc", "pub_rec", "revol_bal", "revol_util",
)  # fmt: skip
LOAN_MISSING_QIS = (
    "purpose", "dti", "mths_since_last_delinq", "mths_since_last_record", "hardship_flag",
    "last_pymnt_amnt", "installment",
)  # fmt: skip


def load_loan() -> Dataset:
    """Load LendingClub loans issued 2007–2011, 39,786 rows, target ``loan_status``.

    This is a **substitute** for the 2015 LendingClub excerpt used by Goldsteen et al.,
    which could not be obtained; 7 of the paper's 18 quasi-identifiers are missing (listed
    in ``missing_quasi_identifiers``). The target has two values, ``"Fully Paid"`` and
    ``"Charged Off"``; there is no published split. The terms of use are unclear: research
    use only, cite LendingClub.

    ``revol_util`` (``"83.70%"`` in the file) is parsed to a float percentage (83.7); it is
    NaN in 50 rows, which are kept: impute or drop them before anonymizing with
    ``revol_util`` as a numeric quasi-identifier. ``term``, ``emp_length``,
    ``home_ownership``, ``verification_status``, ``zip_code`` and ``addr_state`` stay
    strings; ``emp_length`` keeps LendingClub's ``"n/a"`` category (1,078 rows).

    ``qi_sets``: ``"paper"`` (the 11 of the paper's 18 quasi-identifiers present here, in
    the paper's order) and ``"all"`` (all 15 features).

    Returns
    -------
    Dataset
        A fresh dataset; modifying it does not affect later calls.
    """
    frame = _load("loan.csv.gz")
    util = frame["revol_util"]
    bad = util.notna() & ~util.str.endswith("%", na=False)
    if bad.any():  # pragma: no cover - guards against a changed data file
        raise InputError(f"revol_util has non-percentage values, e.g. {util[bad].iloc[0]!r}.")
    frame["revol_util"] = pd.to_numeric(util.str.rstrip("%")).astype("float64")
    return _every_column_dataset(
        "loan",
        frame,
        "loan_status",
        qi_sets={"paper": LOAN_PAPER_QIS},
        missing_quasi_identifiers=LOAN_MISSING_QIS,
        description="LendingClub accepted loans 2007-2011 (substitute for the 2015 excerpt "
        "of Goldsteen et al.): predict whether a loan is fully paid or charged off.",
        citation="LendingClub Corporation. LoanStats3a: loans issued 2007-2011 [Dataset]. "
        "Public loan data, formerly at https://www.lendingclub.com/info/download-data.action",
        license="Unclear: LendingClub website terms of use, no open licence. Use for "
        "research only, cite LendingClub, do not re-publish as your own.",
    )
