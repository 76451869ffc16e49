"""Digest of the Dask engine's written datasets, to check that a change keeps the output
identical (issue 21, sessions 6-7).

Runs :func:`anonml.dask.anonymize_dataset` (whichever anonml ``PYTHONPATH`` selects) on a
Parquet folder for AG and Mondrian, with the default local-subtree settings and with small
``local_rows`` / ``local_cells`` (level-wise growth first, then local subtrees at several
levels), on a LocalCluster of 2 workers, and prints and saves per configuration a SHA-256 over
the written file names, ``pd.util.hash_pandas_object`` of every file and its dtypes::

    python benchmarks/make_big_adult.py /tmp/cmp --sizes 300k --rows-per-file 100k
    PYTHONPATH=<before>/src python benchmarks/check_dask_output_identity.py /tmp/cmp/adult_300000 /tmp/cmp/before
    PYTHONPATH=<after>/src python benchmarks/check_dask_output_identity.py /tmp/cmp/adult_300000 /tmp/cmp/after
    (optionally followed by the names of the configurations to run; ``--reread`` anywhere
    forces the path of data too large to keep the QIs on the workers, ``_hold_qi`` False)
    diff /tmp/cmp/before/digest.json /tmp/cmp/after/digest.json   # only the seconds differ
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from pathlib import Path

import pandas as pd

import anonml.dask._api as api
from anonml.dask import anonymize_dataset, local_cluster


def main() -> None:
    args = sys.argv[1:]
    if "--reread" in args:  # the path past _hold_qi (large data): every task reads its file
        args.remove("--reread")
        api._hold_qi = lambda *a, **kw: False
    src, out_root = args[0], Path(args[1])
    out_root.mkdir(parents=True, exist_ok=False)  # a new folder: the targets must not exist
    QI = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship",
          "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]
    client = local_cluster(n_workers=2, memory_limit="2GB")
    orig_grow = api.grow  # the driver calls grow on the client: a partial sets its budgets
    ag = dict(method="ag", label="income")
    configs = [  # (name, anonymize_dataset options, grow options)
        ("ag_k100", dict(ag, k=100), None),
        ("ag_k5", dict(ag, k=5), None),
        ("ag_k100_levelwise20k", dict(ag, k=100), dict(local_rows=20000)),
        ("ag_k20_levelwise5k_cells", dict(ag, k=20), dict(local_rows=5000, local_cells=200000)),
        # the refinement's roots over local_cells at once: every root finished in memory
        # straight from the binned partitions (session 9)
        ("ag_k100_cells200k", dict(ag, k=100), dict(local_cells=200000)),
        ("mondrian_k100", dict(method="mondrian", k=100), None),
        ("mondrian_k50_levelwise20k", dict(method="mondrian", k=50), dict(local_rows=20000)),
        ("mondrian_label_k100", dict(method="mondrian", label="income", k=100), None),
        # the l and t merges (session 8): they follow the group numbers, which the grafted
        # local subtrees changed before the tree was numbered level by level
        ("mondrian_k50_l2", dict(method="mondrian", k=50, sensitive="income", l=2), None),
        ("mondrian_k50_l2_levelwise20k", dict(method="mondrian", k=50, sensitive="income", l=2),
         dict(local_rows=20000)),
        ("mondrian_k50_t005_levelwise20k",
         dict(method="mondrian", k=50, sensitive="income", t=0.05), dict(local_rows=20000)),
    ]
    only = set(args[2:])  # optional: the names of the configurations to run
    configs = [c for c in configs if not only or c[0] in only]
    res = {}
    for name, kw, gopt in configs:
        api.grow = functools.partial(orig_grow, **gopt) if gopt else orig_grow
        target = out_root / name
        r = anonymize_dataset(src, target, quasi_identifiers=QI, client=client, **kw)
        h = hashlib.sha256()
        files = sorted(os.listdir(target))
        for f in files:
            df = pd.read_parquet(target / f)
            h.update(f.encode())
            h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
            h.update(repr(list(zip(df.columns, map(str, df.dtypes)))).encode())
        res[name] = dict(digest=h.hexdigest(), files=files, groups=r.n_groups,
                         min=r.min_class_size, levels=r.n_levels,
                         seconds={k: round(v, 1) for k, v in r.seconds.items()})
        print(name, res[name], flush=True)
    (out_root / "digest.json").write_text(json.dumps(res, indent=1) + "\n")
    client.close()


if __name__ == "__main__":
    main()
