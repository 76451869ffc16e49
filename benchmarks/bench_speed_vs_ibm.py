"""AccuracyGuidedAnonymizer against IBM ai-privacy-toolkit (apt) on Adult: seconds, side by side
in one run (issue 21, item 6: AG at k=10 at least 50x faster than apt).

Contenders, each in its own subprocess and in turns (round 1: all of them, round 2: all of
them, ...), so that a change in the machine's load hits every one alike:

* ``anonml`` -- this worktree's ``src`` (``AccuracyGuidedAnonymizer`` with the library defaults:
  ``tree="auto"``, i.e. the exact scikit-learn tree on 32,561 rows, ``refine="mondrian"``), timed
  over the whole ``fit_transform`` (checks, tree, representatives, recoding, verification of the
  output, the release copy's routing tree);
* ``anonml-before`` -- the same with another ``src`` folder (``--before-src``, e.g.
  /work/main/src), if given;
* ``apt`` -- ``apt.anonymization.Anonymize(k, QI, categorical_features=..., train_only_QI=False)``
  on the same rows, run by ``--apt-python`` (apt 0.2.1 needs scikit-learn < 1.4, so it lives in
  its own venv: see bench_vs_ibm_apt.py for how it is built), timed over ``anonymize``.

Every subprocess loads the data first, runs one untimed call (imports, first-call caches), then
``--inner`` timed calls; the figure is the median of all timed calls of all rounds. Adult train
(the published split), the paper's 12 QIs, the true labels as the guide.

Usage::

    python benchmarks/bench_speed_vs_ibm.py --apt-python /tmp/apt/bin/python \\
        --before-src /work/main/src --ks 10 --rounds 3

Writes benchmarks/results/speed_vs_ibm.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADULT = HERE.parent / "src" / "anonml" / "datasets" / "data" / "adult.csv.gz"
FEATURES = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship",
            "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]

_LOAD = f"""
import json, sys, time
import pandas as pd
df = pd.read_csv({str(ADULT)!r})
train = df[df["split"] == "train"]
FEATURES = {FEATURES!r}
X = train[FEATURES].reset_index(drop=True)
y = train["income"].str.startswith(">").astype(int)
k, inner = int(sys.argv[1]), int(sys.argv[2])
"""

_ANONML = _LOAD + """
from anonml import AccuracyGuidedAnonymizer
def once():
    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=FEATURES, random_state=0)
    t = time.perf_counter()
    out = ag.fit_transform(X, y)
    return time.perf_counter() - t, ag, out
once()
runs, steps = [], []
for _ in range(inner):
    s, ag, out = once()
    runs.append(s)
    steps.append(ag.timings_)
print(json.dumps({"seconds": runs, "steps": steps, "groups": int(ag.n_groups_),
                  "classes": int(out.groupby(FEATURES, dropna=False).ngroups),
                  "smallest_class": int(ag.min_class_size_), "tree": ag.tree_method_}))
"""

_APT = _LOAD + """
import numpy as np
from apt.anonymization import Anonymize
from apt.utils.datasets import ArrayDataset
cat = [c for c in FEATURES if not pd.api.types.is_numeric_dtype(X[c])]
yy = y.to_numpy()
def once():
    a = Anonymize(k, FEATURES, categorical_features=cat, train_only_QI=False)
    t = time.perf_counter()
    out = a.anonymize(ArrayDataset(X, yy))
    return time.perf_counter() - t, out
once()
runs = []
for _ in range(inner):
    s, out = once()
    runs.append(s)
sizes = pd.DataFrame(out).groupby(FEATURES, dropna=False).size()
print(json.dumps({"seconds": runs, "classes": int(sizes.size), "smallest_class": int(sizes.min())}))
"""


def run(python: str, code: str, k: int, inner: int, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([python, "-c", code, str(k), str(inner)], env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apt-python", required=True, help="python of the venv holding apt")
    parser.add_argument("--before-src", help="src folder of the 'before' anonml, if any")
    parser.add_argument("--ks", type=int, nargs="+", default=[10])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inner", type=int, default=3, help="timed calls per subprocess")
    parser.add_argument("--out", default=str(HERE / "results" / "speed_vs_ibm.json"))
    args = parser.parse_args()

    contenders = [("anonml", sys.executable, _ANONML, str(HERE.parent / "src"))]
    if args.before_src:
        contenders.append(("anonml-before", sys.executable, _ANONML, args.before_src))
    contenders.append(("apt", args.apt_python, _APT, None))
    load = [Path("/proc/loadavg").read_text().split()[:3]]
    record: dict = {"before_src": args.before_src, "rounds": args.rounds, "inner": args.inner,
                    "runs": []}
    for k in args.ks:
        got: dict = {name: [] for name, *_ in contenders}
        last: dict = {}
        for _ in range(args.rounds):
            for name, python, code, path in contenders:
                r = run(python, code, k, args.inner, path)
                got[name] += r["seconds"]
                last[name] = r
        for name, *_ in contenders:
            record["runs"].append({"k": k, "contender": name, "median_s": statistics.median(
                got[name]), "seconds": got[name], **{x: v for x, v in last[name].items()
                                                     if x != "seconds"}})
    load.append(Path("/proc/loadavg").read_text().split()[:3])
    record["loadavg_before"], record["loadavg_after"] = (" ".join(x) for x in load)

    print(f"load average before {record['loadavg_before']}, after {record['loadavg_after']}\n")
    print("| k | contender | median s | runs | speed-up of apt time | classes | smallest class |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for k in args.ks:
        rows = [r for r in record["runs"] if r["k"] == k]
        apt = next(r["median_s"] for r in rows if r["contender"] == "apt")
        for r in rows:
            r["apt_over_this"] = apt / r["median_s"]
            print(f"| {k} | {r['contender']} | {r['median_s']:.3f} | {len(r['seconds'])} | "
                  f"{r['apt_over_this']:.1f}x | {r['classes']} | {r['smallest_class']} |")
        for r in rows:
            if "steps" in r:
                med = {s: statistics.median(d[s] for d in r["steps"]) for s in r["steps"][0]}
                print(f"\n{r['contender']} k={k} steps (median s): "
                      + ", ".join(f"{s} {v:.3f}" for s, v in med.items()))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
