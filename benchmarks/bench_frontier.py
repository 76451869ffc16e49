"""Speed of the privacy–utility frontier (issue 13, section 2): one run, every point measured.

Setting (the issue's speed target, <= 10 min on this 2-core machine):

* Adult, published split (32,561 training rows = the members, 16,281 test rows = the
  non-members), all 12 features as quasi-identifiers;
* ``estimator="random_forest"``: 100 trees, ``min_samples_leaf=2``, ``n_jobs=-1``, on one-hot
  categoricals and raw numerics (anonml._frontier._estimators);
* AG and Mondrian at k in {5, 10, 25, 50, 100, 250, 500, 1000}, the undefended model first and
  one DP forest (diffprivlib, ε = 1, 10 trees of depth 8) last;
* per point: refit, accuracy on raw and mapped test rows, NCP/GCP, RMIA with 4 reference
  models (shared: trained once), the worst-case attack (5 repetitions + 5 baseline) and the
  worst-case attribute attack (1,000 records per side, the 12 features): the frontier's
  defaults, half of the audit's.

``--compare N`` also runs, side by side in the same process, the first N anonymized points the
way a notebook would: :class:`anonml.attacks.RMIA` with its own 4 reference models per point,
and reports the per-point ratio of the RMIA step (shared / own) and the AUCs of both.

Usage::

    python benchmarks/bench_frontier.py               # the issue's run
    python benchmarks/bench_frontier.py --compare 2   # plus the unshared RMIA on 2 points
    python benchmarks/bench_frontier.py --quick       # k in {50, 500}, a look in ~2 minutes

Writes benchmarks/results/frontier.json (and frontier.csv/.png/.html beside it) and prints
a Markdown table. Wall and CPU seconds (the process, every thread) and the load average before
and after are recorded: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compare", type=int, default=0)
    ap.add_argument("--out", default=str(OUT / "frontier.json"))
    args = ap.parse_args()

    import sklearn

    import anonml
    from anonml.datasets import load_adult

    d = load_adult()
    f = d.frame
    train, test = f[d.split == "train"], f[d.split == "test"]
    X, y = train.drop(columns=d.target), train[d.target]
    Xt, yt = test.drop(columns=d.target), test[d.target]
    ks = (50, 500) if args.quick else (5, 10, 25, 50, 100, 250, 500, 1000)
    load0 = os.getloadavg()
    last = [None]

    def progress(done: int, total: int, what: str) -> None:
        if what.split(":")[0] != last[0]:
            last[0] = what.split(":")[0]
            print(f"[{time.perf_counter() - t0:7.1f}s] {done}/{total} {what}", file=sys.stderr,
                  flush=True)

    t0 = time.perf_counter()
    c0 = time.process_time()
    result = anonml.frontier(X, y, Xt, yt, quasi_identifiers=list(d.qi_sets["12"]),
                             estimator="random_forest", methods=("ag", "mondrian"), ks=ks,
                             n_reference=4, dp=True, dp_epsilon=1.0, random_state=0,
                             progress=progress)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    load1 = os.getloadavg()
    table = result.table
    record = {
        "setting": "Adult 12 QI, random_forest (100 trees, min_samples_leaf=2), ag+mondrian x "
                   f"k={list(ks)}, undefended + DP forest (eps=1), RMIA 4 shared reference "
                   "models, worst case 5 reps, attribute (1000/side)",
        "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "loadavg_before": load0, "loadavg_after": load1,
        "target_seconds": 600, "met": bool(wall <= 600),
        "python": platform.python_version(), "sklearn": sklearn.__version__,
        "cores": os.cpu_count(), "notes": result.notes,
        "recommend_accuracy_0.01": _try(lambda: result.recommend(accuracy_budget=0.01)),
        "recommend_auc_0.55": _try(lambda: result.recommend(risk_budget={"auc": 0.55})),
        "points": result.to_dict()["points"],
    }
    if args.compare:
        record["compare"] = _compare(result, X, y, Xt, yt, d, args.compare)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2, default=str))
    stem = out.with_suffix("")
    result.to_csv(f"{stem}.csv")
    result.plot(f"{stem}.png")
    result.to_html(f"{stem}.html")
    cols = ["method", "k", "epsilon", "accuracy", "accuracy_mapped", "gcp", "attack_auc",
            "tpr_at_0.1%_fpr", "worst_case_auc", "max_arr_low", "pareto", "seconds", "status"]
    print(_markdown(table[cols]))
    print(f"\nwall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {record['peak_rss_mb']} MB, "
          f"load {load0[0]:.2f} -> {load1[0]:.2f}; target <= 600 s: "
          f"{'met' if wall <= 600 else 'NOT met'}")
    print(record["recommend_accuracy_0.01"])
    print(record["recommend_auc_0.55"])
    if args.compare:
        for c in record["compare"]:
            print(c)


def _markdown(frame) -> str:
    """A Markdown table without the optional tabulate package."""
    def cell(v):
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is __import__("pandas").NA:
            return "–"
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * frame.shape[1]]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in frame.astype(object).itertuples(index=False)]
    return "\n".join(lines)


def _try(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a budget no point meets is a result too
        return f"none: {exc}"


def _compare(result, X, y, Xt, yt, d, n):
    """The notebook way on the first n anonymized points: RMIA with its own reference models."""
    from sklearn.base import clone

    from anonml.anonymize import AccuracyGuidedAnonymizer, MondrianAnonymizer
    from anonml.attacks import RMIA, Target
    from anonml._frontier._estimators import make_estimator
    from anonml._frontier._measure import SharedReference

    template = make_estimator("random_forest", X, 0)
    undefended = clone(template).fit(X, y)
    guide = undefended.predict(X)
    qi = list(d.qi_sets["12"])
    t = time.perf_counter()
    shared = SharedReference(Target(undefended, X, y, Xt, yt), template, 4, random_state=0)
    shared_train = time.perf_counter() - t
    out = []
    rows = result.table[result.table["k"].notna()].head(n)
    for _, r in rows.iterrows():
        cls = AccuracyGuidedAnonymizer if r["method"] == "ag" else MondrianAnonymizer
        anon = cls(k=int(r["k"]), quasi_identifiers=qi, random_state=0)
        Xa = anon.fit_transform(X, guide if r["method"] == "ag" else y)
        model = clone(template).fit(Xa, y)
        target = Target(model, X, y, Xt, yt)
        target.proba("train"), target.proba("test")
        t = time.perf_counter()
        auc_shared = shared.run(target).auc
        s_shared = time.perf_counter() - t
        t = time.perf_counter()
        auc_own = RMIA(4, n_jobs=1, random_state=0).run(target).auc
        s_own = time.perf_counter() - t
        out.append({"point": f"{r['method']} k={int(r['k'])}", "auc_shared": auc_shared,
                    "auc_own": auc_own, "seconds_shared_per_point": round(s_shared, 2),
                    "seconds_own_per_point": round(s_own, 2),
                    "seconds_shared_once": round(shared_train, 1),
                    "ratio_own_over_shared_per_point": round(s_own / max(s_shared, 1e-9), 1)})
    return out


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
