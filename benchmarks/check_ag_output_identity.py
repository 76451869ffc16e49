"""Digests of everything an in-memory AccuracyGuidedAnonymizer fit releases, on the exact-tree
cases of bench_speed_vs_ibm.py and around them: run once per version of the code and compare
the printed lines (they must be identical when a change claims "output unchanged").

Per fit, one sha256 prefix each for: the anonymized table (every column's name, dtype and
values, ``pd.util.hash_pandas_object``), ``groups_``, ``representatives_``,
``representative_rows_``, ``transform`` of 500 rows, the routing tree ``route_`` (every
attribute of ``ROUTING_ATTRIBUTES``) and, for the exact tree, the scikit-learn tree's arrays
(every array of ``TREE_ARRAYS``, its parameters and fitted attributes).

Cases (k = 2, 5, 10, 25, 100 each; ``random_state=0``; the library's defaults otherwise):

* ``bench``: the Adult train split and 12 QIs of bench_speed_vs_ibm.py, the true labels;
* ``adult8``: ``load_adult()`` with ``qi_sets["8"]``;
* ``adult12_20k``: its first 20,000 rows with ``qi_sets["12"]``;
* ``nursery``: ``load_nursery()``, every column a QI;
* ``mixed``: 20,000 Adult rows with 5 % of each text QI missing, a bool and a category
  column; and on it k=25 with ``tree="hist"`` and k=100 with ``MondrianAnonymizer``.

Usage::

    PYTHONPATH=src python benchmarks/check_ag_output_identity.py > /tmp/after.txt
    PYTHONPATH=/tmp/before/src python benchmarks/check_ag_output_identity.py > /tmp/before.txt
    diff /tmp/before.txt /tmp/after.txt && echo identical
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from digest_fit_outputs import _h  # noqa: E402  (the same digest of arrays and values)

HERE = Path(__file__).resolve().parent
ADULT = HERE.parent / "src" / "anonml" / "datasets" / "data" / "adult.csv.gz"
FEATURES = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship",
            "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]
KS = (2, 5, 10, 25, 100)
TREE_ARRAYS = ("feature", "threshold", "children_left", "children_right", "value",
               "n_node_samples", "weighted_n_node_samples", "impurity", "max_depth", "node_count",
               "n_leaves")


def _frame(df: pd.DataFrame) -> str:
    return _h([(c, str(df[c].dtype)) for c in df.columns], list(df.index),
              pd.util.hash_pandas_object(df, index=True).to_numpy())


def digests(est, X: pd.DataFrame, y) -> dict:
    from anonml.anonymize._routing import ROUTING_ATTRIBUTES

    out = est.fit_transform(X, y)
    d = {"table": _frame(out), "groups": _h(np.asarray(est.groups_, dtype=np.int64)),
         "representatives": _frame(est.representatives_),
         "representative_rows": _h(np.asarray(est.representative_rows_)),
         "transform": _h(np.asarray(est.transform(X.iloc[:500]).to_numpy(), dtype=object))}
    route = est.route_
    d["route"] = _h(*[getattr(route, a) if isinstance(getattr(route, a, None), np.ndarray)
                      else np.asarray(getattr(route, a, None), dtype=object)
                      for a in ROUTING_ATTRIBUTES])
    tree = getattr(getattr(est, "tree_", None), "tree_", None)
    if tree is not None:  # the scikit-learn tree
        d["sklearn_tree"] = _h(*[np.asarray(getattr(tree, a)) for a in TREE_ARRAYS],
                               sorted(est.tree_.get_params().items()),
                               sorted((a, repr(v)) for a, v in vars(est.tree_).items()
                                      if a != "tree_"))
    return d


def cases():
    from anonml import AccuracyGuidedAnonymizer, MondrianAnonymizer
    from anonml.datasets import load_adult, load_nursery

    df = pd.read_csv(ADULT)
    train = df[df["split"] == "train"]
    Xb = train[FEATURES].reset_index(drop=True)
    yb = train["income"].str.startswith(">").astype(int)
    adult = load_adult()
    q8, q12 = list(adult.qi_sets["8"]), list(adult.qi_sets["12"])
    n = load_nursery()
    Xm = adult.X.iloc[:20000].reset_index(drop=True).copy()
    ym = adult.y.iloc[:20000].reset_index(drop=True)
    rng = np.random.default_rng(0)
    for c in ("workclass", "occupation", "native-country", "race"):
        Xm[c] = Xm[c].astype(object)
        Xm.loc[rng.random(len(Xm)) < 0.05, c] = np.nan
    Xm["flag"] = rng.random(len(Xm)) < 0.3
    Xm["relationship"] = Xm["relationship"].astype("category")
    qm = [*q12, "flag"]

    def ag(k, qi, **kw):
        return AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, random_state=0, **kw)

    for k in KS:
        yield f"bench k={k}", ag(k, FEATURES), Xb, yb
        yield f"adult8 k={k}", ag(k, q8), adult.X, adult.y
        yield f"adult12_20k k={k}", ag(k, q12), adult.X.iloc[:20000], adult.y.iloc[:20000]
        yield f"nursery k={k}", ag(k, None), n.X, n.y
        yield f"mixed k={k}", ag(k, qm), Xm, ym
    yield "mixed hist k=25", ag(25, qm, tree="hist"), Xm, ym
    yield "mixed mondrian k=100", MondrianAnonymizer(k=100, quasi_identifiers=qm), Xm, ym


def main() -> None:
    import anonml

    print(f"# anonml {Path(anonml.__file__).parent}")
    total = 0
    for name, est, X, y in cases():
        d = digests(est, X, y)
        total += len(d)
        print(name, " ".join(f"{a}={v}" for a, v in d.items()), flush=True)
    print(f"# {total} digests")


if __name__ == "__main__":
    main()
