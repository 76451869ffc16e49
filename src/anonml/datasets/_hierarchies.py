"""Generalization hierarchies of the UCI Adult columns, shipped as ARX CSV files.

The files are ``anonml/datasets/data/hierarchies/adult_<column>.csv`` (ARX layout:
``value;level1;...;*``, one row per leaf, no header); their construction is described in
``data/ATTRIBUTION.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

from anonml._errors import InputError
from anonml.hierarchies import Hierarchy

__all__ = ["ADULT_HIERARCHY_COLUMNS", "load_adult_hierarchies"]

#: Columns with a shipped hierarchy, and whether their leaves are numbers.
_ADULT_NUMERIC = {
    "age": True,
    "workclass": False,
    "education": False,
    "education-num": True,
    "marital-status": False,
    "occupation": False,
    "relationship": False,
    "race": False,
    "sex": False,
    "native-country": False,
    "hours-per-week": True,
}
ADULT_HIERARCHY_COLUMNS = tuple(_ADULT_NUMERIC)


def load_adult_hierarchies(columns: Iterable[str] | None = None) -> dict[str, Hierarchy]:
    """Generalization hierarchies of the Adult columns, keyed by column name.

    The value spellings are those of :func:`anonml.datasets.load_adult` (missing values are
    the category ``"?"``, which has its own ``Unknown`` branch), and every value of the train
    and the test split is a leaf.

    ========================  ======  =====================================================
    column                    height  levels above the leaf
    ========================  ======  =====================================================
    ``age``                   4       ``[30, 35[`` -> ``[30, 40[`` -> ``[20, 40[`` -> ``*``
                                      (leaves 17..90, int64)
    ``hours-per-week``        4       same widths 5, 10, 20 (leaves 1..99, int64)
    ``education-num``         3       school level -> education stage -> ``*`` (1..16)
    ``education``             3       the same tree over the text labels (raw UCI column,
                                      not in ``load_adult().X``)
    ``workclass``             2       Non-Government / Government / Unemployed / Unknown
    ``marital-status``        3       Married / Separated / ... -> spouse (not) present
    ``occupation``            3       occupation group -> White-/Blue-collar, Service, ...
    ``relationship``          2       Spouse / Relative / No-spouse-or-relative
    ``native-country``        3       region -> continent -> ``*``
    ``race``, ``sex``         1       value -> ``*``
    ========================  ======  =====================================================

    Parameters
    ----------
    columns : iterable of str, optional
        Only these columns (default: all of the table above).

    Returns
    -------
    dict of str to Hierarchy
        Fresh objects on every call.

    Examples
    --------
    >>> from anonml.datasets import load_adult_hierarchies
    >>> h = load_adult_hierarchies(["native-country"])["native-country"]
    >>> h.generalize(["Peru", "Germany"], 2).tolist()
    ['South America', 'Europe']
    """
    wanted = ADULT_HIERARCHY_COLUMNS if columns is None else list(columns)
    if isinstance(columns, str):
        wanted = [columns]
    unknown = [c for c in wanted if c not in _ADULT_NUMERIC]
    if unknown:
        raise InputError(
            f"no Adult hierarchy for column {unknown[0]!r}; available: "
            f"{', '.join(ADULT_HIERARCHY_COLUMNS)}"
        )
    folder = resources.files("anonml.datasets") / "data" / "hierarchies"
    out: dict[str, Hierarchy] = {}
    for col in wanted:
        with (folder / f"adult_{col}.csv").open("rb") as f:
            out[col] = Hierarchy.read_arx(f, name=col, numeric=_ADULT_NUMERIC[col])
    return out
