"""Digest of everything an in-memory AccuracyGuidedAnonymizer fit releases, to check that two
versions of the code give the same output (run once per version, compare the lines).

The table of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100, hist tree);
printed: the rows, then one sha256 prefix each for the anonymized table (every column's name,
dtype and values, by ``pd.util.hash_pandas_object``), ``groups_``, the representatives and the
routing tree ``route_`` (every attribute of ``ROUTING_ATTRIBUTES``).

Usage::

    PYTHONPATH=src python benchmarks/digest_fit_outputs.py --rows 1M
    PYTHONPATH=/tmp/before/src python benchmarks/digest_fit_outputs.py --rows 1M
    PYTHONPATH=src python benchmarks/digest_fit_outputs.py --rows 1M --copy false  # in place
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory_scale import build_table, parse_size


def _h(*parts) -> str:
    d = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            d.update(f"{p.dtype}{p.shape}".encode())
            d.update(p.tobytes() if p.dtype != object else repr(p.tolist()).encode())
        else:
            d.update(repr(p).encode())
    return d.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1M")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--copy", default="true", choices=["true", "false"],
                        help="false: the anonymizer recodes the input frame in place")
    args = parser.parse_args()
    import anonml
    from anonml import AccuracyGuidedAnonymizer
    from anonml.anonymize._routing import ROUTING_ATTRIBUTES

    X, y, qi = build_table(parse_size(args.rows))
    ag = AccuracyGuidedAnonymizer(k=args.k, quasi_identifiers=qi, tree="hist", random_state=0,
                                  **({} if args.copy == "true" else {"copy": False}))
    out = ag.fit_transform(X, y)
    assert args.copy == "true" or out is X
    table = _h([(c, str(out[c].dtype)) for c in out.columns],
               pd.util.hash_pandas_object(out, index=True).to_numpy())
    reps = _h([(c, str(ag.representatives_[c].dtype)) for c in ag.representatives_.columns],
              pd.util.hash_pandas_object(ag.representatives_, index=True).to_numpy())
    route = _h(*[np.asarray(getattr(ag.route_, a, None), dtype=object)
                 if not isinstance(getattr(ag.route_, a, None), np.ndarray)
                 else getattr(ag.route_, a) for a in ROUTING_ATTRIBUTES])
    print(f"anonml {Path(anonml.__file__).parent}, copy={args.copy}")
    print(f"rows {X.shape[0]} table {table} groups {_h(np.asarray(ag.groups_, dtype=np.int64))} "
          f"representatives {reps} route {route}")


if __name__ == "__main__":
    main()
