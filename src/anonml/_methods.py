"""The one registry of anonymization methods: data only, cheap to import (no numpy, no pandas).

Every place that names a method reads it from here: the command line (``--method``,
``--methods``, the per-method options), the frontier (which methods it sweeps, their markers on
the plot), the Dask engine (which methods it runs) and :func:`anonymizer_class`. One short name
per method everywhere (``"ag"``, never ``"accuracy_guided"``).

To add an anonymizer: write its class in :mod:`anonml.anonymize`, add one :class:`Method` entry
below, and its options to :data:`METHOD_OPTIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_FRONTIER_METHODS", "METHODS", "METHOD_OPTIONS", "Method", "anonymizer_class",
           "check_method"]


@dataclass(frozen=True)
class Method:
    """One anonymization method.

    Attributes
    ----------
    name : str
        The short name users type (``--method ag``).
    class_name : str
        Its anonymizer class in :mod:`anonml.anonymize`.
    title : str
        How reports and plots name it.
    reference : str
        The paper it follows.
    marker : str
        Its matplotlib marker on the frontier plot.
    releasable : bool
        Whether its mapping can be released in a pipeline (SaNGreeA's routes training rows by
        their exact QI vectors, so it cannot).
    dask : bool
        Whether the Dask engine runs it.
    """

    name: str
    class_name: str
    title: str
    reference: str
    marker: str
    releasable: bool = True
    dask: bool = False


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("ag", "AccuracyGuidedAnonymizer", "accuracy-guided",
           "Goldsteen et al., Anonymizing Machine Learning Models, DPM 2021", "o", dask=True),
    Method("mondrian", "MondrianAnonymizer", "Mondrian",
           "LeFevre, DeWitt and Ramakrishnan, Mondrian Multidimensional k-Anonymity, ICDE 2006",
           "s", dask=True),
    Method("hilbert", "HilbertAnonymizer", "Hilbert curve",
           "Ghinita et al., Fast Data Anonymization with Low Information Loss, VLDB 2007", "^"),
    Method("rtree", "RTreeAnonymizer", "R+-tree",
           "Iwuchukwu and Naughton, K-Anonymization as Spatial Indexing, VLDB 2007", "v"),
    Method("sangreea", "SaNGreeAAnonymizer", "SaNGreeA",
           "Campan and Truta, Data and Structural k-Anonymity in Social Networks, PinKDD 2008",
           "D", releasable=False),
)}

#: the methods the frontier sweeps unless told otherwise
DEFAULT_FRONTIER_METHODS = ("ag", "mondrian", "hilbert", "rtree")

#: options that belong to one method only: option dest -> (method, constructor parameter)
METHOD_OPTIONS: dict[str, tuple[str, str]] = {
    "tree": ("ag", "tree"),
    "refine": ("ag", "refine"),
    "features": ("ag", "features"),
    "tree_criterion": ("ag", "criterion"),
    "max_depth": ("ag", "max_depth"),
    "mondrian_mode": ("mondrian", "mode"),
    "mondrian_criterion": ("mondrian", "criterion"),
    "hilbert_method": ("hilbert", "method"),
    "split_sample": ("rtree", "split_sample"),
    "min_fill": ("rtree", "min_fill"),
    "weights": ("sangreea", "weights"),
}


def check_method(name: Any, *, dask: bool = False, what: str = "method") -> str:
    """``name`` if it is a known method (and one the Dask engine runs, with ``dask``), else an
    InputError naming the choices."""
    from anonml._errors import InputError

    choices = [m for m, spec in METHODS.items() if spec.dask or not dask]
    if name not in choices:
        raise InputError(f"{what} {name!r} is not known{' to the Dask engine' if dask else ''}; "
                         f"fix: choose one of {', '.join(choices)}")
    return str(name)


def anonymizer_class(name: str) -> type:
    """The anonymizer class of method ``name`` (imports :mod:`anonml.anonymize`)."""
    import anonml.anonymize as anonymize

    return getattr(anonymize, METHODS[check_method(name)].class_name)
