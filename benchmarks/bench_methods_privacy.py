"""Every anonymizer x every privacy model on Adult, each output checked independently (issue 14).

Methods: AccuracyGuidedAnonymizer (``ag``), MondrianAnonymizer, HilbertAnonymizer (exact
dynamic program ``hilbert-dp`` and ``hilbert-greedy``), RTreeAnonymizer, SaNGreeAAnonymizer.

Privacy models, all at k = 50 on Adult train (32,561 rows):

* ``k``: k-anonymity only, the 12 QIs of the other benchmarks;
* on a **binary** sensitive attribute, the income label (added as a column ``income``; the 12
  QIs): distinct l = 2, entropy l = 1.5, recursive (c = 4, l = 2), and t = 0.2 with the equal,
  ordered and hierarchical distance (hierarchy: both values under ``*``). The whole table is
  only entropy 1.74-diverse and recursive (c, 2)-diverse for c > 3.15, hence these values;
* on a **many-valued** sensitive attribute, ``occupation`` (15 values; the other 11 QIs):
  distinct, entropy and recursive (c = 3) l = 3, and t = 0.2 with the equal, ordered (values in
  text order) and hierarchical distance (``load_adult_hierarchies()["occupation"]``).

Options: ``--options default`` (the default) runs every configuration with
``recoding="representative"`` and no suppression; ``--options all`` adds, for every method and
model, suppression 2 % and generalized recoding (both alone and together).

Each configuration runs in a child process (forked) with a time limit (``--timeout``, default
120 s): a configuration past it is recorded as ``> limit``. Timed: ``fit_transform``, wall and
CPU seconds of the child. Then the output is checked by code written here, not the library's:
classes from a pandas ``groupby`` over the QI columns of the output (missing values, i.e.
suppressed QIs, are a value), k from the class sizes, l and the EMD from the per-class counts of
the sensitive values (the formulas of Machanavajjhala et al. 2007 and Li et al. 2007, written
out below), and non-QI columns must be unchanged.

Usage::

    python benchmarks/bench_methods_privacy.py                   # 78 configurations
    python benchmarks/bench_methods_privacy.py --only hilbert    # names matching a regex
    python benchmarks/bench_methods_privacy.py --options all     # x4 option variants

Writes benchmarks/results/methods_privacy.json (``--out``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonml.anonymize import (
    AccuracyGuidedAnonymizer,
    HilbertAnonymizer,
    MondrianAnonymizer,
    RTreeAnonymizer,
    SaNGreeAAnonymizer,
)
from anonml.datasets import load_adult, load_adult_hierarchies
from anonml.hierarchies import Hierarchy

K = 50
T = 0.2

METHODS = {
    "ag": lambda **kw: AccuracyGuidedAnonymizer(**kw),
    "mondrian": lambda **kw: MondrianAnonymizer(**kw),
    "hilbert-dp": lambda **kw: HilbertAnonymizer(method="dp", **kw),
    "hilbert-greedy": lambda **kw: HilbertAnonymizer(method="greedy", **kw),
    "rtree": lambda **kw: RTreeAnonymizer(**kw),
    "sangreea": lambda **kw: SaNGreeAAnonymizer(**kw),
}

# sensitive attribute -> {model name: parameters}
BINARY = "income"
MANY = "occupation"
MODELS = {
    None: {"k": {}},
    BINARY: {
        "distinct-l2": {"l": 2, "l_kind": "distinct"},
        "entropy-l1.5": {"l": 1.5, "l_kind": "entropy"},
        "recursive-c4-l2": {"l": 2, "l_kind": "recursive", "c": 4},
        "t0.2-equal": {"t": T, "t_distance": "equal"},
        "t0.2-ordered": {"t": T, "t_distance": "ordered"},
        "t0.2-hierarchical": {"t": T, "t_distance": "hierarchical"},
    },
    MANY: {
        "distinct-l3": {"l": 3, "l_kind": "distinct"},
        "entropy-l3": {"l": 3, "l_kind": "entropy"},
        "recursive-c3-l3": {"l": 3, "l_kind": "recursive", "c": 3},
        "t0.2-equal": {"t": T, "t_distance": "equal"},
        "t0.2-ordered": {"t": T, "t_distance": "ordered"},
        "t0.2-hierarchical": {"t": T, "t_distance": "hierarchical"},
    },
}
OPTIONS = {
    "rep": {},
    "rep+supp": {"suppression": 0.02},
    "gen": {"recoding": "generalize"},
    "gen+supp": {"recoding": "generalize", "suppression": 0.02},
}

DATA: dict = {}


def load() -> None:
    data = load_adult()
    X, _, y, _ = data.train_test_split()
    qi12 = list(data.qi_sets["12"])
    table = X.copy()
    table[BINARY] = np.asarray(y)
    hier = load_adult_hierarchies()
    DATA.update(
        table=table,
        y=np.asarray(y),
        qi={None: qi12, BINARY: qi12, MANY: [c for c in qi12 if c != MANY]},
        hierarchies={
            BINARY: {BINARY: Hierarchy.flat(sorted(pd.unique(table[BINARY])), name=BINARY)},
            MANY: {MANY: hier[MANY]},
        },
    )


def configurations(options: list[str]) -> list[dict]:
    out = []
    for method in METHODS:
        for sensitive, models in MODELS.items():
            for model, params in models.items():
                for opt in options:
                    label = "k" if sensitive is None else f"{sensitive}:{model}"
                    out.append(dict(name=f"{method} | {label} | {opt}", method=method,
                                    sensitive=sensitive, model=model, params=params, option=opt))
    return out


# -- the independent check ----------------------------------------------------------------------
def _ordered_codes(values: pd.Series) -> tuple[np.ndarray, int]:
    """Codes 0..m-1 in increasing value order (text order for strings)."""
    uniq = sorted(pd.unique(values), key=lambda v: (isinstance(v, str), v))
    index = {v: i for i, v in enumerate(uniq)}
    return np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values)), len(uniq)


def _hier_emd(p: np.ndarray, q: np.ndarray, leaves: list, hierarchy: Hierarchy) -> np.ndarray:
    """Li et al. 2007, Sec. 4.2, written out over the hierarchy's table of ancestors: every
    internal node N of height h costs h/H * min(sum of its children's positive extras, sum of
    their negative extras), where extra(node) = sum over its leaves of p - q. One value per row
    of ``p`` (G, m)."""
    table = hierarchy.to_frame().astype(str)
    H = table.shape[1] - 1
    row_of = {v: i for i, v in enumerate(table.iloc[:, 0])}
    paths = [tuple(table.iloc[row_of[str(v)]]) for v in leaves]  # leaf .. root, per leaf
    diff = p - q[None, :]
    total = np.zeros(p.shape[0])
    for h in range(1, H + 1):
        parents = sorted({path[h:] for path in paths})
        for parent in parents:
            kids = sorted({path[h - 1:] for path in paths if path[h:] == parent})
            extra = np.stack([diff[:, [i for i, path in enumerate(paths) if path[h - 1:] == kid]]
                              .sum(axis=1) for kid in kids], axis=1)
            pos = np.where(extra > 0, extra, 0).sum(axis=1)
            neg = -np.where(extra < 0, extra, 0).sum(axis=1)
            total += h / H * np.minimum(pos, neg)
    return total


def check(out: pd.DataFrame, inp: pd.DataFrame, qi: list, sensitive, params: dict, hierarchies) -> dict:
    """Independent verification; returns the achieved figures, raises AssertionError."""
    assert list(out.columns) == list(inp.columns), "columns changed"
    assert out.shape[0] == inp.shape[0], "rows changed"
    for col in inp.columns:
        if col not in qi:
            assert out[col].equals(inp[col]), f"non-QI column {col!r} changed"
    cls = out.groupby(qi, dropna=False, sort=False).ngroup().to_numpy()
    assert (cls >= 0).all()
    sizes = np.bincount(cls)
    got = {"classes": int(sizes.size), "min_class": int(sizes.min())}
    assert sizes.min() >= K, f"a class of {sizes.min()} rows < k={K}"
    if sensitive is None:
        return got
    s = inp[sensitive]
    codes, m = _ordered_codes(s)
    counts = np.zeros((sizes.size, m))
    np.add.at(counts, (cls, codes), 1.0)
    p = counts / sizes[:, None]
    if "l" in params:
        l, kind = params["l"], params["l_kind"]
        if kind == "distinct":
            worst = int((counts > 0).sum(axis=1).min())
            assert worst >= l, f"distinct l {worst} < {l}"
        elif kind == "entropy":
            ent = np.array([-sum(x * math.log(x) for x in row if x > 0) for row in p])
            worst = float(np.exp(ent.min()))
            assert ent.min() >= math.log(l) - 1e-9, f"entropy l {worst} < {l}"
        else:
            c = params["c"]
            for row in counts:
                r = sorted(row, reverse=True)
                assert r[0] < c * sum(r[l - 1:]), f"recursive (c={c}, l={l}) fails for {r}"
            worst = l
        got["l"] = worst
    if "t" in params:
        q = np.bincount(codes, minlength=m) / codes.size
        dist = params["t_distance"]
        if dist == "equal":
            e = 0.5 * np.abs(p - q).sum(axis=1)
        elif dist == "ordered":
            e = np.abs(np.cumsum(p - q, axis=1)[:, :-1]).sum(axis=1) / (m - 1)
        else:
            leaves = sorted(pd.unique(s), key=lambda v: (isinstance(v, str), v))
            e = _hier_emd(p, q, leaves, hierarchies[sensitive])
        got["t"] = float(e.max())
        assert e.max() <= T + 1e-9, f"EMD {e.max()} > t={T}"
    return got


# -- one configuration in a child process ------------------------------------------------------------
def _child(cfg: dict, conn) -> None:
    try:
        sensitive = cfg["sensitive"]
        qi = DATA["qi"][sensitive]
        table = DATA["table"] if sensitive is not None else DATA["table"].drop(columns=[BINARY])
        if sensitive is not None and sensitive != BINARY:
            table = table.drop(columns=[BINARY])
        kw = dict(k=K, quasi_identifiers=qi, **cfg["params"], **OPTIONS[cfg["option"]])
        if sensitive is not None:
            kw.update(sensitive=sensitive, hierarchies=DATA["hierarchies"][sensitive])
        est = METHODS[cfg["method"]](**kw)
        w, c = time.perf_counter(), time.process_time()
        out = est.fit_transform(table, DATA["y"])
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        got = check(out, table, qi, sensitive, cfg["params"],
                    DATA["hierarchies"].get(sensitive))
        conn.send({"status": "ok", "seconds": wall, "cpu_seconds": cpu,
                   "groups": int(est.n_groups_), "gcp": getattr(est, "gcp_", None),
                   "search_extent": getattr(est, "search_extent_", None), **got})
    except AssertionError as exc:
        conn.send({"status": "WRONG", "error": str(exc)})
    except Exception as exc:  # noqa: BLE001 - recorded, not raised
        conn.send({"status": "error", "error": f"{type(exc).__name__}: {exc}"[:300]})
    finally:
        conn.close()


def run(cfg: dict, timeout: float) -> dict:
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(cfg, send))
    w = time.perf_counter()
    proc.start()
    send.close()
    res = None
    if recv.poll(timeout):
        try:
            res = recv.recv()
        except EOFError:
            res = {"status": "error", "error": "child died"}
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if res is None:
        res = {"status": "timeout", "seconds": time.perf_counter() - w}
    return {**{k: v for k, v in cfg.items() if k != "params"}, "params": cfg["params"], **res}


def fmt(r: dict, timeout: float) -> str:
    if r["status"] == "timeout":
        return f"> {timeout:g}"
    if r["status"] != "ok":
        return r["status"]
    return f"{r['seconds']:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--only", default=None, help="regex on the configuration name")
    parser.add_argument("--options", default="default", choices=["default", "all"])
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "methods_privacy.json"))
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="print a before/after table of two result files, run nothing")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    load()
    options = ["rep"] if args.options == "default" else list(OPTIONS)
    cfgs = configurations(options)
    if args.only:
        cfgs = [c for c in cfgs if re.search(args.only, c["name"])]
    results = []
    load_before = os.getloadavg()
    for cfg in cfgs:
        r = run(cfg, args.timeout)
        r["load_avg_after"] = os.getloadavg()[0]
        results.append(r)
        extra = r.get("error", "")
        print(f"{cfg['name']:<55} {fmt(r, args.timeout):>8}  cpu {r.get('cpu_seconds', float('nan')):7.2f}"
              f"  {r.get('groups', '')} {extra}", file=sys.stderr, flush=True)
    meta = {
        "k": K, "t": T, "rows": int(DATA["table"].shape[0]), "timeout": args.timeout,
        "python": platform.python_version(), "numpy": np.__version__, "pandas": pd.__version__,
        "cpus": os.cpu_count(), "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=str))

    print(f"\nAdult train, k={K}, t={T}; seconds of fit_transform (wall), limit {args.timeout:g} s; "
          f"load average {load_before[0]:.2f} before\n")
    print("| method | sensitive | model | options | seconds | CPU s | groups | checked |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for r in results:
        check_s = "ok" if r["status"] == "ok" else r["status"]
        print(f"| {r['method']} | {r['sensitive'] or '-'} | {r['model']} | {r['option']} | "
              f"{fmt(r, args.timeout)} | {r.get('cpu_seconds', float('nan')):.2f} | "
              f"{r.get('groups', '')} | {check_s} |")
    bad = [r for r in results if r["status"] != "ok"]
    slow = [r for r in results if r["status"] == "ok" and r["seconds"] > 60]
    print(f"\n{len(results)} configurations, {len(results) - len(bad)} checked correct, "
          f"{len(bad)} not ({', '.join(sorted({r['status'] for r in bad}))}), {len(slow)} over 60 s")


def compare(before: str, after: str) -> None:
    """Markdown table of two result files (same configurations), wall and CPU seconds."""
    b, a = (json.loads(Path(p).read_text()) for p in (before, after))
    old = {r["name"]: r for r in b["results"]}

    def cell(r: dict | None, key: str, limit: float) -> str:
        if r is None:
            return "-"
        if r["status"] == "timeout":
            return f"> {limit:g}" if key == "seconds" else "-"
        if r["status"] != "ok":
            return r["status"]
        return f"{r[key]:.2f}"

    print("| method | sensitive | model | options | before s | before CPU s | after s | "
          "after CPU s | groups before / after | checked |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|")
    for r in a["results"]:
        o = old.get(r["name"])
        tb, ta = b["meta"]["timeout"], a["meta"]["timeout"]
        print(f"| {r['method']} | {r['sensitive'] or '-'} | {r['model']} | {r['option']} | "
              f"{cell(o, 'seconds', tb)} | {cell(o, 'cpu_seconds', tb)} | "
              f"{cell(r, 'seconds', ta)} | {cell(r, 'cpu_seconds', ta)} | "
              f"{(o or {}).get('groups', '-')} / {r.get('groups', '-')} | "
              f"{'ok' if r['status'] == 'ok' else r['status']} |")


if __name__ == "__main__":
    main()
