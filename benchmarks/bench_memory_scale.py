"""In-memory scaling of AccuracyGuidedAnonymizer: CPU seconds per million rows and peak memory.

Issue 12's in-memory target: AG (k=100, 12 QI, Adult resampled with jitter as in
``bench_accuracy_guided.py``) must cost the same CPU seconds per million rows at 20M rows as at
1M (within 15 %), with peak memory at most 2x the input frame.

Every (code version, size) runs in its own subprocess, so that peaks do not mix:

* the table is built first (in chunks); what its construction left freed in the allocators
  is given back (``settle``: ``gc.collect``, Arrow's ``release_unused``, glibc's
  ``malloc_trim``; recorded as ``settled_bytes``, with ``rss_built_bytes`` the RSS before it;
  from session 9 on, earlier results were measured without it), then the peak-RSS mark of
  the process is reset (``/proc/self/clear_refs``) so that only ``fit_transform`` is
  measured;
* CPU seconds are user + system time of the process during ``fit_transform``
  (``resource.getrusage``), wall seconds from ``time.perf_counter``;
* peak RSS is ``VmHWM`` after the fit; the input frame's size is ``memory_usage(deep=True)``;
  the ratio reported is peak RSS / input frame (the issue's measure), and the working memory
  (peak RSS minus RSS before the fit) / input frame as well.

"before" is the code at ``--before`` (default: ``main``), exported with ``git archive`` into a
temporary folder; "after" is this worktree's ``src``. Both run in the same invocation.
``--copy true false`` also runs "after" with ``copy=False`` (the QI columns recoded in the
input frame itself, issue 21 item 6); "before" runs with the default only.

Usage::

    python benchmarks/bench_memory_scale.py                      # 1M, 10M, 20M, before and after
    python benchmarks/bench_memory_scale.py --sizes 1M 5M --versions after
    python benchmarks/bench_memory_scale.py --sizes 5M --copy true false --before c88fdad

Writes benchmarks/results/memory_scale.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _status(field: str) -> int:
    """A field of /proc/self/status in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _user_system() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def _cpu() -> float:
    return sum(_user_system())


def build_table(n: int, seed: int = 0):
    """Adult train resampled with jitter to ``n`` rows, built in chunks of 2M rows."""
    import pandas as pd

    sys.path.insert(0, str(HERE))
    from bench_accuracy_guided import resample

    from anonml.datasets import load_adult

    data = load_adult()
    X, _, y, _ = data.train_test_split()
    qi = list(data.qi_sets["12"])
    X = X[qi]
    if n <= 2_000_000:
        Xn, yn = resample(X, y, n, seed)
        return Xn, yn, qi
    parts_X, parts_y = [], []
    for i, start in enumerate(range(0, n, 2_000_000)):
        Xc, yc = resample(X, y, min(2_000_000, n - start), seed * 1_000_003 + i)
        parts_X.append(Xc)
        parts_y.append(yc)
    Xn = pd.concat(parts_X, ignore_index=True)
    del parts_X
    yn = pd.concat(parts_y, ignore_index=True)
    del parts_y
    # (RangeIndex.equals compares the ranges: ``Xn.index == np.arange(n)`` would cache the
    # index's n int64 values on it, 8 bytes a row held through the fit and not counted by
    # ``memory_usage``)
    assert Xn.index.equals(pd.RangeIndex(n))
    return Xn, yn, qi


def settle() -> int:
    """Give back what building the table left freed in the allocators: ``gc.collect()``,
    Arrow's memory pool's ``release_unused()`` and glibc's ``malloc_trim(0)``. A process
    that read the table from a file would not hold the construction's leftovers; the input
    frame, the labels and every live object stay. Returns the bytes of RSS given back."""
    import ctypes

    import pyarrow as pa

    before = _status("VmRSS")
    gc.collect()
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    return before - _status("VmRSS")


def child(n: int, k: int, copy: bool = True) -> dict:
    """Run one measurement in this process (called in a subprocess)."""
    import anonml
    from anonml import AccuracyGuidedAnonymizer

    X, y, qi = build_table(n)
    frame_bytes = int(X.memory_usage(deep=True, index=True).sum())
    label_bytes = int(y.memory_usage(deep=True, index=True))
    rss_built = _status("VmRSS")
    settled = settle()  # the construction's leftovers, given back before the fit
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak-RSS mark (VmHWM)
    rss0 = _status("VmRSS")
    (u0, s0), t0 = _user_system(), time.perf_counter()
    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=qi, tree="hist", random_state=0,
                                  **({} if copy else {"copy": False}))
    out = ag.fit_transform(X, y)
    wall, (u1, s1) = time.perf_counter() - t0, _user_system()
    cpu = (u1 - u0) + (s1 - s0)
    assert copy or out is X  # copy=False: the input frame itself, recoded
    peak = _status("VmHWM")
    # what was released, to check that before and after give the same table and groups: per
    # column its dtype and factorization (codes in order of appearance, and the distinct
    # values), which stays small where hashing every cell would copy the text columns
    import hashlib

    import numpy as np
    import pandas as pd

    digest = hashlib.sha256(np.asarray(ag.groups_, dtype=np.int64).tobytes())
    for c in out.columns:
        codes, uniques = pd.factorize(out[c], use_na_sentinel=True)
        digest.update(f"{c}|{out[c].dtype}|{list(uniques)!r}".encode())
        digest.update(codes.astype(np.int64).tobytes())
        del codes
    return {
        "rows": n, "k": k, "copy": copy, "anonml": str(Path(anonml.__file__).parent),
        "cpu_s": cpu, "wall_s": wall, "cpu_s_per_1M": cpu / n * 1e6,
        # (user: the code's own work; system: mostly the kernel zeroing fresh pages, which
        # varies from run to run more than it grows with the rows)
        "user_s_per_1M": (u1 - u0) / n * 1e6, "system_s_per_1M": (s1 - s0) / n * 1e6,
        "peak_rss_bytes": peak, "rss_before_fit_bytes": rss0, "frame_bytes": frame_bytes,
        "label_bytes": label_bytes, "rss_built_bytes": rss_built, "settled_bytes": settled,
        "peak_over_frame": peak / frame_bytes, "working_over_frame": (peak - rss0) / frame_bytes,
        "groups": int(ag.n_groups_), "min_class_size": int(ag.min_class_size_),
        "steps": {s: float(v) for s, v in ag.timings_.items()},
        "out_rows": int(out.shape[0]), "output_digest": digest.hexdigest()[:16],
    }


