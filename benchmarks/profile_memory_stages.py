"""Working memory of each step of an in-memory AccuracyGuidedAnonymizer fit, in input frames.

The table of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100, hist tree)
is built (its construction's leftovers given back, ``settle``), then ``fit_transform`` runs
while a thread samples the process's RSS every 5 ms. The fit's own step timings
(``timings_``: check and encode, partition, representatives, recode, verify, routing tree,
write) cut the samples into windows, taken back to back from the start of ``fit_transform``
(the input checks before the first step are counted in the first window); for each step it
prints the largest (RSS - RSS before the fit) / input frame seen in it, then the RSS before
the fit and the sampled peak, in input frames.

The last step, ``write``, builds the output: with ``--copy false`` the column-by-column write
into the input frame (``copy=False``); from session 9 on, with ``copy=True`` the new table,
built once the check and the routing tree are done (before, ``recode`` built it).

Usage::

    PYTHONPATH=src python benchmarks/profile_memory_stages.py --rows 2M
    PYTHONPATH=src python benchmarks/profile_memory_stages.py --rows 2M --copy false
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory_scale import _status, build_table, parse_size, settle

STEPS = ["check_and_encode", "partition", "representatives", "recode", "verify", "routing",
         "write"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2M")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--copy", default="true", choices=["true", "false"])
    args = parser.parse_args()
    from anonml import AccuracyGuidedAnonymizer

    X, y, qi = build_table(parse_size(args.rows))
    frame = int(X.memory_usage(deep=True, index=True).sum())
    settle()  # the construction's leftovers given back (as bench_memory_scale.py does)
    samples: list[tuple[float, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.perf_counter(), _status("VmRSS")))
            time.sleep(0.005)

    thread = threading.Thread(target=sample)
    thread.start()
    rss0 = _status("VmRSS")
    t = time.perf_counter()
    ag = AccuracyGuidedAnonymizer(k=args.k, quasi_identifiers=qi, tree="hist", random_state=0,
                                  **({} if args.copy == "true" else {"copy": False}))
    out = ag.fit_transform(X, y)
    done.set()
    thread.join()
    load = Path("/proc/loadavg").read_text().strip()
    print(f"rows {X.shape[0]:,}, frame {frame / 1e9:.3f} GB, copy={args.copy}, the output "
          f"{'is' if out is X else 'is not'} the input frame, load {load}")
    print("| step | wall s | working memory / frame |\n|---|---:|---:|")
    for step in [s for s in STEPS if s in ag.timings_]:
        a, b = t, t + ag.timings_[step]
        peak = max((r for ts, r in samples if a <= ts <= b), default=rss0)
        print(f"| {step} | {b - a:.2f} | {(peak - rss0) / frame:.2f} |")
        t = b
    peak = max(r for _, r in samples)
    print(f"| whole fit_transform | | {(peak - rss0) / frame:.2f} |")
    print(f"RSS before the fit {rss0 / frame:.2f} frames, peak (sampled) {peak / frame:.2f} "
          "frames")


if __name__ == "__main__":
    main()
