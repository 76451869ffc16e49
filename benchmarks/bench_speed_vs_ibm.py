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
``--inner`` timed calls (``--anonml-inner`` for the anonml contenders, whose calls are short:
more of them make their median steadier at no real cost); the figure is the median of all
timed calls of all rounds. The order of the contenders rotates from round to round, so that
none always runs first after another's exit. Adult train (the published split), the paper's 12
QIs, the true labels as the guide.

Besides the wall seconds, every timed call records the CPU seconds of its process
(``time.process_time``: what another process's load does not add) and the full (generation 2)
garbage collections that fell into it, with their seconds; and each round gives a ratio of its
own (apt's median / this contender's median in that round), whose median and range are
printed next to the ratio of the overall medians.

Usage::

    python benchmarks/bench_speed_vs_ibm.py --apt-python /tmp/apt/bin/python \\
        --before-src /work/main/src --ks 10 --rounds 3

    python benchmarks/bench_speed_vs_ibm.py --apt-python /tmp/apt/bin/python \\
        --ks 10 --rounds 7 --inner 1 --anonml-inner 5    # 7 apt calls, 35 of anonml

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
import gc, json, sys, time
import pandas as pd
_gc = []  # (generation, seconds) of every collection, for the timed calls' gen-2 count
def _gc_cb(phase, info):
    if phase == "start":
        _gc.append([info["generation"], time.perf_counter()])
    else:
        _gc[-1][1] = time.perf_counter() - _gc[-1][1]
gc.callbacks.append(_gc_cb)
def timed(call):
    del _gc[:]
    t, c = time.perf_counter(), time.process_time()
    out = call()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    full = [s for g, s in _gc if g == 2]
    return out, {{"wall": wall, "cpu": cpu, "gc2": len(full), "gc2_s": sum(full)}}
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
    out, t = timed(lambda: ag.fit_transform(X, y))
    return t, ag, out
once()
runs, steps = [], []
for _ in range(inner):
    t, ag, out = once()
    runs.append(t)
    steps.append(ag.timings_)
print(json.dumps({"calls": runs, "steps": steps, "groups": int(ag.n_groups_),
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
    out, t = timed(lambda: a.anonymize(ArrayDataset(X, yy)))  # (timed as in session 6-7)
    return t, out
once()
runs = []
for _ in range(inner):
    t, out = once()
    runs.append(t)
sizes = pd.DataFrame(out).groupby(FEATURES, dropna=False).size()
print(json.dumps({"calls": runs, "classes": int(sizes.size), "smallest_class": int(sizes.min())}))
"""


def run(python: str, code: str, k: int, inner: int, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([python, "-c", code, str(k), str(inner)], env=env, capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _med(xs: list) -> float:
    return statistics.median(xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apt-python", required=True, help="python of the venv holding apt")
    parser.add_argument("--before-src", help="src folder of the 'before' anonml, if any")
    parser.add_argument("--ks", type=int, nargs="+", default=[10])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inner", type=int, default=3, help="timed calls per subprocess")
    parser.add_argument("--anonml-inner", type=int,
                        help="timed calls per anonml subprocess (default: --inner)")
    parser.add_argument("--out", default=str(HERE / "results" / "speed_vs_ibm.json"))
    args = parser.parse_args()
    anonml_inner = args.anonml_inner or args.inner

    contenders = [("anonml", sys.executable, _ANONML, str(HERE.parent / "src"), anonml_inner)]
    if args.before_src:
        contenders.append(("anonml-before", sys.executable, _ANONML, args.before_src,
                           anonml_inner))
    contenders.append(("apt", args.apt_python, _APT, None, args.inner))
    load = [Path("/proc/loadavg").read_text().split()[:3]]
    record: dict = {"before_src": args.before_src, "rounds": args.rounds, "inner": args.inner,
                    "anonml_inner": anonml_inner, "runs": [], "round_loadavg": []}
    for k in args.ks:
        got: dict = {name: [] for name, *_ in contenders}  # per round, the timed calls
        last: dict = {}
        for i in range(args.rounds):
            turn = contenders[i % len(contenders):] + contenders[:i % len(contenders)]
            for name, python, code, path, inner in turn:
                r = run(python, code, k, inner, path)
                got[name].append(r.pop("calls"))
                last[name] = r
            record["round_loadavg"].append(Path("/proc/loadavg").read_text().split()[0])
        apt_round = [_med([c["wall"] for c in calls]) for calls in got["apt"]]
        apt_cpu = _med([c["cpu"] for calls in got["apt"] for c in calls])
        for name, *_ in contenders:
            calls = [c for rnd in got[name] for c in rnd]
            wall = [c["wall"] for c in calls]
            per_round = [a / _med([c["wall"] for c in rnd]) for a, rnd in zip(apt_round,
                                                                                got[name])]
            record["runs"].append({
                "k": k, "contender": name, "median_s": _med(wall), "seconds": wall,
                "cpu_s": [c["cpu"] for c in calls], "median_cpu_s": _med([c["cpu"] for c in calls]),
                "round_seconds": [[c["wall"] for c in rnd] for rnd in got[name]],
                "apt_over_this_per_round": per_round,
                "gc2_in_timed_calls": sum(c["gc2"] for c in calls),
                "gc2_s_in_timed_calls": sum(c["gc2_s"] for c in calls),
                "apt_cpu_over_this_cpu": apt_cpu / _med([c["cpu"] for c in calls]),
                **last[name]})
    load.append(Path("/proc/loadavg").read_text().split()[:3])
    record["loadavg_before"], record["loadavg_after"] = (" ".join(x) for x in load)

    print(f"load average before {record['loadavg_before']}, after {record['loadavg_after']}; "
          f"1-min load after each round: {', '.join(record['round_loadavg'])}\n")
    print("| k | contender | timed calls | median s (min-max) | apt / this (medians) | "
          "apt / this per round: median (min-max) | median CPU s | apt / this (CPU) | "
          "gen-2 gc in timed calls | classes | smallest class |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in args.ks:
        rows = [r for r in record["runs"] if r["k"] == k]
        apt = next(r["median_s"] for r in rows if r["contender"] == "apt")
        for r in rows:
            r["apt_over_this"] = apt / r["median_s"]
            pr = r["apt_over_this_per_round"]
            print(f"| {k} | {r['contender']} | {len(r['seconds'])} | {r['median_s']:.3f} "
                  f"({min(r['seconds']):.3f}-{max(r['seconds']):.3f}) | "
                  f"{r['apt_over_this']:.1f}x | {_med(pr):.1f}x ({min(pr):.1f}-{max(pr):.1f}) | "
                  f"{r['median_cpu_s']:.3f} | {r['apt_cpu_over_this_cpu']:.1f}x | "
                  f"{r['gc2_in_timed_calls']} ({r['gc2_s_in_timed_calls']:.3f} s) | "
                  f"{r['classes']} | {r['smallest_class']} |")
        for r in rows:
            if "steps" in r:
                med = {s: _med([d[s] for d in r["steps"]]) for s in r["steps"][0]}
                print(f"\n{r['contender']} k={k} steps of the last round (median s): "
                      + ", ".join(f"{s} {v:.3f}" for s, v in med.items()))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
