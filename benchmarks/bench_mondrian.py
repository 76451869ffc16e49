"""Speed and information loss of MondrianAnonymizer.fit_transform (issue 3 targets).

1. Adult train (32,561 rows, 12 QI), k in 10/100/1000, strict, relaxed, strict cut along the
   Adult hierarchies of the categorical QIs, and InfoGain Mondrian on the true labels: the
   median of several runs of the whole ``fit_transform`` (input checks, encoding, partitioning,
   representatives, recoding and the independent k-anonymity check), with the process CPU time
   next to the wall time (the machine is shared: CPU time is what an idle machine would take).
2. Information loss at k=10: GCP (Ghinita et al. 2007: NCP averaged over rows and QIs) with
   numeric QIs measured by ranges and categorical QIs as sets (#distinct / domain when more than
   one value), and again with the categorical QIs measured in the Adult hierarchies; for the
   12-QI and the 8-QI sets.
3. Scale: Adult train resampled with jitter (as in bench_accuracy_guided.py) to 100k, 300k and
   1M rows, k=100, strict and relaxed: seconds and seconds per million rows.

Usage::

    python benchmarks/bench_mondrian.py            # everything (a few minutes)
    python benchmarks/bench_mondrian.py --quick    # Adult only

Writes benchmarks/results/mondrian.json and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonml.anonymize._mondrian import MondrianAnonymizer
from anonml.datasets import load_adult, load_adult_hierarchies

sys.path.insert(0, str(Path(__file__).parent))
from bench_accuracy_guided import resample  # the same jittered resampling

try:
    from anonml.privacy import gcp as _gcp
except ImportError:  # before anonml.privacy metrics existed: the same formula, locally
    _gcp = None

STEPS = ("check_and_encode", "partition", "representatives", "recode", "verify")


def gcp(X: pd.DataFrame, groups: np.ndarray, qi: list, categorical: list, hierarchies: dict) -> float:
    """GCP of the partition ``groups`` of ``X`` (numeric QIs by range, categorical QIs by their
    hierarchy if given, else as sets)."""
    if _gcp is not None:
        return float(_gcp(X, groups, qi, categorical=categorical, hierarchies=hierarchies))
    n_groups = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=n_groups)
    total = np.zeros(n_groups)
    for c in qi:
        if c in hierarchies:
            h = hierarchies[c]
            leaves = h.leaf_codes(X[c].to_numpy(dtype=object))
            lev, node = h.common_ancestor(leaves, groups, n_groups)
            share = np.zeros(n_groups)
            for L in np.unique(lev[lev > 0]):
                sel = lev == L
                share[sel] = h.subtree_size(int(L))[node[sel]] / h.n_leaves
            total += share
        elif c in categorical:
            codes, uniq = pd.factorize(X[c], use_na_sentinel=False)
            m = len(uniq)
            distinct = (np.bincount(groups * m + codes, minlength=n_groups * m)
                        .reshape(n_groups, m) > 0).sum(1)
            total += np.where(distinct > 1, distinct / m, 0.0)
        else:
            v = X[c].to_numpy(dtype=np.float64)
            lo = np.full(n_groups, np.inf)
            hi = np.full(n_groups, -np.inf)
            np.minimum.at(lo, groups, v)
            np.maximum.at(hi, groups, v)
            span = v.max() - v.min()
            total += (hi - lo) / span if span > 0 else 0.0
    return float((sizes * total).sum() / (len(groups) * len(qi)))


def time_fit(X, y, qi, k, repeats, **params):
    runs = []
    for _ in range(repeats):
        m = MondrianAnonymizer(k=k, quasi_identifiers=qi, **params)
        t, c = time.perf_counter(), time.process_time()
        m.fit_transform(X, y)
        runs.append((time.perf_counter() - t, time.process_time() - c, dict(m.timings_), m))
    runs.sort(key=lambda r: r[0])
    wall, cpu, steps, m = runs[len(runs) // 2]
    return m, {
        "seconds": wall, "cpu_seconds": cpu, "steps": steps, "groups": int(m.n_groups_),
        "depth": int(m.depth_), "runs": [r[0] for r in runs], "cpu_runs": [r[1] for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "mondrian.json"))
    args = parser.parse_args()

    data = load_adult()
    X, _, y, _ = data.train_test_split()
    qi = list(data.qi_sets["12"])
    categorical = [c for c in qi if not pd.api.types.is_numeric_dtype(X[c])]
    cat_hier = {c: h for c, h in load_adult_hierarchies().items() if c in categorical}
    record = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "pandas": pd.__version__,
                    "load_average_start": os.getloadavg()},
        "adult": [], "quality": [], "scale": [],
    }
    variants = {
        "strict": ({}, None),
        "relaxed": ({"mode": "relaxed"}, None),
        "strict+hierarchies": ({"hierarchies": cat_hier}, None),
        "infogain": ({"criterion": "infogain"}, y),
    }

    print(f"## Adult train, 32,561 rows, 12 QI (median of {args.repeats} runs)\n")
    print("| variant | k | groups | depth | seconds (wall) | CPU seconds | partition share | "
          + " | ".join(STEPS[2:]) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(STEPS[2:]))
    for name, (params, yy) in variants.items():
        for k in (10, 100, 1000):
            _, r = time_fit(X, yy, qi, k, args.repeats, **params)
            record["adult"].append({"variant": name, "k": k, **r})
            share = r["steps"]["partition"] / r["seconds"]
            rest = " | ".join(f"{r['steps'][s]:.3f}" for s in STEPS[2:])
            print(f"| {name} | {k} | {r['groups']} | {r['depth']} | {r['seconds']:.3f} | "
                  f"{r['cpu_seconds']:.3f} | {share:.0%} | {rest} |")

    print("\n## Information loss at k=10: GCP (numeric QIs by range)\n")
    print("| QI set | variant | groups | GCP, categorical as sets | "
          "GCP, categorical in the Adult hierarchies |")
    print("|---|---|---:|---:|---:|")
    for qset in ("12", "8"):
        q = list(data.qi_sets[qset])
        cat_q = [c for c in q if c in categorical]
        hier_q = {c: h for c, h in cat_hier.items() if c in q}
        for name, params in (("strict", {}), ("relaxed", {"mode": "relaxed"}),
                             ("strict+hierarchies", {"hierarchies": hier_q}),
                             ("relaxed+hierarchies", {"mode": "relaxed", "hierarchies": hier_q})):
            m = MondrianAnonymizer(k=10, quasi_identifiers=q, **params)
            m.fit_transform(X)
            flat = gcp(X, m.groups_, q, cat_q, {})
            hier = gcp(X, m.groups_, q, cat_q, hier_q)
            record["quality"].append({"qi_set": qset, "variant": name, "k": 10,
                                      "groups": int(m.n_groups_), "gcp_sets": flat,
                                      "gcp_hierarchies": hier})
            print(f"| {qset} | {name} | {m.n_groups_} | {flat:.1%} | {hier:.1%} |")

    if not args.quick:
        print("\n## Scale: Adult resampled with jitter, k=100\n")
        print("| mode | rows | groups | depth | seconds (wall) | CPU seconds | CPU s per 1M rows "
              "| partition share |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for mode in ("strict", "relaxed"):
            for n in (100_000, 300_000, 1_000_000):
                Xn, _ = resample(X, y, n)
                _, r = time_fit(Xn, None, qi, 100, 3 if n < 1_000_000 else 2, mode=mode)
                record["scale"].append({"mode": mode, "rows": n, "k": 100, **r})
                print(f"| {mode} | {n:,} | {r['groups']} | {r['depth']} | {r['seconds']:.2f} | "
                      f"{r['cpu_seconds']:.2f} | {r['cpu_seconds'] / n * 1e6:.2f} | "
                      f"{r['steps']['partition'] / r['seconds']:.0%} |")

    record["machine"]["load_average_end"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nload average (1, 5, 15 min) at start {record['machine']['load_average_start']}, "
          f"at end {record['machine']['load_average_end']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