def export_before(rev: str, dest: Path) -> Path:
    """``git archive`` of ``src`` at ``rev`` into ``dest``; returns the src folder (``rev`` may
    also be a folder holding the package, e.g. /work/main/src: used as it is)."""
    if Path(rev).is_dir():
        return Path(rev)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def run_child(script: str, args: list) -> dict:
    """Run ``script`` with ``args`` in a fresh Python process and return the JSON dict its last
    line prints, with the load average before it started (``loadavg``); on failure, exit with
    the child's last error line."""
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    proc = subprocess.run([sys.executable, script, *map(str, args)], capture_output=True,
                          text=True)
    if proc.returncode:
        sys.exit(proc.stderr.strip().splitlines()[-1])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["loadavg"] = load
    return result


def parse_size(text: str) -> int:
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * mult)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1M", "10M", "20M"])
    parser.add_argument("--versions", nargs="+", default=["before", "after"],
                        choices=["before", "after"])
    parser.add_argument("--before", default="main",
                        help="git revision of the 'before' code, or a src folder")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--copy", nargs="+", default=["true"], choices=["true", "false"],
                        help="the anonymizer's copy= for 'after' (false: recode in place)")
    parser.add_argument("--out", default=str(HERE / "results" / "memory_scale.json"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-copy", default="true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(child(args.child, args.k, args.child_copy == "true")))
        return

    import numpy as np
    import pandas as pd

    record = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "pandas": pd.__version__},
        "before_rev": args.before if Path(args.before).is_dir() else subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", args.before],
            capture_output=True, text=True).stdout.strip(),
        "after_rev": subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                                    capture_output=True, text=True).stdout.strip(),
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        srcs = {"after": REPO / "src"}
        if "before" in args.versions:
            srcs["before"] = export_before(args.before, Path(tmp))
        print("| code | copy | rows | CPU s | CPU s per 1M rows (user + system) | wall s "
              "| peak RSS GB "
              "| input frame GB | peak / frame | RSS before fit / frame "
              "| (peak - RSS before fit) / frame | RSS given back before fit GB | groups "
              "| output digest | load average before → after |")
        print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
        runs = [(version, copy) for version in args.versions
                for copy in (args.copy if version == "after" else ["true"])]
        for text in args.sizes:
            n = parse_size(text)
            for version, copy in runs:
                env = dict(os.environ, PYTHONPATH=str(srcs[version]))
                load = Path("/proc/loadavg").read_text().split()[:3]
                proc = subprocess.run([sys.executable, __file__, "--child", str(n), "--k",
                                       str(args.k), "--child-copy", copy], env=env,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"| {version} | {copy} | {n:,} | failed: "
                          f"{proc.stderr.strip().splitlines()[-1]} |")
                    record["runs"].append({"version": version, "copy": copy, "rows": n,
                                           "error": proc.stderr})
                    continue
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                r["version"] = version
                r["loadavg_before"] = " ".join(load)
                r["loadavg_after"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
                record["runs"].append(r)
                print(f"| {version} | {copy} | {n:,} | {r['cpu_s']:.1f} | "
                      f"{r['cpu_s_per_1M']:.2f} ({r['user_s_per_1M']:.2f} + "
                      f"{r['system_s_per_1M']:.2f}) | {r['wall_s']:.1f} | "
                      f"{r['peak_rss_bytes'] / 1e9:.2f} | {r['frame_bytes'] / 1e9:.2f} | "
                      f"{r['peak_over_frame']:.2f} | "
                      f"{r['rss_before_fit_bytes'] / r['frame_bytes']:.2f} | "
                      f"{r['working_over_frame']:.2f} | {r['settled_bytes'] / 1e9:.2f} | "
                      f"{r['groups']} | {r['output_digest']} | "
                      f"{r['loadavg_before']} → {r['loadavg_after']} |", flush=True)
    by = {(r["version"], r["rows"]): r for r in record["runs"]
          if "error" not in r and r.get("copy", True)}
    sizes = [parse_size(s) for s in args.sizes]
    print()
    for version in args.versions:
        if (version, sizes[0]) in by and (version, sizes[-1]) in by:
            a, b = by[(version, sizes[0])], by[(version, sizes[-1])]
            ratio = b["cpu_s_per_1M"] / a["cpu_s_per_1M"]
            record.setdefault("growth", {})[version] = ratio
            print(f"{version}: CPU s per 1M rows at {sizes[-1]:,} / at {sizes[0]:,} = {ratio:.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
